// The box kernel for 9 x 9 taps, written sums (box_launch.cuh; the passes of min/max: box_k9_minmax.cu).
#include "cuda/convolve/box_launch.cuh"

namespace gpk::cuda::conv {
template unsigned launch_box<9, false>(const PassArgs &, const Rank1Taps<9> &, int, bool, cudaStream_t);
} // namespace gpk::cuda::conv
