// The CUDA side of the test-only fault injection behind GPK_TEST_FAULT (see check.cuh); the counting
// itself is engine/fault.cpp's.
#include "cuda/check.cuh"

namespace gpk::cuda::fault {

thread_local bool t_creating = false;

Creation::Creation() : previous_(t_creating) {
    t_creating = restart(Point::create);
}

} // namespace gpk::cuda::fault
