// Every CUDA call and launch goes through check(): a failure becomes a gpk::Error naming the call and
// the CUDA error.
#pragma once

#include "engine/error.hpp"

#include <cuda_runtime.h>
#include <cstring>
#include <string>

namespace gpk::cuda {

namespace fault {
enum class Point { alloc, launch, copy };
// Test-only fault injection (NOTES.md, internal knobs; not API): with GPK_TEST_FAULT=alloc:N, launch:N or
// copy:N in the environment, the Nth device or pinned allocation, kernel launch or copy counted since the
// variable last changed reports failure. Returns whether this call is the one to fail.
bool inject(Point point);
} // namespace fault

inline void check(cudaError_t e, const char *what) {
    if (e == cudaSuccess && std::strncmp(what, "cudaMemcpy", 10) == 0 && fault::inject(fault::Point::copy))
        e = cudaErrorInvalidValue;
    if (e == cudaSuccess) return;
    gpk_status s = (e == cudaErrorMemoryAllocation) ? GPK_ERR_OUT_OF_MEMORY : GPK_ERR_DEVICE;
    std::string msg =
        std::string(what) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    if (e != cudaErrorMemoryAllocation) cudaGetLastError(); // clear non-sticky errors
    throw Error(s, msg);
}

// After a kernel launch: configuration errors show up here, execution errors at the next sync.
inline void check_launch(const char *kernel) {
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess && fault::inject(fault::Point::launch)) e = cudaErrorLaunchFailure;
    check(e, kernel);
}

} // namespace gpk::cuda
