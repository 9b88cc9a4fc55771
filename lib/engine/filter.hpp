// The immutable filter object behind gpk_filter.
#pragma once

#include "gpk.h"

#include <cstddef>
#include <vector>

struct gpk_filter {
    bool separable = false;
    int kh = 1;               // rows (2D) or column-filter length (separable)
    int kw = 1;               // columns (2D) or row-filter length (separable)
    std::vector<double> taps; // 2D: kh*kw row-major
    std::vector<double> row;  // separable: kw taps along x
    std::vector<double> col;  // separable: kh taps along y
    double sum = 0;           // sum of taps (separable: sum(row) * sum(col))
    bool integer_taps = false;
    double abs_sum = 0; // sum |taps| (separable: sum|row| * sum|col|): bounds integer accumulators
};

namespace gpk {

// New filters with their taps checked (finite, and a finite sum of magnitudes) and the derived fields
// filled in; the caller owns them. Errors are thrown (GPK_ERR_INVALID_ARGUMENT naming the argument).
gpk_filter *new_filter_2d(size_t kh, size_t kw, const double *taps);
gpk_filter *new_filter_separable(size_t row_len, const double *row, size_t col_len, const double *col);
// The named filters of gpk_filter_create_named.
gpk_filter *new_named_filter(const char *name);

} // namespace gpk
