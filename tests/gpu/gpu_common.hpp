// Helpers of the GPU suite: buffers in each kind of memory a caller may pass, the contexts every test
// compares (CPU reference, CUDA without and with a caller stream), and the skip where no device exists.
#pragma once

#include "check.hpp"
#include "cpu_context.hpp"
#include "hooks.hpp"
#include "test_env.hpp"
#include "gpk.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace gpu {

enum class Memory { pageable, pinned, device };
constexpr Memory kAllMemory[] = {Memory::pageable, Memory::pinned, Memory::device};

inline const char *memory_name(Memory m) {
    return m == Memory::pageable ? "pageable" : m == Memory::pinned ? "pinned" : "device";
}

inline void cuda_ok(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return;
    std::fprintf(stderr, "test setup: %s failed: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
}

// `bytes` bytes of one kind of memory in *p; an error, and *p null, where they cannot be had.
inline cudaError_t allocate(Memory kind, size_t bytes, void **p) {
    *p = nullptr;
    if (kind == Memory::pageable) {
        *p = std::malloc(bytes);
        return *p || bytes == 0 ? cudaSuccess : cudaErrorMemoryAllocation;
    }
    cudaError_t e = kind == Memory::pinned ? cudaMallocHost(p, bytes) : cudaMalloc(p, bytes);
    if (e != cudaSuccess) *p = nullptr;
    return e;
}

inline void release(Memory kind, void *p) {
    if (kind == Memory::pageable)
        std::free(p);
    else if (kind == Memory::pinned)
        cudaFreeHost(p);
    else
        cudaFree(p);
}

// `bytes` bytes of one kind of memory, starting `offset` bytes into the allocation (to make a pointer
// that is not aligned for its sample type).
class Block {
public:
    Block(Memory kind, size_t bytes, size_t offset = 0) : kind_(kind), bytes_(bytes), offset_(offset) {
        cuda_ok(allocate(kind, bytes + offset + 1, &base_), kind == Memory::pageable ? "malloc"
                                                            : kind == Memory::pinned ? "cudaMallocHost"
                                                                                     : "cudaMalloc");
    }
    ~Block() { release(kind_, base_); }
    Block(const Block &) = delete;
    Block &operator=(const Block &) = delete;

    void *get() const { return static_cast<char *>(base_) + offset_; }
    // cudaMemcpy from pageable memory may return before its DMA has landed, and gpk works on non-blocking
    // streams that do not wait for it: both copies finish before they return.
    void upload(const void *src) {
        cuda_ok(cudaMemcpy(get(), src, bytes_, cudaMemcpyDefault), "cudaMemcpy (in)");
        cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }
    void download(void *dst) const {
        cuda_ok(cudaMemcpy(dst, get(), bytes_, cudaMemcpyDefault), "cudaMemcpy (out)");
        cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }

private:
    Memory kind_;
    size_t bytes_, offset_;
    void *base_ = nullptr;
};

// Exits 77 unless a CUDA device is usable.
inline void require_device() {
    int n = 0;
    if (gpk_device_count(&n) != GPK_OK || n == 0)
        check::skip((std::string("no CUDA device: ") + gpk_context_last_error(nullptr)).c_str());
}

inline gpk_context *make_context(gpk_backend backend, void *stream = nullptr) {
    return new_context(backend, 0, stream);
}

// The contexts each case runs on: the CPU reference, CUDA on its own streams, CUDA on a caller stream.
struct Contexts {
    gpk_context *cpu = nullptr;
    gpk_context *cuda = nullptr;
    gpk_context *cuda_streamed = nullptr;
    cudaStream_t stream = nullptr;

    Contexts() {
        cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
        cpu = make_context(GPK_BACKEND_CPU);
        cuda = make_context(GPK_BACKEND_CUDA);
        cuda_streamed = make_context(GPK_BACKEND_CUDA, stream);
    }
    ~Contexts() {
        gpk_context_destroy(cpu);
        gpk_context_destroy(cuda);
        gpk_context_destroy(cuda_streamed);
        cudaStreamDestroy(stream);
    }
    Contexts(const Contexts &) = delete;
    Contexts &operator=(const Contexts &) = delete;
};

using testenv::large;
using testenv::quick;
using testenv::wanted;

// Fakes a device of `bytes` bytes for the calls made while it lives (the test hook of NOTES.md).
class FakeDeviceMemory {
public:
    explicit FakeDeviceMemory(size_t bytes) : hook_("GPK_TEST_DEVICE_MEMORY_LIMIT", std::to_string(bytes)) {}

private:
    hooks::Hook hook_;
};

} // namespace gpu
