// Launch of the streaming separable kernel (stream.cuh) in its one shape: 256 threads (= strip width) x
// batches of 16 rows, 3 staging buffers, registers budgeted for 2 blocks an SM. The fused sizes to 17 taps
// are instantiated in stream.cu, the wider ones in stream_wide.cu, so that they compile in parallel.
#pragma once

#include "cuda/convolve/fused_launch.cuh"
#include "cuda/convolve/stream.cuh"

namespace gpk::cuda::conv {

constexpr int kStreamThreads = 256, kStreamBatch = 16, kStreamStages = 3, kStreamMinBlocks = 2;

// The kernel for K taps; false where its block does not fit.
template <int K> bool launch_stream_k(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    using S = StreamShape<K, kStreamThreads, kStreamBatch, kStreamStages, kStreamMinBlocks>;
    const auto kernel =
        separable_stream_kernel<K, kStreamThreads, kStreamBatch, kStreamStages, kStreamMinBlocks>;
    const int per_sm = ctx.resident_blocks(reinterpret_cast<const void *>(kernel), kStreamThreads, S::kSmem);
    if (per_sm < 1) return false;
    launch_runs(kernel, ctx, a, per_sm, kStreamThreads, kStreamThreads, kStreamBatch, S::kSmem, s,
                "separable_stream_kernel");
    return true;
}

// The kernel for the filter's size among the fused sizes in [K, Last]; false where none is or its block does
// not fit.
template <int K, int Last> bool launch_stream_sizes(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    if constexpr (K > Last) {
        return false;
    } else {
        if constexpr (fused_size(K)) {
            if (a.filter->kw == K) return launch_stream_k<K>(ctx, a, s);
        }
        return launch_stream_sizes<K + 2, Last>(ctx, a, s);
    }
}

} // namespace gpk::cuda::conv
