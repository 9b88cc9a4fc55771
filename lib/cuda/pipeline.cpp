#include "cuda/pipeline.cuh"

#include <algorithm>
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gpk::cuda {
namespace {

// Below this a copy is not worth waking the CPU threads for.
constexpr size_t kParallelCopyBytes = size_t(1) << 20;
constexpr size_t kCopyGrainBytes = size_t(256) << 10;
// Below this a range is not worth the background threads (or starting them).
constexpr size_t kPrefetchBytes = size_t(64) << 20;

// cudaMemcpy2DAsync refuses pitches beyond the device's largest (cudaDevAttrMaxPitch, 2^31 - 1 bytes on
// every device so far): rows further apart are copied one by one.
constexpr size_t kMaxCopyPitch = 0x7FFFFFFF;

// Copies `rows` rows of `len` bytes between device-visible pointers on stream s (`upload` or download).
void copy_rows_async(char *dst, size_t dst_pitch, const char *src, size_t src_pitch, size_t len, size_t rows,
                     cudaStream_t s, bool upload) {
    const char *what = upload ? "cudaMemcpyAsync (upload)" : "cudaMemcpyAsync (download)";
    if (rows == 1 || (dst_pitch == len && src_pitch == len)) { // one block: no pitch limit applies
        check(cudaMemcpyAsync(dst, src, rows * len, cudaMemcpyDefault, s), what);
    } else if (dst_pitch <= kMaxCopyPitch && src_pitch <= kMaxCopyPitch) {
        check(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, len, rows, cudaMemcpyDefault, s),
              upload ? "cudaMemcpy2DAsync (upload)" : "cudaMemcpy2DAsync (download)");
    } else {
        for (size_t r = 0; r < rows; ++r)
            check(cudaMemcpyAsync(dst + r * dst_pitch, src + r * src_pitch, len, cudaMemcpyDefault, s), what);
    }
}

// Copies a thread's part with x86's non-temporal stores: an ordinary store first reads each line it
// overwrites (one more pass over memory) and evicts lines the other copy threads still need. Worth it where
// the destination is the caller's, far larger than the caches and not read soon; a staging buffer that the
// DMA engine reads next is better left in the cache. parts_done() makes the stores visible before the parts
// count as done.
void copy_streaming(char *dst, const char *src, size_t n) {
#if defined(__SSE2__)
    const size_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
    if (n < head + 256) {
        std::memcpy(dst, src, n);
        return;
    }
    std::memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    const size_t body = n & ~size_t(63);
    for (size_t i = 0; i < body; i += 64) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 16));
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 32));
        const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 48));
        _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i), a);
        _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 16), b);
        _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 32), c);
        _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i + 48), d);
    }
    std::memcpy(dst + body, src + body, n - body);
#else
    std::memcpy(dst, src, n);
#endif
}

void copy_cached(char *dst, const char *src, size_t n) {
    std::memcpy(dst, src, n);
}

void parts_done() {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

} // namespace

void copy_rows(ThreadPool &threads, char *dst, size_t dst_pitch, const char *src, size_t src_pitch,
               size_t len, size_t rows, unsigned max_parts, Stores stores) {
    size_t total = len * rows;
    bool contiguous = rows == 1 || (dst_pitch == len && src_pitch == len);
    const unsigned parts = std::min(threads.size(), max_parts);
    if (total < kParallelCopyBytes || parts <= 1) {
        if (contiguous) {
            std::memcpy(dst, src, total);
        } else {
            for (size_t r = 0; r < rows; ++r) std::memcpy(dst + r * dst_pitch, src + r * src_pitch, len);
        }
        return;
    }
    // Contiguous parts of whole grains (bytes, or rows of a pitched copy), one per thread.
    const size_t n = contiguous ? total : rows;
    const size_t grain =
        contiguous ? kCopyGrainBytes : std::max<size_t>(1, kCopyGrainBytes / std::max<size_t>(1, len));
    threads.run(
        [&](unsigned part, unsigned count) {
            const size_t b = n * part / count, e = n * (part + 1) / count;
            const auto copy = stores == Stores::streaming ? copy_streaming : copy_cached;
            if (contiguous)
                copy(dst + b, src + b, e - b);
            else
                for (size_t r = b; r < e; ++r) copy(dst + r * dst_pitch, src + r * src_pitch, len);
            if (stores == Stores::streaming) parts_done();
        },
        unsigned(std::min<size_t>(parts, std::max<size_t>(1, n / grain))));
}

void append_row(std::vector<RowRun> &runs, long long src_row) {
    if (!runs.empty()) {
        RowRun &last = runs.back();
        bool zeros = src_row < 0 && last.src_row < 0;
        bool follows = src_row >= 0 && last.src_row >= 0 && src_row == last.src_row + (long long)last.count;
        if (zeros || follows) {
            ++last.count;
            return;
        }
    }
    runs.push_back({src_row < 0 ? -1 : src_row, 1});
}

