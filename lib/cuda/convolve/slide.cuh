// Square K x K filters (K odd, up to 9; built for 5, 7 and 9) on one-channel f32 images with f32 sums,
// normalisation none or sum, written (not folded): a warp owns a band of 128 columns (four outputs a lane,
// one 16-byte load of each padded row) and walks down a strip of rows with a register window. Padded row r
// adds its K x 4 products to the K output rows whose windows hold it (accumulator slot s takes filter row K -
// 1 - s), then slot 0 (complete: it has seen filter rows 0 .. K - 1 in order) is stored and the slots shift
// by one. Every output is therefore summed exactly as conv2d_f32x4_kernel and conv2d_kernel sum it: from 0,
// filter row a = 0 .. K - 1, tap b = 0 .. K - 1 within it, one fused multiply-add each; the same bits. No
// shared memory: a lane's halo (the K / 2 elements either side) comes from its neighbours by shuffle (or by
// two more loads, LoadHalo), the warp's own edges from lanes 31 and 0; elements outside the row follow the
// border rule. The next D padded rows are loaded while one is computed, so that enough bytes are in flight
// per SM without shared memory or barriers. The first K - 1 rows of a strip also feed slots of outputs above
// the strip: their sums are never stored.
#pragma once

#include "cuda/convolve/kernels.cuh"

