// The counting launches (count.cuh) for u16 and u32 samples.
#include "cuda/histogram/count.cuh"

namespace gpk::cuda::hist {
template void launch_typed<uint16_t>(const Span2D &, const BinRule &, bool, const TierPlan &,
                                     unsigned long long *, const Finish &, DeviceContext &, cudaStream_t);
template void launch_typed<uint32_t>(const Span2D &, const BinRule &, bool, const TierPlan &,
                                     unsigned long long *, const Finish &, DeviceContext &, cudaStream_t);
} // namespace gpk::cuda::hist
