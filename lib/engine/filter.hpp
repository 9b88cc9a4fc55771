// The immutable filter object behind gpk_filter.
#pragma once

#include "gpk.h"

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
