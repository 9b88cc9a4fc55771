// Histogram dispatch: where the data lives, which tier counts it, how big the grid is, and the chunked
// pipeline for data that is not (or not usably) on the device.
#include "cuda/histogram/histogram.cuh"
#include "cuda/histogram/kernels.cuh"
#include "cuda/pipeline.cuh"

#include <algorithm>
#include <string>

namespace gpk::cuda {
namespace {

using hist::BinRule;
using hist::Span2D;

// Host data moves in chunks of this size per lane (fewer bytes where the memory budget is smaller).
constexpr size_t kChunkBytes = size_t(32) << 20;
// Counters (slots x copies) up to which the counting launch finalises in its last block.
constexpr unsigned long long kFinishInLaunchSlots = 8192; // a few slots per thread of one block
// Shared memory a block of the shared tier aims at; copies are halved until they fit.
constexpr size_t kSharedTarget = 48 * 1024;

enum class TierKind { shared, window, global };

struct TierPlan {
    TierKind kind = TierKind::global;
    unsigned copies = 1;              // shared
    unsigned windows = 1, window = 0; // window: launches, and slots a launch counts
    size_t smem_bytes = 0;
    unsigned spread = 1; // copies of the result the blocks flush into
};

// Most windows (reads of the data) the window tier takes before the global tier does.
constexpr unsigned kMaxWindows = 2;

TierPlan plan_tier(unsigned long long slots, const DeviceLimits &lim) {
    TierPlan t;
    size_t max_smem = lim.smem_per_block_optin;
    if (slots * 4 <= max_smem) {
        t.kind = TierKind::shared;
        t.copies = 32;
        while (t.copies > 1 && t.copies * slots * 4 > std::max<size_t>(kSharedTarget, slots * 4))
            t.copies /= 2;
        t.smem_bytes = size_t(t.copies) * slots * 4;
        // Small histograms: spread the flushes over up to 16 copies of the result, 64 KB at most.
        t.spread = unsigned(std::max<unsigned long long>(1, std::min<unsigned long long>(16, 8192 / slots)));
        return t;
    }
    // A block's shared memory, less room for the driver's share, in whole slots.
    const unsigned long long per_block = (max_smem - 1024) / 4;
    const unsigned windows =
        unsigned(std::min<unsigned long long>(kMaxWindows + 1, (slots + per_block - 1) / per_block));
    if (windows <= kMaxWindows) {
        t.kind = TierKind::window;
        t.windows = windows;
        t.window = unsigned((slots + windows - 1) / windows);
        t.smem_bytes = size_t(t.window) * 4;
        return t;
    }
    return t; // global atomics
}

// Blocks that cover `span` without idling, at most what the device runs at once (the occupancy, and the
// shared-memory limit raised where smem needs it, are asked of CUDA once per kernel and context).
template <class Kernel>
unsigned grid_for(Kernel kernel, const Span2D &span, size_t smem, size_t vec_elems, DeviceContext &ctx) {
    int per_sm = ctx.resident_blocks(reinterpret_cast<const void *>(kernel), hist::kBlockThreads, smem);
    size_t resident = size_t(std::max(per_sm, 1)) * ctx.limits().multiprocessors;
    size_t wanted = span.rows == 1
                        ? (span.row_elems / vec_elems + hist::kBlockThreads - 1) / hist::kBlockThreads
                        : span.rows;
    return unsigned(std::max<size_t>(1, std::min(resident, wanted)));
}

template <class T, hist::Mode M>
void launch_tier(const Span2D &span, const BinRule &rule, const TierPlan &plan, unsigned long long *counts,
                 const hist::Finish &finish, DeviceContext &ctx, cudaStream_t stream) {
    constexpr size_t V = 16 / sizeof(T);
    if (plan.kind == TierKind::shared) {
        auto kernel = hist::histogram_kernel<T, M, hist::SharedTier>;
        hist::SharedTier tier{nullptr, nullptr, plan.copies, unsigned((rule.bins + 1) * rule.channels),
                              plan.spread};
        unsigned grid = grid_for(kernel, span, plan.smem_bytes, V, ctx);
        kernel<<<grid, hist::kBlockThreads, plan.smem_bytes, stream>>>(span, rule, tier, counts, finish);
        check_launch("histogram_kernel (shared)");
    } else if (plan.kind == TierKind::window) {
        auto kernel = hist::histogram_kernel<T, M, hist::WindowTier>;
        const unsigned long long slots = (unsigned long long)(rule.bins + 1) * rule.channels;
        unsigned grid = grid_for(kernel, span, plan.smem_bytes, V, ctx);
        for (unsigned w = 0; w < plan.windows; ++w) {
            const unsigned long long lo = (unsigned long long)w * plan.window;
            hist::WindowTier tier{nullptr, unsigned(lo),
                                  unsigned(std::min<unsigned long long>(plan.window, slots - lo))};
            // A launch that finalises in its last block must be the last one.
            kernel<<<grid, hist::kBlockThreads, plan.smem_bytes, stream>>>(
                span, rule, tier, counts, w + 1 == plan.windows ? finish : hist::Finish{});
            check_launch("histogram_kernel (window)");
        }
    } else if constexpr (hist::single_channel(M)) {
        fail(GPK_ERR_INTERNAL,
             "histogram: single-channel kernels exist for the shared and window tiers only");
    } else {
        auto kernel = hist::histogram_kernel<T, M, hist::GlobalTier>;
        unsigned grid = grid_for(kernel, span, 0, V, ctx);
        kernel<<<grid, hist::kBlockThreads, 0, stream>>>(span, rule, hist::GlobalTier{counts}, counts,
                                                         finish);
        check_launch("histogram_kernel (global)");
    }
}

template <class T>
void launch_typed(const Span2D &span, const BinRule &rule, bool direct, const TierPlan &plan,
                  unsigned long long *counts, const hist::Finish &finish, DeviceContext &ctx,
                  cudaStream_t stream) {
    using hist::Mode;
    if constexpr (std::is_same<T, int32_t>::value) {
        // Direct bins count i32 samples as their u32 bits: a negative sample reads as 2^31 or more, past the
        // last bin, so it is uncounted either way, and i32 needs no direct kernels of its own (the direct
        // modes take unsigned samples alone).
        if (direct && rule.bins <= (1LL << 31))
            return launch_typed<uint32_t>(span, rule, true, plan, counts, finish, ctx, stream);
        return launch_tier<T, Mode::general>(span, rule, plan, counts, finish, ctx, stream);
    } else if constexpr (std::is_integral<T>::value) {
        if (direct && rule.channels == 1 &&
            (plan.kind == TierKind::shared || plan.kind == TierKind::window)) {
            if constexpr (sizeof(T) == 1) {
                if (rule.bins >= 256)
                    return launch_tier<T, Mode::byte_all>(span, rule, plan, counts, finish, ctx, stream);
            }
            return launch_tier<T, Mode::direct_single>(span, rule, plan, counts, finish, ctx, stream);
        }
        if (direct) return launch_tier<T, Mode::direct>(span, rule, plan, counts, finish, ctx, stream);
    }
    launch_tier<T, Mode::general>(span, rule, plan, counts, finish, ctx, stream);
}

void launch_count(gpk_dtype dtype, const Span2D &span, const BinRule &rule, bool direct, const TierPlan &plan,
                  unsigned long long *counts, const hist::Finish &finish, DeviceContext &ctx,
                  cudaStream_t stream) {
    switch (dtype) {
    case GPK_U8:
        return launch_typed<uint8_t>(span, rule, direct, plan, counts, finish, ctx, stream);
    case GPK_U16:
        return launch_typed<uint16_t>(span, rule, direct, plan, counts, finish, ctx, stream);
    case GPK_U32:
        return launch_typed<uint32_t>(span, rule, direct, plan, counts, finish, ctx, stream);
    case GPK_I32:
        return launch_typed<int32_t>(span, rule, direct, plan, counts, finish, ctx, stream);
    case GPK_F32:
        return launch_typed<float>(span, rule, direct, plan, counts, finish, ctx, stream);
    case GPK_F64:
        return launch_typed<double>(span, rule, direct, plan, counts, finish, ctx, stream);
    }
    fail(GPK_ERR_INTERNAL, "histogram: unknown dtype " + std::to_string(int(dtype)));
}

struct Layout {
    size_t sample, row_elems, row_bytes;
};

// Gives every lane an input buffer of `chunk` bytes, halving the chunk while the device refuses (README,
// "What gpk computes", errors: an operation that can proceed in smaller pieces does).
void reserve_lane_inputs(DeviceContext &ctx, size_t &chunk, size_t unit) {
    for (;;) {
        try {
            for (int i = 0; i < kLanes; ++i) ctx.grow(ctx.lane(i).in, chunk);
            return;
        } catch (const Error &e) {
            if (e.status() != GPK_ERR_OUT_OF_MEMORY || chunk / 2 < unit) throw;
            ctx.release_lane_buffers();
            chunk /= 2;
            chunk -= chunk % unit;
        }
    }
}

// Streams the rows of host (or misaligned device) data through the lanes, counting each chunk as it lands.
void count_in_chunks(DeviceContext &ctx, const HistogramJob &job, const Layout &lay, MemoryKind kind,
                     const BinRule &rule, const TierPlan &plan, unsigned long long *counts, size_t budget) {
    size_t chunk = std::min(kChunkBytes, budget / kLanes);
    chunk -= chunk % (lay.sample * job.channels);
    if (chunk < lay.sample * job.channels)
        fail(GPK_ERR_OUT_OF_MEMORY, "histogram: " + std::to_string(kLanes * lay.sample * job.channels) +
                                        " device bytes needed for staging, " + std::to_string(budget) +
                                        " available");
    reserve_lane_inputs(ctx, chunk, lay.sample * job.channels);
    RowSource src{static_cast<const char *>(job.data), job.stride, kind};
    Pipeline pipe(ctx, kLanes);
    if (kind == MemoryKind::pageable)
        pipe.prefetch(host_pages::Access::read, src.base, (job.height - 1) * job.stride + lay.row_bytes);
    auto count_chunk = [&](const std::vector<RowRun> &runs, size_t offset, size_t len) {
        Lane &lane = pipe.next();
        char *dst = static_cast<char *>(lane.in.get());
        pipe.upload(lane, src, runs, offset, len, dst);
        size_t elems = len / lay.sample * runs[0].count;
        launch_count(job.dtype, Span2D{dst, 1, elems, 0}, rule, job.direct_bins, plan, counts, hist::Finish{},
                     ctx, pipe.stream(lane));
    };
    if (lay.row_bytes <= chunk) {
        size_t rows_per_chunk = chunk / lay.row_bytes;
        for (size_t r = 0; r < job.height; r += rows_per_chunk)
            count_chunk({{(long long)r, std::min(rows_per_chunk, job.height - r)}}, 0, lay.row_bytes);
    } else {
        for (size_t r = 0; r < job.height; ++r)
            for (size_t off = 0; off < lay.row_bytes; off += chunk)
                count_chunk({{(long long)r, 1}}, off, std::min(chunk, lay.row_bytes - off));
    }
    pipe.finish();
}

// Where the final counts go on the device: the caller's hist and uncounted where they are device memory,
// else the results scratch, copied to them by deliver().
struct Targets {
    unsigned long long *hist = nullptr, *uncounted = nullptr;
};

Targets targets(DeviceContext &ctx, const HistogramJob &job, bool hist_dev, bool unc_dev) {
    size_t hist_bytes = job.bins * job.channels * sizeof(uint64_t);
    char *results = nullptr;
    if (!hist_dev || (job.uncounted && !unc_dev))
        results =
            static_cast<char *>(ctx.scratch(Scratch::results, hist_bytes + job.channels * sizeof(uint64_t)));
    Targets t;
    t.hist = reinterpret_cast<unsigned long long *>(hist_dev ? reinterpret_cast<char *>(job.hist) : results);
    if (job.uncounted)
        t.uncounted = reinterpret_cast<unsigned long long *>(unc_dev ? reinterpret_cast<char *>(job.uncounted)
                                                                     : results + hist_bytes);
    return t;
}

// Clamps the counts into the targets (unless the counting launch did) and copies them to the caller's
// host memory.
void deliver(DeviceContext &ctx, const HistogramJob &job, unsigned long long *counts, unsigned spread,
             const Targets &t, bool finalized, bool hist_dev, bool unc_dev, cudaStream_t s) {
    if (!finalized) {
        size_t slots = (job.bins + 1) * job.channels;
        unsigned grid =
            unsigned(std::min<size_t>((slots + 255) / 256, size_t(ctx.limits().multiprocessors) * 8));
        hist::finalize_kernel<<<grid, 256, 0, s>>>(counts, spread, job.bins, job.channels, job.saturate,
                                                   t.hist, t.uncounted);
        check_launch("finalize_kernel");
    }
    if (!hist_dev)
        check(cudaMemcpyAsync(job.hist, t.hist, job.bins * job.channels * sizeof(uint64_t), cudaMemcpyDefault,
                              s),
              "cudaMemcpyAsync (hist)");
    if (job.uncounted && !unc_dev)
        check(cudaMemcpyAsync(job.uncounted, t.uncounted, job.channels * sizeof(uint64_t), cudaMemcpyDefault,
                              s),
              "cudaMemcpyAsync (uncounted)");
}

} // namespace

void histogram_run(DeviceContext &ctx, const HistogramJob &job) {
    Layout lay{gpk_dtype_size(job.dtype), job.width * job.channels, 0};
    lay.row_bytes = lay.row_elems * lay.sample;
    BinRule rule{(long long)job.bins, job.lower, job.upper, double(job.bins) / (job.upper - job.lower),
                 job.channels};
    unsigned long long slots = (job.bins + 1) * job.channels;
    TierPlan plan = plan_tier(slots, ctx.limits());
    size_t counts_bytes = slots * plan.spread * sizeof(unsigned long long);
    MemoryKind kind = memory_kind(job.data);
    auto address = reinterpret_cast<uintptr_t>(job.data);
    bool usable_in_place = (kind == MemoryKind::device || kind == MemoryKind::managed) &&
                           address % lay.sample == 0 && job.stride % lay.sample == 0;
    // Device data whose counters are already held needs no look at the device's free memory.
    size_t budget = 0;
    if (!usable_in_place || counts_bytes + 16 > ctx.scratch_capacity(Scratch::counts)) {
        budget = ctx.memory_budget();
        if (counts_bytes > budget)
            fail(GPK_ERR_OUT_OF_MEMORY, "histogram: " + std::to_string(counts_bytes) +
                                            " device bytes needed for " + std::to_string(job.bins) +
                                            " bins x " + std::to_string(job.channels) + " channels, " +
                                            std::to_string(budget) + " available");
    }
    // The counters stay zero between calls (finalize_kernel clears them), and so does the ticket counter
    // behind them (the last block resets it); a new buffer or a failed call clears them here.
    const size_t scratch_bytes = counts_bytes + 16;
    if (scratch_bytes > ctx.scratch_capacity(Scratch::counts)) ctx.counts_zero = false;
    auto *counts = static_cast<unsigned long long *>(ctx.scratch(Scratch::counts, scratch_bytes));
    cudaStream_t s = ctx.main();
    if (!ctx.counts_zero)
        check(cudaMemsetAsync(counts, 0, ctx.scratch_capacity(Scratch::counts), s),
              "cudaMemsetAsync (counts)");
    ctx.counts_zero = false; // until finalize_kernel has run
    // Each pointer is asked about once (cudaPointerGetAttributes costs on every call on small data).
    const bool hist_dev = on_device(job.hist), unc_dev = job.uncounted && on_device(job.uncounted);
    const Targets t = targets(ctx, job, hist_dev, unc_dev);
    // One launch over device data finalises in its last block where the counters are few.
    const bool finalize_in_launch = usable_in_place && slots * plan.spread <= kFinishInLaunchSlots;
    if (usable_in_place) {
        Span2D span{static_cast<const char *>(job.data), job.height, lay.row_elems, job.stride};
        if (job.stride == lay.row_bytes || job.height == 1)
            span = {span.base, 1, lay.row_elems * job.height, 0};
        hist::Finish finish;
        if (finalize_in_launch)
            finish = {t.hist,
                      t.uncounted,
                      job.bins,
                      job.saturate,
                      job.channels,
                      plan.spread,
                      reinterpret_cast<unsigned *>(reinterpret_cast<char *>(counts) + counts_bytes)};
        launch_count(job.dtype, span, rule, job.direct_bins, plan, counts, finish, ctx, s);
    } else {
        count_in_chunks(ctx, job, lay, kind, rule, plan, counts, budget - scratch_bytes);
    }
    deliver(ctx, job, counts, plan.spread, t, finalize_in_launch, hist_dev, unc_dev, s);
    ctx.counts_zero = true;
    bool host_involved = !usable_in_place || !hist_dev || (job.uncounted && !unc_dev);
    if (!ctx.asynchronous() || host_involved) ctx.synchronize_main();
}

} // namespace gpk::cuda
