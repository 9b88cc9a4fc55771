// Test hooks: the few ways a test reaches a path that the dispatcher chooses on other inputs or other
// hardware (a smaller device, no cooperative launch, another instruction set, an injected fault). They are
// GPK_TEST_* environment variables, read here and nowhere else: at the first use, and again whenever a test
// changes one (gpk_internal_reload_test_hooks, which tests/common/hooks.hpp calls). A value that is not one
// of a hook's values fails context creation with a message naming the variable. Not API; NOTES.md lists each
// hook with the tests that use it. Only a build with -Dtest_hooks=true (GPK_TEST_HOOKS 1) reads them: in any
// other the hooks keep their defaults, no fault is injected and no hook's name is in the library.
#pragma once

#ifndef GPK_TEST_HOOKS
#define GPK_TEST_HOOKS 0
#endif

// A hook's name in a message: where hooks are not compiled in, no GPK_TEST_* text is left in the library.
#if GPK_TEST_HOOKS
#define GPK_HOOK_NAME(name) name
#else
#define GPK_HOOK_NAME(name) "a test hook"
#endif

#include <cstddef>
#include <string>

namespace gpk {

// Whether this build reads the hooks at all.
inline constexpr bool kTestHooks = GPK_TEST_HOOKS != 0;

struct TestHooks {
    enum class Isa { machine, avx512, avx2, baseline };
    enum class Fused { on, off, require };

    // GPK_TEST_FAULT=alloc:N|launch:N|copy:N|create:N|host:N: the Nth call of that kind fails (engine/fault).
    std::string fault;
    // GPK_TEST_CPU_ISA=avx512|avx2|baseline: the CPU kernels of at most that instruction set.
    Isa cpu_isa = Isa::machine;
    // GPK_TEST_CONV_CPU_STRIP=SAMPLES: CPU convolution in column strips of that width, as on very long rows.
    size_t conv_cpu_strip = 0;
    // GPK_TEST_DEVICE_MEMORY_LIMIT=BYTES: the device's free memory, as on a smaller GPU.
    size_t device_memory_limit = 0;
    // GPK_TEST_SHARED_LIMIT=BYTES: the shared memory a block may have, as on a smaller GPU.
    size_t shared_limit = 0;
    // GPK_TEST_HEAT_ROWS=H: heat blocks of H rows (crossing strips where H does not divide the rows), as the
    // planner picks on larger grids.
    size_t heat_rows = 0;
    // GPK_TEST_CONV_FUSED=off|require: the separable filter in two passes, as where the fused kernels do not
    // apply; or fail where they would not run.
    Fused conv_fused = Fused::on;
    // GPK_TEST_CONV_FUSED_KERNEL=ring: the ring kernel alone, as where the streaming one does not fit.
    bool conv_fused_ring = false;
    // GPK_TEST_CONV_PAIR=twopass: min/max in two launches, as on a device without cooperative launches.
    bool conv_pair_twopass = false;
    // GPK_TEST_CONV_F32=off: the tile kernels for f32 2D filters, as where the sliding kernel's
    // preconditions fail.
    bool conv_f32_tiles = false;
    // GPK_TEST_MPI_HALO=host: libgpk_mpi's halos through pinned host buffers, as between ranks whose GPUs
    // cannot reach each other and an MPI that is not CUDA-aware.
    bool halo_host = false;
};

// The hooks in force (parsed at the first call; the defaults in a build without hooks). Throws
// GPK_ERR_INVALID_ARGUMENT naming the variable when a value is not one of its hook's values. The reference
// stays valid for the life of the process.
const TestHooks &test_hooks();

// Reads the environment again (nothing in a build without hooks); on a bad value throws as test_hooks() does,
// and so does every later use until the value is mended.
void reload_test_hooks();

} // namespace gpk
