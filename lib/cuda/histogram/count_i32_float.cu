// The counting launches (count.cuh) for i32, f32 and f64 samples.
#include "cuda/histogram/count.cuh"

namespace gpk::cuda::hist {
template void launch_typed<int32_t>(const Span2D &, const BinRule &, bool, const TierPlan &,
                                    unsigned long long *, const Finish &, DeviceContext &, cudaStream_t);
template void launch_typed<float>(const Span2D &, const BinRule &, bool, const TierPlan &,
                                  unsigned long long *, const Finish &, DeviceContext &, cudaStream_t);
template void launch_typed<double>(const Span2D &, const BinRule &, bool, const TierPlan &,
                                   unsigned long long *, const Finish &, DeviceContext &, cudaStream_t);
} // namespace gpk::cuda::hist
