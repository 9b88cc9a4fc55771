// The streaming separable kernel: single-channel f32 images, f32 sums, K x K taps (K odd, known at compile
// time). Like the ring kernel (fused.cuh) the intermediate never leaves the chip, but the column
// pass keeps its window of intermediate values in registers instead of a shared-memory ring:
//
// - A block of T threads owns a strip of T columns and a run of output rows, and walks down it in batches
//   of B intermediate rows. Input rows arrive by asynchronous copies (16 bytes where a chunk of 4 lies
//   inside the row and is aligned, element by element with the border rule otherwise) NS - 1 batches ahead.
// - Row pass: a thread turns 8 consecutive elements of one staged row into 8 intermediate sums (a window of
//   K + 7 values read as 16-byte words, each value used by up to 8 sums), into a double-buffered batch of
//   B rows in shared memory. A warp takes two rows of 128 elements, lanes interleaved so that each quarter
//   warp's 16-byte words fall on distinct banks (row strides are 4 modulo 8 words).
// - Column pass: thread t owns column t. It reads its B new intermediate values (one 4-byte load each) into
//   a register window of the last (D + 1) B values (D B >= K - 1), computes B output rows from it and
//   shifts the window by B. Each value is read from shared memory once.
// - One barrier per batch: the row pass of batch b + 1 and the column pass of batch b share a phase.
//
// Every sum adds its products in tap order from 0 (row: taps 0..K-1 over elements x - R..x + R; column:
// intermediate rows y..y + K - 1), as the two-pass and ring kernels do, so all give the same bits.
#pragma once

#include "cuda/convolve/kernels.cuh"

#include <cuda_pipeline.h>

namespace gpk::cuda::conv {

// T threads (= strip width, a multiple of 128), B rows a batch (a multiple of 8), NS staging buffers,
// MinBlocks for __launch_bounds__.
template <int K, int T, int B, int NS, int MinBlocks> struct StreamShape {
    static_assert(K % 2 == 1 && T % 128 == 0 && B % 8 == 0 && NS >= 2, "stream kernel shape");
    static constexpr int R = K / 2;
    static constexpr int R4 = (R + 3) / 4 * 4;             // staged halo, whole 16-byte words
    static constexpr int O = R4 - R;                       // first staged element a row pass window uses
    static constexpr int kInW = T + 2 * R4;                // staged elements of a row
    static constexpr int kChunks = kInW / 4;               // 16-byte words of a staged row
    static constexpr int kInStride = kInW + 4;             // 4 modulo 8 (kInW is a multiple of 8)
    static constexpr int kMidStride = T + 4;               // 4 modulo 8
    static constexpr int kWords = (O + 8 + K - 1 + 3) / 4; // 16-byte words of a row pass window
    static constexpr int D = (K - 1 + B - 1) / B;          // batches of the window before the newest
    static constexpr int kWin = (D + 1) * B;               // register window of the column pass
    static constexpr int E = D * B - (K - 1);              // window offset of the first output's rows
    static constexpr size_t kSmem = (size_t(NS) * B * kInStride + 2 * B * kMidStride) * sizeof(float);
};

// Stages batch `batch` (intermediate rows B batch .. + B - 1 of the block; row m is padded row
// first_row + m, zeros where m < skip) into `buf`, elements x0 - R4 .. x0 + T + R4 - 1 after the border
// rule; nothing past the block's last batch. Commits one group of asynchronous copies (possibly empty).
template <class S, int T, int B>
__device__ __forceinline__ void stream_stage(float *buf, int batch, int batches, long long first_row,
                                             int skip, long long x0, const SourceRows &src, const Shape &sh) {
    const long long left = x0 - S::R4;
    const int end = batch < batches ? B * S::kChunks : 0;
    for (int k = threadIdx.x; k < end; k += T) {
        const int r = k / S::kChunks, c = k - r * S::kChunks;
        float *to = buf + r * S::kInStride + 4 * c;
        const int m = batch * B + r;
        const long long srow = m < skip ? -1 : border_index(src.row0 + first_row + m, src.rows, sh.border);
        if (srow < 0) {
            *reinterpret_cast<float4 *>(to) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            continue;
        }
        const float *row = reinterpret_cast<const float *>(src.base + size_t(srow) * src.pitch);
        const long long col = left + 4 * c;
        if (col >= 0 && col + 4 <= sh.width && (reinterpret_cast<uintptr_t>(row + col) & 15) == 0) {
            __pipeline_memcpy_async(to, row + col, 16);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                long long e = col + j;
                if (e < 0 || e >= sh.width) e = border_index(e, sh.width, sh.border);
                if (e >= 0)
                    __pipeline_memcpy_async(to + j, row + e, sizeof(float));
                else
                    to[j] = 0.0f;
            }
        }
    }
    __pipeline_commit();
}

