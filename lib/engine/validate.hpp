// Checks of data contents that only a pass over the data can make. Backends call them where the data
// is readable from the host (the CUDA backend checks device data with kernels of its own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace gpk {

// Throws GPK_ERR_INVALID_ARGUMENT naming the first non-finite temperature or the first conductivity
// outside [0, 1] (or NaN), with its row and column. A block of a larger grid (libgpk_mpi) whose first row
// is row `first_row` of the grid is named by the grid's rows and indices.
void check_heat_inputs(const double *tinit, const double *conductivity, size_t rows, size_t cols,
                       size_t first_row = 0);

// Throws GPK_ERR_INVALID_ARGUMENT naming the first non-finite value of the 2 * cols fixed rows.
void check_fixed_rows(const double *fixed_rows, size_t cols);

// The contract's input rules (README, "What gpk computes": finite temperatures, conductivities in [0, 1]) as
// tests on the bits of a double, so that loops over them vectorise.
struct BadTemperature { // infinite and NaN: the values whose exponent bits are all set
    bool operator()(uint64_t b) const { return (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull; }
};
// Non-negative doubles order like their bit patterns, so [+0, 1] is b <= bits(1.0); -0 is in range too.
// Negative values and NaNs of either sign lie outside.
struct BadConductivity {
    bool operator()(uint64_t b) const { return b > 0x3ff0000000000000ull && b != 0x8000000000000000ull; }
};

// The first index of [0, n) whose value is bad, or n: blocks of 64 are tested branch-free (a loop that
// vectorises where 64-bit compares exist: AVX2, AVX-512) and only a block with a bad value is searched.
// Always inlined, so that a caller compiled for a wider instruction set vectorises it with its own.
template <class Bad>
inline __attribute__((always_inline)) size_t first_bad(const double *v, size_t n, Bad bad) {
    constexpr size_t kBlock = 64;
    for (size_t b = 0; b < n; b += kBlock) {
        const size_t e = n - b < kBlock ? n : b + kBlock;
        uint64_t any = 0;
        for (size_t k = b; k < e; ++k) {
            uint64_t bits;
            std::memcpy(&bits, v + k, sizeof bits);
            any |= uint64_t(bad(bits));
        }
        if (any)
            for (size_t k = b; k < e; ++k) {
                uint64_t bits;
                std::memcpy(&bits, v + k, sizeof bits);
                if (bad(bits)) return k;
            }
    }
    return n;
}

// GPK_ERR_INVALID_ARGUMENT naming tinit[k] (or conductivity[k]) of a grid `cols` wide, and its value.
[[noreturn]] void invalid_temperature(size_t k, size_t cols, double v);
[[noreturn]] void invalid_conductivity(size_t k, size_t cols, double v);

// Formats a double the way messages show values ("nan", "inf", "0.5", "1e+300").
std::string format_value(double v);

} // namespace gpk
