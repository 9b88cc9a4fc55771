// K x K filters (K = 3, 5, 7, 9) whose taps are an exact rank-1 product of integers, taps[a][b] = r[a] * c[b]
// (box filters, binomial filters; found exactly on the host, direct.cu), on one-channel u8 images.
// The strip kernel's layout (strip.cuh): each thread computes 8 consecutive outputs along x down
// a strip of rows, reading each padded row once with one 8-byte load and taking 4 bytes either side from
// its neighbouring lanes. Per padded row and output it forms the row sum h = sum_b c[b] x (dp4a on the
// row's bytes shifted into place, c as signed bytes), then adds r[a] h into the K output rows the padded
// row belongs to: K + (K + 3) / 4 operations an output and padded row instead of the 2D kernel's K (K + 3)
// / 4 dp4a. Integer sums are exact in any order, so every output is the 2D filter's sum, bit for bit, and
// finishes the same way (Rank1Finisher below; the box kernel, box.cuh, shares the body with StripFinish).
// The columns whose 4-byte neighbour words leave the row are one extra block per strip, output by output
// through the border rule.
#pragma once

#include "cuda/convolve/strip.cuh"

namespace gpk::cuda::conv {

// r[a] and the column taps c as signed bytes, four to a word, zero past K.
template <int K> struct Rank1Taps {
    int r[K];
    int c[(K + 3) / 4];
};

// Column tap b: the signed byte b of c.
template <int K> __host__ __device__ inline int rank1_col(const Rank1Taps<K> &taps, int b) {
    return int((signed char)(taps.c[b / 4] >> (8 * (b % 4))));
}

// Interior groups g = 1 .. rank1_groups(width) cover x0 = 8 g .. 8 g + 7 and read the words x0 - 4 .. x0 +
// 11, all inside the row.
__host__ __device__ inline long long rank1_groups(long long width) {
    return width >= 20 ? (width - 12) / kStripCols : 0;
}

template <int K, int C, class F>
__device__ __forceinline__ void rank1_interior(F &f, const SourceRows &src, const Shape &sh,
                                               const Output &out, const Rank1Taps<K> &taps, int y0, int y_end,
                                               long long groups, bool out_aligned) {
    constexpr int R = K / 2, G = (K + 3) / 4;
    const long long g = (long long)blockIdx.x * kStripThreads + threadIdx.x + 1;
    const bool active = g <= groups;
    const long long x0 = kStripCols * (active ? g : groups);
    const int lane = threadIdx.x % 32;
    const bool loads_right = lane == 31 || g >= groups; // its right neighbour is not the next 8 bytes
    const unsigned char *column = reinterpret_cast<const unsigned char *>(src.base) + x0;
#pragma unroll 1
    for (int c0 = y0; c0 < y_end; c0 += C) {
        int acc[C][kStripCols];
#pragma unroll
        for (int i = 0; i < C + K - 1; ++i) {
            // Padded row c0 + i as words: bytes x0 - 4 .. x0 + 11 (win[4] only meets zero taps).
            const long long r = border_index(src.row0 + c0 + i, src.rows, sh.border);
            unsigned w[4];
            load_strip_row<true>(w, column + size_t(r < 0 ? 0 : r) * src.pitch, r >= 0, lane, loads_right);
            const unsigned win[5] = {w[0], w[1], w[2], w[3], 0u};
#pragma unroll
            for (int j = 0; j < kStripCols; ++j) {
                int h = 0;
#pragma unroll
                for (int q = 0; q < G; ++q) {
                    const int at = 4 + j - R + 4 * q, wi = at / 4, bits = 8 * (at % 4);
                    const unsigned v = bits ? __funnelshift_r(win[wi], win[wi + 1], bits) : win[wi];
                    h = dot4_u8s8(v, taps.c[q], h);
                }
#pragma unroll
                for (int a = 0; a < K; ++a) {
                    const int row = i - a; // output row c0 + row takes filter row a from this padded row
                    if (row >= 0 && row < C) acc[row][j] = (a == 0 ? f.init() : acc[row][j]) + taps.r[a] * h;
                }
            }
            const int done = i - (K - 1);
            if (done < 0 || c0 + done >= y_end) continue;
            finish_strip_row(f, acc[done], active, out, c0 + done, x0, out_aligned);
        }
    }
}

// Output (x, y) of an edge column, less f.init(), every tap through the border rule. Not inlined: the
// kernels of a file share one copy, and the border rule's cases stay one call instead of copies of the
// K x K unrolled taps in each of them.
template <int K>
__device__ __noinline__ int rank1_edge_sum(SourceRows src, Shape sh, Rank1Taps<K> taps, long long x, int y) {
    constexpr int R = K / 2;
    long long m[K];
#pragma unroll
    for (int b = 0; b < K; ++b) m[b] = border_index(x + b - R, sh.width, sh.border);
    int n = 0;
#pragma unroll
    for (int a = 0; a < K; ++a) {
        const long long r = border_index(src.row0 + y + a, src.rows, sh.border);
        if (r < 0) continue;
        const unsigned char *row = reinterpret_cast<const unsigned char *>(src.base) + size_t(r) * src.pitch;
        int h = 0;
#pragma unroll
        for (int b = 0; b < K; ++b)
            if (m[b] >= 0) h += int(__ldg(row + m[b])) * rank1_col(taps, b);
        n += taps.r[a] * h;
    }
    return n;
}

// The edge block of a strip (rows narrower than 20 entirely).
template <int K, class F>
__device__ __forceinline__ void rank1_edges(F &f, const SourceRows &src, const Shape &sh, const Output &out,
                                            const Rank1Taps<K> &taps, int y0, int y_end, long long groups) {
    strip_edge_outputs(f, sh, out, y0, y_end, groups,
                       [&](long long x, int y) { return f.init() + rank1_edge_sum<K>(src, sh, taps, x, y); });
}

// How a written sum of the rank-1 kernel ends: a multiply-high (taps >= 0 divided by their sum, a divider
// whose shift is 32; the sum starts from half the divisor), the form of every smoothing filter, in a kernel
// of its own; the rarer forms share one kernel a K and choose at launch between clamping to 255
// (normalisation none, or a tap sum of 1) and finish_u8<true> (signed taps), a branch the same for every
// thread.
template <bool Mulhi> struct Rank1Finisher {
    static constexpr StripMode mode = StripMode::divide;
    U8Divider dv;
    bool is_signed; // !Mulhi: finish_u8<true>, else clamped

    __device__ __forceinline__ int init() const { return Mulhi ? int(dv.half) : 0; }
    __device__ __forceinline__ int out(int n) const {
        if constexpr (Mulhi)
            return int(__umulhi(unsigned(n), dv.magic)); // <= 255: (255 d + d / 2) / d < 256
        else
            return is_signed ? finish_u8<true>(n, dv) : min(n, 255);
    }
};

// The body of a strip kernel with rank-1 taps (written sums), finished by f: the last block of x takes the
// strip's edge columns, the others interior(f, y0, y_end).
template <int K, class F, class Interior>
__device__ __forceinline__ void rank1_strip_body(F &f, const SourceRows &src, const Shape &sh,
                                                 const Output &out, const Rank1Taps<K> &taps, int strip_rows,
                                                 long long groups, const Interior &interior) {
    static_assert(F::mode == StripMode::divide, "the passes of min/max take the 3 x 3 or the direct kernels");
    const int y0 = blockIdx.y * strip_rows;
    const int y_end = min(y0 + strip_rows, sh.out_rows);
    if (blockIdx.x == gridDim.x - 1)
        rank1_edges<K>(f, src, sh, out, taps, y0, y_end, groups);
    else
        interior(f, y0, y_end);
}

// Grid: x covers the interior groups in blocks of 128, then one edge block; y the band's output rows in
// strips of `strip_rows` (whole chunks of C rows). The source base and pitch are multiples of 8;
// `out_aligned`: so are the output's. min(K, C) rows of 8 sums are live at a time: in chunks of 8, 3 x 3
// fits 64 registers a thread, 5 x 5 85, 7 and 9 128; in chunks of 4, 7 and 9 fit 85.
template <int K, int C, bool Mulhi>
__global__ void __launch_bounds__(kStripThreads, C <= 4 ? (K <= 5 ? 8 : 6) : (K <= 3 ? 8 : (K <= 5 ? 6 : 4)))
    conv_rank1_u8_strip_kernel(SourceRows src, Shape sh, Output out, Rank1Taps<K> taps,
                               Rank1Finisher<Mulhi> f, int strip_rows, long long groups, bool out_aligned) {
    rank1_strip_body<K>(f, src, sh, out, taps, strip_rows, groups, [&](auto &fin, int y0, int y_end) {
        rank1_interior<K, C>(fin, src, sh, out, taps, y0, y_end, groups, out_aligned);
    });
}

} // namespace gpk::cuda::conv
