#include "engine/validate.hpp"

#include "engine/error.hpp"

#include <cmath>
#include <cstdio>

namespace gpk {

std::string format_value(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

static std::string cell(size_t k, size_t cols) {
    return "[" + std::to_string(k) + "] (row " + std::to_string(k / cols) + ", column " +
           std::to_string(k % cols) + ")";
}

void check_heat_inputs(const double *tinit, const double *conductivity, size_t rows, size_t cols,
                       size_t first_row) {
    size_t n = rows * cols, at = first_row * cols;
    for (size_t k = 0; k < n; ++k)
        if (!std::isfinite(tinit[k]))
            invalid("tinit" + cell(at + k, cols) + " is " + format_value(tinit[k]) +
                    "; temperatures must be finite");
    for (size_t k = 0; k < n; ++k) {
        double w = conductivity[k];
        if (!(w >= 0.0 && w <= 1.0))
            invalid("conductivity" + cell(at + k, cols) + " is " + format_value(w) +
                    "; it must lie in [0, 1]");
    }
}

void check_fixed_rows(const double *fixed_rows, size_t cols) {
    for (size_t k = 0; k < 2 * cols; ++k)
        if (!std::isfinite(fixed_rows[k]))
            invalid("params->fixed_rows[" + std::to_string(k) + "] (the fixed row " +
                    (k < cols ? "above row 0" : "below the last row") + ", column " +
                    std::to_string(k % cols) + ") is " + format_value(fixed_rows[k]) +
                    "; temperatures must be finite");
}

} // namespace gpk
