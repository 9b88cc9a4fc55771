// Moving rows of caller data to and from the device, band by band, over several streams: a pageable source
// is copied by CPU threads into a lane's pinned staging buffer and uploaded from there while other lanes
// compute; pinned and device sources are copied directly. Downloads to pageable memory land in pinned
// staging and reach the caller when the lane comes round again (or at finish()).
#pragma once

#include "cuda/device_context.cuh"
#include "cuda/pointer.cuh"
#include "engine/host_pages.hpp"
#include "engine/thread_pool.hpp"

#include <vector>

namespace gpk::cuda {

// `count` consecutive source rows starting at `src_row`, or `count` rows of zeros when src_row < 0.
struct RowRun {
    long long src_row;
    size_t count;
};

// Rows of caller memory: row r starts at base + r * pitch.
struct RowSource {
    const char *base;
    size_t pitch;
    MemoryKind kind;
};

// Appends row `src_row` (-1 for a zero row) to `runs`, merging it with the last run where it continues it.
void append_row(std::vector<RowRun> &runs, long long src_row);

// A round-robin over the lanes. The constructor orders the lanes after the work already on the main stream;
// finish() (or the destructor, on the error path) orders the main stream after everything the lanes did.
// With lanes == 0 all work goes to the main stream itself (device data: nothing to overlap).
class Pipeline {
public:
    Pipeline(DeviceContext &ctx, int lanes);
    ~Pipeline();
    Pipeline(const Pipeline &) = delete;
    Pipeline &operator=(const Pipeline &) = delete;

    // The next lane, its earlier download delivered; stream(lane) is where its work goes.
    Lane &next();
    cudaStream_t stream(const Lane &lane) const;
    void finish();

    // Copies bytes [offset, offset + len) of every row in `runs` into `dst` on the device, rows packed.
    void upload(Lane &lane, const RowSource &src, const std::vector<RowRun> &runs, size_t offset, size_t len,
                char *dst);
    // Copies `rows` packed rows of `row_bytes` from device memory `src` to dst rows of `pitch` bytes.
    void download(Lane &lane, const char *src, size_t row_bytes, size_t rows, char *dst, size_t pitch,
                  MemoryKind dst_kind);
    // Has pageable caller memory [p, p + n) faulted in ahead of the copies that read it (Access::read:
    // uploads) or write it (Access::write: downloads), by the context's populator; ranges under
    // kPrefetchBytes are left to the copies. Its threads stop at finish() or on the error path.
    void prefetch(host_pages::Access access, const char *p, size_t n);

private:
    void deliver(Lane &lane);
    void claim(host_pages::Access access, const char *p, size_t n);
    unsigned copy_parts() const;
    void stop_prefetch() noexcept;

    DeviceContext &ctx_;
    host_pages::Populator *pages_ = nullptr;
    int lanes_;
    int turn_ = 0;
    bool finished_ = false;
};

// How a copy's stores meet the caches: `cached` where the DMA engine reads the bytes next (it takes lines
// still in the cache from there), `streaming` into caller memory that nothing reads soon.
enum class Stores { cached, streaming };

// Copies `rows` rows of `len` bytes between host buffers with the context's CPU threads (at most
// `max_parts` of them).
void copy_rows(ThreadPool &threads, char *dst, size_t dst_pitch, const char *src, size_t src_pitch,
               size_t len, size_t rows, unsigned max_parts = ~0u, Stores stores = Stores::cached);

} // namespace gpk::cuda
