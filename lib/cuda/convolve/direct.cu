// Launches of the direct 2D filter over a band: the sliding-window f32 kernel (slide.cu) where it applies,
// then for square filters the specialised kernels of u8 images with exact int sums (direct_u8.cu) and
// f32 images with f32 sums (the four-outputs kernels, vector.cu, then the tile kernel with compile-time
// sizes, direct_launch.cuh); everything else takes the general kernel (general.cu).
#include "cuda/convolve/direct_launch.cuh"

namespace gpk::cuda::conv {

unsigned launch_conv2d(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    if (unsigned blocks = launch_slide_f32(ctx, a, s)) return blocks;
    const DeviceLimits &lim = ctx.limits();
    unsigned blocks = 0;
    if (a.in_dtype == GPK_U8 && a.acc == AccKind::i32) {
        blocks = launch_square_u8(a, lim, s);
    } else if (a.in_dtype == GPK_F32 && a.acc == AccKind::f32 && a.filter->kh == a.filter->kw) {
        blocks = launch_vector_f32(a, lim, s);
        if (!blocks) blocks = launch_fixed_square<float, float>(a, lim, s);
    }
    return blocks ? blocks : launch_general(a, lim, s);
}

} // namespace gpk::cuda::conv
