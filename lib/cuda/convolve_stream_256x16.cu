// The streaming separable kernel in shape 256x16 (kStreamVariants[0], convolve_fused_launch.cuh).
#include "cuda/convolve_stream_shape.cuh"

namespace gpk::cuda::conv {
template bool launch_stream_for<0>(DeviceContext &, const PassArgs &, cudaStream_t);
} // namespace gpk::cuda::conv
