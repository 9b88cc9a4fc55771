// Launch helpers shared by the fused separable kernels' files: the ring kernel's (fused.cu) and the
// streaming kernel's (stream.cu, stream_wide.cu), apart so that they compile in parallel.
#pragma once

#include "cuda/convolve/launch.cuh"

#include <algorithm>

namespace gpk::cuda::conv {

// Tap counts with a fused kernel: every odd count to 17, then a few radii beyond.
constexpr bool fused_size(int k) {
    return k >= 3 && k % 2 == 1 && (k <= 17 || k == 25 || k == 33 || k == 49 || k == 65);
}

// Launches a fused kernel of `threads` threads a block, each block owning a strip of `strip` columns and a
// run of rows in whole batches of `batch` rows, `per_sm` blocks resident per SM: one wave of blocks where
// the image allows, each run at least K - 1 rows so that a run's extra intermediate rows (K - 1) are at most
// its own (longer minimums leave images under a few thousand rows a fraction of a wave). The ring kernel's
// 256 threads own 128 columns; the streaming kernel's threads one each.
template <class Kernel>
inline void launch_runs(Kernel kernel, DeviceContext &ctx, const PassArgs &a, int per_sm, int threads,
                        int strip, int batch, size_t smem, cudaStream_t s, const char *name) {
    const int k = int(a.filter->kh);
    const long long strips = (a.shape.width + strip - 1) / strip;
    const long long rows = rows_per_run(a.shape.out_rows, (long long)per_sm * ctx.limits().multiprocessors,
                                        strips, k - 1, batch);
    const long long runs = (a.shape.out_rows + rows - 1) / rows;
    kernel<<<dim3(unsigned(strips), unsigned(runs)), threads, smem, s>>>(
        a.src, a.shape, a.out, make_taps<float, kMaxTaps1D>(a.filter->row),
        make_taps<float, kMaxTaps1D>(a.filter->col), int(rows));
    check_launch(name);
}

// The streaming kernel (stream_launch.cuh) for the filter's size (a fused one); false where its block does
// not fit the device. launch_stream_wide: the sizes beyond 17 taps alone.
bool launch_stream(DeviceContext &ctx, const PassArgs &a, cudaStream_t s);
bool launch_stream_wide(DeviceContext &ctx, const PassArgs &a, cudaStream_t s);

} // namespace gpk::cuda::conv
