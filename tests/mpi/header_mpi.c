/* gpk_mpi.h alone, as C99 with warnings as errors (tests/mpi/meson.build also builds it as C++17). */
#include <gpk_mpi.h>

int main(void) {
    return gpk_mpi_cuda_aware() < 0;
}
