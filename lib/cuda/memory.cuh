// RAII owners of CUDA resources: device buffers, pinned host buffers, streams and events. Each frees what
// it holds in its destructor, which never throws; buffers grow on demand and are kept for the next call.
#pragma once

#include "cuda/check.cuh"

#include <cstddef>

namespace gpk::cuda {

// Device memory from cudaMalloc. reserve() keeps the buffer when it is large enough.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    ~DeviceBuffer() { release(); }
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;

    void *get() const { return ptr_; }
    size_t capacity() const { return bytes_; }
    // At least `bytes` afterwards; growing drops the contents. Throws GPK_ERR_OUT_OF_MEMORY naming the bytes.
    // The caller makes sure no pending GPU work still uses the old memory.
    void reserve(size_t bytes);
    void release();

private:
    void *ptr_ = nullptr;
    size_t bytes_ = 0;
};

// Page-locked host memory from cudaMallocHost: the staging area of transfers that overlap with kernels.
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    ~PinnedBuffer() { release(); }
    PinnedBuffer(const PinnedBuffer &) = delete;
    PinnedBuffer &operator=(const PinnedBuffer &) = delete;

    char *get() const { return ptr_; }
    size_t capacity() const { return bytes_; }
    void reserve(size_t bytes);
    void release();

private:
    char *ptr_ = nullptr;
    size_t bytes_ = 0;
};

// A stream owned by gpk: non-blocking by default; a blocking one is ordered with the legacy default stream
// (work the caller left on stream 0 runs first, as it would before any synchronous library call); one of
// the highest priority (Stream::highest, non-blocking) has its blocks scheduled ahead of other streams'.
class Stream {
public:
    struct Highest {};
    static constexpr Highest highest{};
    explicit Stream(bool blocking = false);
    explicit Stream(Highest);
    ~Stream();
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;
    cudaStream_t get() const { return stream_; }

private:
    cudaStream_t stream_ = nullptr;
};

// An event without timing, used to order streams and to wait for transfers.
class Event {
public:
    Event();
    ~Event();
    Event(const Event &) = delete;
    Event &operator=(const Event &) = delete;
    cudaEvent_t get() const { return event_; }
    void record(cudaStream_t s) { check(cudaEventRecord(event_, s), "cudaEventRecord"); }
    void wait_host() { check(cudaEventSynchronize(event_), "cudaEventSynchronize"); }
    // Work enqueued on `s` after this call waits for the work recorded before.
    void make_wait(cudaStream_t s) { check(cudaStreamWaitEvent(s, event_, 0), "cudaStreamWaitEvent"); }

private:
    cudaEvent_t event_ = nullptr;
};

} // namespace gpk::cuda
