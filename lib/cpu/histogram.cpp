#include "cpu/kernels.hpp"
#include "engine/error.hpp"

namespace gpk::cpu {

void histogram(ThreadPool &, const HistogramJob &) { fail(GPK_ERR_UNSUPPORTED, "histogram: being written"); }

} // namespace gpk::cpu
