// Square 3, 5 and 9 tap filters on one-channel images with four outputs per thread along x: u8 images with
// exact int sums through dp4a (taps as signed bytes, four to a word) and packed 4-byte stores, f32 images
// with f32 sums through 16-byte shared and global loads and stores. The per-sample work of conv2d_kernel
// (tile indexing, normalisation set-up, single-byte stores) is shared by four outputs here. direct.cu
// picks them where they apply; every other case takes conv2d_kernel.
#pragma once

#include "cuda/convolve/kernels.cuh"

namespace gpk::cuda::conv {

constexpr int kVecOut = 4;                  // outputs per thread along x
constexpr int kVecTileX = kTileX * kVecOut; // elements per block along x

// Taps of a K x K filter as signed bytes, 4 to a word, each filter row padded with zeros to whole words.
template <int K> struct ByteTaps { int w[K * ((K + 3) / 4)]; };

// c + the dot product of the unsigned bytes of a with the signed bytes of b.
__device__ __forceinline__ int dot4_u8s8(unsigned a, int b, int c) {
    int r;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

// Division by the tap sum on the u8 path: div_round(n, isum) (semantics.hpp) is floor((|n| + half) / d) with
// d = |isum|, half = floor(d / 2), signed like n * isum. The host picks magic < 2^32 and shift with
// floor(m * magic / 2^shift) == floor(m / d) for every m up to the largest |n| + half (see launch_u8x4).
struct U8Divider {
    bool sum;       // normalisation sum (else none)
    bool neg_sum;   // isum < 0
    unsigned half;  // floor(d / 2)
    unsigned magic; // ceil(2^shift / d)
    int shift;
};

// floor(m / d) for the divider's d: a multiply-high where shift >= 32 (every d >= 2), else a wide multiply.
__device__ __forceinline__ unsigned divide_u8(unsigned m, const U8Divider &dv) {
    if (dv.shift >= 32) return __umulhi(m, dv.magic) >> (dv.shift - 32);
    return unsigned((m * (unsigned long long)dv.magic) >> dv.shift);
}

// A sum, normalised and saturated to u8. Signed false: every tap is >= 0, so n >= 0 and isum > 0.
template <bool Signed> __device__ __forceinline__ int finish_u8(int n, const U8Divider &dv) {
    if (!Signed) {
        if (dv.sum) n = int(divide_u8(unsigned(n) + dv.half, dv));
        return min(n, 255);
    }
    if (dv.sum) {
        int q = int(divide_u8(unsigned(abs(n)) + dv.half, dv));
        n = (n < 0) != dv.neg_sum ? -q : q;
    }
    return min(max(n, 0), 255);
}

// Stores four u8 outputs at row[e..e+3], packed where aligned and whole.
__device__ __forceinline__ void store_u8x4(const int (&b)[kVecOut], char *row, long long e,
                                           long long row_elems) {
    unsigned char *p = reinterpret_cast<unsigned char *>(row) + e;
    if (e + kVecOut <= row_elems && (reinterpret_cast<uintptr_t>(p) & 3) == 0) {
        unsigned lo = __byte_perm(b[0], b[1], 0x0040), hi = __byte_perm(b[2], b[3], 0x0040);
        *reinterpret_cast<unsigned *>(p) = __byte_perm(lo, hi, 0x5410);
    } else {
#pragma unroll
        for (int j = 0; j < kVecOut; ++j)
            if (e + j < row_elems) p[j] = (unsigned char)b[j];
    }
}

// The u8 tile starts kU8Lead bytes left of the block and is kU8TileStride bytes wide, so that its rows are
// whole 16-byte loads wherever the image rows are 16-byte aligned (radius <= 4).
constexpr int kU8Lead = 16;
constexpr int kU8TileStride = 160;

// Fills `rows` tile rows of Vecs 16-byte vectors (uint4 of u8, float4 of f32) from byte `left_bytes` of
// the padded rows, a batch of independent loads at a time; the caller guarantees aligned rows and a tile
// inside them.
template <class V, int Vecs>
__device__ __forceinline__ void load_tile_vec16(V *tile, int rows, long long first_row, long long left_bytes,
                                                const SourceRows &src, const Shape &sh, int tid,
                                                int nthreads) {
    static_assert(sizeof(V) == 16, "16-byte vectors");
    const int total = rows * Vecs;
    const unsigned magic = div_magic(Vecs);
    for (int base = tid; base < total; base += kLoadBatch * nthreads) {
        V v[kLoadBatch];
#pragma unroll
        for (int u = 0; u < kLoadBatch; ++u) {
            int k = base + u * nthreads;
            v[u] = V{};
            if (k < total) {
                int r = div_small(k, magic), c = k - r * Vecs;
                long long srow = border_index(src.row0 + first_row + r, src.rows, sh.border);
                if (srow >= 0)
                    v[u] = __ldg(
                        reinterpret_cast<const V *>(src.base + size_t(srow) * src.pitch + left_bytes) + c);
            }
        }
#pragma unroll
        for (int u = 0; u < kLoadBatch; ++u)
            if (base + u * nthreads < total) tile[base + u * nthreads] = v[u];
    }
}

// u8 -> u8, one channel, exact int sums, normalisation none or sum, taps in [-128, 127]. Thread tx's
// outputs start at tile byte 4 tx + O; output j's four bytes of tap group g are tile words shifted into
// place, dp4a multiplies them by four taps at once. `aligned`: the image base and pitch are multiples of 16.
template <int K, int PY, bool Signed>
__global__ void __launch_bounds__(kTileX *kTileThreadRows)
    conv2d_u8x4_kernel(SourceRows src, Shape sh, Output out, ByteTaps<K> taps, U8Divider dv, bool aligned) {
    constexpr int G = (K + 3) / 4;              // tap words per filter row
    constexpr int O = kU8Lead - K / 2;          // tile byte of thread 0's first tap
    constexpr int NW = (O % 4 + 3) / 4 + G + 1; // words a thread reads per tile row, from word tx + O / 4
    static_assert(4 * (kTileX - 1 + O / 4 + NW) <= kU8TileStride, "tile rows too narrow");
    constexpr int tile_rows = kTileThreadRows * PY + K - 1;
    __shared__ uint4 tile[kU8TileStride / 16 * tile_rows];
    const long long e0 = (long long)blockIdx.x * kVecTileX, left = e0 - kU8Lead;
    const int y0 = blockIdx.y * kTileThreadRows * PY;
    const int tid = threadIdx.y * kTileX + threadIdx.x, nthreads = kTileX * kTileThreadRows;
    if (aligned && left >= 0 && left + kU8TileStride <= sh.width)
        load_tile_vec16<uint4, kU8TileStride / 16>(tile, tile_rows, y0, left, src, sh, tid, nthreads);
    else
        load_tile(reinterpret_cast<unsigned char *>(tile), kU8TileStride, kU8TileStride, tile_rows, y0, left,
                  src, sh, tid, nthreads);
    __syncthreads();

    const unsigned *words = reinterpret_cast<const unsigned *>(tile) + threadIdx.x + O / 4;
    const int ty = threadIdx.y * PY;
    const long long e = e0 + kVecOut * threadIdx.x;
    if (e >= sh.width) return;
#pragma unroll 2
    for (int k = 0; k < PY; ++k) {
        if (y0 + ty + k >= sh.out_rows) break;
        int acc[kVecOut] = {0, 0, 0, 0};
#pragma unroll
        for (int a = 0; a < K; ++a) {
            const unsigned *w = words + (ty + k + a) * (kU8TileStride / 4);
            unsigned v[NW];
#pragma unroll
            for (int i = 0; i < NW; ++i) v[i] = w[i];
#pragma unroll
            for (int g = 0; g < G; ++g) {
                const int t = taps.w[a * G + g];
#pragma unroll
                for (int j = 0; j < kVecOut; ++j) {
                    const int at = (O % 4 + j) / 4 + g, bits = 8 * ((O % 4 + j) % 4);
                    acc[j] = dot4_u8s8(bits ? __funnelshift_r(v[at], v[at + 1], bits) : v[at], t, acc[j]);
                }
            }
        }
        int b[kVecOut];
#pragma unroll
        for (int j = 0; j < kVecOut; ++j) b[j] = finish_u8<Signed>(acc[j], dv);
        store_u8x4(b, out.base + size_t(y0 + ty + k) * out.pitch, e, sh.width);
    }
}

// f32 -> f32, one channel, f32 sums, normalisation none or sum. The tile starts 4 elements left of the
// block (K <= 9), so that it is made of whole float4 and a thread reads V of them per tile row.
// `aligned`: the image base and pitch are multiples of 16 bytes.
template <int K, int PY>
__global__ void __launch_bounds__(kTileX *kTileThreadRows)
    conv2d_f32x4_kernel(SourceRows src, Shape sh, Output out, Taps<float, K * K> taps, bool aligned) {
    static_assert(K / 2 <= 4, "the tile holds 4 elements left of the block");
    constexpr int R = K / 2;
    constexpr int V = (4 - R + kVecOut + K - 1 + 3) / 4; // float4 per thread and tile row
    constexpr int tile_vecs = kTileX + V - 1;
    constexpr int tile_rows = kTileThreadRows * PY + K - 1;
    __shared__ float4 tile[tile_vecs * tile_rows];
    const long long e0 = (long long)blockIdx.x * kVecTileX, left = e0 - 4;
    const int y0 = blockIdx.y * kTileThreadRows * PY;
    const int tid = threadIdx.y * kTileX + threadIdx.x, nthreads = kTileX * kTileThreadRows;
    if (aligned && left >= 0 && left + 4 * tile_vecs <= sh.width)
        load_tile_vec16<float4, tile_vecs>(tile, tile_rows, y0, 4 * left, src, sh, tid, nthreads);
    else
        load_tile(reinterpret_cast<float *>(tile), 4 * tile_vecs, 4 * tile_vecs, tile_rows, y0, left, src, sh,
                  tid, nthreads);
    __syncthreads();

    const int ty = threadIdx.y * PY;
    const long long e = e0 + kVecOut * threadIdx.x;
    if (e >= sh.width) return;
    const float dsum = float(out.dsum);
#pragma unroll 2
    for (int k = 0; k < PY; ++k) {
        if (y0 + ty + k >= sh.out_rows) break;
        float acc[kVecOut] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int a = 0; a < K; ++a) {
            const float4 *w = tile + (ty + k + a) * tile_vecs + threadIdx.x;
            float v[4 * V];
#pragma unroll
            for (int q = 0; q < V; ++q) {
                float4 f = w[q];
                v[4 * q] = f.x, v[4 * q + 1] = f.y, v[4 * q + 2] = f.z, v[4 * q + 3] = f.w;
            }
#pragma unroll
            for (int j = 0; j < kVecOut; ++j)
#pragma unroll
                for (int b = 0; b < K; ++b) acc[j] += v[4 - R + j + b] * taps.t[a * K + b];
        }
        if (out.normalize == GPK_NORMALIZE_SUM)
#pragma unroll
            for (int j = 0; j < kVecOut; ++j) acc[j] = acc[j] / dsum;
        float *p = reinterpret_cast<float *>(out.base + size_t(y0 + ty + k) * out.pitch) + e;
        if (e + kVecOut <= sh.width && (reinterpret_cast<uintptr_t>(p) & 15) == 0) {
            *reinterpret_cast<float4 *>(p) = make_float4(acc[0], acc[1], acc[2], acc[3]);
        } else {
#pragma unroll
            for (int j = 0; j < kVecOut; ++j)
                if (e + j < sh.width) p[j] = acc[j];
        }
    }
}

} // namespace gpk::cuda::conv
