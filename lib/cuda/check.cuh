// Every CUDA call and launch goes through check(): a failure becomes a gpk::Error naming the call and
// the CUDA error.
#pragma once

#include "engine/error.hpp"

#include <cuda_runtime.h>
#include <string>

namespace gpk::cuda {

inline void check(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return;
    gpk_status s = (e == cudaErrorMemoryAllocation) ? GPK_ERR_OUT_OF_MEMORY : GPK_ERR_DEVICE;
    std::string msg =
        std::string(what) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    if (e != cudaErrorMemoryAllocation) cudaGetLastError(); // clear non-sticky errors
    throw Error(s, msg);
}

// After a kernel launch: configuration errors show up here, execution errors at the next sync.
inline void check_launch(const char *kernel) {
    check(cudaGetLastError(), kernel);
}

} // namespace gpk::cuda
