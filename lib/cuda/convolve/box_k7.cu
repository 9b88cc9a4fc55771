// The box kernel for 7 x 7 taps (box_launch.cuh).
#include "cuda/convolve/box_launch.cuh"

namespace gpk::cuda::conv {
template unsigned launch_box<7>(const PassArgs &, const Rank1Taps<7> &, int, cudaStream_t);
} // namespace gpk::cuda::conv
