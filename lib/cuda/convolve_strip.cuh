// Square 3 and 5 tap filters on one-channel u8 images, without shared memory: each thread computes NB
// consecutive outputs along x for a strip of output rows, reading every padded row of its strip once
// (NB bytes with one vector load, plus the words left and right of them, which its neighbours have just
// brought into L1) and keeping the K rows of outputs in flight as int accumulators that each padded row adds
// its K filter rows to. The next K padded rows are loaded while the current K are computed. Sums are exact
// ints through dp4a (taps as signed bytes); the same kernel writes sums normalised by none or sum, folds
// min and max (first pass of min/max normalisation) or writes min/max-normalised sums (second pass).
#pragma once

#include "cuda/convolve_vector.cuh"

namespace gpk::cuda::conv {

enum class StripMode { divide, fold, minmax };

constexpr int kStripThreads = 128; // a block: 128 threads side by side along x
// Blocks per SM the register allocation must allow: 3 taps fit 80 registers without spilling (6 blocks, 24
// warps an SM); 5 taps would spill, so they keep what they need.
constexpr int strip_min_blocks(int k) {
    return k == 3 ? 6 : 1;
}

// The padded row around a thread's NB outputs as NB / 4 + 2 words: bytes x0 - 4 .. x0 + NB + 3 (the
// caller's outputs are x0 .. x0 + NB - 1). Word WW (one past the end) reads as zero.
template <int NB> struct Window {
    static constexpr int WW = NB / 4 + 2;
    unsigned w[WW];
    __device__ __forceinline__ unsigned word(int i) const { return i < WW ? w[i] : 0u; }
};

// (x - mn) * 255 / den truncated (Finisher::minmax for sums whose (x - mn) * 255 fits 32 bits): a float
// quotient, off by at most one, put right by the remainder.
__device__ __forceinline__ int minmax_u8(int x, int mn, int den, float inv_den) {
    if (den == 0) return 0;
    unsigned num = unsigned(x - mn) * 255u;
    int q = int(__float2uint_rz(__uint2float_rz(num) * inv_den));
    int r = int(num) - q * den;
    if (r < 0)
        --q;
    else if (r >= den)
        ++q;
    return q;
}

// Stores NB u8 outputs at row[x0..]: one vector store where whole and aligned, else byte by byte.
template <int NB>
__device__ __forceinline__ void store_strip(const int (&b)[NB], char *row, long long x0, long long width,
                                            bool aligned) {
    unsigned char *p = reinterpret_cast<unsigned char *>(row) + x0;
    if (aligned && x0 + NB <= width) {
        unsigned w[NB / 4];
#pragma unroll
        for (int q = 0; q < NB / 4; ++q)
            w[q] = __byte_perm(__byte_perm(b[4 * q], b[4 * q + 1], 0x0040),
                               __byte_perm(b[4 * q + 2], b[4 * q + 3], 0x0040), 0x5410);
        *reinterpret_cast<uint2 *>(p) = make_uint2(w[0], w[1]);
    } else {
#pragma unroll
        for (int j = 0; j < NB; ++j)
            if (x0 + j < width) p[j] = (unsigned char)b[j];
    }
}

// What a strip's rows are turned into: the sums of output rows, in a ring of K accumulators
// (acc[(y - y0) % K] holds output row y while padded rows y .. y + K - 1 come in), and the finished rows
// written, or folded into min and max.
template <int K, int NB, StripMode M, bool Signed> struct StripRows {
    static constexpr int R = K / 2, G = (K + 3) / 4;
    int acc[K][NB];
    int fold_mn = INT_MAX, fold_mx = INT_MIN;
    int mn = 0, den = 0;
    float inv_den = 0.f;

    // Padded row y0 + i (i % K == S, a constant once unrolled) adds filter row a to output row y0 + i - a;
    // output row y0 + i - (K - 1) is then complete.
    __device__ __forceinline__ void add(int S, const Window<NB> &win, int i, int y0, long long x0,
                                        const Shape &sh, const Output &out, const ByteTaps<K> &taps,
                                        const U8Divider &dv, bool out_aligned) {
#pragma unroll
        for (int j = 0; j < NB; ++j) {
#pragma unroll
            for (int g = 0; g < G; ++g) {
                constexpr int lead = 4 - R;
                const int at = lead + j + 4 * g, wi = at / 4, sh8 = 8 * (at % 4);
                const unsigned v = sh8 ? __funnelshift_r(win.word(wi), win.word(wi + 1), sh8) : win.word(wi);
#pragma unroll
                for (int a = 0; a < K; ++a) {
                    const int slot = (S - a + K) % K;
                    acc[slot][j] = dot4_u8s8(v, taps.w[a * G + g], (a == 0 && g == 0) ? 0 : acc[slot][j]);
                }
            }
        }
        const int done = i - (K - 1);
        if (done < 0) return;
        const int slot = (S + 1) % K;
        if constexpr (M == StripMode::fold) {
#pragma unroll
            for (int j = 0; j < NB; ++j)
                if (x0 + j < sh.width)
                    fold_mn = min(fold_mn, acc[slot][j]), fold_mx = max(fold_mx, acc[slot][j]);
        } else {
            int b[NB];
#pragma unroll
            for (int j = 0; j < NB; ++j)
                b[j] = M == StripMode::minmax ? minmax_u8(acc[slot][j], mn, den, inv_den)
                                              : finish_u8<Signed>(acc[slot][j], dv);
            store_strip<NB>(b, out.base + size_t(y0 + done) * out.pitch, x0, sh.width, out_aligned);
        }
    }
};

// The NB bytes at row + x0 and the words either side of them (all inside the row): three loads.
template <int NB>
__device__ __forceinline__ void load_inside(Window<NB> &win, const unsigned char *row, long long x0) {
    const unsigned *mid = reinterpret_cast<const unsigned *>(row + x0);
    win.w[0] = __ldg(mid - 1);
    static_assert(NB == 8, "8 outputs per thread (16 measured slower, bench/RESULTS.md)");
    uint2 c = __ldg(reinterpret_cast<const uint2 *>(mid));
    win.w[1] = c.x, win.w[2] = c.y;
    win.w[Window<NB>::WW - 1] = __ldg(mid + NB / 4);
}

// The same window for a thread at an end of the row: words inside the row are loaded whole, the others
// byte by byte through the border rule (in a loop that is not unrolled, so that its index arithmetic does
// not raise every thread's registers).
template <int NB>
__device__ __forceinline__ void load_edge(Window<NB> &win, const unsigned char *row, long long x0,
                                          const Shape &sh) {
#pragma unroll
    for (int i = 0; i < Window<NB>::WW; ++i) {
        const long long c = x0 - 4 + 4 * i;
        if (c >= 0 && c + 4 <= sh.width) {
            win.w[i] = __ldg(reinterpret_cast<const unsigned *>(row + c));
            continue;
        }
        unsigned v = 0;
#pragma unroll 1
        for (int b = 0; b < 4; ++b) {
            long long m = border_index(c + b, sh.width, sh.border);
            if (m >= 0) v |= unsigned(row[m]) << (8 * b);
        }
        win.w[i] = v;
    }
}

template <int NB>
__device__ __forceinline__ void load_any(Window<NB> &win, const unsigned char *row, long long x0, bool edge,
                                         const Shape &sh) {
    if (edge)
        load_edge(win, row, x0, sh);
    else
        load_inside(win, row, x0);
}

// Padded row p of the band (the border rule applied to the row) around x0. Not inlined: the strips that take
// it are few, and inlined it would raise the registers of every thread.
template <int NB>
__device__ __noinline__ void load_window(Window<NB> &win, long long p, long long x0, bool edge,
                                         const SourceRows &src, const Shape &sh) {
    long long srow = border_index(src.row0 + p, src.rows, sh.border);
    if (srow < 0) {
#pragma unroll
        for (int i = 0; i < Window<NB>::WW; ++i) win.w[i] = 0;
        return;
    }
    load_any(win, reinterpret_cast<const unsigned char *>(src.base + size_t(srow) * src.pitch), x0, edge, sh);
}

// Grid: x covers the row in runs of kStripThreads * NB bytes, y the band's output rows in strips of
// `strip_rows`. The source base and pitch are multiples of NB; `out_aligned`: so are the output's. Threads
// inside the image take a loop of plain row addresses with K rows loaded ahead of the K being added; the
// ends of rows and strips at the top and bottom apply the border rule row by row.
template <int K, int NB, StripMode M, bool Signed>
__global__ void __launch_bounds__(kStripThreads, strip_min_blocks(K))
    conv2d_u8_strip_kernel(SourceRows src, Shape sh, Output out, ByteTaps<K> taps, U8Divider dv,
                           int strip_rows, bool out_aligned) {
    static_assert(K / 2 <= 4, "the window holds 4 bytes on each side");
    const long long x0 = ((long long)blockIdx.x * kStripThreads + threadIdx.x) * NB;
    const int y0 = blockIdx.y * strip_rows;
    const int y_end = min(y0 + strip_rows, sh.out_rows);
    const bool active = x0 < sh.width;
    const int steps = active ? y_end - y0 + K - 1 : 0; // padded rows y0 .. y_end + K - 2

    StripRows<K, NB, M, Signed> rows;
#pragma unroll
    for (int r = 0; r < K; ++r)
#pragma unroll
        for (int j = 0; j < NB; ++j) rows.acc[r][j] = 0;
    if constexpr (M == StripMode::minmax) {
        rows.mn = int(out.imm[0]);
        rows.den = int(out.imm[4] - out.imm[0]);
        rows.inv_den = rows.den > 0 ? 1.0f / float(rows.den) : 0.f;
    }

    // The source is aligned to NB bytes (launch_strip). Threads whose window leaves the row (the ends of
    // rows) and strips whose rows leave the band take the border rule row by row.
    const bool edge = !(x0 >= 4 && x0 + NB + 4 <= sh.width);
    const bool rows_inside = src.row0 + y0 >= 0 && src.row0 + y0 + steps <= src.rows;
    if (active && rows_inside && !edge) {
        const unsigned char *row0 =
            reinterpret_cast<const unsigned char *>(src.base) + size_t(src.row0 + y0) * src.pitch;
        Window<NB> a[K], b[K];
#pragma unroll
        for (int s = 0; s < K; ++s)
            if (s < steps) load_inside(a[s], row0 + size_t(s) * src.pitch, x0);
        for (int base = 0; base < steps; base += 2 * K) {
#pragma unroll
            for (int s = 0; s < K; ++s)
                if (base + K + s < steps) load_inside(b[s], row0 + size_t(base + K + s) * src.pitch, x0);
#pragma unroll
            for (int s = 0; s < K; ++s)
                if (base + s < steps) rows.add(s, a[s], base + s, y0, x0, sh, out, taps, dv, out_aligned);
#pragma unroll
            for (int s = 0; s < K; ++s)
                if (base + 2 * K + s < steps)
                    load_inside(a[s], row0 + size_t(base + 2 * K + s) * src.pitch, x0);
#pragma unroll
            for (int s = 0; s < K; ++s)
                if (base + K + s < steps)
                    rows.add(s, b[s], base + K + s, y0, x0, sh, out, taps, dv, out_aligned);
        }
    } else if (active) {
#pragma unroll 1
        for (int base = 0; base < steps; base += K) {
#pragma unroll
            for (int s = 0; s < K; ++s) {
                if (base + s >= steps) break;
                Window<NB> win;
                load_window(win, y0 + base + s, x0, edge, src, sh);
                rows.add(s, win, base + s, y0, x0, sh, out, taps, dv, out_aligned);
            }
        }
    }
    if constexpr (M == StripMode::fold)
        fold_minmax<int>(rows.fold_mn <= rows.fold_mx, rows.fold_mn, rows.fold_mx, 0, out);
}

} // namespace gpk::cuda::conv
