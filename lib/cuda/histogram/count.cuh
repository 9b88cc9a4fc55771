// The counting launches of the histogram (histogram.cu plans them): one tier of one sample type and mode.
// The sample types are instantiated in three files (count_u8.cu, count_u16_u32.cu, count_i32_float.cu)
// so that they compile in parallel; histogram.cu instantiates none.
#pragma once

#include "cuda/check.cuh"
#include "cuda/device_context.cuh"
#include "cuda/histogram/kernels.cuh"

#include <algorithm>
#include <cstdint>

namespace gpk::cuda::hist {

enum class TierKind { shared, window, global };

struct TierPlan {
    TierKind kind = TierKind::global;
    unsigned copies = 1;              // shared
    unsigned windows = 1, window = 0; // window: launches, and slots a launch counts
    size_t smem_bytes = 0;
    unsigned spread = 1; // copies of the result the blocks flush into
};

// Blocks that cover `span` without idling, at most what the device runs at once (the occupancy, and the
// shared-memory limit raised where smem needs it, are asked of CUDA once per kernel and context).
template <class Kernel>
unsigned grid_for(Kernel kernel, const Span2D &span, size_t smem, size_t vec_elems, DeviceContext &ctx) {
    int per_sm = ctx.resident_blocks(reinterpret_cast<const void *>(kernel), kBlockThreads, smem);
    size_t resident = size_t(std::max(per_sm, 1)) * ctx.limits().multiprocessors;
    size_t wanted =
        span.rows == 1 ? (span.row_elems / vec_elems + kBlockThreads - 1) / kBlockThreads : span.rows;
    return unsigned(std::max<size_t>(1, std::min(resident, wanted)));
}

template <class T, Mode M>
void launch_tier(const Span2D &span, const BinRule &rule, const TierPlan &plan, unsigned long long *counts,
                 const Finish &finish, DeviceContext &ctx, cudaStream_t stream) {
    constexpr size_t V = 16 / sizeof(T);
    if (plan.kind == TierKind::shared) {
        auto kernel = histogram_kernel<T, M, SharedTier>;
        SharedTier tier{nullptr, nullptr, plan.copies, unsigned((rule.bins + 1) * rule.channels),
                        plan.spread};
        unsigned grid = grid_for(kernel, span, plan.smem_bytes, V, ctx);
        kernel<<<grid, kBlockThreads, plan.smem_bytes, stream>>>(span, rule, tier, counts, finish);
        check_launch("histogram_kernel (shared)");
    } else if (plan.kind == TierKind::window) {
        auto kernel = histogram_kernel<T, M, WindowTier>;
        const unsigned long long slots = (unsigned long long)(rule.bins + 1) * rule.channels;
        unsigned grid = grid_for(kernel, span, plan.smem_bytes, V, ctx);
        for (unsigned w = 0; w < plan.windows; ++w) {
            const unsigned long long lo = (unsigned long long)w * plan.window;
            WindowTier tier{nullptr, unsigned(lo),
                            unsigned(std::min<unsigned long long>(plan.window, slots - lo))};
            // A launch that finalises in its last block must be the last one.
            kernel<<<grid, kBlockThreads, plan.smem_bytes, stream>>>(
                span, rule, tier, counts, w + 1 == plan.windows ? finish : Finish{});
            check_launch("histogram_kernel (window)");
        }
    } else if constexpr (single_channel(M)) {
        fail(GPK_ERR_INTERNAL,
             "histogram: single-channel kernels exist for the shared and window tiers only");
    } else {
        auto kernel = histogram_kernel<T, M, GlobalTier>;
        unsigned grid = grid_for(kernel, span, 0, V, ctx);
        kernel<<<grid, kBlockThreads, 0, stream>>>(span, rule, GlobalTier{counts}, counts, finish);
        check_launch("histogram_kernel (global)");
    }
}

template <class T>
void launch_typed(const Span2D &span, const BinRule &rule, bool direct, const TierPlan &plan,
                  unsigned long long *counts, const Finish &finish, DeviceContext &ctx, cudaStream_t stream) {
    if constexpr (std::is_integral<T>::value) {
        if (direct && rule.channels == 1 &&
            (plan.kind == TierKind::shared || plan.kind == TierKind::window)) {
            if constexpr (sizeof(T) == 1) {
                if (rule.bins >= 256)
                    return launch_tier<T, Mode::byte_all>(span, rule, plan, counts, finish, ctx, stream);
            }
            return launch_tier<T, Mode::direct_single>(span, rule, plan, counts, finish, ctx, stream);
        }
        if (direct) return launch_tier<T, Mode::direct>(span, rule, plan, counts, finish, ctx, stream);
    }
    launch_tier<T, Mode::general>(span, rule, plan, counts, finish, ctx, stream);
}

// Instantiated in the count_*.cu files alone.
extern template void launch_typed<uint8_t>(const Span2D &, const BinRule &, bool, const TierPlan &,
                                           unsigned long long *, const Finish &, DeviceContext &,
                                           cudaStream_t);
extern template void launch_typed<uint16_t>(const Span2D &, const BinRule &, bool, const TierPlan &,
                                            unsigned long long *, const Finish &, DeviceContext &,
                                            cudaStream_t);
extern template void launch_typed<uint32_t>(const Span2D &, const BinRule &, bool, const TierPlan &,
                                            unsigned long long *, const Finish &, DeviceContext &,
                                            cudaStream_t);
extern template void launch_typed<int32_t>(const Span2D &, const BinRule &, bool, const TierPlan &,
                                           unsigned long long *, const Finish &, DeviceContext &,
                                           cudaStream_t);
extern template void launch_typed<float>(const Span2D &, const BinRule &, bool, const TierPlan &,
                                         unsigned long long *, const Finish &, DeviceContext &, cudaStream_t);
extern template void launch_typed<double>(const Span2D &, const BinRule &, bool, const TierPlan &,
                                          unsigned long long *, const Finish &, DeviceContext &,
                                          cudaStream_t);

} // namespace gpk::cuda::hist
