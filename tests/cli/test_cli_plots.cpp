// The pictures, in every build: heat maps whose cells are checked pixel by pixel against the colour scale
// (a grid that a run leaves unchanged, conductivity 1 everywhere, so the picture's values are known),
// scaled-down maps whose pixels are the mean of their cells, histogram bars of known heights, and text,
// axes and colour bar present where they belong.
#include "cli_test.hpp"
#include "images.hpp"
#include "npy_files.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

namespace cli {

namespace {

using Colour = std::array<int, 3>;

// The heat map's colour scale, coldest to hottest, as documented; interpolated linearly in between.
Colour scale_colour(double x) {
    const double stops[7][3] = {{0.05, 0.03, 0.20}, {0.22, 0.09, 0.50}, {0.50, 0.12, 0.53},
                                {0.78, 0.22, 0.38}, {0.95, 0.45, 0.17}, {0.99, 0.75, 0.27},
                                {1.00, 0.97, 0.78}};
    double at = std::clamp(x, 0.0, 1.0) * 6;
    int i = std::min(int(at), 5);
    Colour c;
    for (int k = 0; k < 3; ++k)
        c[size_t(k)] = int(std::lround((stops[i][k] + (stops[i + 1][k] - stops[i][k]) * (at - i)) * 255));
    return c;
}

struct Picture {
    images::PngRead png;
    Colour at(size_t x, size_t y) const {
        size_t i = (y * png.width + x) * 3;
        return {int(png.samples[i]), int(png.samples[i + 1]), int(png.samples[i + 2])};
    }
    // Dark gray pixels (text, axes) in x0 <= x < x1, y0 <= y < y1.
    size_t ink(size_t x0, size_t y0, size_t x1, size_t y1) const {
        size_t n = 0;
        for (size_t y = y0; y < y1; ++y)
            for (size_t x = x0; x < x1; ++x) {
                Colour c = at(x, y);
                n += std::max({c[0], c[1], c[2]}) < 120 &&
                     std::max({c[0], c[1], c[2]}) - std::min({c[0], c[1], c[2]}) < 30;
            }
        return n;
    }
};

Picture read_picture(const std::string &path, size_t width, size_t height) {
    Picture p{images::read_png(path)};
    CHECK_MSG(p.png.ok && p.png.color_type == PNG_COLOR_TYPE_RGB && p.png.bit_depth == 8, path);
    CHECK_MSG(p.png.width == width && p.png.height == height,
              path + ": " + std::to_string(p.png.width) + "x" + std::to_string(p.png.height));
    if (!p.png.ok || p.png.width != width || p.png.height != height)
        p.png.samples.assign(width * height * 3, 0);
    p.png.width = width;
    return p;
}

bool near(const Colour &a, const Colour &b, int tolerance) {
    for (size_t k = 0; k < 3; ++k)
        if (std::abs(a[k] - b[k]) > tolerance) return false;
    return true;
}

std::string text(const Colour &c) {
    return "(" + std::to_string(c[0]) + ", " + std::to_string(c[1]) + ", " + std::to_string(c[2]) + ")";
}

// Writes an f64 grid as .npy (by hand) and runs a heat run that keeps it as it is (conductivity 1).
void unchanged_heat_map(const std::vector<double> &grid, size_t rows, size_t cols, const std::string &png) {
    std::string shape = "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
    images::write_text(tmp("t.npy"),
                       npyfile::file(npyfile::dict("<f8", false, shape), npyfile::bytes(grid, false)));
    std::vector<double> ones(rows * cols, 1.0);
    images::write_text(tmp("c.npy"),
                       npyfile::file(npyfile::dict("<f8", false, shape), npyfile::bytes(ones, false)));
    expect_ok({"heat", "-n", std::to_string(rows), "-m", std::to_string(cols), "-t", tmp("t.npy"), "-c",
               tmp("c.npy"), "-o", png, "--save", tmp("final.npy")});
    // The run kept the grid: the map shows exactly these values.
    npyfile::Parsed saved = npyfile::parse(images::read_text(tmp("final.npy")));
    CHECK(saved.ok && saved.dict == npyfile::dict(npyfile::host_descr('f', 8), false, shape));
    CHECK(saved.data == npyfile::bytes(grid, npyfile::host_big_endian()));
}

// An 8 x 10 grid: 64 x 64 pixels a cell, map at (70, 60), colour bar 24 pixels to its right.
void heat_map_cells() {
    const size_t rows = 8, cols = 10;
    std::vector<double> grid(rows * cols);
    for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < cols; ++j)
            grid[i * cols + j] = -30 + 7.0 * double(i) + 2.5 * double((j * 7) % cols);
    double lo = *std::min_element(grid.begin(), grid.end()), hi = *std::max_element(grid.begin(), grid.end());
    unchanged_heat_map(grid, rows, cols, tmp("cells.png"));
    const size_t map_x = 70, map_y = 60, cell = 64, bar_x = map_x + cols * cell + 24, bar_w = 22;
    const size_t map_bottom = map_y + rows * cell;
    Picture p = read_picture(tmp("cells.png"), bar_x + bar_w + 90, map_bottom + 50);
    size_t wrong = 0;
    for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < cols; ++j) {
            Colour want = scale_colour((grid[i * cols + j] - lo) / (hi - lo));
            for (size_t dy : {size_t(0), cell / 2, cell - 1})
                for (size_t dx : {size_t(0), cell / 2, cell - 1}) {
                    Colour got = p.at(map_x + j * cell + dx, map_y + i * cell + dy);
                    if (!near(got, want, 1) && ++wrong <= 5)
                        CHECK_MSG(false, "cell " + std::to_string(i) + "," + std::to_string(j) + ": " +
                                             text(got) + " vs " + text(want));
                }
        }
    CHECK_EQ(wrong, size_t(0));
    CHECK(p.at(map_x - 1, map_y + 5) == Colour({255, 255, 255})); // the map ends where it should
    CHECK(p.at(map_x + cols * cell, map_y + 5) == Colour({255, 255, 255}));
    // The colour bar: hottest at the top, coldest at the bottom, inside its outline.
    CHECK_MSG(near(p.at(bar_x + 11, map_y + 1), scale_colour(1), 2), text(p.at(bar_x + 11, map_y + 1)));
    CHECK_MSG(near(p.at(bar_x + 11, map_bottom - 2), scale_colour(0), 2),
              text(p.at(bar_x + 11, map_bottom - 2)));
    size_t tick_marks = 0;
    for (size_t y = map_y; y < map_bottom; ++y)
        tick_marks += p.ink(bar_x + bar_w + 2, y, bar_x + bar_w + 3, y + 1);
    CHECK_MSG(tick_marks >= 5 && tick_marks <= 12, std::to_string(tick_marks) + " tick marks");
    // Text: the title, the column label under the map, the row label left of it, tick labels, the scale's
    // name.
    CHECK(p.ink(0, 10, p.png.width, 45) > 300);
    CHECK(p.ink(map_x, map_bottom + 10, map_x + cols * cell, map_bottom + 35) > 150);
    CHECK(p.ink(40, map_y, 60, map_bottom) > 60);
    CHECK(p.ink(bar_x + bar_w + 6, map_y - 8, bar_x + bar_w + 50, map_bottom + 8) > 150);
    CHECK(p.ink(bar_x + bar_w + 56, map_y, bar_x + bar_w + 76, map_bottom) > 60);
}

