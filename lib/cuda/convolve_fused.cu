// Launch of a fused separable kernel where it applies: single-channel f32 images with f32 sums, a square
// filter of a built size, outputs written (not the min/max fold). The streaming kernel (convolve_stream.cuh)
// runs first, then the ring kernel (convolve_fused.cuh) where the streaming one does not fit the device;
// elsewhere the two passes run (convolve_separable.cu).
#include "cuda/convolve_fused.cuh"
#include "cuda/convolve_fused_launch.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gpk::cuda::conv {
namespace {

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

constexpr int kRingKernel = -1, kAnyKernel = -2;

int fused_kernel_knob() {
    const char *text = std::getenv("GPK_TEST_CONV_FUSED_KERNEL");
    if (!text || !*text) return kAnyKernel;
    if (std::strcmp(text, "ring") == 0) return kRingKernel;
    std::string names = "ring";
    for (int v = 0; v < kStreamCount; ++v) {
        if (std::strcmp(text, kStreamVariants[v].name) == 0) return v;
        names += std::string(", ") + kStreamVariants[v].name;
    }
    invalid(std::string("GPK_TEST_CONV_FUSED_KERNEL is \"") + text + "\"; expected one of " + names);
}

// The ring kernel for K taps; false (nothing launched) where its block does not fit the device (shared
// memory, registers).
template <int K> bool launch_ring(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    using S = FusedShape<K>;
    const auto kernel = separable_fused_kernel<K>;
    const int per_sm = ctx.resident_blocks(reinterpret_cast<const void *>(kernel), kFusedThreads, S::kSmem);
    if (per_sm < 1) return false;
    launch_runs(kernel, ctx, a, per_sm, kFusedThreads, kFusedW, kFusedBatch, S::kSmem, s,
                "separable_fused_kernel");
    return true;
}

bool launch_stream_shape(DeviceContext &ctx, const PassArgs &a, int v, cudaStream_t s);

// The kernel the knob asks for (kAnyKernel: the first streaming variant, then the ring kernel) for K taps;
// false where none fits.
template <int K> bool launch_fused(DeviceContext &ctx, const PassArgs &a, int kernel, cudaStream_t s) {
    if (kernel != kRingKernel && launch_stream_shape(ctx, a, kernel == kAnyKernel ? 0 : kernel, s))
        return true;
    return (kernel == kRingKernel || kernel == kAnyKernel) && launch_ring<K>(ctx, a, s);
}

template <int K = 3>
bool launch_fused_for(DeviceContext &ctx, const PassArgs &a, int k, int kernel, cudaStream_t s) {
    if constexpr (K > 65) {
        return false;
    } else {
        if constexpr (fused_size(K)) {
            if (k == K) return launch_fused<K>(ctx, a, kernel, s);
        }
        return launch_fused_for<K + 2>(ctx, a, k, kernel, s);
    }
}

// Streaming shape v (kStreamVariants) for the filter's size; false where its block does not fit.
bool launch_stream_shape(DeviceContext &ctx, const PassArgs &a, int v, cudaStream_t s) {
    switch (v) {
    case 0:
        return launch_stream_for<0>(ctx, a, s);
    case 1:
        return launch_stream_for<1>(ctx, a, s);
    case 2:
        return launch_stream_for<2>(ctx, a, s);
    default:
        return launch_stream_for<3>(ctx, a, s);
    }
}

} // namespace

bool launch_fused_separable(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    const gpk_filter &f = *a.filter;
    if (a.in_dtype != GPK_F32 || a.acc != AccKind::f32 || a.shape.channels != 1 || a.out.reduce ||
        f.kw != f.kh || fused_knob() == FusedKnob::off)
        return false;
    const int kernel = fused_kernel_knob();
    if (launch_fused_for(ctx, a, f.kw, kernel, s)) return true;
    // A size with no fused kernel takes the two passes; one whose kernel does not fit, too, unless asked.
    if (fused_knob() == FusedKnob::require && fused_size(int(f.kw)))
        fail(GPK_ERR_UNSUPPORTED, "the fused separable kernel does not fit this device "
                                  "(GPK_TEST_CONV_FUSED=require)");
    return false;
}

} // namespace gpk::cuda::conv
