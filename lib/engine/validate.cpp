#include "engine/validate.hpp"

#include "engine/error.hpp"

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

size_t first_bad_temperature(const double *t, size_t n) {
    return first_bad(t, n, BadTemperature{});
}

size_t first_bad_conductivity(const double *c, size_t n) {
    return first_bad(c, n, BadConductivity{});
}

void invalid_temperature(size_t k, size_t cols, double v) {
    invalid("tinit" + cell(k, cols) + " is " + format_value(v) + "; temperatures must be finite");
}

void invalid_conductivity(size_t k, size_t cols, double v) {
    invalid("conductivity" + cell(k, cols) + " is " + format_value(v) + "; it must lie in [0, 1]");
}

void check_heat_inputs(const double *tinit, const double *conductivity, size_t rows, size_t cols) {
    const size_t n = rows * cols;
    if (size_t k = first_bad_temperature(tinit, n); k < n) invalid_temperature(k, cols, tinit[k]);
    if (size_t k = first_bad_conductivity(conductivity, n); k < n)
        invalid_conductivity(k, cols, conductivity[k]);
}

} // namespace gpk
