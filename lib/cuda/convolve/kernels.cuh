// Convolution kernels. Images are rows of interleaved samples; an "element" is one sample of one channel,
// element e of a row is pixel e / channels, channel e % channels, and a tap b of a row filter reads element
// e + (b - r) * channels. A band of output rows reads "padded" rows: padded row i is source row
// border_index(row0 + i, rows, border), so that the same kernels serve a whole device image (row0 = first
// output row - radius) and a staged band whose halo rows were already put in place (row0 = 0).
//
// The filter travels in the kernel parameters (the constant bank: broadcast to the warp, one copy per
// launch, so concurrent contexts with different filters never share it). The sums are exact integers on
// the exact path (Acc = int or long long) and Acc-precision floats otherwise; emit() applies the
// contract's normalisation and conversion (README, "What gpk computes"), or, in the first pass of min/max
// normalisation, folds min and max.
#pragma once

#include "common/semantics.hpp"
#include "gpk.h"

#include <climits>
#include <cstdint>
#include <type_traits>

namespace gpk::cuda::conv {

constexpr int kMaxTaps2D = GPK_FILTER_MAX_2D * GPK_FILTER_MAX_2D;
constexpr int kMaxTaps1D = GPK_FILTER_MAX_SEPARABLE;

struct SourceRows {
    const char *base;
    size_t pitch;
    long long rows; // rows that exist at base
    long long row0; // source row of padded row 0, before the border rule
};

struct Shape {
    long long width; // pixels
    int channels;
    int border;   // gpk_border
    int out_rows; // output rows of this band
};

struct Output {
    char *base; // row 0 of the band
    size_t pitch;
    int dtype;     // gpk_dtype
    int normalize; // gpk_normalize
    bool reduce;   // min/max pass: fold min and max into imm/fmm instead of writing
    long long isum;
    double dsum;
    double inv_isum; // 1 / |isum|: division by the sum through a reciprocal and one correction
    // n / |isum| for 32-bit n: t = umulhi(n, sum_magic), q = (t + ((n - t) >> sum_sh1)) >> sum_sh2
    // (Granlund and Montgomery); sum_magic 0 where |isum| does not fit.
    unsigned sum_magic;
    int sum_sh1, sum_sh2;
    long long *imm; // exact path: min[4] then max[4] of the whole image
    double *fmm;    // float path: min[4] then max[4]
    // Min/max pass: each block leaves min[4], max[4] of its outputs here (long long or double by path);
    // fold_partials_kernel folds them into imm/fmm (no contended global atomics).
    unsigned long long *partials;
};

template <class Acc, int N> struct Taps { Acc t[N]; };

// 2D tiles: 32 element columns by 8 thread rows, each thread computing PY rows of one column.
constexpr int kTileX = 32;
constexpr int kTileThreadRows = 8;
// Row pass: 128 elements by 4 rows. Column pass: 32 elements by 8 thread rows of kColumnPY outputs.
constexpr int kRowTileX = 128;
constexpr int kRowTileRows = 4;
constexpr int kColumnPY = 4;

__device__ __forceinline__ long long floor_div(long long a, long long b) {
    long long q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

// Element `e` (may lie outside the row) of a source row after the horizontal border rule; 0 for a zero
// border.
template <class In>
__device__ __forceinline__ In load_element(const In *row, long long e, long long width, int channels,
                                           int border) {
    long long px = floor_div(e, channels);
    long long m = border_index(px, width, border);
    return m < 0 ? In(0) : row[m * channels + (e - px * channels)];
}

// Independent loads each thread issues before it stores any, so that enough bytes are in flight.
constexpr int kLoadBatch = 4;
constexpr int kWordBatch = 8; // one-byte samples: 4 bytes a load

// Asynchronous copies of 4 or 8 bytes from global to shared memory (sm_80 on): a tile needs one memory
// round trip and no registers to stage through. `valid` false writes zeros and reads nothing.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GPK_HAVE_CP_ASYNC 1
template <int Bytes> __device__ __forceinline__ void copy_async(void *smem, const void *gmem, bool valid) {
    static_assert(Bytes == 4 || Bytes == 8, "cp.async copies 4, 8 or 16 bytes");
    unsigned dst = unsigned(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(gmem), "n"(Bytes),
                 "r"(valid ? Bytes : 0)
                 : "memory");
}
__device__ __forceinline__ void copy_async_wait() {
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}
#endif

// k / d for the k and d of a tile (k < 2^20, 2 <= d < 2^12): one multiply-high by ceil(2^32 / d).
__device__ __forceinline__ int div_small(int k, unsigned magic) {
    return int(__umulhi(unsigned(k), magic));
}
__device__ __forceinline__ unsigned div_magic(int d) {
    return 0xFFFFFFFFu / unsigned(d) + 1;
}

// Tile rows are this many elements apart: a multiple of 4, so that rows of bytes start on words.
__host__ __device__ constexpr int tile_stride_of(int tile_w) {
    return (tile_w + 3) & ~3;
}

// One-byte samples, 4 per lane: two aligned words around the 4 bytes wanted, funnel-shifted into place.
// The caller guarantees that the tile lies at least 4 bytes inside the row on both sides (every word read
// belongs to the row).
__device__ inline void load_tile_words(unsigned char *tile, int tile_stride, int rows, long long first_row,
                                       long long left, const SourceRows &src, const Shape &sh, int tid,
                                       int nthreads) {
    const int words = tile_stride / 4;
    const unsigned magic = div_magic(words);
    const int total = rows * words;
    for (int base = tid; base < total; base += kWordBatch * nthreads) {
        unsigned v[kWordBatch];
#pragma unroll
        for (int u = 0; u < kWordBatch; ++u) {
            int k = base + u * nthreads;
            v[u] = 0;
            if (k < total) {
                int r = div_small(k, magic), w = k - r * words;
                long long srow = border_index(src.row0 + first_row + r, src.rows, sh.border);
                if (srow >= 0) {
                    uintptr_t p =
                        reinterpret_cast<uintptr_t>(src.base + size_t(srow) * src.pitch) + left + 4 * w;
                    const unsigned *a = reinterpret_cast<const unsigned *>(p & ~uintptr_t(3));
                    v[u] = __funnelshift_r(__ldg(a), __ldg(a + 1), unsigned(p & 3) * 8);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < kWordBatch; ++u)
            if (base + u * nthreads < total) reinterpret_cast<unsigned *>(tile)[base + u * nthreads] = v[u];
    }
}

// load_tile through asynchronous copies (4- and 8-byte samples on sm_80 and later).
template <class In>
__device__ void load_tile_async(In *tile, int tile_w, int tile_stride, int rows, long long first_row,
                                long long left, bool inside, unsigned magic, const SourceRows &src,
                                const Shape &sh, int tid, int nthreads) {
#if defined(GPK_HAVE_CP_ASYNC)
    const int total = rows * tile_w;
    for (int k = tid; k < total; k += nthreads) {
        int r = div_small(k, magic), j = k - r * tile_w;
        long long srow = border_index(src.row0 + first_row + r, src.rows, sh.border);
        const In *from = reinterpret_cast<const In *>(src.base);
        bool valid = false;
        if (srow >= 0) {
            const In *row = reinterpret_cast<const In *>(src.base + size_t(srow) * src.pitch);
            long long e = left + j;
            if (!inside) {
                long long px = floor_div(e, sh.channels);
                long long m = border_index(px, sh.width, sh.border);
                e = m < 0 ? -1 : m * sh.channels + (e - px * sh.channels);
            }
            valid = e >= 0;
            if (valid) from = row + e;
        }
        copy_async<sizeof(In)>(tile + r * tile_stride + j, from, valid);
    }
    copy_async_wait();
#endif
}

// load_tile through registers, a batch of independent loads at a time.
template <class In>
__device__ void load_tile_batched(In *tile, int tile_w, int tile_stride, int rows, long long first_row,
                                  long long left, bool inside, unsigned magic, const SourceRows &src,
                                  const Shape &sh, int tid, int nthreads) {
    const int total = rows * tile_w;
    for (int base = tid; base < total; base += kLoadBatch * nthreads) {
        In v[kLoadBatch];
        int at[kLoadBatch];
#pragma unroll
        for (int u = 0; u < kLoadBatch; ++u) {
            int k = base + u * nthreads;
            v[u] = In(0);
            at[u] = -1;
            if (k < total) {
                int r = div_small(k, magic), j = k - r * tile_w;
                at[u] = r * tile_stride + j;
                long long srow = border_index(src.row0 + first_row + r, src.rows, sh.border);
                if (srow >= 0) {
                    const In *row = reinterpret_cast<const In *>(src.base + size_t(srow) * src.pitch);
                    v[u] = inside ? __ldg(row + left + j)
                                  : load_element(row, left + j, sh.width, sh.channels, sh.border);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < kLoadBatch; ++u)
            if (at[u] >= 0) tile[at[u]] = v[u];
    }
}

// Fills `rows` tile rows (tile[r * tile_stride + j], j < tile_w) from padded row first_row + r, element
// left + j, with thread `tid` of `nthreads`: words for bytes, asynchronous copies for 4- and 8-byte samples,
// batches of independent loads otherwise.
template <class In>
__device__ void load_tile(In *tile, int tile_w, int tile_stride, int rows, long long first_row,
                          long long left, const SourceRows &src, const Shape &sh, int tid, int nthreads) {
    const long long row_elems = sh.width * sh.channels;
    if constexpr (sizeof(In) == 1) {
        if (left >= 4 && left + tile_stride + 4 <= row_elems)
            return load_tile_words(reinterpret_cast<unsigned char *>(tile), tile_stride, rows, first_row,
                                   left, src, sh, tid, nthreads);
    }
    const bool inside = left >= 0 && left + tile_w <= row_elems;
    const unsigned magic = div_magic(tile_w);
#if defined(GPK_HAVE_CP_ASYNC)
    constexpr bool async = sizeof(In) == 4 || sizeof(In) == 8;
#else
    constexpr bool async = false;
#endif
    if constexpr (async) {
        load_tile_async(tile, tile_w, tile_stride, rows, first_row, left, inside, magic, src, sh, tid,
                        nthreads);
    } else {
        load_tile_batched(tile, tile_w, tile_stride, rows, first_row, left, inside, magic, src, sh, tid,
                          nthreads);
    }
}

__device__ __forceinline__ void store_int(char *row, long long e, int dtype, long long v) {
    if (dtype == GPK_U8)
        reinterpret_cast<uint8_t *>(row)[e] = uint8_t(v < 0 ? 0 : (v > 255 ? 255 : v));
    else
        reinterpret_cast<uint16_t *>(row)[e] = uint16_t(v < 0 ? 0 : (v > 65535 ? 65535 : v));
}

// A finished real value: integer outputs round to nearest (ties away) and saturate, floats are stored.
__device__ __forceinline__ void store_real(char *row, long long e, int dtype, double v) {
    switch (dtype) {
    case GPK_U8:
        reinterpret_cast<uint8_t *>(row)[e] = uint8_t(round_saturate(v, 0, 255));
        break;
    case GPK_U16:
        reinterpret_cast<uint16_t *>(row)[e] = uint16_t(round_saturate(v, 0, 65535));
        break;
    case GPK_F32:
        reinterpret_cast<float *>(row)[e] = float(v);
        break;
    default:
        reinterpret_cast<double *>(row)[e] = v;
    }
}

// div_round(n, d) (semantics.hpp) through the reciprocal of |d|: the double quotient of |n| < 2^52 is off
// by at most one, which the remainder puts right; larger values take the exact integer division.
template <bool Wide>
__device__ __forceinline__ long long div_round_fast(long long n, long long d, double inv_abs_d) {
    unsigned long long un = n < 0 ? 0ull - (unsigned long long)n : (unsigned long long)n;
    unsigned long long ud = d < 0 ? 0ull - (unsigned long long)d : (unsigned long long)d;
    if (Wide && un >= (1ull << 52)) return div_round(n, d);
    long long q = (long long)(double(un) * inv_abs_d);
    long long r = (long long)un - q * (long long)ud;
    if (r < 0)
        --q, r += (long long)ud;
    else if (r >= (long long)ud)
        ++q, r -= (long long)ud;
    if (2 * (unsigned long long)r >= ud) ++q; // ties away from zero
    return ((n < 0) != (d < 0)) ? -q : q;
}

// div_round(n, isum) for the sum normalisation: a multiply-high where |n| < 2^32, else div_round_fast.
template <bool Wide> __device__ __forceinline__ long long div_round_sum(long long n, const Output &o) {
    unsigned long long un = n < 0 ? 0ull - (unsigned long long)n : (unsigned long long)n;
    if (o.sum_magic == 0 || un > 0xFFFFFFFFull) return div_round_fast<Wide>(n, o.isum, o.inv_isum);
    unsigned d = unsigned(o.isum < 0 ? -o.isum : o.isum), n32 = unsigned(un);
    unsigned t = __umulhi(n32, o.sum_magic);
    unsigned q = (t + ((n32 - t) >> o.sum_sh1)) >> o.sum_sh2;
    unsigned r = n32 - q * d;
    if (2ull * r >= d) ++q; // ties away from zero
    return ((n < 0) != (o.isum < 0)) ? -(long long)q : (long long)q;
}

// What normalising one thread's outputs needs; its channel is the same for all of them.
template <class Acc> struct Finisher {
    // Only 64-bit sums reach 2^52: an int sum x, and (x - min) * 255 with min the least of the same
    // filter's sums (over every rank's block under libgpk_mpi), stay below 2^40, so the finish of int sums
    // carries no code for the exact divisions beyond.
    static constexpr bool kWide = sizeof(Acc) > 4;
    int c;
    bool int_out;
    long long mn = 0, den = 0; // exact min/max: (v - mn) * 255 / den, truncating
    double inv_den = 0;
    Acc fmn = Acc(0), fmx = Acc(0);

    __device__ Finisher(int channel, const Output &o)
        : c(channel), int_out(o.dtype == GPK_U8 || o.dtype == GPK_U16) {
        if (o.normalize != GPK_NORMALIZE_MINMAX || o.reduce) return;
        if constexpr (std::is_integral<Acc>::value) {
            mn = o.imm[c];
            den = o.imm[4 + c] - mn;
            inv_den = den > 0 ? 1.0 / double(den) : 0.0;
        } else {
            fmn = Acc(o.fmm[c]);
            fmx = Acc(o.fmm[4 + c]);
        }
    }

    // minmax_int(x, mn, mn + den) (semantics.hpp), with the quotient through the reciprocal.
    __device__ __forceinline__ long long minmax(long long x) const {
        if (den == 0) return 0;
        unsigned long long num = (unsigned long long)(x - mn) * 255ull;
        if (kWide && num >= (1ull << 52)) return (long long)(num / (unsigned long long)den);
        long long q = (long long)(double(num) * inv_den);
        long long r = (long long)num - q * den;
        if (r < 0)
            --q;
        else if (r >= den)
            ++q;
        return q;
    }

    // The normalisation and conversion of one sum (README, "What gpk computes"; NOTES.md: exact and float
    // paths).
    __device__ __forceinline__ void emit(Acc v, char *row, long long e, const Output &o) const {
        if constexpr (std::is_integral<Acc>::value) {
            long long x = v;
            if (o.normalize == GPK_NORMALIZE_MINMAX) {
                if (int_out)
                    store_int(row, e, o.dtype, minmax(x));
                else
                    store_real(row, e, o.dtype, den == 0 ? 0.0 : double(x - mn) * 255.0 / double(den));
            } else if (o.normalize == GPK_NORMALIZE_SUM) {
                if (int_out)
                    store_int(row, e, o.dtype, div_round_sum<kWide>(x, o));
                else
                    store_real(row, e, o.dtype, double(x) / double(o.isum));
            } else {
                if (int_out)
                    store_int(row, e, o.dtype, x);
                else
                    store_real(row, e, o.dtype, double(x));
            }
        } else {
            Acc y = v;
            if (o.normalize == GPK_NORMALIZE_SUM)
                y = v / Acc(o.dsum);
            else if (o.normalize == GPK_NORMALIZE_MINMAX)
                y = fmx == fmn ? Acc(0) : (v - fmn) * Acc(255) / (fmx - fmn);
            store_real(row, e, o.dtype, double(y));
        }
    }
};

__device__ __forceinline__ void atomic_min_real(double *p, double v) {
    auto *a = reinterpret_cast<unsigned long long *>(p);
    unsigned long long old = *reinterpret_cast<volatile unsigned long long *>(a);
    while (v < __longlong_as_double((long long)old)) {
        unsigned long long prev = atomicCAS(a, old, (unsigned long long)__double_as_longlong(v));
        if (prev == old) break;
        old = prev;
    }
}

__device__ __forceinline__ void atomic_max_real(double *p, double v) {
    auto *a = reinterpret_cast<unsigned long long *>(p);
    unsigned long long old = *reinterpret_cast<volatile unsigned long long *>(a);
    while (v > __longlong_as_double((long long)old)) {
        unsigned long long prev = atomicCAS(a, old, (unsigned long long)__double_as_longlong(v));
        if (prev == old) break;
        old = prev;
    }
}

// Folds this thread's min and max (of channel c; `any` false when it had no output) into its block's, in
// shared memory, and leaves the block's min[4], max[4] in o.partials. Every thread of the block calls it.
template <class Acc> __device__ void fold_minmax(bool any, Acc mn, Acc mx, int c, const Output &o) {
    __shared__ unsigned long long s_mm[8];
    int tid = threadIdx.y * blockDim.x + threadIdx.x;
    unsigned long long *out = o.partials + 8 * (size_t(blockIdx.y) * gridDim.x + blockIdx.x);
    if constexpr (std::is_integral<Acc>::value) {
        auto *s = reinterpret_cast<long long *>(s_mm);
        if (tid < 4) {
            s[tid] = LLONG_MAX;
            s[4 + tid] = LLONG_MIN;
        }
        __syncthreads();
        if (any) {
            atomicMin(s + c, (long long)mn);
            atomicMax(s + 4 + c, (long long)mx);
        }
    } else {
        auto *s = reinterpret_cast<double *>(s_mm);
        if (tid < 4) {
            s[tid] = __longlong_as_double(0x7ff0000000000000LL);                 // +inf
            s[4 + tid] = __longlong_as_double((long long)0xfff0000000000000ULL); // -inf
        }
        __syncthreads();
        if (any) {
            atomic_min_real(s + c, double(mn));
            atomic_max_real(s + 4 + c, double(mx));
        }
    }
    __syncthreads();
    if (tid < 8) out[tid] = s_mm[tid];
}

// Writes (or folds) PY vertically consecutive sums of element e, rows y_first.., channel e % channels.
// Folds false: a kernel whose launches never fold (o.reduce false), without the fold's code.
template <class Acc, int PY, bool Folds = true>
__device__ __forceinline__ void finish_column(const Acc (&acc)[PY], int y_first, long long e, bool col_ok,
                                              const Shape &sh, const Output &o) {
    int c = sh.channels == 1 ? 0 : int(e % sh.channels);
    if (Folds && o.reduce) {
        bool any = false;
        Acc mn = acc[0], mx = acc[0];
#pragma unroll
        for (int k = 0; k < PY; ++k) {
            if (col_ok && y_first + k < sh.out_rows) {
                mn = any ? (acc[k] < mn ? acc[k] : mn) : acc[k];
                mx = any ? (acc[k] > mx ? acc[k] : mx) : acc[k];
                any = true;
            }
        }
        fold_minmax<Acc>(any, mn, mx, c, o);
        return;
    }
    if (!col_ok) return;
    const Finisher<Acc> f(c, o);
    char *row = o.base + size_t(y_first) * o.pitch;
#pragma unroll
    for (int k = 0; k < PY; ++k, row += o.pitch)
        if (y_first + k < sh.out_rows) f.emit(acc[k], row, e, o);
}

// Direct 2D correlation on shared-memory tiles. KH, KW > 0: sizes known at compile time, each thread slides
// a register window down its column; 0: any size up to 63 x 63.
template <class In, class Acc, int KH, int KW, int PY, int NT>
__global__ void __launch_bounds__(kTileX *kTileThreadRows, 2)
    conv2d_kernel(SourceRows src, Shape sh, Output out, Taps<Acc, NT> taps, int kh, int kw) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    In *tile = reinterpret_cast<In *>(smem_raw);
    const int kh_ = KH > 0 ? KH : kh, kw_ = KW > 0 ? KW : kw;
    const int ch = sh.channels;
    const int tile_w = kTileX + (kw_ - 1) * ch, tile_stride = tile_stride_of(tile_w);
    const int tile_rows = kTileThreadRows * PY + kh_ - 1;
    const long long e0 = (long long)blockIdx.x * kTileX;
    const int y0 = blockIdx.y * kTileThreadRows * PY;
    load_tile(tile, tile_w, tile_stride, tile_rows, y0, e0 - (long long)(kw_ / 2) * ch, src, sh,
              threadIdx.y * kTileX + threadIdx.x, kTileX * kTileThreadRows);
    __syncthreads();

    const int ty = threadIdx.y * PY;
    Acc acc[PY];
#pragma unroll
    for (int k = 0; k < PY; ++k) acc[k] = Acc(0);
    if constexpr (KH > 0) {
#pragma unroll
        for (int i = 0; i < PY + KH - 1; ++i) {
            const In *t = tile + (ty + i) * tile_stride + threadIdx.x;
            Acc v[KW];
#pragma unroll
            for (int b = 0; b < KW; ++b) v[b] = Acc(t[b * ch]);
#pragma unroll
            for (int a = 0; a < KH; ++a) {
                const int k = i - a;
                if (k >= 0 && k < PY) {
#pragma unroll
                    for (int b = 0; b < KW; ++b) acc[k] += v[b] * taps.t[a * KW + b];
                }
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < PY; ++k) {
            Acc s = Acc(0);
            for (int a = 0; a < kh_; ++a) {
                const In *t = tile + (ty + k + a) * tile_stride + threadIdx.x;
                const Acc *f = taps.t + a * kw_;
                for (int b = 0; b < kw_; ++b) s += Acc(t[b * ch]) * f[b];
            }
            acc[k] = s;
        }
    }
    const long long e = e0 + threadIdx.x;
    finish_column<Acc, PY>(acc, y0 + ty, e, e < sh.width * ch, sh, out);
}

// Row pass of a separable filter: mid row i (of mid_rows) = padded row i filtered along x, in Acc.
// KW > 0: the tap count known at compile time (unrolled, taps addressed directly); 0: kw.
template <class In, class Acc, int KW>
__global__ void __launch_bounds__(kRowTileX *kRowTileRows)
    row_pass_kernel(SourceRows src, Shape sh, int mid_rows, Acc *mid, Taps<Acc, kMaxTaps1D> taps,
                    int kw_any) {
    const int kw = KW > 0 ? KW : kw_any;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    In *tile = reinterpret_cast<In *>(smem_raw);
    const int ch = sh.channels;
    const int tile_w = kRowTileX + (kw - 1) * ch, tile_stride = tile_stride_of(tile_w);
    const long long e0 = (long long)blockIdx.x * kRowTileX;
    const int r = blockIdx.y * kRowTileRows + threadIdx.y;
    load_tile(tile, tile_w, tile_stride, kRowTileRows, blockIdx.y * kRowTileRows,
              e0 - (long long)(kw / 2) * ch, src, sh, threadIdx.y * kRowTileX + threadIdx.x,
              kRowTileX * kRowTileRows);
    __syncthreads();
    const In *t = tile + threadIdx.y * tile_stride;
    const long long row_elems = sh.width * ch;
    const long long e = e0 + threadIdx.x;
    if (r >= mid_rows || e >= row_elems) return;
    Acc s = Acc(0);
#pragma unroll
    for (int b = 0; b < kw; ++b) s += Acc(t[threadIdx.x + b * ch]) * taps.t[b];
    mid[size_t(r) * row_elems + e] = s;
}

// Column pass: output row y = sum over a of mid row y + a times col[a]; mid has out_rows + kh - 1 rows.
// KH > 0: the tap count known at compile time; 0: kh.
template <class Acc, int KH>
__global__ void __launch_bounds__(kTileX *kTileThreadRows)
    column_pass_kernel(const Acc *mid, Shape sh, Output out, Taps<Acc, kMaxTaps1D> taps, int kh_any) {
    const int kh = KH > 0 ? KH : kh_any;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Acc *tile = reinterpret_cast<Acc *>(smem_raw);
    const long long row_elems = sh.width * sh.channels;
    const int tile_rows = kTileThreadRows * kColumnPY + kh - 1;
    const long long e0 = (long long)blockIdx.x * kTileX;
    const int y0 = blockIdx.y * kTileThreadRows * kColumnPY;
    const int mid_rows = sh.out_rows + kh - 1;
    // kTileX is 32, so r = k / 32 and j = k % 32.
    const int total = tile_rows * kTileX, nthreads = kTileX * kTileThreadRows;
#if defined(GPK_HAVE_CP_ASYNC)
    for (int k = threadIdx.y * kTileX + threadIdx.x; k < total; k += nthreads) {
        int r = k >> 5;
        long long e = e0 + (k & 31);
        bool valid = y0 + r < mid_rows && e < row_elems;
        copy_async<sizeof(Acc)>(tile + k, valid ? mid + size_t(y0 + r) * row_elems + e : mid, valid);
    }
    copy_async_wait();
#else
    // Batches of independent loads, as in load_tile.
    constexpr int U = kLoadBatch;
    for (int base = threadIdx.y * kTileX + threadIdx.x; base < total; base += U * nthreads) {
        Acc v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            int k = base + u * nthreads, r = k >> 5;
            long long e = e0 + (k & 31);
            v[u] = (k < total && y0 + r < mid_rows && e < row_elems)
                       ? __ldg(mid + size_t(y0 + r) * row_elems + e)
                       : Acc(0);
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (base + u * nthreads < total) tile[base + u * nthreads] = v[u];
    }
#endif
    __syncthreads();
    const int ty = threadIdx.y * kColumnPY;
    Acc acc[kColumnPY];
#pragma unroll
    for (int k = 0; k < kColumnPY; ++k) acc[k] = Acc(0);
#pragma unroll
    for (int i = 0; i < kColumnPY + kh - 1; ++i) {
        Acc v = tile[(ty + i) * kTileX + threadIdx.x];
#pragma unroll
        for (int k = 0; k < kColumnPY; ++k) {
            int a = i - k;
            if (a >= 0 && a < kh) acc[k] += v * taps.t[a];
        }
    }
    const long long e = e0 + threadIdx.x;
    finish_column<Acc, kColumnPY>(acc, y0 + ty, e, e < row_elems, sh, out);
}

static_assert(kTileX == 32, "the column pass divides by kTileX with shifts");

} // namespace gpk::cuda::conv
