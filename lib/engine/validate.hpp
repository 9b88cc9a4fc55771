// Checks of data contents that only a pass over the data can make. Backends call them where the data
// is readable from the host (the CUDA backend checks device data with kernels of its own).
#pragma once

#include <cstddef>
#include <string>

namespace gpk {

// Throws GPK_ERR_INVALID_ARGUMENT naming the first non-finite temperature or the first conductivity
// outside [0, 1] (or NaN), with its row and column. A block of a larger grid (libgpk_mpi) whose first row
// is row `first_row` of the grid is named by the grid's rows and indices.
void check_heat_inputs(const double *tinit, const double *conductivity, size_t rows, size_t cols,
                       size_t first_row = 0);

// Throws GPK_ERR_INVALID_ARGUMENT naming the first non-finite value of the 2 * cols fixed rows.
void check_fixed_rows(const double *fixed_rows, size_t cols);

// Formats a double the way messages show values ("nan", "inf", "0.5", "1e+300").
std::string format_value(double v);

} // namespace gpk
