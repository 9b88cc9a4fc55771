// Square 3, 5 and 9 tap filters on one-channel images with four outputs per thread along x: u8 images with
// exact int sums through dp4a (taps as signed bytes, four to a word) and packed 4-byte stores, f32 images
// with f32 sums through 16-byte shared and global loads and stores. The per-sample work of conv2d_kernel
// (tile indexing, normalisation set-up, single-byte stores) is shared by four outputs here. convolve_2d.cu
// picks them where they apply; every other case takes conv2d_kernel.
#pragma once

#include "cuda/convolve_kernels.cuh"

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

// div_round(n, isum) (semantics.hpp) for |n| < 2^31 and d = |isum| in [1, 2^31): nearest with ties away
// from zero is floor((|n| + floor(d / 2)) / d), and that numerator is below 2^32, where the multiply-high
// divider of Output is exact.
__device__ __forceinline__ int div_round_int(int n, unsigned d, const Output &o) {
    unsigned m = (n < 0 ? 0u - unsigned(n) : unsigned(n)) + (d >> 1);
    unsigned t = __umulhi(m, o.sum_magic);
    unsigned q = (t + ((m - t) >> o.sum_sh1)) >> o.sum_sh2;
    return (n < 0) != (o.isum < 0) ? -int(q) : int(q);
}

// Normalises four u8 sums (none or sum) and stores them at row[e..e+3], packed where aligned and whole.
__device__ __forceinline__ void store_u8x4(const int (&acc)[kVecOut], char *row, long long e,
                                           long long row_elems, unsigned d, const Output &o) {
    int b[kVecOut];
#pragma unroll
    for (int j = 0; j < kVecOut; ++j) {
        int x = o.normalize == GPK_NORMALIZE_SUM ? div_round_int(acc[j], d, o) : acc[j];
        b[j] = min(max(x, 0), 255);
    }
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

// u8 -> u8, one channel, exact int sums, normalisation none or sum (with a divider), taps in [-128, 127].
// A thread reads the G + 1 tile words from its 4 outputs on; output j's bytes are those words shifted by j.
template <int K, int PY>
__global__ void __launch_bounds__(kTileX *kTileThreadRows)
    conv2d_u8x4_kernel(SourceRows src, Shape sh, Output out, ByteTaps<K> taps) {
    constexpr int G = (K + 3) / 4;                 // tap words per filter row
    constexpr int tile_stride = kVecTileX + 4 * G; // bytes: the widest window any thread reads
    constexpr int tile_rows = kTileThreadRows * PY + K - 1;
    __shared__ __align__(16) unsigned char tile[tile_stride * tile_rows];
    const long long e0 = (long long)blockIdx.x * kVecTileX;
    const int y0 = blockIdx.y * kTileThreadRows * PY;
    // Bytes from kVecTileX + K - 1 on meet only zero taps, so the loader may leave them unset.
    load_tile(tile, kVecTileX + K - 1, tile_stride, tile_rows, y0, e0 - K / 2, src, sh,
              threadIdx.y * kTileX + threadIdx.x, kTileX * kTileThreadRows);
    __syncthreads();

    const unsigned *words = reinterpret_cast<const unsigned *>(tile);
    const int ty = threadIdx.y * PY;
    const long long e = e0 + kVecOut * threadIdx.x;
    if (e >= sh.width) return;
    const unsigned d = unsigned(out.isum < 0 ? -out.isum : out.isum);
#pragma unroll 2
    for (int k = 0; k < PY; ++k) {
        if (y0 + ty + k >= sh.out_rows) break;
        int acc[kVecOut] = {0, 0, 0, 0};
#pragma unroll
        for (int a = 0; a < K; ++a) {
            const unsigned *w = words + (ty + k + a) * (tile_stride / 4) + threadIdx.x;
            unsigned v[G + 1];
#pragma unroll
            for (int g = 0; g <= G; ++g) v[g] = w[g];
#pragma unroll
            for (int g = 0; g < G; ++g) {
                const int t = taps.w[a * G + g];
                acc[0] = dot4_u8s8(v[g], t, acc[0]);
#pragma unroll
                for (int j = 1; j < kVecOut; ++j)
                    acc[j] = dot4_u8s8(__funnelshift_r(v[g], v[g + 1], 8 * j), t, acc[j]);
            }
        }
        store_u8x4(acc, out.base + size_t(y0 + ty + k) * out.pitch, e, sh.width, d, out);
    }
}

// Fills the f32 tile from element `left` (a multiple of 4) with 16-byte loads, a batch of independent ones
// at a time; the caller guarantees aligned rows and a tile inside the row.
template <int TileVecs, int TileRows>
__device__ __forceinline__ void load_tile_vec4(float4 *tile, long long first_row, long long left,
                                               const SourceRows &src, const Shape &sh, int tid,
                                               int nthreads) {
    constexpr int total = TileVecs * TileRows;
    const unsigned magic = div_magic(TileVecs);
    for (int base = tid; base < total; base += kLoadBatch * nthreads) {
        float4 v[kLoadBatch];
#pragma unroll
        for (int u = 0; u < kLoadBatch; ++u) {
            int k = base + u * nthreads;
            v[u] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (k < total) {
                int r = div_small(k, magic), c = k - r * TileVecs;
                long long srow = border_index(src.row0 + first_row + r, src.rows, sh.border);
                if (srow >= 0)
                    v[u] = __ldg(reinterpret_cast<const float4 *>(src.base + size_t(srow) * src.pitch) +
                                 (left / 4 + c));
            }
        }
#pragma unroll
        for (int u = 0; u < kLoadBatch; ++u)
            if (base + u * nthreads < total) tile[base + u * nthreads] = v[u];
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
        load_tile_vec4<tile_vecs, tile_rows>(tile, y0, left, src, sh, tid, nthreads);
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
