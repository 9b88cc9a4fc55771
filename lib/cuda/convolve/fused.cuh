// A separable filter in one kernel, for single-channel f32 images with f32 sums and K x K taps (K odd,
// known at compile time): the intermediate (the row pass's result) never leaves the chip.
//
// A block owns a strip of kFusedW elements and a run of output rows (a multiple of 8), and walks down it
// in batches of 8 rows. Batch b's input rows (padded rows first_row + 8b .. + 7, with kFusedW + K - 1
// elements around the strip, the border rule applied) arrive by asynchronous copies one batch ahead, into
// one of two staging buffers. The row pass turns them into 8 intermediate rows of a shared-memory ring
// (a thread: 4 consecutive sums of one row from a window of K + 3 staged values read as 16-byte words);
// D = ceil((K - 1) / 8) batches later, the column pass turns ring rows into 8 output rows (a thread: 4
// consecutive rows of one column from a window of K + 3 ring rows). Each sum adds its products in tap
// order, as the two-pass kernels do, so both paths give the same bits.
#pragma once

#include "cuda/convolve/kernels.cuh"

#include <cuda_pipeline.h>

namespace gpk::cuda::conv {

constexpr int kFusedW = 128;   // elements of a block's strip
constexpr int kFusedBatch = 8; // rows of a batch
constexpr int kFusedThreads = 256;

template <int K> struct FusedShape {
    static constexpr int R = K / 2;
    static constexpr int D = (2 * R + kFusedBatch - 1) / kFusedBatch; // batches from a row pass to its use
    static constexpr int kRing = kFusedBatch * (D + 1);               // intermediate rows kept
    static constexpr int kInW = kFusedW + 2 * R;                      // staged elements of an input row
    static constexpr int kChunks = (K + 3 + 3) / 4;                   // 16-byte words of a row-pass window
    static constexpr int kInStride = (4 * 31 + 4 * kChunks + 3) / 4 * 4 > kInW
                                         ? (4 * 31 + 4 * kChunks + 3) / 4 * 4
                                         : (kInW + 3) / 4 * 4;
    static constexpr size_t kSmem = (2 * kFusedBatch * kInStride + kRing * kFusedW) * sizeof(float);
};

// Batch `batch` of input rows into staging buffer `in` (kFusedBatch rows of kInStride floats): padded row
// first_row + 8 * batch + r, elements x0 - R .. x0 + kFusedW + R - 1 after the border rule (zeros where the
// rule gives none). Commits one group of asynchronous copies.
template <int K>
__device__ __forceinline__ void fused_stage(float *in, int batch, long long first_row, long long x0,
                                            const SourceRows &src, const Shape &sh) {
    using S = FusedShape<K>;
    for (int k = threadIdx.x; k < kFusedBatch * S::kInW; k += kFusedThreads) {
        const int r = k / S::kInW, j = k - r * S::kInW;
        float *to = in + r * S::kInStride + j;
        const long long srow =
            border_index(src.row0 + first_row + kFusedBatch * batch + r, src.rows, sh.border);
        long long col = x0 - S::R + j;
        if (col < 0 || col >= sh.width) col = border_index(col, sh.width, sh.border);
        if (srow >= 0 && col >= 0)
            __pipeline_memcpy_async(
                to, reinterpret_cast<const float *>(src.base + size_t(srow) * src.pitch) + col,
                sizeof(float));
        else
            *to = 0.0f;
    }
    __pipeline_commit();
}

// Dynamic shared memory: FusedShape<K>::kSmem. Grid: (strips, runs of rows_per_block output rows). Its
// outputs are written, never folded (launch_fused_separable leaves the fold pass to the two passes).
template <int K>
__global__ void __launch_bounds__(kFusedThreads, 2)
    separable_fused_kernel(SourceRows src, Shape sh, Output out, Taps<float, kMaxTaps1D> row_taps,
                           Taps<float, kMaxTaps1D> col_taps, int rows_per_block) {
    using S = FusedShape<K>;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    float *staged = reinterpret_cast<float *>(smem_raw);   // [2][kFusedBatch][kInStride]
    float *ring = staged + 2 * kFusedBatch * S::kInStride; // [kRing][kFusedW]
    const long long x0 = (long long)blockIdx.x * kFusedW;
    const int y0 = blockIdx.y * rows_per_block;
    const int rows = min(rows_per_block, sh.out_rows - y0);
    const int in_batches = (rows + 2 * S::R + kFusedBatch - 1) / kFusedBatch;
    const int out_batches = (rows + kFusedBatch - 1) / kFusedBatch;
    const long long row_elems = sh.width;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int col = threadIdx.x % kFusedW, group = threadIdx.x / kFusedW; // column pass

    fused_stage<K>(staged, 0, y0, x0, src, sh);
    for (int b = 0; b < out_batches + S::D; ++b) {
        if (b < in_batches) {
            if (b + 1 < in_batches) {
                fused_stage<K>(staged + ((b + 1) & 1) * kFusedBatch * S::kInStride, b + 1, y0, x0, src, sh);
                __pipeline_wait_prior(1);
            } else {
                __pipeline_wait_prior(0);
            }
            __syncthreads(); // batch b staged by every thread
            // Row pass: intermediate row 8b + warp, elements 4 * lane .. + 3.
            const float *in = staged + (b & 1) * kFusedBatch * S::kInStride + warp * S::kInStride + 4 * lane;
            float w[4 * S::kChunks];
#pragma unroll
            for (int c = 0; c < S::kChunks; ++c) {
                const float4 v = reinterpret_cast<const float4 *>(in)[c];
                w[4 * c] = v.x, w[4 * c + 1] = v.y, w[4 * c + 2] = v.z, w[4 * c + 3] = v.w;
            }
            float4 sum;
            float *s = &sum.x;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                float a = 0.0f;
#pragma unroll
                for (int t = 0; t < K; ++t) a += w[q + t] * row_taps.t[t];
                s[q] = a;
            }
            reinterpret_cast<float4 *>(ring + ((kFusedBatch * b + warp) % S::kRing) * kFusedW)[lane] = sum;
            __syncthreads(); // the ring rows are written; staging buffer b & 1 may be refilled
        }
        const int ob = b - S::D;
        if (ob >= 0 && ob < out_batches) {
            // Column pass: output rows 8 * ob + 4 * group .. + 3 of column `col`, from ring rows (same
            // numbering: output row y reads intermediate rows y .. y + K - 1).
            const int first = kFusedBatch * ob + 4 * group;
            int slot = first % S::kRing;
            float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int i = 0; i < K + 3; ++i) {
                const float v = ring[slot * kFusedW + col];
                slot = slot + 1 == S::kRing ? 0 : slot + 1;
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    const int a = i - k;
                    if (a >= 0 && a < K) acc[k] += v * col_taps.t[a];
                }
            }
            const long long e = x0 + col;
            Output o = out;
            o.base = out.base + size_t(y0) * out.pitch;
            Shape bounded = sh;
            bounded.out_rows = rows; // rows past this block's run belong to the next one
            finish_column<float, 4, false>(acc, first, e, e < row_elems, bounded, o);
        }
        __syncthreads(); // the ring rows read by this column pass may be overwritten next
    }
}

} // namespace gpk::cuda::conv