// Row pass of one staged batch into a mid buffer: each thread B / 8 items of 8 sums.
template <class S, int K, int T, int B>
__device__ __forceinline__ void stream_row_pass(const float *staged, float *mid,
                                                const Taps<float, kMaxTaps1D> &taps) {
    constexpr int kStripBlocks = T / 128; // 128-element column blocks of a row
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    // Lanes: quarter q = lane / 8 takes groups 4q..4q + 3 of 8 elements, of the pair's first row (lane % 8
    // < 4) or second.
    const int sub = (lane >> 2) & 1, group = (lane & 3) | ((lane >> 3) << 2);
#pragma unroll
    for (int item = 0; item < B / 8; ++item) {
        const int wi = warp + item * (T / 32);
        const int r = 2 * (wi / kStripBlocks) + sub, x = 128 * (wi % kStripBlocks) + 8 * group;
        const float4 *in = reinterpret_cast<const float4 *>(staged + r * S::kInStride + x);
        float acc[8];
#pragma unroll
        for (int q = 0; q < 8; ++q) acc[q] = 0.0f;
#pragma unroll
        for (int c = 0; c < S::kWords; ++c) {
            const float4 v4 = in[c];
            const float v[4] = {v4.x, v4.y, v4.z, v4.w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                // Element 4c + j of the window is tap t = 4c + j - O - q of sum q.
#pragma unroll
                for (int q = 0; q < 8; ++q) {
                    const int t = 4 * c + j - S::O - q;
                    if (t >= 0 && t < K) acc[q] += v[j] * taps.t[t];
                }
            }
        }
        float4 *to = reinterpret_cast<float4 *>(mid + r * S::kMidStride + x);
        to[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
        to[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
    }
}

// Dynamic shared memory: StreamShape<...>::kSmem. Grid: (strips of T columns, runs of rows_per_block output
// rows, a multiple of B).
template <int K, int T, int B, int NS, int MinBlocks>
__global__ void __launch_bounds__(T, MinBlocks)
    separable_stream_kernel(SourceRows src, Shape sh, Output out, Taps<float, kMaxTaps1D> row_taps,
                            Taps<float, kMaxTaps1D> col_taps, int rows_per_block) {
    using S = StreamShape<K, T, B, NS, MinBlocks>;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    float *staged = reinterpret_cast<float *>(smem_raw); // [NS][B][kInStride]
    float *mid = staged + NS * B * S::kInStride;         // [2][B][kMidStride]
    const long long x0 = (long long)blockIdx.x * T;
    const int y0 = blockIdx.y * rows_per_block;
    const int rows = min(rows_per_block, sh.out_rows - y0);
    const int batches = S::D + (rows + B - 1) / B;
    // Intermediate row m of the block is padded row y0 - E + m; rows m < E feed no output and stay zero.
    const long long first_row = (long long)y0 - S::E;

    for (int b = 0; b < NS - 1; ++b)
        stream_stage<S, T, B>(staged + b * B * S::kInStride, b, batches, first_row, S::E, x0, src, sh);
    __pipeline_wait_prior(NS - 2);
    __syncthreads(); // batch 0 staged by every thread
    stream_row_pass<S, K, T, B>(staged, mid, row_taps);

    float win[S::kWin];
#pragma unroll
    for (int i = 0; i < S::kWin; ++i) win[i] = 0.0f;
    const long long e = x0 + threadIdx.x;
    const bool col_ok = e < sh.width;
    int slot_next = NS - 1; // staging buffer of batch b + NS - 1
    for (int b = 0; b < batches; ++b) {
        // Batch b + NS - 1 into the buffer batch b - 1 used (its row pass ran before the last barrier).
        stream_stage<S, T, B>(staged + slot_next * B * S::kInStride, b + NS - 1, batches, first_row, S::E, x0,
                              src, sh);
        __pipeline_wait_prior(NS - 2);
        __syncthreads(); // batch b + 1 staged; row pass b written; column pass b - 1 done with its buffer
        slot_next = slot_next + 1 == NS ? 0 : slot_next + 1;
        if (b + 1 < batches) {
            const int slot = (b + 1) % NS;
            stream_row_pass<S, K, T, B>(staged + slot * B * S::kInStride,
                                        mid + ((b + 1) & 1) * B * S::kMidStride, row_taps);
        }
        // Column pass of batch b: its B values enter the window.
        const float *m = mid + (b & 1) * B * S::kMidStride + threadIdx.x;
#pragma unroll
        for (int r = 0; r < B; ++r) win[S::D * B + r] = m[r * S::kMidStride];
        if (b >= S::D) {
            // Output rows B (b - D) + k, k < B: intermediate rows window E + k .. E + k + K - 1.
            float acc[B];
#pragma unroll
            for (int k = 0; k < B; ++k) acc[k] = 0.0f;
#pragma unroll
            for (int i = 0; i < S::kWin; ++i) {
#pragma unroll
                for (int k = 0; k < B; ++k) {
                    const int a = i - S::E - k;
                    if (a >= 0 && a < K) acc[k] += win[i] * col_taps.t[a];
                }
            }
            const int first = B * (b - S::D);
            if (col_ok) {
                if (out.dtype == GPK_F32 && out.normalize == GPK_NORMALIZE_NONE && first + B <= rows) {
                    float *o = reinterpret_cast<float *>(out.base + size_t(y0 + first) * out.pitch) + e;
#pragma unroll
                    for (int k = 0; k < B; ++k)
                        *reinterpret_cast<float *>(reinterpret_cast<char *>(o) + size_t(k) * out.pitch) =
                            acc[k];
                } else {
                    Output o = out;
                    o.base = out.base + size_t(y0) * out.pitch;
                    Shape bounded = sh;
                    bounded.out_rows = rows; // rows past this block's run belong to the next one
                    finish_column<float, B>(acc, first, e, true, bounded, o);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < S::D * B; ++i) win[i] = win[i + B];
    }
    __pipeline_wait_prior(0); // the empty groups committed past the last batch
}

} // namespace gpk::cuda::conv
