// 3 x 3 filters on one-channel u8 images, without shared memory. Each thread of an interior block computes
// 8 consecutive outputs along x down a strip of rows: it reads each padded row with one 8-byte load, takes
// the byte left of its 8 and the byte right of them from its neighbours in the warp (shuffles; the lanes
// at the ends of the warp load that one byte), and adds the row to the three output rows it belongs to
// (dp4a on the row's bytes shifted into place, taps as signed bytes). Rows go in chunks of C output rows,
// unrolled, so that every accumulator, shift and store is known at compile time and the row's loads are
// issued ahead of its sums. Interior threads never meet the row's ends: the columns whose window leaves
// the row are computed by one extra block per strip, output by output through the border rule, so that no
// warp of the interior diverges. The same kernel writes sums normalised by none or sum, folds min and max
// (first pass of min/max normalisation) or writes min/max-normalised sums (second pass).
#pragma once

#include "cuda/convolve/vector.cuh"

namespace gpk::cuda::conv {

enum class StripMode { divide, fold, minmax };

// How the divide mode finishes a sum of taps that are all >= 0 (the sum holds half of the divisor from the
// start): as it is (normalisation none, or a tap sum of 1) or a multiply-high (a divider whose shift is 32,
// which every sum of 3 x 3 byte taps has: magic * d - 2^32 < d <= 1143 and the largest sum + half is below
// 2^19, so their product stays below 2^32). Signed taps take finish_u8<true>.
enum class StripDiv { none, mulhi };

constexpr int kStripThreads = 128; // a block: 128 threads side by side along x
constexpr int kStripCols = 8;      // outputs per thread along x
constexpr int kStripChunk = 8;     // output rows per unrolled pass down the strip (rank-1; 3 x 3: C)

// Interior thread groups g = 1 .. strip_groups(width) cover x0 = 8 g .. 8 g + 7: their windows (x0 - 1 ..
// x0 + 8) lie inside the row. Columns 0 .. 7 and those from 8 (groups + 1) on are the edge block's.
__host__ __device__ inline long long strip_groups(long long width) {
    return width > 9 ? (width - 9) / kStripCols : 0;
}

// The border rule where the strip kernel meets it, worked out on the host: the rows read in place of padded
// rows -1 and `rows` of the source, the columns read in place of -1 and `width`; -1 for a zero border. The
// launch makes sure that no output needs a row further out.
struct StripBorder {
    long long row_lo, row_hi, col_lo, col_hi;
    __device__ __forceinline__ long long row(long long r, long long rows) const {
        return r < 0 ? row_lo : r >= rows ? row_hi : r;
    }
    __device__ __forceinline__ long long col(long long c, long long width) const {
        return c < 0 ? col_lo : c >= width ? col_hi : c;
    }
};

// (x - mn) * 255 / den truncated (Finisher::minmax for sums whose (x - mn) * 255 fits 32 bits): by a
// multiply-high where den allows (magic != 0, minmax_mulhi: three instructions), else a float quotient,
// off by at most one, put right by the remainder.
__device__ __forceinline__ int minmax_u8(int x, int mn, int den, float inv_den, unsigned magic) {
    if (magic) return int(minmax_mulhi(unsigned(x - mn), magic));
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

// What sums become: the initial value of a sum, the u8 output of a finished one, or min and max folded.
template <StripMode M, bool Signed, StripDiv D> struct StripFinish {
    static constexpr StripMode mode = M;
    U8Divider dv;
    int mn = 0, den = 0;
    float inv_den = 0.f;
    unsigned magic = 0; // minmax_mulhi_magic(den)
    int fold_mn = INT_MAX, fold_mx = INT_MIN;

    __device__ __forceinline__ int init() const {
        return M == StripMode::divide && !Signed && D != StripDiv::none ? int(dv.half) : 0;
    }
    __device__ __forceinline__ int out(int n) const {
        if constexpr (M == StripMode::minmax)
            return minmax_u8(n, mn, den, inv_den, magic);
        else if constexpr (Signed)
            return finish_u8<true>(n, dv);
        else if constexpr (D == StripDiv::none)
            return min(n, 255);
        else
            return int(__umulhi(unsigned(n), dv.magic)); // <= 255: (255 d + d / 2) / d < 256
    }
    __device__ __forceinline__ void fold(int n) {
        fold_mn = min(fold_mn, n);
        fold_mx = max(fold_mx, n);
    }
};

// The finisher of a strip kernel launch: the divider, and in the minmax mode the image's range (channel 0).
template <StripMode M, bool Signed, StripDiv D>
__device__ __forceinline__ StripFinish<M, Signed, D> make_strip_finish(const U8Divider &dv,
                                                                       const Output &out) {
    StripFinish<M, Signed, D> f;
    f.dv = dv;
    if constexpr (M == StripMode::minmax) {
        f.mn = int(out.imm[0]);
        f.den = int(out.imm[4] - out.imm[0]);
        f.inv_den = f.den > 0 ? 1.0f / float(f.den) : 0.f;
        f.magic = minmax_mulhi_magic(f.den);
    }
    return f;
}

// Stores 8 u8 outputs at row[x0..]: one 8-byte store where aligned, else byte by byte.
__device__ __forceinline__ void store_strip(const int (&b)[kStripCols], char *row, long long x0,
                                            bool aligned) {
    unsigned char *p = reinterpret_cast<unsigned char *>(row) + x0;
    if (aligned) {
        const unsigned lo =
            __byte_perm(__byte_perm(b[0], b[1], 0x0040), __byte_perm(b[2], b[3], 0x0040), 0x5410);
        const unsigned hi =
            __byte_perm(__byte_perm(b[4], b[5], 0x0040), __byte_perm(b[6], b[7], 0x0040), 0x5410);
        *reinterpret_cast<uint2 *>(p) = make_uint2(lo, hi);
    } else {
#pragma unroll
        for (int j = 0; j < kStripCols; ++j) p[j] = (unsigned char)b[j];
    }
}

// Words w[0..3] = bytes x0 - 4 .. x0 + 11 of the padded row at p (zeros where !valid, a zero-border row):
// the thread's 8 bytes in one load, 4 either side from the neighbouring lanes by shuffle. The lanes at the
// warp's ends and a thread whose right neighbour is not the next group (`loads_right`) load what no lane
// has: whole words where Words (the rank-1 kernel's groups keep them inside the row), else only the byte
// next to their 8 (the 3 x 3 kernel's groups may end one byte before the row does).
template <bool Words>
__device__ __forceinline__ void load_strip_row(unsigned (&w)[4], const unsigned char *p, bool valid, int lane,
                                               bool loads_right) {
    w[1] = w[2] = 0;
    if (valid) {
        const uint2 c = __ldg(reinterpret_cast<const uint2 *>(p));
        w[1] = c.x, w[2] = c.y;
    }
    w[0] = __shfl_up_sync(0xFFFFFFFFu, w[2], 1);
    w[3] = __shfl_down_sync(0xFFFFFFFFu, w[1], 1);
    if (!valid) {
        w[0] = w[3] = 0;
    } else if (Words) {
        if (lane == 0) w[0] = __ldg(reinterpret_cast<const unsigned *>(p) - 1);
        if (loads_right) w[3] = __ldg(reinterpret_cast<const unsigned *>(p + kStripCols));
    } else {
        if (lane == 0) w[0] = unsigned(__ldg(p - 1)) << 24;
        if (loads_right) w[3] = __ldg(p + kStripCols);
    }
}

// Folds or writes the 8 finished sums of output row y of the thread at x0 (`active`: a real group).
template <class F>
__device__ __forceinline__ void finish_strip_row(F &f, const int (&sums)[kStripCols], bool active,
                                                 const Output &out, int y, long long x0, bool out_aligned) {
    if constexpr (F::mode == StripMode::fold) {
        if (active)
#pragma unroll
            for (int j = 0; j < kStripCols; ++j) f.fold(sums[j]);
    } else {
        int b[kStripCols];
#pragma unroll
        for (int j = 0; j < kStripCols; ++j) b[j] = f.out(sums[j]);
        if (active) store_strip(b, out.base + size_t(y) * out.pitch, x0, out_aligned);
    }
}

// The interior: thread group g = blockIdx.x * 128 + threadIdx.x + 1 (threads past the last group read the
// last group's bytes, for their neighbours' shuffles, and write nothing).
template <int C, class F>
__device__ __forceinline__ void
strip_interior(F &f, const SourceRows &src, const Shape &sh, const Output &out, const ByteTaps<3> &taps,
               const StripBorder &bd, int y0, int y_end, long long groups, bool out_aligned) {
    const long long g = (long long)blockIdx.x * kStripThreads + threadIdx.x + 1;
    const bool active = g <= groups;
    const long long x0 = kStripCols * (active ? g : groups);
    const int lane = threadIdx.x % 32;
    const bool loads_right = lane == 31 || g == groups; // its right neighbour is not the next 8 bytes
    const unsigned char *column = reinterpret_cast<const unsigned char *>(src.base) + x0;
#pragma unroll 1
    for (int c0 = y0; c0 < y_end; c0 += C) {
        int acc[C][kStripCols];
#pragma unroll
        for (int i = 0; i < C + 2; ++i) {
            // Padded row c0 + i as words: bytes x0 - 4 .. x0 + 11, of which x0 - 1 .. x0 + 8 are used.
            const long long r = bd.row(src.row0 + c0 + i, src.rows);
            unsigned win[4];
            load_strip_row<false>(win, column + size_t(r < 0 ? 0 : r) * src.pitch, r >= 0, lane, loads_right);
#pragma unroll
            for (int j = 0; j < kStripCols; ++j) {
                const int at = 3 + j, wi = at / 4, bits = 8 * (at % 4);
                const unsigned v = bits ? __funnelshift_r(win[wi], win[wi + 1], bits) : win[wi];
#pragma unroll
                for (int a = 0; a < 3; ++a) {
                    const int row = i - a; // output row c0 + row takes filter row a from this padded row
                    if (row >= 0 && row < C)
                        acc[row][j] = dot4_u8s8(v, taps.w[a], a == 0 ? f.init() : acc[row][j]);
                }
            }
            const int done = i - 2;
            if (done < 0 || c0 + done >= y_end) continue;
            finish_strip_row(f, acc[done], active, out, c0 + done, x0, out_aligned);
        }
    }
}

// The outputs of a strip's edge block: columns 0 .. 7 and 8 (groups + 1) .. width - 1 (all columns of rows
// too narrow for an interior group), one output per thread at a time: sum(x, y) (which starts from
// f.init()), folded or written.
template <class F, class Sum>
__device__ __forceinline__ void strip_edge_outputs(F &f, const Shape &sh, const Output &out, int y0,
                                                   int y_end, long long groups, const Sum &sum) {
    const int nleft = int(min(sh.width, (long long)kStripCols));
    const long long right0 = groups > 0 ? kStripCols * (groups + 1) : nleft;
    const int ncols = nleft + int(sh.width - right0);
    const int count = ncols * (y_end - y0);
    for (int k = threadIdx.x; k < count; k += kStripThreads) {
        const int c = k % ncols, y = y0 + k / ncols;
        const long long x = c < nleft ? c : right0 + (c - nleft);
        const int n = sum(x, y);
        if constexpr (F::mode == StripMode::fold)
            f.fold(n);
        else
            out.base[size_t(y) * out.pitch + x] = char(f.out(n));
    }
}

// The edge block of a strip (rows narrower than 18 entirely), every tap through the border rule.
template <class F>
__device__ __forceinline__ void strip_edges(F &f, const SourceRows &src, const Shape &sh, const Output &out,
                                            const ByteTaps<3> &taps, const StripBorder &bd, int y0, int y_end,
                                            long long groups) {
    strip_edge_outputs(f, sh, out, y0, y_end, groups, [&](long long x, int y) {
        int n = f.init();
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            const long long r = bd.row(src.row0 + y + a, src.rows);
            if (r < 0) continue;
            const unsigned char *row =
                reinterpret_cast<const unsigned char *>(src.base) + size_t(r) * src.pitch;
#pragma unroll
            for (int b = 0; b < 3; ++b) {
                const long long m = bd.col(x + b - 1, sh.width);
                if (m >= 0) n += int(row[m]) * int((signed char)(taps.w[a] >> (8 * b)));
            }
        }
        return n;
    });
}

// `want` blocks of kStripThreads, or as many as an SM of the architecture being compiled holds if fewer
// (sm_75: 1024 threads; sm_86, 87, 89: 1536; others 2048), so that launch bounds never ask for more.
constexpr int strip_blocks_cap(int want) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    constexpr int threads = 1024;
#elif defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890)
    constexpr int threads = 1536;
#else
    constexpr int threads = 2048;
#endif
    return want < threads / kStripThreads ? want : threads / kStripThreads;
}