// 700 x 1401 cells on a 640 x 320 map: a pixel is the mean of the values of the cells under it.
void heat_map_scaled_down() {
    const size_t rows = 700, cols = 1401;
    std::vector<double> grid(rows * cols);
    for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < cols; ++j) grid[i * cols + j] = j < 702 ? -10 : 10;
    unchanged_heat_map(grid, rows, cols, tmp("scaled.png"));
    Picture p = read_picture(tmp("scaled.png"), 70 + 640 + 24 + 22 + 90, 60 + 320 + 50);
    CHECK(near(p.at(70 + 100, 60 + 100), scale_colour(0), 1));
    CHECK(near(p.at(70 + 600, 60 + 300), scale_colour(1), 1));
    // Pixel column 320 covers cells 701 and 702 (j * 640 / 1401 == 320): values -10 and 10, mean 0.
    Colour mixed = p.at(70 + 320, 60 + 100);
    CHECK_MSG(near(mixed, scale_colour(0.5), 1), text(mixed));
    CHECK(near(p.at(70 + 319, 60 + 100), scale_colour(0), 1) &&
          near(p.at(70 + 321, 60 + 100), scale_colour(1), 1));
}

void heat_map_uniform() {
    std::vector<double> grid(6 * 6, 42.0);
    unchanged_heat_map(grid, 6, 6, tmp("uniform.png"));
    Picture p = read_picture(tmp("uniform.png"), 70 + 636 + 24 + 22 + 90, 60 + 636 + 50); // 106 pixels a cell
    CHECK(near(p.at(70 + 300, 60 + 300), scale_colour(0), 1)); // a uniform grid is the bottom of its scale
}

