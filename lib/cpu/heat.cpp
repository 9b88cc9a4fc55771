#include "cpu/kernels.hpp"
#include "engine/error.hpp"

namespace gpk::cpu {

void heat_run(ThreadPool &, const HeatJob &) { fail(GPK_ERR_UNSUPPORTED, "heat: being written"); }

} // namespace gpk::cpu
