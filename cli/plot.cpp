// Heat maps and histogram charts on gpk's canvas. Lines are whole pixels (axes, ticks, bar outlines are
// all horizontal or vertical), text is the antialiased stroke font.
#include "plot.hpp"

#include "raster.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpkcli {

namespace {

const Rgb kWhite{255, 255, 255};
const Rgb kInk = rgb(0.1, 0.1, 0.1);       // titles and labels
const Rgb kAxis = rgb(0.15, 0.15, 0.15);   // axes, ticks and tick labels
const Rgb kSubtle = rgb(0.35, 0.35, 0.35); // a subtitle
const Rgb kGrid = rgb(0.88, 0.88, 0.88);   // grid lines behind bars

// The heat map's colours, coldest to hottest: indigo, purple, red, orange, pale yellow. Lightness rises
// steadily so that the map also reads in gray.
const double kHeatColours[][3] = {{0.05, 0.03, 0.20}, {0.22, 0.09, 0.50}, {0.50, 0.12, 0.53},
                                  {0.78, 0.22, 0.38}, {0.95, 0.45, 0.17}, {0.99, 0.75, 0.27},
                                  {1.00, 0.97, 0.78}};

Rgb heat_colour(double x) {
    const int last = int(sizeof kHeatColours / sizeof kHeatColours[0]) - 1;
    x = std::clamp(x, 0.0, 1.0) * last;
    int i = std::min(int(x), last - 1);
    double f = x - i;
    const double *a = kHeatColours[i], *b = kHeatColours[i + 1];
    return rgb(a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f);
}

Rgb channel_colour(const std::string &name) {
    if (name == "red") return rgb(0.85, 0.16, 0.16);
    if (name == "green") return rgb(0.13, 0.62, 0.22);
    if (name == "blue") return rgb(0.16, 0.33, 0.88);
    if (name == "alpha") return rgb(0.55, 0.55, 0.55);
    if (name == "c1") return rgb(0.90, 0.50, 0.05);
    if (name == "c2") return rgb(0.45, 0.20, 0.70);
    if (name == "c3") return rgb(0.05, 0.60, 0.60);
    return rgb(0.20, 0.30, 0.45); // gray images and single-channel arrays
}

Rgb darker(Rgb c) {
    return {uint8_t(c.r * 4 / 5), uint8_t(c.g * 4 / 5), uint8_t(c.b * 4 / 5)};
}

// About `target` round tick values (1, 2 or 5 times a power of ten apart) within [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target) {
    double raw = (hi - lo) / target;
    double power = std::pow(10.0, std::floor(std::log10(raw)));
    double step = power * (raw / power < 1.5 ? 1 : raw / power < 3.5 ? 2 : raw / power < 7.5 ? 5 : 10);
    std::vector<double> ticks;
    for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step)
        ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
    return ticks;
}

std::string tick_label(double v) {
    char text[32];
    double a = std::fabs(v);
    if (a >= 1e9)
        std::snprintf(text, sizeof text, "%gG", v / 1e9);
    else if (a >= 1e6)
        std::snprintf(text, sizeof text, "%gM", v / 1e6);
    else if (a >= 1e4)
        std::snprintf(text, sizeof text, "%gk", v / 1e3);
    else
        std::snprintf(text, sizeof text, "%g", v);
    return text;
}

TextStyle style(double size, Rgb colour, double align, bool bold = false, bool upward = false) {
    TextStyle s;
    s.size = size, s.colour = colour, s.align = align, s.bold = bold, s.upward = upward;
    return s;
}

struct Box {
    int x, y, w, h;
    int bottom() const { return y + h; }
    int right() const { return x + w; }
};

void outline(Canvas &canvas, const Box &b, Rgb c) {
    canvas.fill(b.x, b.y, b.right(), b.y + 1, c);
    canvas.fill(b.x, b.bottom() - 1, b.right(), b.bottom(), c);
    canvas.fill(b.x, b.y, b.x + 1, b.bottom(), c);
    canvas.fill(b.right() - 1, b.y, b.right(), b.bottom(), c);
}

// ---------------------------------------------------------------------------------------------------
// Heat map

