// The CUDA histogram (lib/cuda/histogram/histogram.cu), called by the CUDA backend.
#pragma once

#include "cuda/device_context.cuh"
#include "engine/jobs.hpp"

namespace gpk::cuda {

// Counts job.data (host or device memory) on the context's device. Returns when done unless the context
// has a caller stream and every pointer of the job is device memory.
void histogram_run(DeviceContext &ctx, const HistogramJob &job);

} // namespace gpk::cuda
