// Checks of data contents that only a pass over the data can make. Backends call them where the data
// is readable from the host (the CUDA backend checks device data with kernels of its own).
#pragma once

#include <cstddef>
#include <string>

namespace gpk {

// Throws GPK_ERR_INVALID_ARGUMENT naming the first non-finite temperature or the first conductivity
// outside [0, 1] (or NaN), with its row and column.
void check_heat_inputs(const double *tinit, const double *conductivity, size_t rows, size_t cols);

// The index of the first temperature of t[0, n) that is not finite, or n. Vectorised: a backend may run
// it row by row while it reads the rows anyway.
size_t first_bad_temperature(const double *t, size_t n);
// The index of the first conductivity of c[0, n) outside [0, 1] (or NaN), or n.
size_t first_bad_conductivity(const double *c, size_t n);
// GPK_ERR_INVALID_ARGUMENT naming tinit[k] (or conductivity[k]) of a grid `cols` wide, and its value.
[[noreturn]] void invalid_temperature(size_t k, size_t cols, double v);
[[noreturn]] void invalid_conductivity(size_t k, size_t cols, double v);

// Formats a double the way messages show values ("nan", "inf", "0.5", "1e+300").
std::string format_value(double v);

} // namespace gpk
