// The CUDA backend's heat slab for libgpk_mpi (slab.cu).
#pragma once

#include "engine/heat_slab.hpp"

#include <memory>

namespace gpk::cuda {

class DeviceContext;

// A slab on the context's device; its work runs on the context's main stream and a stream of its own.
// Throws gpk::Error (GPK_ERR_OUT_OF_MEMORY naming the bytes).
std::unique_ptr<HeatSlab> make_heat_slab(DeviceContext &ctx, const HeatSlabJob &job);

// check_heat_inputs of a block of rows of which either array may be in the context's device memory
// (scanned there; nothing crosses to the host but the row of a bad value).
void check_heat_block(DeviceContext &ctx, const double *tinit, const double *conductivity, size_t rows,
                      size_t cols, size_t first_row);

// The most iterations a slab pass on the context's device takes: the whole-grid solver's pass length.
unsigned heat_slab_levels(DeviceContext &ctx);

} // namespace gpk::cuda
