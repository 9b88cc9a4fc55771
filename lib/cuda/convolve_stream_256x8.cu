// The streaming separable kernel in shape 256x8 (kStreamVariants[1], convolve_fused_launch.cuh).
#include "cuda/convolve_stream_shape.cuh"

namespace gpk::cuda::conv {
template bool launch_stream_for<1>(DeviceContext &, const PassArgs &, cudaStream_t);
} // namespace gpk::cuda::conv
