// The first pass of min/max normalisation for 3 x 3 byte taps on one-channel u8 images (issue 13): a
// read-only kernel that folds the exact int32 sums of the filter into one min and max per block, nothing
// stored but the block's partial. The strip kernel's fold mode (convolve_strip.cuh) costs as much as its
// writing pass, in short blocks (one chunk of 8 rows each, 2 halo rows of 10 read again, a shared-memory
// atomic per thread and value); this kernel instead:
//   - gives each thread 16 consecutive outputs along x, read as one 16-byte load per padded row (the byte
//     either side from the neighbouring lanes by shuffle, as in the strip kernel);
//   - walks a tall strip of rows (32 by default) reading every padded row once: the two partial output rows
//     that a padded row finishes and starts stay in registers (p1, p2), the next three padded rows' loads
//     are in flight while one is summed;
//   - folds 16 sums with 8 three-input minimums and 8 maximums (__vimin3_s32 / __vimax3_s32, one DPX
//     instruction each on sm_90), then once per block by warp reductions (__reduce_min_sync);
//   - visits the strips bottom to top, so that the writing pass, which goes top to bottom, finds the rows
//     the fold read last still in L2.
// Per output: 3 dp4a, 3/4 of a funnel shift and one min or max; the sums are the strip kernel's (dp4a of
// the same bytes and taps), exact in int32 (|sum| <= 9 * 128 * 255). Packing the sums into 16-bit pairs
// (__vimin3_s16x2) would not save an instruction: a pair is packed by one PRMT, so 4 outputs cost 2 PRMT, 1
// min and 1 max, the same 1 per output as two 32-bit outputs per three-input min and max.
// The columns whose window leaves the row (0 .. 15 and 16 (groups + 1) .. width - 1) are the edge block's
// (strip_edges), one per strip, last in x.
#pragma once

#include "cuda/convolve_strip.cuh"

