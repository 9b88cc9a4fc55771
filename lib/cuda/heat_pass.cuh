// The pass kernel's configuration and geometry, shared by the whole-grid solver (heat.cu) and libgpk_mpi's
// slabs (heat_slab.cu), so that both launch the very same kernel and every cell gets the same bits.
#pragma once

#include "cuda/heat_blocked.cuh"

#include <cuda_runtime.h>
#include <cstddef>

namespace gpk::cuda::heat {

constexpr int kPassThreads = 256;
constexpr int kMaxLevels = 4; // iterations per pass: 4 fits 128 registers, two blocks per SM
constexpr auto pass_kernel_ = pass_kernel<kMaxLevels, kPassThreads>;
constexpr size_t kPassShared = sizeof(PassShared<kMaxLevels, kPassThreads>);

// Strips of W columns; H rows per block chosen for `rows` rows of `cols` columns on the current device
// (heat.cu). The shape's row range is the caller's to set.
PassShape plan_pass_shape(size_t rows, size_t cols);

// Grid of a launch over `rows` rows with this shape.
inline dim3 pass_grid(const PassShape &shape, size_t cols, size_t rows) {
    return dim3(unsigned((cols + shape.strip - 1) / shape.strip),
                unsigned((rows + shape.rows_per_block - 1) / shape.rows_per_block));
}

} // namespace gpk::cuda::heat
