#include "cuda/memory.cuh"

#include <string>

namespace gpk::cuda {
namespace {

// Out of memory names the bytes asked for (README, "What gpk computes", errors); other failures name the CUDA
// error.
void check_alloc(cudaError_t e, const char *what, size_t bytes) {
    if (e == cudaSuccess) return;
    std::string msg = std::string(what) + " of " + std::to_string(bytes) +
                      " bytes failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    cudaGetLastError(); // allocation failures are not sticky
    throw Error(e == cudaErrorMemoryAllocation ? GPK_ERR_OUT_OF_MEMORY : GPK_ERR_DEVICE, msg);
}

// Whether fault injection fails this allocation: the Nth of alloc:N, or the Nth creation point of create:N
// when it is made while a context is created (both are counted).
bool alloc_fails() {
    bool at_creation = fault::creation_fails();
    return fault::inject(fault::Point::alloc) || at_creation;
}

} // namespace

void DeviceBuffer::reserve(size_t bytes) {
    if (bytes <= bytes_) return;
    release();
    void *p = nullptr;
    check_alloc(alloc_fails() ? cudaErrorMemoryAllocation : cudaMalloc(&p, bytes), "cudaMalloc", bytes);
    ptr_ = p;
    bytes_ = bytes;
}

void DeviceBuffer::release() {
    if (ptr_) cudaFree(ptr_); // a failure here leaves nothing to recover
    ptr_ = nullptr;
    bytes_ = 0;
}

void PinnedBuffer::reserve(size_t bytes) {
    if (bytes <= bytes_) return;
    release();
    void *p = nullptr;
    check_alloc(alloc_fails() ? cudaErrorMemoryAllocation : cudaMallocHost(&p, bytes), "cudaMallocHost",
                bytes);
    ptr_ = static_cast<char *>(p);
    bytes_ = bytes;
}

void PinnedBuffer::release() {
    if (ptr_) cudaFreeHost(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
}

Stream::Stream(bool blocking) {
    check_create(
        [&] {
            return cudaStreamCreateWithFlags(&stream_, blocking ? cudaStreamDefault : cudaStreamNonBlocking);
        },
        "cudaStreamCreateWithFlags");
}

Stream::Stream(Highest) {
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    check_create([&] { return cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest); },
                 "cudaStreamCreateWithPriority");
}

Stream::~Stream() {
    if (stream_) cudaStreamDestroy(stream_);
}

Event::Event() {
    check_create([&] { return cudaEventCreateWithFlags(&event_, cudaEventDisableTiming); },
                 "cudaEventCreateWithFlags");
}

Event::~Event() {
    if (event_) cudaEventDestroy(event_);
}

} // namespace gpk::cuda
