// Convolution dispatch: the accumulation type, where in and out live, bands of rows that fit the device
// (each with its halo), and the passes: one, or two for min/max normalisation (fold min and max over the
// whole image, then write), each band uploaded, filtered and downloaded on its own lane.
#include "cuda/convolve/convolve.cuh"
#include "cuda/convolve/launch.cuh"
#include "cuda/pipeline.cuh"

#include <algorithm>
#include <cmath>
#include <string>

namespace gpk::cuda {
namespace {

using conv::AccKind;

// Host bands aim at this many bytes so that several are in flight on the lanes.
constexpr size_t kBandBytes = size_t(16) << 20;

// The identity of slot i of a min[4], max[4] record, as stored bits.
__device__ unsigned long long minmax_identity(int i, bool exact) {
    if (exact) return (unsigned long long)(i < 4 ? LLONG_MAX : LLONG_MIN);
    return i < 4 ? 0x7ff0000000000000ull : 0xfff0000000000000ull; // +inf, -inf
}

__device__ unsigned long long minmax_fold(unsigned long long a, unsigned long long b, int i, bool exact) {
    if (exact) {
        long long x = (long long)a, y = (long long)b;
        return (unsigned long long)(i < 4 ? (y < x ? y : x) : (y > x ? y : x));
    }
    double x = __longlong_as_double((long long)a), y = __longlong_as_double((long long)b);
    return (unsigned long long)__double_as_longlong(i < 4 ? (y < x ? y : x) : (y > x ? y : x));
}

// Folds `blocks` per-block records (min[4], max[4]) into the image's min/max: each thread folds a strided
// share in registers, then its block in shared memory, then one atomic per slot and block.
__global__ void fold_partials_kernel(const unsigned long long *partials, unsigned blocks, bool exact,
                                     long long *imm, double *fmm) {
    __shared__ unsigned long long s_mm[8];
    const int i = threadIdx.x % 8;
    if (threadIdx.x < 8) s_mm[i] = minmax_identity(i, exact);
    __syncthreads();
    unsigned long long acc = minmax_identity(i, exact);
    unsigned per_block = blockDim.x / 8;
    for (unsigned b = blockIdx.x * per_block + threadIdx.x / 8; b < blocks; b += gridDim.x * per_block)
        acc = minmax_fold(acc, partials[8 * size_t(b) + i], i, exact);
    if (exact) {
        auto *s = reinterpret_cast<long long *>(s_mm);
        i < 4 ? atomicMin(s + i, (long long)acc) : atomicMax(s + i, (long long)acc);
    } else {
        auto *s = reinterpret_cast<double *>(s_mm);
        double v = __longlong_as_double((long long)acc);
        i < 4 ? conv::atomic_min_real(s + i, v) : conv::atomic_max_real(s + i, v);
    }
    __syncthreads();
    if (threadIdx.x < 8) {
        if (exact)
            i < 4 ? atomicMin(imm + i, (long long)s_mm[i]) : atomicMax(imm + i, (long long)s_mm[i]);
        else
            i < 4 ? conv::atomic_min_real(fmm + i, __longlong_as_double((long long)s_mm[i]))
                  : conv::atomic_max_real(fmm + i, __longlong_as_double((long long)s_mm[i]));
    }
}

// min[4] = +max, max[4] = -max of the type, before a min/max pass.
__global__ void init_minmax_kernel(long long *imm, double *fmm) {
    int i = threadIdx.x;
    if (i < 4) {
        imm[i] = LLONG_MAX;
        imm[4 + i] = LLONG_MIN;
        fmm[i] = __longlong_as_double(0x7ff0000000000000LL);
        fmm[4 + i] = __longlong_as_double((long long)0xfff0000000000000ULL);
    }
}

// The multiply-high divider of Output for d = |sum of taps|, where 1 <= d < 2^31 is an integer.
void set_sum_divider(conv::Output &out, double d) {
    out.sum_magic = 0;
    if (!(d >= 1 && d < 2147483648.0) || d != std::floor(d)) return;
    unsigned long long dd = (unsigned long long)d;
    int l = 0;
    while ((1ull << l) < dd) ++l; // ceil(log2 d)
    out.sum_magic = unsigned(((1ull << 32) * ((1ull << l) - dd)) / dd + 1);
    out.sum_sh1 = l < 1 ? l : 1;
    out.sum_sh2 = l > 1 ? l - 1 : 0;
}

struct ConvPlan {
    int kh, kw;
    bool separable;
    AccKind acc;
    size_t in_row, out_row, mid_row; // bytes of one packed row
    bool direct_in, direct_out;      // used where they are (device memory, aligned)
    MemoryKind in_kind, out_kind;
    int lanes;        // 0: everything on the main stream
    size_t band_rows; // output rows per band
    bool minmax;      // two passes; each lane keeps per-block partials of the first
    long long row_elems;
};

bool aligned_for(const void *p, size_t stride, size_t sample) {
    return reinterpret_cast<uintptr_t>(p) % sample == 0 && stride % sample == 0;
}

AccKind accumulation(const ConvolveJob &job) {
    if (job.exact_integer) {
        double max_sample = job.in.dtype == GPK_U8 ? 255.0 : 65535.0;
        return job.filter->abs_sum * max_sample < 2147483648.0 ? AccKind::i32 : AccKind::i64;
    }
    return job.accumulate_f64 ? AccKind::f64 : AccKind::f32;
}

size_t partials_bytes(const ConvPlan &p, size_t rows) {
    return conv::blocks_bound(p.row_elems, rows) * 8 * sizeof(unsigned long long);
}

// Device bytes one lane needs for a band of `rows` output rows.
size_t lane_bytes(const ConvPlan &p, size_t rows) {
    size_t padded = rows + size_t(p.kh) - 1;
    return (p.direct_in ? 0 : padded * p.in_row) + (p.separable ? padded * p.mid_row : 0) +
           (p.direct_out ? 0 : rows * p.out_row) + (p.minmax ? partials_bytes(p, rows) : 0);
}

size_t plan_band_rows(const ConvPlan &p, size_t height, size_t budget) {
    size_t lanes = size_t(std::max(p.lanes, 1));
    size_t rows = std::min<size_t>(height, conv::kMaxBandRows);
    if (p.lanes > 0) rows = std::min(rows, std::max<size_t>(1, kBandBytes / std::max(p.in_row, p.out_row)));
    if (lanes * lane_bytes(p, 1) > budget)
        fail(GPK_ERR_OUT_OF_MEMORY, "convolve: " + std::to_string(lanes * lane_bytes(p, 1)) +
                                        " device bytes needed for one row and its halo, " +
                                        std::to_string(budget) + " available");
    while (rows > 1 && lanes * lane_bytes(p, rows) > budget) rows = (rows + 1) / 2;
    return rows;
}

// Gives the lanes their band buffers, halving the band while the device refuses.
void reserve_bands(DeviceContext &ctx, ConvPlan &p) {
    for (;;) {
        try {
            size_t padded = p.band_rows + size_t(p.kh) - 1;
            for (int i = 0; i < std::max(p.lanes, 1); ++i) {
                Lane &l = ctx.lane(i);
                if (!p.direct_in) ctx.grow(l.in, padded * p.in_row);
                if (p.separable) ctx.grow(l.mid, padded * p.mid_row);
                if (!p.direct_out) ctx.grow(l.out, p.band_rows * p.out_row);
                if (p.minmax) ctx.grow(l.partials, partials_bytes(p, p.band_rows));
            }
            return;
        } catch (const Error &e) {
            if (e.status() != GPK_ERR_OUT_OF_MEMORY || p.band_rows == 1) throw;
            ctx.release_lane_buffers();
            p.band_rows = (p.band_rows + 1) / 2;
        }
    }
}

ConvPlan make_plan(DeviceContext &ctx, const ConvolveJob &job) {
    ConvPlan p;
    const gpk_filter &f = *job.filter;
    p.kh = f.kh;
    p.kw = f.kw;
    p.separable = f.separable;
    p.acc = accumulation(job);
    size_t elems = job.in.width * job.in.channels;
    p.row_elems = (long long)elems;
    p.minmax = job.normalize == GPK_NORMALIZE_MINMAX;
    p.in_row = elems * gpk_dtype_size(job.in.dtype);
    p.out_row = elems * gpk_dtype_size(job.out.dtype);
    p.mid_row = elems * conv::acc_size(p.acc);
    p.in_kind = memory_kind(job.in_data);
    p.out_kind = memory_kind(job.out_data);
    auto device = [](MemoryKind k) { return k == MemoryKind::device || k == MemoryKind::managed; };
    p.direct_in = device(p.in_kind) && aligned_for(job.in_data, job.in.stride, gpk_dtype_size(job.in.dtype));
    p.direct_out =
        device(p.out_kind) && aligned_for(job.out_data, job.out.stride, gpk_dtype_size(job.out.dtype));
    p.lanes = (p.direct_in && p.direct_out) ? 0 : kLanes;
    // Device images whose buffers (if any) are already held: one band, no need to ask the device.
    size_t whole = std::min<size_t>(job.in.height, conv::kMaxBandRows);
    bool held = (!p.separable || ctx.lane(0).mid.capacity() >= (whole + p.kh - 1) * p.mid_row) &&
                (!p.minmax || ctx.lane(0).partials.capacity() >= partials_bytes(p, whole));
    if (p.lanes == 0 && held) {
        p.band_rows = whole;
        return p;
    }
    p.band_rows = plan_band_rows(p, job.in.height, ctx.memory_budget());
    reserve_bands(ctx, p);
    return p;
}

// Padded rows of the band starting at output row y0: source rows after the vertical border rule.
std::vector<RowRun> padded_runs(long long y0, size_t rows, const ConvPlan &p, const ConvolveJob &job) {
    std::vector<RowRun> runs;
    long long first = y0 - p.kh / 2;
    for (size_t i = 0; i < rows + size_t(p.kh) - 1; ++i)
        append_row(runs, border_index(first + (long long)i, (long long)job.in.height, int(job.border)));
    return runs;
}

// The arguments of a pass over output rows [y0, y0 + rows): the images in place where they are used so,
// else the lane's band buffers (the caller uploads the band).
conv::PassArgs band_args(const ConvolveJob &job, const ConvPlan &p, const conv::Output &out_base, bool reduce,
                         size_t y0, size_t rows, Lane &lane) {
    conv::PassArgs a;
    a.shape = {(long long)job.in.width, int(job.in.channels), int(job.border), int(rows)};
    a.in_dtype = job.in.dtype;
    a.acc = p.acc;
    a.filter = job.filter;
    a.out = out_base;
    a.out.reduce = reduce;
    if (p.direct_out) {
        a.out.base = static_cast<char *>(job.out_data) + y0 * job.out.stride;
        a.out.pitch = job.out.stride;
    } else {
        a.out.base = static_cast<char *>(lane.out.get());
        a.out.pitch = p.out_row;
    }
    if (p.direct_in)
        a.src = {static_cast<const char *>(job.in_data), job.in.stride, (long long)job.in.height,
                 (long long)y0 - p.kh / 2};
    else
        a.src = {static_cast<const char *>(lane.in.get()), p.in_row, (long long)(rows + p.kh - 1), 0};
    a.out.partials = static_cast<unsigned long long *>(lane.partials.get());
    return a;
}

// Has the pass's pageable caller memory faulted in ahead of its copies: the input rows its bands read and,
// on the writing pass only (a pass that only folds min/max, or is cancelled after it, leaves the output
// alone), the output rows.
void prefetch_pass(Pipeline &pipe, const ConvolveJob &job, const ConvPlan &p, bool reduce, bool reuse_mid,
                   size_t y_begin, size_t y_end) {
    if (y_end <= y_begin) return;
    if (!p.direct_in && !reuse_mid && p.in_kind == MemoryKind::pageable) {
        const size_t first = y_begin - std::min<size_t>(y_begin, size_t(p.kh / 2));
        const size_t last = std::min<size_t>(job.in.height, y_end + size_t(p.kh / 2)) - 1;
        pipe.prefetch(host_pages::Access::read,
                      static_cast<const char *>(job.in_data) + first * job.in.stride,
                      (last - first) * job.in.stride + p.in_row);
    }
    if (!reduce && !p.direct_out && p.out_kind == MemoryKind::pageable)
        pipe.prefetch(host_pages::Access::write,
                      static_cast<const char *>(job.out_data) + y_begin * job.out.stride,
                      (y_end - y_begin - 1) * job.out.stride + p.out_row);
}

// One pass over output rows [y_begin, y_end) in bands; `reduce` folds min/max instead of writing. Returns
// whether a separable filter's row pass went through the lanes' `mid` (the rank-1 strip kernel and the fused
// kernel keep it on chip).
bool run_pass(DeviceContext &ctx, const ConvolveJob &job, const ConvPlan &p, const conv::Output &out_base,
              bool reduce, bool reuse_mid, size_t y_begin, size_t y_end) {
    Pipeline pipe(ctx, p.lanes);
    prefetch_pass(pipe, job, p, reduce, reuse_mid, y_begin, y_end);
    bool mid_written = false;
    for (size_t y0 = y_begin; y0 < y_end; y0 += p.band_rows) {
        size_t rows = std::min(p.band_rows, y_end - y0);
        Lane &lane = pipe.next();
        cudaStream_t s = pipe.stream(lane);
        conv::PassArgs a = band_args(job, p, out_base, reduce, y0, rows, lane);
        if (!p.direct_in && !reuse_mid)
            pipe.upload(lane, RowSource{static_cast<const char *>(job.in_data), job.in.stride, p.in_kind},
                        padded_runs((long long)y0, rows, p, job), 0, p.in_row,
                        static_cast<char *>(lane.in.get()));
        unsigned blocks = 0;
        if (p.separable) {
            // u8 pairs of K x K byte taps take the rank-1 strip kernel; the fused kernel keeps the row pass
            // on chip; the min/max passes otherwise keep the two (the write pass of a single band reuses the
            // fold pass's intermediate).
            if (!reuse_mid && (blocks = conv::launch_rank1(a, s)) != 0) {
            } else if (reuse_mid || reduce || !conv::launch_fused_separable(ctx, a, s)) {
                if (!reuse_mid) {
                    conv::launch_row_pass(a, int(rows + p.kh - 1), lane.mid.get(), ctx.limits(), s);
                    mid_written = true;
                }
                blocks = conv::launch_column_pass(a, lane.mid.get(), ctx.limits(), s);
            }
        } else {
            blocks = conv::launch_conv2d(ctx, a, s);
        }
        if (reduce) {
            unsigned fold_blocks = std::min(64u, (blocks + 1023) / 1024);
            fold_partials_kernel<<<fold_blocks, 256, 0, s>>>(
                a.out.partials, blocks, p.acc == AccKind::i32 || p.acc == AccKind::i64, a.out.imm, a.out.fmm);
            check_launch("fold_partials_kernel");
        }
        if (!reduce && !p.direct_out)
            pipe.download(lane, static_cast<const char *>(lane.out.get()), p.out_row, rows,
                          static_cast<char *>(job.out_data) + y0 * job.out.stride, job.out.stride,
                          p.out_kind);
    }
    pipe.finish();
    return mid_written;
}

// Hands the folded range to the job's range callback (libgpk_mpi: the range every rank agrees on) and
// puts back what it returns, before the writing pass.
void agree_on_range(DeviceContext &ctx, const ConvolveJob &job, const ConvPlan &p, const conv::Output &out) {
    long long imm[8];
    double fmm[8];
    check(cudaMemcpyAsync(imm, out.imm, sizeof imm, cudaMemcpyDeviceToHost, ctx.main()),
          "cudaMemcpyAsync (range)");
    check(cudaMemcpyAsync(fmm, out.fmm, sizeof fmm, cudaMemcpyDeviceToHost, ctx.main()),
          "cudaMemcpyAsync (range)");
    ctx.synchronize_main();
    const bool exact = p.acc == AccKind::i32 || p.acc == AccKind::i64;
    if (job.range_fn(job.range_user, job.in.channels, exact, fmm, fmm + 4, imm, imm + 4))
        fail(GPK_ERR_CANCELLED, "convolve: stopped by the range callback before the output was written");
    check(cudaMemcpyAsync(out.imm, imm, sizeof imm, cudaMemcpyHostToDevice, ctx.main()),
          "cudaMemcpyAsync (range)");
    check(cudaMemcpyAsync(out.fmm, fmm, sizeof fmm, cudaMemcpyHostToDevice, ctx.main()),
          "cudaMemcpyAsync (range)");
    ctx.synchronize_main();
}

} // namespace

void convolve_run(DeviceContext &ctx, const ConvolveJob &job) {
    if (job.in.width * job.in.channels > size_t(conv::kMaxRowElems))
        fail(GPK_ERR_UNSUPPORTED,
             "convolve: a row of in->width * channels = " + std::to_string(job.in.width * job.in.channels) +
                 " samples is beyond the CUDA backend's limit of " + std::to_string(conv::kMaxRowElems) +
                 " (2^31 - 1 blocks of " + std::to_string(conv::kTileX) + ")");
    ConvPlan p = make_plan(ctx, job);
    const gpk_filter &f = *job.filter;
    conv::Output out{};
    out.dtype = int(job.out.dtype);
    out.normalize = int(job.normalize);
    out.isum = (long long)f.sum;
    out.dsum = f.sum;
    out.inv_isum = f.sum != 0 ? 1.0 / std::fabs(f.sum) : 0.0;
    set_sum_divider(out, std::fabs(f.sum));
    bool minmax = job.normalize == GPK_NORMALIZE_MINMAX;
    bool mid_ready = false; // the fold pass left its row pass in mid
    if (minmax) {
        auto *mm = static_cast<char *>(ctx.scratch(Scratch::minmax, 16 * sizeof(long long)));
        out.imm = reinterpret_cast<long long *>(mm);
        out.fmm = reinterpret_cast<double *>(mm + 8 * sizeof(long long));
        init_minmax_kernel<<<1, 32, 0, ctx.main()>>>(out.imm, out.fmm);
        check_launch("init_minmax_kernel");
        // A whole device image with no range to agree on: both passes in one launch where a kernel can.
        if (!job.range_fn && p.lanes == 0 && p.band_rows >= job.in.height && job.range_begin == 0 &&
            job.range_end >= job.in.height &&
            conv::launch_pair_minmax(ctx, band_args(job, p, out, false, 0, job.in.height, ctx.lane(0)),
                                     ctx.main())) {
            if (!ctx.asynchronous() && !job.queued) ctx.synchronize_main();
            return;
        }
        const size_t range_end = std::min(job.range_end, job.in.height);
        const size_t range_begin = std::min(job.range_begin, range_end);
        mid_ready = run_pass(ctx, job, p, out, true, false, range_begin, range_end);
        if (job.range_fn) agree_on_range(ctx, job, p, out);
    }
    // A single separable band keeps its row pass from the min/max pass (which then covered every row).
    bool reuse_mid = mid_ready && p.separable && p.band_rows >= job.in.height && job.range_begin == 0 &&
                     job.range_end >= job.in.height;
    run_pass(ctx, job, p, out, false, reuse_mid, 0, job.in.height);
    if ((!ctx.asynchronous() && !job.queued) || !p.direct_in || !p.direct_out) ctx.synchronize_main();
}

} // namespace gpk::cuda
