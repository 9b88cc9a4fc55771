// Test-only fault injection (NOTES.md, internal knobs; not API). With GPK_TEST_FAULT=POINT:N in the
// environment, the Nth call counted at POINT reports failure. The CUDA backend counts alloc, launch, copy
// and create (lib/cuda/check.cuh); the CPU side counts host: every host allocation of a call's working
// buffers and every worker thread start (lib/cpu/host_memory.hpp, lib/engine/thread_pool.cpp). The counter
// lives here, not in the CUDA backend, so that host:N works in builds without CUDA. A build without test
// hooks (engine/test_hooks.hpp) never injects.
#pragma once

namespace gpk::fault {

enum class Point { alloc, launch, copy, create, host };

// Counts a call at `point` and returns whether it is the one to fail. Counting starts afresh whenever the
// variable changes value or is seen unset, so a test that sets POINT:1, POINT:2, ... in turn (unsetting it
// in between or not) fails each call in turn. Costs one getenv while the variable is unset. Thread-safe:
// calls from several threads each take their own number.
bool inject(Point point);

// When GPK_TEST_FAULT names `point`: counts that point from zero again and returns true.
bool restart(Point point);

} // namespace gpk::fault