// Two bins of a single-channel u8 array: 1000 samples of 10 and 500 of 200.
void histogram_bars() {
    std::vector<uint8_t> values(1000, 10);
    values.resize(1500, 200);
    images::write_text(tmp("bars.npy"),
                       npyfile::file(npyfile::dict("|u1", false, "(1500,)"), npyfile::bytes(values, false)));
    expect_ok({"histogram", "--plot", tmp("bars.png"), tmp("bars.npy")});
    Picture p = read_picture(tmp("bars.png"), 960, 540);
    // The plot area is 840 x 406 pixels from (90, 70); 256 bins, the axis reaching 1.05 x the tallest bar.
    const int left = 90, bottom = 476, height = 406;
    auto bin_x = [&](int bin) { return left + int(std::lround(840.0 * (bin + 0.5) / 256)); };
    auto bar_top = [&](double count) { return bottom - int(std::lround(count / 1050 * height)); };
    const Colour bar{51, 77, 115}; // the colour of a single-channel series, 75% over the background
    for (int bin : {10, 200}) {
        int x = bin_x(bin), top = bar_top(bin == 10 ? 1000 : 500);
        for (int y : {top + 3, (top + bottom) / 2, bottom - 3}) {
            Colour bg = p.at(size_t(bin_x(120)), size_t(y)), got = p.at(size_t(x), size_t(y)), want;
            for (size_t k = 0; k < 3; ++k) want[k] = int(std::lround(bg[k] + (bar[k] - bg[k]) * 0.75));
            CHECK_MSG(near(got, want, 1), "bin " + std::to_string(bin) + " y " + std::to_string(y) + ": " +
                                              text(got) + " vs " + text(want));
        }
        CHECK_MSG(p.at(size_t(x), size_t(top - 3)) == p.at(size_t(bin_x(120)), size_t(top - 3)),
                  "above bin " + std::to_string(bin) + ": " + text(p.at(size_t(x), size_t(top - 3))));
    }
    size_t axis = 0;
    for (int x = left; x < left + 840; x += 10) axis += p.ink(size_t(x), bottom, size_t(x) + 1, bottom + 1);
    CHECK_EQ(axis, size_t(84));                             // the x axis, drawn over the bars
    CHECK(p.ink(0, 10, 960, 36) > 200);                     // title
    CHECK(p.ink(left, bottom + 8, 930, bottom + 26) > 100); // x tick labels
    CHECK(p.ink(10, 70, 34, bottom) > 40);                  // "count"
    CHECK(p.ink(30, 70, 86, bottom) > 100);                 // y tick labels
}

} // namespace

void section_plots() {
    heat_map_cells();
    heat_map_scaled_down();
    heat_map_uniform();
    histogram_bars();
}

} // namespace cli
