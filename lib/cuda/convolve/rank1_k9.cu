// The rank-1 strip kernel for 9 x 9 taps (rank1_launch.cuh).
#include "cuda/convolve/rank1_launch.cuh"

namespace gpk::cuda::conv {
template unsigned launch_rank1_strip<9>(const PassArgs &, const Rank1Taps<9> &, bool, cudaStream_t);
} // namespace gpk::cuda::conv
