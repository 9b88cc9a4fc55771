// What the CUDA backend keeps between calls on one gpk_context: its device, streams, the caller's stream,
// the reusable device and pinned buffers (a small pool of named slots), and CPU threads for staging copies.
#pragma once

#include "cuda/memory.cuh"

#include <array>
#include <memory>
#include <cstddef>
#include <vector>

// Declared only: every kernel file includes this header, and the thread headers behind these two would add
// to each one's compile time. pipeline.cuh includes them.
namespace gpk {
class ThreadPool;
namespace host_pages {
class Populator;
}
} // namespace gpk

namespace gpk::cuda {

// Streams that host transfers are spread over, so that upload, kernels and download overlap.
constexpr int kLanes = 3;

// One stream of the transfer pipeline with the buffers its bands or chunks live in.
struct Lane {
    Stream stream;
    Event uploaded;   // stage_in may be refilled once this has fired
    Event downloaded; // stage_out holds the pending band once this has fired
    Event done;       // everything this lane was given in the current call
    PinnedBuffer stage_in, stage_out;
    DeviceBuffer in, mid, out;
    DeviceBuffer partials; // per-block min/max of the min/max pass
    // A band in stage_out still to be copied to pageable memory.
    struct PendingCopy {
        char *dst = nullptr;
        size_t pitch = 0, row_bytes = 0, rows = 0;
    } pending;
};

// Device buffers that live outside the lanes.
enum class Scratch { counts, results, minmax, count_ };

// What the heat solver keeps between calls: its grids (and a copy of host conductivities), its small
// device work area, pinned room for what it reads back, and the last pass plan. Not counted in
// memory_budget(): other operations do not take this memory back.
struct HeatBuffers {
    DeviceBuffer grids, cond, work;
    PinnedBuffer host;
    // The plans of the last call: the blocks of a pass for this many rows, columns and pass kernel.
    struct Plan {
        size_t rows = 0, cols = 0;
        const void *kernel = nullptr;
        int per_sm = 0; // blocks of it resident per SM
        unsigned blocks = 0;
    } plan, tail_plan; // the run's pass kernel, the kernel of shorter passes
    size_t held() const { return grids.capacity() + cond.capacity() + work.capacity(); }
    // Recorded after each of the (at most two) batches in flight; made on first use.
    Event &batch_done(int slot) {
        if (!done_[slot]) done_[slot] = std::make_unique<Event>();
        return *done_[slot];
    }

private:
    std::unique_ptr<Event> done_[2];
};

// Facts about the device that sizing decisions need.
struct DeviceLimits {
    int multiprocessors = 1;
    int compute_major = 0;
    size_t smem_per_block_optin = 48 * 1024;
    bool cooperative_launch = false; // cudaDevAttrCooperativeLaunch: grid-wide barriers may be launched
};

class DeviceContext {
public:
    DeviceContext(int device, void *stream, unsigned cpu_threads);
    ~DeviceContext();
    DeviceContext(const DeviceContext &) = delete;
    DeviceContext &operator=(const DeviceContext &) = delete;

    int device() const { return device_; }
    const DeviceLimits &limits() const { return limits_; }
    // The stream every call starts from and ends on: the caller's, or gpk's own (a blocking stream, so that
    // work the caller left on the legacy default stream comes first).
    cudaStream_t main() const { return caller_ ? caller_ : own_.get(); }
    // True when calls on device data may return before the work is done.
    bool asynchronous() const { return caller_ != nullptr; }
    void set_caller_stream(void *stream);
    // Waits for all work of this context (main stream and lanes).
    void synchronize();
    void synchronize_main() { check(cudaStreamSynchronize(main()), "cudaStreamSynchronize"); }

    Lane &lane(int i) { return lanes_[i]; }
    // Recorded on the main stream when lanes fork from it.
    Event &fork_event() { return fork_; }
    // A device buffer of at least `bytes`; growing it first waits for pending work of this context.
    void *grow(DeviceBuffer &b, size_t bytes);
    char *grow(PinnedBuffer &b, size_t bytes);
    void *scratch(Scratch slot, size_t bytes) { return grow(scratch_[size_t(slot)], bytes); }
    size_t scratch_capacity(Scratch slot) const { return scratch_[size_t(slot)].capacity(); }
    // The histogram counters are all zero (finalize_kernel zeroes what it read); false after a failure.
    bool counts_zero = false;
    void release_lane_buffers();

    // Device bytes a call may hold: most of the free memory plus what the pool holds already, capped by
    // the internal knob GPK_TEST_DEVICE_MEMORY_LIMIT (tests fake a small device with it).
    size_t memory_budget();

    ThreadPool &threads() { return *threads_; }
    // What faults caller host memory in ahead of the staging copies (engine/host_pages.hpp); its threads
    // start at the first call that streams enough memory never touched.
    host_pages::Populator &populator();

    HeatBuffers &heat() { return heat_; }

    // Blocks of `kernel` resident on one SM with `threads` threads and `smem` bytes of dynamic shared
    // memory, the kernel's dynamic shared-memory limit raised first where smem needs it; 0 where the block
    // cannot run at all (its static and dynamic shared memory over the device's limit per block, or over
    // GPK_TEST_SHARED_LIMIT; or its registers): callers then take another kernel. Asked of CUDA once per
    // kernel and shape on this context, then remembered (a call on small data must not pay for it).
    int resident_blocks(const void *kernel, int threads, size_t smem);

private:
    size_t held_bytes() const;

    int device_;
    DeviceLimits limits_;
    Stream own_;
    Event fork_;
    cudaStream_t caller_ = nullptr;
    std::array<Lane, kLanes> lanes_;
    std::array<DeviceBuffer, size_t(Scratch::count_)> scratch_;
    std::unique_ptr<ThreadPool> threads_;
    std::unique_ptr<host_pages::Populator> populator_;
    HeatBuffers heat_;
    struct Occupancy {
        const void *kernel;
        int threads;
        size_t smem;
        int blocks;
        size_t block_smem; // static + dynamic shared memory of a block
    };
    std::vector<Occupancy> occupancy_;
};

// Makes `device` current for a scope and restores the previous device after.
class DeviceScope {
public:
    explicit DeviceScope(int device);
    ~DeviceScope();
    DeviceScope(const DeviceScope &) = delete;
    DeviceScope &operator=(const DeviceScope &) = delete;

private:
    int previous_ = -1;
};

} // namespace gpk::cuda
