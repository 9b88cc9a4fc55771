// The CUDA backend's heat slab for libgpk_mpi (slab.cu).
#pragma once

#include "engine/heat_slab.hpp"

#include <memory>

namespace gpk::cuda {

class DeviceContext;

// A slab on the context's device; its work runs on the context's main stream and a stream of its own.
// Throws gpk::Error (GPK_ERR_OUT_OF_MEMORY naming the bytes).
std::unique_ptr<HeatSlab> make_heat_slab(DeviceContext &ctx, const HeatSlabJob &job);

// The most iterations a slab pass on the context's device takes: the whole-grid solver's pass length.
unsigned heat_slab_levels(DeviceContext &ctx);

} // namespace gpk::cuda
