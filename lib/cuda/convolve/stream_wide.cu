// The streaming separable kernel (stream_launch.cuh) for the fused sizes beyond 17 taps.
#include "cuda/convolve/stream_launch.cuh"

namespace gpk::cuda::conv {

bool launch_stream_wide(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    return launch_stream_sizes<19, 65>(ctx, a, s);
}

} // namespace gpk::cuda::conv
