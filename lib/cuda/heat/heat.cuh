// The CUDA heat solver (lib/cuda/heat/heat.cu), called by the CUDA backend.
#pragma once

#include "cuda/device_context.cuh"
#include "engine/jobs.hpp"

namespace gpk::cuda {

// Runs `job` on the context's device, enqueued on its main stream, in buffers the context keeps for the next
// call. job.tinit, job.conductivity and job.tfinal may each be host (pageable or pinned) or device memory.
// Returns when the run is complete (reports are host callbacks). Throws gpk::Error (GPK_ERR_OUT_OF_MEMORY
// naming the bytes when the grid cannot fit, GPK_ERR_INVALID_ARGUMENT for bad data, GPK_ERR_CANCELLED,
// GPK_ERR_DEVICE).
void heat_run(DeviceContext &ctx, const HeatJob &job);

} // namespace gpk::cuda