Pipeline::Pipeline(DeviceContext &ctx, int lanes) : ctx_(ctx), lanes_(std::min(lanes, kLanes)) {
    if (lanes_ == 0) return;
    ctx_.fork_event().record(ctx_.main());
    for (int i = 0; i < lanes_; ++i) ctx_.fork_event().make_wait(ctx_.lane(i).stream.get());
}

Pipeline::~Pipeline() {
    stop_prefetch();
    if (finished_) return;
    // An error left work in flight: wait for it so that no buffer is freed or reused under it.
    cudaStreamSynchronize(ctx_.main());
    for (int i = 0; i < lanes_; ++i) {
        cudaStreamSynchronize(ctx_.lane(i).stream.get());
        ctx_.lane(i).pending = {};
    }
    if (lanes_ == 0) ctx_.lane(0).pending = {};
}

cudaStream_t Pipeline::stream(const Lane &lane) const {
    return lanes_ == 0 ? ctx_.main() : lane.stream.get();
}

Lane &Pipeline::next() {
    Lane &lane = ctx_.lane(lanes_ == 0 ? 0 : turn_++ % lanes_);
    deliver(lane);
    return lane;
}

void Pipeline::prefetch(host_pages::Access access, const char *p, size_t n) {
    if (n < kPrefetchBytes) return;
    pages_ = &ctx_.populator();
    pages_->start(access, p, n);
}

// The copies are about to touch [p, p + n): pieces no thread has begun are theirs, pieces in flight are
// waited for.
void Pipeline::claim(host_pages::Access access, const char *p, size_t n) {
    if (pages_) pages_->claim(access, p, n);
}

// The copy threads leave the populating threads their cores (a copy split across more threads than there
// are free cores waits for the one that was descheduled).
unsigned Pipeline::copy_parts() const {
    const unsigned all = ctx_.threads().size(), busy = pages_ ? pages_->busy() : 0;
    return busy < all ? all - busy : 1;
}

void Pipeline::stop_prefetch() noexcept {
    if (pages_) pages_->stop();
}

void Pipeline::deliver(Lane &lane) {
    Lane::PendingCopy p = lane.pending;
    if (!p.dst) return;
    lane.pending = {};
    lane.downloaded.wait_host();
    claim(host_pages::Access::write, p.dst, (p.rows - 1) * p.pitch + p.row_bytes);
    copy_rows(ctx_.threads(), p.dst, p.pitch, lane.stage_out.get(), p.row_bytes, p.row_bytes, p.rows,
              copy_parts(), Stores::streaming);
}

void Pipeline::finish() {
    int used = std::max(lanes_, 1);
    for (int i = 0; i < used; ++i) deliver(ctx_.lane(i));
    for (int i = 0; i < lanes_; ++i) {
        Lane &lane = ctx_.lane(i);
        lane.done.record(lane.stream.get());
        lane.done.make_wait(ctx_.main());
    }
    stop_prefetch();
    finished_ = true;
}

void Pipeline::upload(Lane &lane, const RowSource &src, const std::vector<RowRun> &runs, size_t offset,
                      size_t len, char *dst) {
    cudaStream_t s = stream(lane);
    size_t rows = 0;
    for (const RowRun &r : runs) rows += r.count;
    if (src.kind != MemoryKind::pageable) {
        size_t at = 0;
        for (const RowRun &r : runs) {
            char *to = dst + at * len;
            const char *from = src.base + size_t(std::max(r.src_row, 0ll)) * src.pitch + offset;
            if (r.src_row < 0)
                check(cudaMemsetAsync(to, 0, r.count * len, s), "cudaMemsetAsync");
            else
                copy_rows_async(to, len, from, src.pitch, len, r.count, s, true);
            at += r.count;
        }
        return;
    }
    lane.uploaded.wait_host(); // the previous upload from stage_in has left it
    char *stage = ctx_.grow(lane.stage_in, rows * len);
    for (const RowRun &r : runs)
        if (r.src_row >= 0)
            claim(host_pages::Access::read, src.base + size_t(r.src_row) * src.pitch + offset,
                  (r.count - 1) * src.pitch + len);
    size_t at = 0;
    for (const RowRun &r : runs) {
        char *to = stage + at * len;
        if (r.src_row < 0)
            std::memset(to, 0, r.count * len);
        else
            copy_rows(ctx_.threads(), to, len, src.base + size_t(r.src_row) * src.pitch + offset, src.pitch,
                      len, r.count, copy_parts());
        at += r.count;
    }
    check(cudaMemcpyAsync(dst, stage, rows * len, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync (upload)");
    lane.uploaded.record(s);
}

void Pipeline::download(Lane &lane, const char *src, size_t row_bytes, size_t rows, char *dst, size_t pitch,
                        MemoryKind dst_kind) {
    cudaStream_t s = stream(lane);
    if (dst_kind != MemoryKind::pageable) {
        copy_rows_async(dst, pitch, src, row_bytes, row_bytes, rows, s, false);
        return;
    }
    char *stage = ctx_.grow(lane.stage_out, rows * row_bytes);
    check(cudaMemcpyAsync(stage, src, rows * row_bytes, cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync (download)");
    lane.downloaded.record(s);
    lane.pending = {dst, pitch, row_bytes, rows};
}

} // namespace gpk::cuda