// Mean value of the cells under each of the map's pixels (one cell per pixel or more).
std::vector<double> cell_means(const double *grid, size_t rows, size_t cols, const Box &map) {
    std::vector<double> sums(size_t(map.w) * size_t(map.h), 0.0);
    std::vector<double> counts(sums.size(), 0.0);
    for (size_t i = 0; i < rows; ++i) {
        size_t py = i * size_t(map.h) / rows;
        for (size_t j = 0; j < cols; ++j) {
            size_t at = py * size_t(map.w) + j * size_t(map.w) / cols;
            sums[at] += grid[i * cols + j];
            counts[at] += 1;
        }
    }
    for (size_t k = 0; k < sums.size(); ++k) sums[k] /= counts[k];
    return sums;
}

void draw_cells(Canvas &canvas, const double *grid, size_t rows, size_t cols, const Box &map, double lo,
                double hi) {
    if (size_t(map.w) >= cols) { // whole pixels per cell
        int scale = map.w / int(cols);
        for (size_t i = 0; i < rows; ++i)
            for (size_t j = 0; j < cols; ++j) {
                int x = map.x + int(j) * scale, y = map.y + int(i) * scale;
                canvas.fill(x, y, x + scale, y + scale, heat_colour((grid[i * cols + j] - lo) / (hi - lo)));
            }
        return;
    }
    std::vector<double> means = cell_means(grid, rows, cols, map);
    for (int y = 0; y < map.h; ++y)
        for (int x = 0; x < map.w; ++x)
            canvas.set(map.x + x, map.y + y,
                       heat_colour((means[size_t(y) * size_t(map.w) + size_t(x)] - lo) / (hi - lo)));
}

void draw_colour_bar(Canvas &canvas, const Box &bar, double lo, double hi) {
    for (int k = 0; k < bar.h; ++k)
        canvas.fill(bar.x, bar.y + k, bar.right(), bar.y + k + 1, heat_colour(1.0 - (k + 0.5) / bar.h));
    outline(canvas, bar, rgb(0.2, 0.2, 0.2));
    for (double t : nice_ticks(lo, hi, 6)) {
        int y = std::min(int(std::lround(bar.bottom() - (t - lo) / (hi - lo) * bar.h)), bar.bottom() - 1);
        canvas.fill(bar.right(), y, bar.right() + 5, y + 1, kAxis);
        canvas.text(tick_label(t), bar.right() + 8, y + 0.5, style(12, kAxis, 0));
    }
}

} // namespace

std::vector<uint8_t> draw_heat_map(const double *grid, size_t rows, size_t cols, const std::string &title) {
    double lo = *std::min_element(grid, grid + rows * cols), hi = *std::max_element(grid, grid + rows * cols);
    if (!(hi > lo)) hi = lo + 1; // a uniform grid still gets a scale
    // Whole pixels per cell up to a 640-pixel map; larger grids are scaled down.
    size_t side = std::max(rows, cols);
    double scale = side <= 640 ? double(640 / side) : 640.0 / double(side);
    Box map{70, 60, std::max(1, int(std::lround(double(cols) * scale))),
            std::max(1, int(std::lround(double(rows) * scale)))};
    Box bar{map.right() + 24, map.y, 22, map.h};
    int width = std::max(bar.right() + 90, 560), height = map.bottom() + 50;
    Canvas canvas(width, height, kWhite);
    draw_cells(canvas, grid, rows, cols, map, lo, hi);
    canvas.text(title, width / 2.0, 28, style(16, kInk, 0.5, true));
    canvas.text(std::to_string(cols) + " columns, around the cylinder", map.x + map.w / 2.0,
                map.bottom() + 22, style(13, kInk, 0.5));
    canvas.text(std::to_string(rows) + " rows", map.x - 22, map.y + map.h / 2.0,
                style(13, kInk, 0.5, false, true));
    draw_colour_bar(canvas, bar, lo, hi);
    canvas.text("temperature", bar.right() + 66, bar.y + bar.h / 2.0, style(13, kInk, 0.5, false, true));
    return canvas.png();
}

