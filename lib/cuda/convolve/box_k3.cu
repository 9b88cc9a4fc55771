// The box kernel for 3 x 3 taps (box_launch.cuh).
#include "cuda/convolve/box_launch.cuh"

namespace gpk::cuda::conv {
template unsigned launch_box<3, false>(const PassArgs &, const Rank1Taps<3> &, int, bool, cudaStream_t);
template unsigned launch_box<3, true>(const PassArgs &, const Rank1Taps<3> &, int, bool, cudaStream_t);
} // namespace gpk::cuda::conv
