// What the engine asks of the CUDA backend. Implemented by lib/cuda/ when gpk is built with CUDA and by
// engine/cuda_absent.cpp otherwise, so that the rest of the library never needs CUDA headers.
#pragma once

#include "engine/backend.hpp"

#include <memory>
#include <string>

namespace gpk::cuda {

// Number of usable devices; 0 with the reason in *why when there is none.
int device_count(std::string *why);

// Fills *info for device `index`; throws gpk::Error.
void device_info(int index, gpk_device_info *info);

// Creates the CUDA backend on `device`, using `stream` (a cudaStream_t, may be null); throws
// gpk::Error (GPK_ERR_NO_DEVICE where no device is usable).
std::unique_ptr<Backend> make_backend(int device, void *stream, unsigned cpu_threads);

} // namespace gpk::cuda