namespace {

// ---------------------------------------------------------------------------------------------------
// Histogram

// Counts per pixel column of the plot (the largest bin in each column when there are more bins than
// columns), so that thin bars never vanish or blur.
std::vector<uint64_t> column_counts(const uint64_t *counts, size_t bins, size_t columns) {
    std::vector<uint64_t> out(columns, 0);
    for (size_t b = 0; b < bins; ++b) {
        size_t c = b * columns / bins;
        out[c] = std::max(out[c], counts[b]);
    }
    return out;
}

// Translucent bars, then their outline as a step line in a darker shade, which keeps each channel
// readable where the bars overlap.
void draw_series(Canvas &canvas, const Box &plot, const PlotSeries &s, size_t bins, double y_top,
                 double alpha) {
    size_t columns = std::min(bins, size_t(plot.w));
    std::vector<uint64_t> counts = column_counts(s.counts, bins, columns);
    Rgb c = channel_colour(s.name), line = darker(c);
    auto x_at = [&](size_t k) {
        return plot.x + int(std::lround(double(plot.w) * double(k) / double(columns)));
    };
    auto top_at = [&](size_t k) {
        return k < columns ? plot.bottom() - int(std::lround(double(counts[k]) / y_top * plot.h))
                           : plot.bottom();
    };
    for (size_t k = 0; k < columns; ++k)
        canvas.fill(x_at(k), top_at(k), x_at(k + 1), plot.bottom(), c, alpha);
    int previous = plot.bottom();
    for (size_t k = 0; k <= columns; ++k) {
        int x = x_at(k), top = top_at(k);
        canvas.fill(x, std::min(previous, top), x + 1, std::max(previous, top) + 1, line); // the riser
        if (k < columns) canvas.fill(x, top, x_at(k + 1) + 1, top + 1, line);
        previous = top;
    }
}

void draw_axes(Canvas &canvas, const Box &plot, double lower, double upper, double y_top) {
    for (double t : nice_ticks(0, y_top, 6)) {
        int y = plot.bottom() - int(std::lround(t / y_top * plot.h));
        canvas.fill(plot.x, y, plot.right(), y + 1, kGrid);
        canvas.text(tick_label(t), plot.x - 8, y + 0.5, style(12, kAxis, 1));
    }
    for (double t : nice_ticks(lower, upper, 8)) {
        int x = plot.x + int(std::lround((t - lower) / (upper - lower) * plot.w));
        canvas.fill(x, plot.bottom(), x + 1, plot.bottom() + 5, kAxis);
        canvas.text(tick_label(t), x + 0.5, plot.bottom() + 16, style(12, kAxis, 0.5));
    }
}

void draw_axis_lines(Canvas &canvas, const Box &plot) {
    canvas.fill(plot.x, plot.y, plot.x + 1, plot.bottom() + 1, kAxis);
    canvas.fill(plot.x, plot.bottom(), plot.right(), plot.bottom() + 1, kAxis);
}

void draw_legend(Canvas &canvas, const Box &plot, const std::vector<PlotSeries> &series) {
    int x = plot.right() - 100, y = plot.y;
    canvas.fill(x, y, x + 96, y + 8 + 18 * int(series.size()), kWhite, 0.85); // readable over tall bars
    for (const auto &s : series) {
        canvas.fill(x + 10, y + 6, x + 24, y + 18, channel_colour(s.name));
        canvas.text(s.name, x + 30, y + 12, style(12, kAxis, 0));
        y += 18;
    }
}

} // namespace

std::vector<uint8_t> draw_histogram(const std::vector<PlotSeries> &series, size_t bins, double lower,
                                    double upper, const std::string &title, const std::string &subtitle,
                                    const std::string &x_label) {
    const int width = 960, height = 540;
    Box plot{90, 70, width - 90 - 30, height - 70 - 64};
    uint64_t largest = 1;
    for (const auto &s : series) largest = std::max(largest, *std::max_element(s.counts, s.counts + bins));
    double y_top = double(largest) * 1.05;
    Canvas canvas(width, height, kWhite);
    draw_axes(canvas, plot, lower, upper, y_top);
    double alpha = series.size() > 1 ? 0.4 : 0.75;
    for (const auto &s : series) draw_series(canvas, plot, s, bins, y_top, alpha);
    draw_axis_lines(canvas, plot);
    canvas.text(title, width / 2.0, 24, style(16, kInk, 0.5, true));
    canvas.text(subtitle, width / 2.0, 46, style(12, kSubtle, 0.5));
    canvas.text(x_label, plot.x + plot.w / 2.0, height - 20, style(13, kInk, 0.5));
    canvas.text("count", 24, plot.y + plot.h / 2.0, style(13, kInk, 0.5, false, true));
    if (series.size() > 1) draw_legend(canvas, plot, series);
    return canvas.png();
}

} // namespace gpkcli
