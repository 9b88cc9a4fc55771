// The CUDA side of a library built without CUDA: no device is ever usable.
#include "engine/cuda_api.hpp"
#include "engine/error.hpp"

namespace gpk::cuda {

static const char *kWhy = "gpk was built without the CUDA backend (nvcc was not found at build time)";

int device_count(std::string *why) {
    if (why) *why = kWhy;
    return 0;
}

void device_info(int, gpk_device_info *) {
    fail(GPK_ERR_NO_DEVICE, kWhy);
}

std::unique_ptr<Backend> make_backend(int, void *, unsigned) {
    fail(GPK_ERR_NO_DEVICE, kWhy);
}

} // namespace gpk::cuda
