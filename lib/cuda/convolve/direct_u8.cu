// Square filters on u8 images with exact int sums (direct_launch.cuh).
#include "cuda/convolve/direct_launch.cuh"

namespace gpk::cuda::conv {

unsigned launch_square_u8(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    if (a.filter->kh != a.filter->kw) return 0;
    if (unsigned blocks = launch_rank1(a, s)) return blocks;
    if (unsigned blocks = launch_pair(a, s)) return blocks;
    if (unsigned blocks = launch_strip(a, s)) return blocks;
    if (unsigned blocks = launch_vector_u8(a, s)) return blocks;
    return launch_fixed_square<uint8_t, int>(a, lim, s);
}

} // namespace gpk::cuda::conv
