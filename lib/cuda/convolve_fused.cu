// Launch of the fused separable kernel (convolve_fused.cuh) where it applies: single-channel f32 images with
// f32 sums, a square filter of a built size, outputs written (not the min/max fold). Elsewhere the two
// passes run (convolve_separable.cu).
#include "cuda/convolve_fused.cuh"
#include "cuda/convolve_launch.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace gpk::cuda::conv {
namespace {

// Tap counts with a fused kernel: every odd count to 17, then a few radii beyond.
template <int K> constexpr bool fused_size() {
    return K <= 17 || K == 25 || K == 33 || K == 49 || K == 65;
}

// GPK_TEST_CONV_FUSED (NOTES.md, internal knobs): "off" takes the two passes, for comparison; "require"
// makes a filter the fused kernel would take but that does not fit the device GPK_ERR_UNSUPPORTED instead of
// the two passes, so that tests see which path ran.
enum class FusedKnob { on, off, require };
FusedKnob fused_knob() {
    const char *knob = std::getenv("GPK_TEST_CONV_FUSED");
    if (knob && std::strcmp(knob, "off") == 0) return FusedKnob::off;
    if (knob && std::strcmp(knob, "require") == 0) return FusedKnob::require;
    return FusedKnob::on;
}

// Launches the fused kernel for K taps; false (nothing launched) where its block does not fit the device
// (shared memory, registers): the caller then runs the two passes.
template <int K> bool launch_fused(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    using S = FusedShape<K>;
    const auto kernel = separable_fused_kernel<K>;
    const int per_sm = ctx.resident_blocks(reinterpret_cast<const void *>(kernel), kFusedThreads, S::kSmem);
    if (per_sm < 1) {
        if (fused_knob() == FusedKnob::require)
            fail(GPK_ERR_UNSUPPORTED, "the fused separable kernel does not fit this device "
                                      "(GPK_TEST_CONV_FUSED=require)");
        return false;
    }
    const long long strips = (a.shape.width + kFusedW - 1) / kFusedW;
    const long long slots = (long long)per_sm * ctx.limits().multiprocessors;
    // Runs of rows: one wave of blocks where the image allows, each run at least 4 * (K - 1) rows so that
    // the K - 1 extra intermediate rows of a run stay a small share, in whole batches.
    const long long runs_wanted = std::max<long long>(1, slots / strips);
    long long rows = (a.shape.out_rows + runs_wanted - 1) / runs_wanted;
    rows = std::max<long long>(rows, 4 * (K - 1));
    rows = (rows + kFusedBatch - 1) / kFusedBatch * kFusedBatch;
    const long long runs = (a.shape.out_rows + rows - 1) / rows;
    kernel<<<dim3(unsigned(strips), unsigned(runs)), kFusedThreads, S::kSmem, s>>>(
        a.src, a.shape, a.out, make_taps<float, kMaxTaps1D>(a.filter->row),
        make_taps<float, kMaxTaps1D>(a.filter->col), int(rows));
    check_launch("separable_fused_kernel");
    return true;
}

template <int K = 3> bool launch_fused_for(DeviceContext &ctx, const PassArgs &a, int k, cudaStream_t s) {
    if constexpr (K > 65) {
        return false;
    } else {
        if constexpr (fused_size<K>()) {
            if (k == K) return launch_fused<K>(ctx, a, s);
        }
        return launch_fused_for<K + 2>(ctx, a, k, s);
    }
}

} // namespace

bool launch_fused_separable(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    const gpk_filter &f = *a.filter;
    if (a.in_dtype != GPK_F32 || a.acc != AccKind::f32 || a.shape.channels != 1 || a.out.reduce ||
        f.kw != f.kh || fused_knob() == FusedKnob::off)
        return false;
    return launch_fused_for(ctx, a, f.kw, s);
}

} // namespace gpk::cuda::conv
