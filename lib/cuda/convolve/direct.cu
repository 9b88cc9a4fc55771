// Launches of the direct 2D filter over a band: the sliding-window f32 kernel (slide.cu) and the u8 strip
// kernels (strip_launch.cuh) where they apply, then the four-outputs kernels (vector.cu) and compile-time
// sizes for square 3, 5 and 9 tap filters on u8 (exact int) and f32 images; everything else takes the
// general kernel (general.cu).
#include "cuda/convolve/strip_launch.cuh"

#include <type_traits>

namespace gpk::cuda::conv {
namespace {

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

// u8 with exact int sums and f32 with f32 sums, the cases the benchmarks and most users run; returns the
// blocks launched, 0 when the filter is not one of these.
template <class In, class Acc>
unsigned launch_square(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    if (a.filter->kh != a.filter->kw) return 0;
    if constexpr (std::is_same<In, uint8_t>::value) {
        if (unsigned blocks = launch_rank1(a, s)) return blocks;
        if (unsigned blocks = launch_pair(a, s)) return blocks;
        if (unsigned blocks = launch_strip(a, s)) return blocks;
        if (unsigned blocks = launch_vector_u8(a, s)) return blocks;
    } else {
        if (unsigned blocks = launch_vector_f32(a, lim, s)) return blocks;
    }
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

} // namespace

unsigned launch_conv2d(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    if (unsigned blocks = launch_slide_f32(ctx, a, s)) return blocks;
    const DeviceLimits &lim = ctx.limits();
    unsigned blocks = 0;
    if (a.in_dtype == GPK_U8 && a.acc == AccKind::i32)
        blocks = launch_square<uint8_t, int>(a, lim, s);
    else if (a.in_dtype == GPK_F32 && a.acc == AccKind::f32)
        blocks = launch_square<float, float>(a, lim, s);
    return blocks ? blocks : launch_general(a, lim, s);
}

} // namespace gpk::cuda::conv
