#include "engine/validate.hpp"

#include "engine/error.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

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

namespace {

uint64_t bits_of(double v) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
}

// The first index of [0, n) where bad(v[k]); blocks of 64 are tested branch-free (the loop vectorises)
// and only a block with a bad value is searched.
template <class Bad> size_t first_bad(const double *v, size_t n, Bad bad) {
    constexpr size_t kBlock = 64;
    for (size_t b = 0; b < n; b += kBlock) {
        const size_t e = std::min(n, b + kBlock);
        bool any = false;
        for (size_t k = b; k < e; ++k) any |= bad(bits_of(v[k]));
        if (any)
            for (size_t k = b; k < e; ++k)
                if (bad(bits_of(v[k]))) return k;
    }
    return n;
}

constexpr uint64_t kExponent = 0x7ff0000000000000ull, kOne = 0x3ff0000000000000ull,
                   kMinusZero = 0x8000000000000000ull;

} // namespace

// Infinite and NaN are the values whose exponent bits are all set.
size_t first_bad_temperature(const double *t, size_t n) {
    return first_bad(t, n, [](uint64_t b) { return (b & kExponent) == kExponent; });
}

// Non-negative doubles order like their bit patterns, so [+0, 1] is b <= bits(1.0); -0 is in range too.
// Negative values and NaNs of either sign lie outside.
size_t first_bad_conductivity(const double *c, size_t n) {
    return first_bad(c, n, [](uint64_t b) { return b > kOne && b != kMinusZero; });
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
