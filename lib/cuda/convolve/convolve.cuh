// The CUDA convolution (lib/cuda/convolve/convolve.cu), called by the CUDA backend.
#pragma once

#include "cuda/device_context.cuh"
#include "engine/jobs.hpp"

namespace gpk::cuda {

// Filters job.in_data into job.out_data (each host or device memory) on the context's device, in bands
// of rows when the image does not fit. Returns when done unless the context has a caller stream and both
// images are device memory.
void convolve_run(DeviceContext &ctx, const ConvolveJob &job);

} // namespace gpk::cuda
