// Launch helpers shared by the fused separable kernels' files: the ring kernel's (convolve_fused.cu) and the
// streaming kernel's, one file per built shape (convolve_stream_<shape>.cu) so that they compile in parallel.
#pragma once

#include "cuda/convolve_launch.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace gpk::cuda::conv {

// Tap counts with a fused kernel: every odd count to 17, then a few radii beyond.
constexpr bool fused_size(int k) {
    return k >= 3 && k % 2 == 1 && (k <= 17 || k == 25 || k == 33 || k == 49 || k == 65);
}

// The streaming kernel's built shapes (convolve_stream.cuh): threads (= strip width) x batch rows, staging
// buffers, blocks per SM the registers are budgeted for (filters of more than 17 taps, of up to 17).
// GPK_TEST_CONV_FUSED_KERNEL (NOTES.md, internal knobs) names one ("256x8") or the ring kernel ("ring");
// unset, the first runs, then the ring kernel where it does not fit.
struct StreamVariant {
    const char *name;
    int threads, batch, stages, min_blocks, min_blocks_small;
};
constexpr StreamVariant kStreamVariants[] = {{"256x16", 256, 16, 3, 2, 2},
                                             {"256x8", 256, 8, 3, 2, 3},
                                             {"128x8", 128, 8, 4, 4, 6},
                                             {"256x8b4", 256, 8, 4, 2, 4}};
constexpr int kStreamCount = int(sizeof kStreamVariants / sizeof kStreamVariants[0]);

// Launches a fused kernel of `threads` threads a block, each block owning a strip of `strip` columns and a
// run of rows in whole batches of `batch` rows, `per_sm` blocks resident per SM: one wave of blocks where
// the image allows, each run at least K - 1 rows so that a run's extra intermediate rows (K - 1) are at most
// its own. (4 (K - 1) until 2026-11-26, which left images under a few thousand rows a fraction of a wave;
// GPK_TEST_CONV_RUN_ROWS=4 keeps it, NOTES.md. The ring kernel's 256 threads own 128 columns; a streaming
// kernel's threads one each.)
template <class Kernel>
inline void launch_runs(Kernel kernel, DeviceContext &ctx, const PassArgs &a, int per_sm, int threads,
                        int strip, int batch, size_t smem, cudaStream_t s, const char *name) {
    const int k = int(a.filter->kh);
    const long long strips = (a.shape.width + strip - 1) / strip;
    const char *knob = std::getenv("GPK_TEST_CONV_RUN_ROWS");
    const int times = knob && std::strcmp(knob, "4") == 0 ? 4 : 1;
    const long long rows = rows_per_run(a.shape.out_rows, (long long)per_sm * ctx.limits().multiprocessors,
                                        strips, times * (k - 1), batch);
    const long long runs = (a.shape.out_rows + rows - 1) / rows;
    kernel<<<dim3(unsigned(strips), unsigned(runs)), threads, smem, s>>>(
        a.src, a.shape, a.out, make_taps<float, kMaxTaps1D>(a.filter->row),
        make_taps<float, kMaxTaps1D>(a.filter->col), int(rows));
    check_launch(name);
}

// Streaming shape V for the filter's size (a built one); false where its block does not fit. Defined in
// convolve_stream_shape.cuh, instantiated in the shape's own file.
template <int V> bool launch_stream_for(DeviceContext &ctx, const PassArgs &a, cudaStream_t s);
extern template bool launch_stream_for<0>(DeviceContext &, const PassArgs &, cudaStream_t);
extern template bool launch_stream_for<1>(DeviceContext &, const PassArgs &, cudaStream_t);
extern template bool launch_stream_for<2>(DeviceContext &, const PassArgs &, cudaStream_t);
extern template bool launch_stream_for<3>(DeviceContext &, const PassArgs &, cudaStream_t);
static_assert(kStreamCount == 4, "one convolve_stream_<shape>.cu file and instantiation per shape");

} // namespace gpk::cuda::conv
