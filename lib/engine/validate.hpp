// Checks of data contents that only a pass over the data can make. Backends call them where the data
// is readable from the host (the CUDA backend checks device data with kernels of its own).
#pragma once

#include <cstddef>
#include <string>

namespace gpk {

// Throws GPK_ERR_INVALID_ARGUMENT naming the first non-finite temperature or the first conductivity
// outside [0, 1] (or NaN), with its row and column.
void check_heat_inputs(const double *tinit, const double *conductivity, size_t rows, size_t cols);

// Formats a double the way messages show values ("nan", "inf", "0.5", "1e+300").
std::string format_value(double v);

} // namespace gpk
