// The box kernel for 9 x 9 taps (box_launch.cuh).
#include "cuda/convolve/box_launch.cuh"

namespace gpk::cuda::conv {
template unsigned launch_box<9>(const PassArgs &, const Rank1Taps<9> &, int, cudaStream_t);
} // namespace gpk::cuda::conv
