// Pictures for the gpk command, drawn on gpk's own canvas (raster.hpp) and written with libpng, so that
// every build that has the command has them: heat maps of a grid and histogram bar charts. Each returns
// a complete PNG file in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpkcli {

// The grid (rows × cols doubles, row-major) coloured from its minimum to its maximum, with a colour bar
// and its temperature scale, under `title`. The map's top-left corner is at pixel (70, 60); a cell is
// a square of whole pixels up to a 640-pixel map, larger grids are scaled down (each pixel the mean of
// the cells it covers).
std::vector<uint8_t> draw_heat_map(const double *grid, size_t rows, size_t cols, const std::string &title);

// One channel's counts and its name ("gray", "red", ...; the name picks the colour).
struct PlotSeries {
    std::string name;
    const uint64_t *counts;
};

// A bar chart of `bins` bins over [lower, upper), one colour per series, axes labelled, with a title
// and a smaller line under it.
std::vector<uint8_t> draw_histogram(const std::vector<PlotSeries> &series, size_t bins, double lower,
                                    double upper, const std::string &title, const std::string &subtitle,
                                    const std::string &x_label);

} // namespace gpkcli
