// A heat call's final report against the grid it describes, for the tests of both backends: tmin and tmax
// are the grid's, tavg the rows' sums (row_sum: the backend's documented order within a row) added in row
// order and divided by the cell count, which is the order every backend and libgpk_mpi share (heat_mean).
#pragma once

#include "check.hpp"
#include "gpk.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

// grid: the N x M final grid, row-major; `what` names the case in failure messages.
template <class RowSum>
void check_final_statistics(const gpk_heat_report &final, const std::vector<double> &grid, size_t n, size_t m,
                            RowSum row_sum, const std::string &what) {
    double mn = grid[0], mx = grid[0], sum = 0;
    for (double x : grid) mn = std::min(mn, x), mx = std::max(mx, x);
    for (size_t i = 0; i < n; ++i) sum += row_sum(&grid[i * m], m);
    const double mean = sum / (double(n) * double(m));
    CHECK_MSG(final.tmin == mn && final.tmax == mx, what + ": tmin or tmax");
    CHECK_MSG(final.tavg == mean,
              what + ": tavg " + std::to_string(final.tavg) + " against " + std::to_string(mean));
}
