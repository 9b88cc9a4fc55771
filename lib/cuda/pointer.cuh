// Where a caller's pointer lives, as far as CUDA can tell.
#pragma once

#include "cuda/check.cuh"

namespace gpk::cuda {

enum class MemoryKind { pageable, pinned, device, managed };

inline MemoryKind memory_kind(const void *p) {
    cudaPointerAttributes a{};
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
        cudaGetLastError(); // older drivers report unregistered host memory as an error
        return MemoryKind::pageable;
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:
        return MemoryKind::device;
    case cudaMemoryTypeManaged:
        return MemoryKind::managed;
    case cudaMemoryTypeHost:
        return MemoryKind::pinned;
    default:
        return MemoryKind::pageable;
    }
}

// Device-accessible without a copy (device or managed memory).
inline bool on_device(const void *p) {
    MemoryKind k = memory_kind(p);
    return k == MemoryKind::device || k == MemoryKind::managed;
}

} // namespace gpk::cuda
