// The streaming separable kernel (stream_launch.cuh) for the fused sizes to 17 taps; stream_wide.cu has
// the wider ones.
#include "cuda/convolve/stream_launch.cuh"

namespace gpk::cuda::conv {

bool launch_stream(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    return a.filter->kw <= 17 ? launch_stream_sizes<3, 17>(ctx, a, s) : launch_stream_wide(ctx, a, s);
}

} // namespace gpk::cuda::conv
