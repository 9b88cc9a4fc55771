// The box kernel for 3 x 3 taps (box_launch.cuh).
#include "cuda/convolve/box_launch.cuh"

namespace gpk::cuda::conv {
template unsigned launch_box<3>(const PassArgs &, const Rank1Taps<3> &, int, cudaStream_t);
} // namespace gpk::cuda::conv
