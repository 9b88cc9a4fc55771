// The streaming separable kernel in shape 128x8 (kStreamVariants[2], convolve_fused_launch.cuh).
#include "cuda/convolve_stream_shape.cuh"

namespace gpk::cuda::conv {
template bool launch_stream_for<2>(DeviceContext &, const PassArgs &, cudaStream_t);
} // namespace gpk::cuda::conv
