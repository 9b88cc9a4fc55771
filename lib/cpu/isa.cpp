#include "cpu/isa.hpp"

#include "engine/error.hpp"
#include "engine/test_hooks.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gpk::cpu {
namespace {

Isa machine_isa() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return Isa::avx512;
    return avx2 ? Isa::avx2 : Isa::baseline;
#else
    return Isa::baseline;
#endif
}

// Contexts on several threads all set the value the environment gives, so one process-wide level is
// enough; the pool's workers read what the calling thread set before it woke them.
std::atomic<Isa> g_active{machine_isa()};

} // namespace

Isa active_isa() {
    return g_active.load(std::memory_order_relaxed);
}

void select_isa() {
    static const Isa machine = machine_isa();
    Isa isa = machine;
    const TestHooks::Isa cap = test_hooks().cpu_isa; // GPK_TEST_CPU_ISA
    if (cap != TestHooks::Isa::machine) {
        const Isa asked = cap == TestHooks::Isa::avx512 ? Isa::avx512
                          : cap == TestHooks::Isa::avx2 ? Isa::avx2
                                                        : Isa::baseline;
        isa = asked < machine ? asked : machine;
    }
    g_active.store(isa, std::memory_order_relaxed);
}

} // namespace gpk::cpu
