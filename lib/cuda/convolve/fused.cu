// Launch of a fused separable kernel where it applies: single-channel f32 images with f32 sums, a square
// filter of a built size, outputs written (not the min/max fold). The streaming kernel (stream.cu)
// runs first, then the ring kernel (fused.cuh) where the streaming one does not fit the device;
// elsewhere the two passes run (separable.cu).
#include "cuda/convolve/fused.cuh"
#include "engine/test_hooks.hpp"
#include "cuda/convolve/fused_launch.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gpk::cuda::conv {
namespace {

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

template <int K = 3> bool launch_ring_for(DeviceContext &ctx, const PassArgs &a, int k, cudaStream_t s) {
    if constexpr (K > 65) {
        return false;
    } else {
        if constexpr (fused_size(K)) {
            if (k == K) return launch_ring<K>(ctx, a, s);
        }
        return launch_ring_for<K + 2>(ctx, a, k, s);
    }
}

} // namespace

bool launch_fused_separable(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    const gpk_filter &f = *a.filter;
    if (a.in_dtype != GPK_F32 || a.acc != AccKind::f32 || a.shape.channels != 1 || a.out.reduce ||
        f.kw != f.kh || !fused_size(int(f.kw)))
        return false;
    // The test hooks GPK_TEST_CONV_FUSED (off: the two passes, for their bits; require: GPK_ERR_UNSUPPORTED
    // where the fused kernels do not fit, so that tests see which path ran) and GPK_TEST_CONV_FUSED_KERNEL
    // (ring: the ring kernel alone, as where the streaming one does not fit).
    const TestHooks &hooks = test_hooks();
    if (hooks.conv_fused == TestHooks::Fused::off) return false;
    // The streaming kernel, then the ring kernel where it does not fit the device.
    if ((!hooks.conv_fused_ring && launch_stream(ctx, a, s)) || launch_ring_for(ctx, a, int(f.kw), s))
        return true;
    // One whose kernels do not fit takes the two passes, unless asked.
    if (hooks.conv_fused == TestHooks::Fused::require)
        fail(GPK_ERR_UNSUPPORTED, "the fused separable kernel does not fit this device "
                                  "(" GPK_HOOK_NAME("GPK_TEST_CONV_FUSED=require") ")");
    return false;
}

} // namespace gpk::cuda::conv
