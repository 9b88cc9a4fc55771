#include "cpu/kernels.hpp"
#include "engine/error.hpp"

namespace gpk::cpu {

void convolve(ThreadPool &, const ConvolveJob &) { fail(GPK_ERR_UNSUPPORTED, "convolve: being written"); }

} // namespace gpk::cpu