// Grid: x covers the interior groups in blocks of 128, then one edge block; y the band's output rows in
// strips of `strip_rows` (whole chunks of C rows but the band's last). The source base and pitch are
// multiples of 8; `out_aligned`: so are the output's. Chunks of 4 rows hold 32 sums a thread instead of 64,
// which lets 12 blocks share an SM (40 registers) instead of 8.
template <StripMode M, bool Signed, StripDiv D, int C>
__global__ void __launch_bounds__(kStripThreads, strip_blocks_cap(C <= 4 ? 12 : 8))
    conv3x3_u8_strip_kernel(SourceRows src, Shape sh, Output out, ByteTaps<3> taps, U8Divider dv,
                            StripBorder bd, int strip_rows, long long groups, bool out_aligned) {
    StripFinish<M, Signed, D> f = make_strip_finish<M, Signed, D>(dv, out);
    const int y0 = blockIdx.y * strip_rows;
    const int y_end = min(y0 + strip_rows, sh.out_rows);
    if (blockIdx.x == gridDim.x - 1)
        strip_edges(f, src, sh, out, taps, bd, y0, y_end, groups);
    else
        strip_interior<C>(f, src, sh, out, taps, bd, y0, y_end, groups, out_aligned);
    if constexpr (M == StripMode::fold)
        fold_minmax<int>(f.fold_mn <= f.fold_mx, f.fold_mn, f.fold_mx, 0, out);
}

} // namespace gpk::cuda::conv
