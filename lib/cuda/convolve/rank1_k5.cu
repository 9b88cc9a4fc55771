// The rank-1 strip kernel for 5 x 5 taps (rank1_launch.cuh).
#include "cuda/convolve/rank1_launch.cuh"

namespace gpk::cuda::conv {
template unsigned launch_rank1_strip<5>(const PassArgs &, const Rank1Taps<5> &, bool, cudaStream_t);
} // namespace gpk::cuda::conv
