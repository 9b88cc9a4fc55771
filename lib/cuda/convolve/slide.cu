// Launch of the sliding-window f32 kernel (slide.cuh) where it applies: one-channel f32 images with
// f32 sums and 16-byte aligned rows, square 2D filters of 5, 7 or 9 taps, f32 outputs written with
// normalisation none or sum. Elsewhere (and with GPK_TEST_CONV_F32=off) the tile kernels run (vector.cu,
// direct.cu), with the same bits.
#include "cuda/convolve/launch.cuh"
#include "engine/test_hooks.hpp"
#include "cuda/convolve/slide.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gpk::cuda::conv {
namespace {

// A built form of the kernel: D rows loaded ahead, halo by shuffle or by loads, blocks per SM its registers
// are capped for.
struct SlideForm {
    int depth;
    bool load_halo;
    int min_blocks;
};

// Each K's form: registers capped so that 8 blocks share an SM without spilling (K = 5 spills at 10), but
// at 9 x 9, which loads its halo rather than shuffling it (the faster of the two there) with registers for 6.
template <int K> constexpr SlideForm slide_form() {
    return K == 9 ? SlideForm{1, true, 6} : K == 7 ? SlideForm{1, false, 8} : SlideForm{2, false, 8};
}

template <int K> unsigned launch_k(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    constexpr SlideForm form = slide_form<K>();
    const auto kernel = conv2d_f32_slide_kernel<K, form.depth, form.load_halo, form.min_blocks>;
    const int per_sm = ctx.resident_blocks(reinterpret_cast<const void *>(kernel), kSlideThreads, 0);
    if (per_sm < 1) return 0;
    const long long bands = (a.shape.width + kSlideBand - 1) / kSlideBand;
    const long long bx = (bands + kSlideWarps - 1) / kSlideWarps;
    // One wave of blocks (kSlideWarps warps each) where the image allows; strips of at least K rows (a
    // strip reads K - 1 rows beyond its own; longer minimums leave small images a fraction of a wave).
    long long rows =
        rows_per_run(a.shape.out_rows, (long long)per_sm * ctx.limits().multiprocessors, bx, K, 1);
    rows = std::max<long long>(rows, (a.shape.out_rows + 65534) / 65535); // grid y
    const dim3 grid(unsigned(bx), unsigned((a.shape.out_rows + rows - 1) / rows));
    const bool out_aligned = reinterpret_cast<uintptr_t>(a.out.base) % 16 == 0 && a.out.pitch % 16 == 0;
    kernel<<<grid, dim3(32, kSlideWarps), 0, s>>>(
        a.src, a.shape, a.out, make_taps<float, K * K>(a.filter->taps), int(rows), out_aligned);
    check_launch("conv2d_f32_slide_kernel");
    return grid.x * grid.y;
}

} // namespace

unsigned launch_slide_f32(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    const gpk_filter &f = *a.filter;
    const Output &o = a.out;
    if (a.in_dtype != GPK_F32 || a.acc != AccKind::f32 || a.shape.channels != 1 || f.separable ||
        f.kh != f.kw || f.kh > kSlideMaxK || o.reduce || o.dtype != GPK_F32 ||
        (o.normalize != GPK_NORMALIZE_NONE && o.normalize != GPK_NORMALIZE_SUM))
        return 0;
    if (reinterpret_cast<uintptr_t>(a.src.base) % 16 != 0 || a.src.pitch % 16 != 0) return 0;
    // Indices in int: columns within a band's reach of the row, padded rows, the rows there are.
    if (a.shape.width >= kSlideMaxIndex || a.src.rows >= kSlideMaxIndex || a.src.row0 <= -kSlideMaxIndex ||
        a.src.row0 >= kSlideMaxIndex)
        return 0;
    // K >= 5 only: at 3 x 3 the four-outputs tile kernel (vector.cuh) is faster.
    // The test hook GPK_TEST_CONV_F32=off takes the tile kernels, as where this kernel's preconditions fail.
    if (test_hooks().conv_f32_tiles || f.kh < 5) return 0;
    switch (f.kh) {
    case 5:
        return launch_k<5>(ctx, a, s);
    case 7:
        return launch_k<7>(ctx, a, s);
    case 9:
        return launch_k<9>(ctx, a, s);
    default:
        return 0;
    }
}

} // namespace gpk::cuda::conv
