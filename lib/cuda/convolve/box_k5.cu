// The box kernel for 5 x 5 taps (box_launch.cuh).
#include "cuda/convolve/box_launch.cuh"

namespace gpk::cuda::conv {
template unsigned launch_box<5>(const PassArgs &, const Rank1Taps<5> &, int, cudaStream_t);
} // namespace gpk::cuda::conv