namespace gpk::cuda::conv {

constexpr int kFoldCols = 16;               // outputs per thread along x
constexpr int kFoldThreads = kStripThreads; // a block: 128 threads side by side along x
constexpr int kFoldRowsDefault = 32;        // output rows per block (GPK_TEST_CONV_FOLD)

// Interior thread groups g = 1 .. fold_groups(width) cover x0 = 16 g .. 16 g + 15: their windows (x0 - 1 ..
// x0 + 16) lie inside the row.
__host__ __device__ inline long long fold_groups(long long width) {
    return width > kFoldCols + 1 ? (width - kFoldCols - 1) / kFoldCols : 0;
}

// One padded row at a thread's x0: its 16 bytes, and the bytes left (in the top byte) and right of them
// where the thread takes them itself; all zero for a zero-border row.
struct FoldRow {
    uint4 c;
    unsigned left, right;
};

__device__ __forceinline__ FoldRow load_fold_row(const unsigned char *column, const SourceRows &src,
                                                 const StripBorder &bd, long long padded, bool loads_left,
                                                 bool loads_right) {
    FoldRow w{make_uint4(0, 0, 0, 0), 0, 0};
    const long long r = bd.row(padded, src.rows);
    if (r >= 0) {
        const unsigned char *p = column + size_t(r) * src.pitch;
        w.c = __ldg(reinterpret_cast<const uint4 *>(p));
        if (loads_left) w.left = unsigned(__ldg(p - 1)) << 24;
        if (loads_right) w.right = __ldg(p + kFoldCols);
    }
    return w;
}

// min3 / max3 of 16 sums into mn, mx: 8 instructions each, 3 deep.
__device__ __forceinline__ void fold16(int &mn, int &mx, const int (&o)[kFoldCols]) {
    const int a = __vimin3_s32(o[0], o[1], o[2]), b = __vimin3_s32(o[3], o[4], o[5]),
              c = __vimin3_s32(o[6], o[7], o[8]), d = __vimin3_s32(o[9], o[10], o[11]),
              e = __vimin3_s32(o[12], o[13], o[14]);
    mn = __vimin3_s32(mn, __vimin3_s32(a, b, c), __vimin3_s32(d, e, o[15]));
    const int A = __vimax3_s32(o[0], o[1], o[2]), B = __vimax3_s32(o[3], o[4], o[5]),
              C = __vimax3_s32(o[6], o[7], o[8]), D = __vimax3_s32(o[9], o[10], o[11]),
              E = __vimax3_s32(o[12], o[13], o[14]);
    mx = __vimax3_s32(mx, __vimax3_s32(A, B, C), __vimax3_s32(D, E, o[15]));
}

// Adds padded row `w` to the sums: it finishes the output row in p1 (Fold: folded into mn, mx), adds its
// middle taps to the row in p2 (becoming p1) and starts the next (p2). Start: the first padded row (only p2).
template <bool Fold, bool Start>
__device__ __forceinline__ void fold_step(const FoldRow &row, bool loads_left, bool loads_right,
                                          const ByteTaps<3> &taps, int (&p1)[kFoldCols], int (&p2)[kFoldCols],
                                          int &mn, int &mx) {
    // Bytes x0 - 4 .. x0 + 19 as words: x0 - 1 is the top byte of w[0], x0 + 16 the low byte of w[5].
    unsigned w[6] = {0, row.c.x, row.c.y, row.c.z, row.c.w, 0};
    const unsigned from_left = __shfl_up_sync(0xFFFFFFFFu, w[4], 1);
    const unsigned from_right = __shfl_down_sync(0xFFFFFFFFu, w[1], 1);
    w[0] = loads_left ? row.left : from_left;
    w[5] = loads_right ? row.right : from_right;
    int o[kFoldCols];
#pragma unroll
    for (int j = 0; j < kFoldCols; ++j) {
        const int at = 3 + j, wi = at / 4, bits = 8 * (at % 4);
        const unsigned v = bits ? __funnelshift_r(w[wi], w[wi + 1], bits) : w[wi];
        if (Fold) o[j] = dot4_u8s8(v, taps.w[2], p1[j]);
        if (!Start) p1[j] = dot4_u8s8(v, taps.w[1], p2[j]);
        p2[j] = dot4_u8s8(v, taps.w[0], 0);
    }
    if (Fold) fold16(mn, mx, o);
}

// The interior: thread group g = blockIdx.x * 128 + threadIdx.x + 1. Threads past the last group take the
// last group's bytes and outputs (real outputs: folding them again changes nothing). A lane takes the byte
// left or right of its 16 itself where its neighbour lane does not hold it (the warp's ends, the last
// group and those past it).
__device__ __forceinline__ void fold_interior(int &mn, int &mx, const SourceRows &src,
                                              const ByteTaps<3> &taps, const StripBorder &bd, int y0,
                                              int y_end, long long groups) {
    const long long g = (long long)blockIdx.x * kFoldThreads + threadIdx.x + 1;
    const long long x0 = kFoldCols * (g <= groups ? g : groups);
    const int lane = threadIdx.x % 32;
    const bool loads_left = lane == 0 || g > groups, loads_right = lane == 31 || g >= groups;
    const unsigned char *column = reinterpret_cast<const unsigned char *>(src.base) + x0;
    const long long first = src.row0 + y0; // padded row 0 (before the border rule)
    const int last = y_end - y0 + 1;       // the strip's last padded row
    auto load = [&](int i) {
        return load_fold_row(column, src, bd, first + min(i, last), loads_left, loads_right);
    };
    int p1[kFoldCols], p2[kFoldCols];
    // Padded row i is in r[i % 3]; three rows are in flight while one is summed.
    FoldRow r0 = load(0), r1 = load(1), r2 = load(2);
    fold_step<false, true>(r0, loads_left, loads_right, taps, p1, p2, mn, mx);
    r0 = load(3);
    fold_step<false, false>(r1, loads_left, loads_right, taps, p1, p2, mn, mx);
    r1 = load(4);
#pragma unroll 1
    for (int i = 2; i <= last; i += 3) {
        fold_step<true, false>(r2, loads_left, loads_right, taps, p1, p2, mn, mx);
        r2 = load(i + 3);
        if (i + 1 > last) break;
        fold_step<true, false>(r0, loads_left, loads_right, taps, p1, p2, mn, mx);
        r0 = load(i + 4);
        if (i + 2 > last) break;
        fold_step<true, false>(r1, loads_left, loads_right, taps, p1, p2, mn, mx);
        r1 = load(i + 5);
    }
}

// The block's min and max into its partial (min[4], max[4] as Output::partials holds them; channel 0).
__device__ __forceinline__ void write_fold_partial(int mn, int mx, const Output &o) {
    __shared__ int s_mm[2][kFoldThreads / 32];
    mn = __reduce_min_sync(0xFFFFFFFFu, mn);
    mx = __reduce_max_sync(0xFFFFFFFFu, mx);
    if (threadIdx.x % 32 == 0) {
        s_mm[0][threadIdx.x / 32] = mn;
        s_mm[1][threadIdx.x / 32] = mx;
    }
    __syncthreads();
    if (threadIdx.x < 8) {
        const int i = threadIdx.x;
        mn = s_mm[0][0], mx = s_mm[1][0];
#pragma unroll
        for (int k = 1; k < kFoldThreads / 32; ++k) mn = min(mn, s_mm[0][k]), mx = max(mx, s_mm[1][k]);
        long long v = i < 4 ? LLONG_MAX : LLONG_MIN; // channels 1..3, or no output at all
        if (mn <= mx && i == 0) v = mn;
        if (mn <= mx && i == 4) v = mx;
        o.partials[8 * (size_t(blockIdx.y) * gridDim.x + blockIdx.x) + i] = (unsigned long long)v;
    }
}

// Grid: x covers the interior groups in blocks of 128, then one edge block; y the band's output rows in
// strips of `strip_rows`, visited bottom to top where `reverse`.
__global__ void __launch_bounds__(kFoldThreads, 6)
    conv3x3_u8_fold_kernel(SourceRows src, Shape sh, Output out, ByteTaps<3> taps, StripBorder bd,
                           int strip_rows, long long groups, bool reverse) {
    const int strip = reverse ? int(gridDim.y - 1 - blockIdx.y) : int(blockIdx.y);
    const int y0 = strip * strip_rows;
    const int y_end = min(y0 + strip_rows, sh.out_rows);
    int mn = INT_MAX, mx = INT_MIN;
    if (blockIdx.x == gridDim.x - 1) {
        StripFinish<StripMode::fold, false, StripDiv::none> f{};
        strip_edges(f, src, sh, out, taps, bd, y0, y_end, groups, kFoldCols);
        mn = f.fold_mn, mx = f.fold_mx;
    } else {
        fold_interior(mn, mx, src, taps, bd, y0, y_end, groups);
    }
    write_fold_partial(mn, mx, out);
}

} // namespace gpk::cuda::conv
