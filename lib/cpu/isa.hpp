// The instruction set the CPU kernels run with, chosen at every call: the widest this CPU has, or a
// narrower one where the internal knob GPK_TEST_CPU_ISA asks for it (NOTES.md), so that tests run every
// variant on a machine that would otherwise only ever take the widest. Kernels are compiled once per
// level (GPK_TARGET_AVX512, GPK_TARGET_AVX2, none) and a dispatcher calls the one active_isa() names.
// (GCC's target_clones would pick once per process, by an ifunc resolver that nothing can steer.)
#pragma once

namespace gpk::cpu {

enum class Isa { baseline = 0, avx2 = 1, avx512 = 2 };

// The level of this call. Read by every dispatcher (a relaxed atomic load).
Isa active_isa();

// Sets the level for the operation about to run: the CPU's widest, lowered by GPK_TEST_CPU_ISA
// (avx512, avx2 or baseline; a level the CPU lacks gives its widest). Any other value is
// GPK_ERR_INVALID_ARGUMENT. Called by the CPU backend at the start of every operation.
void select_isa();

} // namespace gpk::cpu

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// Exactly the features select_isa() checks for each level.
#define GPK_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))
#define GPK_TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define GPK_TARGET_AVX512
#define GPK_TARGET_AVX2
#endif

// Defines name_avx512, name_avx2 and name_baseline, each `ret name_X params { return call; }` compiled for
// its level; `call` is typically an always-inline template, vectorised anew in each. Inside `call`, kIsa
// names the variant's level (for code that sizes its vectors to the level's registers).
#define GPK_ISA_VARIANTS(ret, name, params, call)                                                            \
    GPK_TARGET_AVX512 ret name##_avx512 params {                                                             \
        [[maybe_unused]] constexpr ::gpk::cpu::Isa kIsa = ::gpk::cpu::Isa::avx512;                           \
        return call;                                                                                         \
    }                                                                                                        \
    GPK_TARGET_AVX2 ret name##_avx2 params {                                                                 \
        [[maybe_unused]] constexpr ::gpk::cpu::Isa kIsa = ::gpk::cpu::Isa::avx2;                             \
        return call;                                                                                         \
    }                                                                                                        \
    ret name##_baseline params {                                                                             \
        [[maybe_unused]] constexpr ::gpk::cpu::Isa kIsa = ::gpk::cpu::Isa::baseline;                         \
        return call;                                                                                         \
    }

// Calls the variant of `name` for the active level.
#define GPK_ISA_CALL(name, ...)                                                                              \
    switch (::gpk::cpu::active_isa()) {                                                                      \
    case ::gpk::cpu::Isa::avx512:                                                                            \
        return name##_avx512(__VA_ARGS__);                                                                   \
    case ::gpk::cpu::Isa::avx2:                                                                              \
        return name##_avx2(__VA_ARGS__);                                                                     \
    default:                                                                                                 \
        return name##_baseline(__VA_ARGS__);                                                                 \
    }
