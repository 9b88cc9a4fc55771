#include "cuda/device_context.cuh"

#include "engine/host_pages.hpp"
#include "engine/test_hooks.hpp"
#include "engine/thread_pool.hpp"

#include <algorithm>
#include <string>

namespace gpk::cuda {

DeviceScope::DeviceScope(int device) {
    check_create([&] { return cudaGetDevice(&previous_); }, "cudaGetDevice");
    if (previous_ != device) check_create([&] { return cudaSetDevice(device); }, "cudaSetDevice");
}

DeviceScope::~DeviceScope() {
    int now = -1;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

DeviceContext::DeviceContext(int device, void *stream, unsigned cpu_threads)
    : device_(device), own_(true), caller_(static_cast<cudaStream_t>(stream)),
      threads_(std::make_unique<ThreadPool>(cpu_threads)) {
    cudaDeviceProp p;
    check_create([&] { return cudaGetDeviceProperties(&p, device); }, "cudaGetDeviceProperties");
    limits_.multiprocessors = p.multiProcessorCount;
    limits_.compute_major = p.major;
    limits_.smem_per_block_optin = p.sharedMemPerBlockOptin;
    limits_.cooperative_launch = p.cooperativeLaunch != 0;
}

DeviceContext::~DeviceContext() {
    // Buffers are freed by their owners; pending work must not use them any more.
    cudaStreamSynchronize(main());
    for (auto &l : lanes_) cudaStreamSynchronize(l.stream.get());
}

void DeviceContext::set_caller_stream(void *stream) {
    synchronize(); // buffers in use by work on the old stream become free
    caller_ = static_cast<cudaStream_t>(stream);
}

void DeviceContext::synchronize() {
    synchronize_main();
    for (auto &l : lanes_) check(cudaStreamSynchronize(l.stream.get()), "cudaStreamSynchronize");
}

void *DeviceContext::grow(DeviceBuffer &b, size_t bytes) {
    if (b.capacity() < bytes) {
        synchronize();
        b.reserve(bytes);
    }
    return b.get();
}

char *DeviceContext::grow(PinnedBuffer &b, size_t bytes) {
    if (b.capacity() < bytes) {
        synchronize();
        b.reserve(bytes);
    }
    return b.get();
}

host_pages::Populator &DeviceContext::populator() {
    if (!populator_)
        populator_ =
            std::make_unique<host_pages::Populator>(host_pages::Populator::threads_for(threads_->size()));
    return *populator_;
}

void DeviceContext::release_lane_buffers() {
    synchronize();
    for (auto &l : lanes_) {
        l.in.release();
        l.mid.release();
        l.out.release();
        l.partials.release();
    }
}

int DeviceContext::resident_blocks(const void *kernel, int threads, size_t smem) {
    const Occupancy *found = nullptr;
    for (const Occupancy &o : occupancy_)
        if (o.kernel == kernel && o.threads == threads && o.smem == smem) found = &o;
    if (!found) {
        // The kernel's own (static) shared memory counts against the same per-block limit, and its dynamic
        // limit starts at 48 KiB less that: a kernel asking for exactly 48 KiB needs the limit raised too.
        cudaFuncAttributes a{};
        check(cudaFuncGetAttributes(&a, kernel), "cudaFuncGetAttributes");
        Occupancy o{kernel, threads, smem, 0, smem + a.sharedSizeBytes};
        if (o.block_smem <= limits_.smem_per_block_optin) {
            if (smem > size_t(a.maxDynamicSharedSizeBytes))
                check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
                      "cudaFuncSetAttribute (dynamic shared memory)");
            check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o.blocks, kernel, threads, smem),
                  "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
        }
        occupancy_.push_back(o);
        found = &occupancy_.back();
    }
    const size_t knob = test_hooks().shared_limit;
    return knob && found->block_smem > knob ? 0 : found->blocks;
}

size_t DeviceContext::held_bytes() const {
    size_t held = 0;
    for (auto &l : lanes_)
        held += l.in.capacity() + l.mid.capacity() + l.out.capacity() + l.partials.capacity();
    for (auto &s : scratch_) held += s.capacity();
    return held;
}

size_t DeviceContext::memory_budget() {
    size_t free_b = 0, total_b = 0;
    check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    size_t avail = free_b + held_bytes();
    avail -= std::min(avail / 8, size_t(512) << 20); // room for the runtime and for other users
    const size_t knob = test_hooks().device_memory_limit;
    return knob ? std::min(avail, knob) : avail;
}

} // namespace gpk::cuda