namespace gpk::cuda::conv {

constexpr int kSlideWarps = 4;     // warps per block, side by side along x
constexpr int kSlideBand = 4 * 32; // elements a warp owns along x
constexpr int kSlideThreads = 32 * kSlideWarps;
constexpr int kSlideMaxK = 9; // a lane's halo is at most one neighbour's 4 elements

// Rows, widths and indices fit an int (kSlideMaxIndex, checked by the launcher): the border rule then needs
// no 64-bit division, whose subroutine call cost the kernel some 20 registers.
constexpr int kSlideMaxIndex = 1 << 30;

// What a lane needs of the image, in int.
struct SlideGeometry {
    int width, rows, row0, border;
};

// One padded row as a lane holds it before the window is assembled: pieces of four elements each. Shuffled
// halo: c = the lane's four, h = the warp's left halo (lane 31 only) or right halo (lane 0 only). Loaded
// halo: c, l, r = the four, the four before, the four after.
template <bool LoadHalo> struct SlideRow {
    static constexpr int kPieces = LoadHalo ? 3 : 2;
    float4 p[kPieces];
};

// Where piece q of lane `lane` (first element e) starts: c at e; h at e + 128 (lane 0) or e - 128 (lane
// 31); l at e - 4, r at e + 4.
template <bool LoadHalo> __device__ __forceinline__ int slide_piece_x(int q, int e, int lane) {
    if (q == 0) return e;
    if (LoadHalo) return q == 1 ? e - 4 : e + 4;
    return lane == 0 ? e + kSlideBand : e - kSlideBand;
}

// What a lane knows of its pieces, set once: which ones are whole 16-byte loads (inside the row: the row
// start is 16-byte aligned), and for the others the column each element reads after the horizontal border
// rule (-1: zero), in shared memory, so that the border rule takes no registers in the row loop.
template <bool LoadHalo> struct SlideLane {
    static constexpr int kPieces = SlideRow<LoadHalo>::kPieces;
    int lane, e;
    unsigned inside; // bit q: piece q is one load
    const int *cols; // 4 kPieces columns of this thread (only its own: no barrier)

    __device__ __forceinline__ SlideLane(int lane_, int e_, const SlideGeometry &g, int *mine)
        : lane(lane_), e(e_), inside(0), cols(mine) {
#pragma unroll
        for (int q = 0; q < kPieces; ++q) {
            const int x = slide_piece_x<LoadHalo>(q, e, lane);
            if (x >= 0 && x + 4 <= g.width)
                inside |= 1u << q;
            else
                for (int j = 0; j < 4; ++j) mine[4 * q + j] = border_index_of<int>(x + j, g.width, g.border);
        }
    }

    // Whether this lane loads piece q (h: lanes 0 and 31 only).
    __device__ __forceinline__ bool loads(int q) const {
        return LoadHalo || q == 0 || lane == 0 || lane == 31;
    }
};

// Padded row `padded` of the lane's pieces (zeros for a row of the zero border).
template <bool LoadHalo>
__device__ __forceinline__ SlideRow<LoadHalo> slide_fetch(const SourceRows &src, const SlideGeometry &g,
                                                          const SlideLane<LoadHalo> &ln, int padded) {
    SlideRow<LoadHalo> row{};
    const int s = border_index_of<int>(g.row0 + padded, g.rows, g.border);
    if (s < 0) return row;
    const float *p = reinterpret_cast<const float *>(src.base + size_t(s) * src.pitch);
#pragma unroll
    for (int q = 0; q < SlideRow<LoadHalo>::kPieces; ++q) {
        if (!ln.loads(q)) continue;
        if (ln.inside >> q & 1) {
            row.p[q] = __ldg(reinterpret_cast<const float4 *>(p + slide_piece_x<LoadHalo>(q, ln.e, ln.lane)));
        } else {
            float v[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int m = ln.cols[4 * q + j];
                v[j] = m < 0 ? 0.f : __ldg(p + m);
            }
            row.p[q] = make_float4(v[0], v[1], v[2], v[3]);
        }
    }
    return row;
}

__device__ __forceinline__ float slide_part(const float4 &v, int i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// The K + 3 elements e - K/2 .. e + 3 + (K - 1 - K/2) that the lane's four outputs read.
template <int K, bool LoadHalo>
__device__ __forceinline__ void slide_window(const SlideRow<LoadHalo> &row, int lane, float (&v)[K + 3]) {
    constexpr int RL = K / 2, RR = K - 1 - RL;
    const float4 &c = row.p[0];
#pragma unroll
    for (int j = 0; j < 4; ++j) v[RL + j] = slide_part(c, j);
    if constexpr (LoadHalo) {
#pragma unroll
        for (int i = 0; i < RL; ++i) v[i] = slide_part(row.p[1], 4 - RL + i);
#pragma unroll
        for (int i = 0; i < RR; ++i) v[RL + 4 + i] = slide_part(row.p[2], i);
    } else {
        // Lane L's left halo is lane L - 1's last elements; lane 0's comes from lane 31's h. Its right halo
        // is lane L + 1's first elements; lane 31's comes from lane 0's h.
        const float4 to_right = lane == 31 ? row.p[1] : c, to_left = lane == 0 ? row.p[1] : c;
        const int from_left = (lane + 31) & 31, from_right = (lane + 1) & 31;
#pragma unroll
        for (int i = 0; i < RL; ++i)
            v[i] = __shfl_sync(0xFFFFFFFFu, slide_part(to_right, 4 - RL + i), from_left);
#pragma unroll
        for (int i = 0; i < RR; ++i)
            v[RL + 4 + i] = __shfl_sync(0xFFFFFFFFu, slide_part(to_left, i), from_right);
    }
}

// Writes one output row's four sums of the lane (those inside the row).
__device__ __forceinline__ void slide_store(const float (&acc)[4], const Output &o, int y, int e, int width,
                                            bool out_aligned) {
    float r[4];
    const bool by_sum = o.normalize == GPK_NORMALIZE_SUM;
    const float dsum = float(o.dsum);
#pragma unroll
    for (int j = 0; j < 4; ++j) r[j] = by_sum ? acc[j] / dsum : acc[j];
    float *p = reinterpret_cast<float *>(o.base + size_t(y) * o.pitch) + e;
    if (out_aligned && e + 4 <= width) {
        __stcs(reinterpret_cast<float4 *>(p), make_float4(r[0], r[1], r[2], r[3]));
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
            if (e + j < width) p[j] = r[j];
    }
}

// Block: kSlideWarps warps, warp w owning band blockIdx.x * kSlideWarps + w; blockIdx.y: a strip of
// `strip_rows` output rows. D: padded rows loaded ahead. MinBlocks > 1 caps the registers so that that many
// blocks fit an SM (__launch_bounds__). Needs src rows 16-byte aligned (base and pitch) and rows, width and
// row0 within kSlideMaxIndex. out_aligned: out base and pitch are multiples of 16 bytes (then evict-first
// 16-byte stores).
template <int K, int D, bool LoadHalo, int MinBlocks>
__global__ void __launch_bounds__(kSlideThreads, MinBlocks)
    conv2d_f32_slide_kernel(SourceRows src, Shape sh, Output out, Taps<float, K * K> taps, int strip_rows,
                            bool out_aligned) {
    static_assert(K % 2 == 1 && K <= kSlideMaxK, "odd K up to 9");
    static_assert(D >= 1 && MinBlocks >= 1, "at least the next row ahead, at least one block");
    const int lane = threadIdx.x;
    const SlideGeometry g{int(sh.width), int(src.rows), int(src.row0), sh.border};
    const int e0 = (int(blockIdx.x) * kSlideWarps + int(threadIdx.y)) * kSlideBand;
    if (e0 >= g.width) return; // the whole warp
    const int e = e0 + 4 * lane;
    __shared__ int cols[kSlideThreads * 4 * SlideRow<LoadHalo>::kPieces];
    const SlideLane<LoadHalo> ln(lane, e, g,
                                 cols + (threadIdx.y * 32 + lane) * 4 * SlideRow<LoadHalo>::kPieces);
    const int ys = blockIdx.y * strip_rows;
    const int total = min(strip_rows, sh.out_rows - ys) + K - 1; // padded rows ys .. ys + total - 1

    SlideRow<LoadHalo> ahead[D];
#pragma unroll
    for (int d = 0; d < D; ++d)
        if (d < total) ahead[d] = slide_fetch<LoadHalo>(src, g, ln, ys + d);
    float acc[K][4];
#pragma unroll
    for (int s = 0; s < K; ++s)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[s][j] = 0.f;

#pragma unroll 1
    for (int r = 0; r < total; ++r) {
        const SlideRow<LoadHalo> row = ahead[0];
#pragma unroll
        for (int d = 0; d + 1 < D; ++d) ahead[d] = ahead[d + 1];
        if (r + D < total) ahead[D - 1] = slide_fetch<LoadHalo>(src, g, ln, ys + r + D);
        float v[K + 3];
        slide_window<K, LoadHalo>(row, lane, v);
        // Slot s holds output row ys + r - (K - 1) + s, to which padded row r is filter row K - 1 - s.
#pragma unroll
        for (int s = 0; s < K; ++s)
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int b = 0; b < K; ++b)
                    acc[s][j] = __fmaf_rn(v[j + b], taps.t[(K - 1 - s) * K + b], acc[s][j]);
        if (r >= K - 1) slide_store(acc[0], out, ys + r - (K - 1), e, g.width, out_aligned);
#pragma unroll
        for (int s = 0; s + 1 < K; ++s)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[s][j] = acc[s + 1][j];
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[K - 1][j] = 0.f;
    }
}

} // namespace gpk::cuda::conv
