// The rank-1 strip kernel for 7 x 7 taps (rank1_launch.cuh).
#include "cuda/convolve/rank1_launch.cuh"

namespace gpk::cuda::conv {
template unsigned launch_rank1_strip<7>(const PassArgs &, const Rank1Taps<7> &, bool, cudaStream_t);
} // namespace gpk::cuda::conv
