// The direct 2D tile kernel (kernels.cuh) with compile-time sizes for square 3, 5 and 9 tap filters, the
// launches that direct.cu (f32 images with f32 sums) and direct_u8.cu (u8 images with exact int sums)
// instantiate, one file each so that they compile in parallel.
#pragma once

#include "cuda/convolve/strip_launch.cuh"

namespace gpk::cuda::conv {

template <class In, class Acc, int K, int PY>
unsigned launch_fixed(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    auto kernel = conv2d_kernel<In, Acc, K, K, PY, K * K>;
    int ch = a.shape.channels;
    size_t smem = size_t(tile_stride_of(kTileX + (K - 1) * ch)) * (kTileThreadRows * PY + K - 1) * sizeof(In);
    allow_shared(kernel, smem, lim, "the 2D convolution");
    long long row_elems = a.shape.width * ch;
    dim3 grid(unsigned((row_elems + kTileX - 1) / kTileX),
              unsigned((a.shape.out_rows + kTileThreadRows * PY - 1) / (kTileThreadRows * PY)));
    kernel<<<grid, dim3(kTileX, kTileThreadRows), smem, s>>>(a.src, a.shape, a.out,
                                                             make_taps<Acc, K * K>(a.filter->taps), K, K);
    check_launch("conv2d_kernel");
    return grid.x * grid.y;
}

// The tile kernel for a square filter of 3, 5 or 9 taps a side; 0 for other sizes.
template <class In, class Acc>
unsigned launch_fixed_square(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    switch (a.filter->kh) {
    case 3:
        return launch_fixed<In, Acc, 3, 16>(a, lim, s);
    case 5:
        return launch_fixed<In, Acc, 5, 16>(a, lim, s);
    case 9:
        return launch_fixed<In, Acc, 9, 8>(a, lim, s);
    default:
        return 0;
    }
}

// A square filter on a u8 image with exact int sums (direct_u8.cu): the box, rank-1, pair, 3 x 3 strip
// and four-outputs kernels where they apply, else the tile kernel at 3, 5 and 9 taps; 0 for the rest.
unsigned launch_square_u8(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s);

} // namespace gpk::cuda::conv
