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

void check_heat_inputs(const double *tinit, const double *conductivity, size_t rows, size_t cols) {
    size_t n = rows * cols;
    for (size_t k = 0; k < n; ++k)
        if (!std::isfinite(tinit[k]))
            invalid("tinit" + cell(k, cols) + " is " + format_value(tinit[k]) +
                    "; temperatures must be finite");
    for (size_t k = 0; k < n; ++k) {
        double w = conductivity[k];
        if (!(w >= 0.0 && w <= 1.0))
            invalid("conductivity" + cell(k, cols) + " is " + format_value(w) + "; it must lie in [0, 1]");
    }
}

} // namespace gpk
