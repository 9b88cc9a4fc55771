// Launch of the streaming separable kernel (convolve_stream.cuh) in one built shape, for every fused size;
// each shape's file (convolve_stream_<shape>.cu) includes this and instantiates launch_stream_for<V>.
#pragma once

#include "cuda/convolve_fused_launch.cuh"
#include "cuda/convolve_stream.cuh"

namespace gpk::cuda::conv {

// Streaming shape V for K taps; false where its block does not fit.
template <int K, int V> bool launch_stream_k(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    constexpr StreamVariant v = kStreamVariants[V];
    constexpr int T = v.threads, B = v.batch, NS = v.stages, MB = K <= 17 ? v.min_blocks_small : v.min_blocks;
    using S = StreamShape<K, T, B, NS, MB>;
    const auto kernel = separable_stream_kernel<K, T, B, NS, MB>;
    const int per_sm = ctx.resident_blocks(reinterpret_cast<const void *>(kernel), T, S::kSmem);
    if (per_sm < 1) return false;
    launch_runs(kernel, ctx, a, per_sm, T, T, B, S::kSmem, s, "separable_stream_kernel");
    return true;
}

template <int V, int K = 3> bool launch_stream_sizes(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    if constexpr (K > 65) {
        return false;
    } else {
        if constexpr (fused_size(K)) {
            if (a.filter->kw == K) return launch_stream_k<K, V>(ctx, a, s);
        }
        return launch_stream_sizes<V, K + 2>(ctx, a, s);
    }
}

template <int V> bool launch_stream_for(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    return launch_stream_sizes<V>(ctx, a, s);
}

} // namespace gpk::cuda::conv
