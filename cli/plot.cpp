// Heat maps and histogram charts drawn with Cairo (text, antialiasing and PNG encoding come from it).
#include "plot.hpp"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>

namespace gpkcli {

namespace {

using Surface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using Cairo = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

const char *kFont = "DejaVu Sans";

struct Rgb {
    double r, g, b;
};

// The heat map's colours, coldest to hottest: indigo, purple, red, orange, pale yellow. Lightness rises
// steadily so that the map also reads in gray.
const Rgb kHeatColours[] = {{0.05, 0.03, 0.20}, {0.22, 0.09, 0.50}, {0.50, 0.12, 0.53}, {0.78, 0.22, 0.38},
                            {0.95, 0.45, 0.17}, {0.99, 0.75, 0.27}, {1.00, 0.97, 0.78}};

Rgb heat_colour(double x) {
    const int last = int(sizeof kHeatColours / sizeof kHeatColours[0]) - 1;
    x = std::clamp(x, 0.0, 1.0) * last;
    int i = std::min(int(x), last - 1);
    double f = x - i;
    const Rgb &a = kHeatColours[i], &b = kHeatColours[i + 1];
    return {a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f};
}

Rgb channel_colour(const std::string &name) {
    if (name == "red") return {0.85, 0.16, 0.16};
    if (name == "green") return {0.13, 0.62, 0.22};
    if (name == "blue") return {0.16, 0.33, 0.88};
    if (name == "alpha") return {0.55, 0.55, 0.55};
    if (name == "c1") return {0.90, 0.50, 0.05};
    if (name == "c2") return {0.45, 0.20, 0.70};
    if (name == "c3") return {0.05, 0.60, 0.60};
    return {0.20, 0.30, 0.45}; // gray images and single-channel arrays
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

// Draws `text` with its anchor point at (x, y): align 0 left, 0.5 centre, 1 right; vertically centred.
void draw_text(cairo_t *cr, const std::string &text, double x, double y, double size, double align,
               bool bold = false) {
    cairo_select_font_face(cr, kFont, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    cairo_text_extents_t e;
    cairo_text_extents(cr, text.c_str(), &e);
    cairo_move_to(cr, x - e.x_advance * align, y + size * 0.35);
    cairo_show_text(cr, text.c_str());
}

void draw_vertical_text(cairo_t *cr, const std::string &text, double x, double y, double size) {
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_rotate(cr, -M_PI / 2);
    draw_text(cr, text, 0, 0, size, 0.5);
    cairo_restore(cr);
}

cairo_status_t append_png_bytes(void *closure, const unsigned char *data, unsigned int length) {
    auto *out = static_cast<std::vector<uint8_t> *>(closure);
    out->insert(out->end(), data, data + length);
    return CAIRO_STATUS_SUCCESS;
}

std::vector<uint8_t> png_of(cairo_surface_t *surface) {
    std::vector<uint8_t> bytes;
    cairo_surface_flush(surface);
    cairo_status_t status = cairo_surface_write_to_png_stream(surface, append_png_bytes, &bytes);
    if (status != CAIRO_STATUS_SUCCESS)
        throw std::runtime_error(std::string("drawing the picture failed: ") +
                                 cairo_status_to_string(status));
    return bytes;
}

Surface new_surface(int width, int height) {
    Surface s(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height), cairo_surface_destroy);
    if (cairo_surface_status(s.get()) != CAIRO_STATUS_SUCCESS)
        throw std::runtime_error("cannot make a " + std::to_string(width) + "x" + std::to_string(height) +
                                 " picture");
    return s;
}

// ---------------------------------------------------------------------------------------------------
// Heat map

// One pixel per cell, coloured over [lo, hi].
Surface grid_surface(const double *grid, size_t rows, size_t cols, double lo, double hi) {
    Surface s = new_surface(int(cols), int(rows));
    unsigned char *data = cairo_image_surface_get_data(s.get());
    int stride = cairo_image_surface_get_stride(s.get());
    for (size_t i = 0; i < rows; ++i) {
        auto *row = reinterpret_cast<uint32_t *>(data + i * size_t(stride));
        for (size_t j = 0; j < cols; ++j) {
            Rgb c = heat_colour((grid[i * cols + j] - lo) / (hi - lo));
            row[j] =
                uint32_t(c.r * 255 + 0.5) << 16 | uint32_t(c.g * 255 + 0.5) << 8 | uint32_t(c.b * 255 + 0.5);
        }
    }
    cairo_surface_mark_dirty(s.get());
    return s;
}

struct Box {
    double x, y, w, h;
};

void draw_colour_bar(cairo_t *cr, const Box &bar, double lo, double hi) {
    for (int k = 0; k < int(bar.h); ++k) {
        Rgb c = heat_colour(1.0 - (k + 0.5) / bar.h);
        cairo_set_source_rgb(cr, c.r, c.g, c.b);
        cairo_rectangle(cr, bar.x, bar.y + k, bar.w, 1);
        cairo_fill(cr);
    }
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, bar.x + 0.5, bar.y + 0.5, bar.w - 1, bar.h - 1);
    cairo_stroke(cr);
    for (double t : nice_ticks(lo, hi, 6)) {
        double y = std::round(bar.y + bar.h - (t - lo) / (hi - lo) * bar.h) + 0.5;
        cairo_move_to(cr, bar.x + bar.w, y);
        cairo_line_to(cr, bar.x + bar.w + 5, y);
        cairo_stroke(cr);
        draw_text(cr, tick_label(t), bar.x + bar.w + 8, y, 12, 0);
    }
}

} // namespace

std::vector<uint8_t> draw_heat_map(const double *grid, size_t rows, size_t cols, const std::string &title) {
    double lo = *std::min_element(grid, grid + rows * cols), hi = *std::max_element(grid, grid + rows * cols);
    if (!(hi > lo)) hi = lo + 1; // a uniform grid still gets a scale
    // Whole pixels per cell up to a 640-pixel map; larger grids are scaled down smoothly.
    double side = double(std::max(rows, cols));
    double scale = side <= 640 ? std::max(1.0, std::floor(640 / side)) : 640 / side;
    Box map{70, 60, std::round(cols * scale), std::round(rows * scale)};
    Box bar{map.x + map.w + 24, map.y, 22, map.h};
    int width = int(std::max(bar.x + bar.w + 90, 560.0)), height = int(map.y + map.h + 50);
    Surface surface = new_surface(width, height);
    Cairo cr(cairo_create(surface.get()), cairo_destroy);
    cairo_set_source_rgb(cr.get(), 1, 1, 1);
    cairo_paint(cr.get());

    Surface cells = grid_surface(grid, rows, cols, lo, hi);
    cairo_save(cr.get());
    cairo_translate(cr.get(), map.x, map.y);
    cairo_scale(cr.get(), map.w / cols, map.h / rows);
    cairo_set_source_surface(cr.get(), cells.get(), 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr.get()),
                             scale >= 1 ? CAIRO_FILTER_NEAREST : CAIRO_FILTER_GOOD);
    cairo_paint(cr.get());
    cairo_restore(cr.get());

    cairo_set_source_rgb(cr.get(), 0.1, 0.1, 0.1);
    draw_text(cr.get(), title, width / 2.0, 28, 16, 0.5, true);
    draw_text(cr.get(), std::to_string(cols) + " columns, around the cylinder", map.x + map.w / 2,
              map.y + map.h + 22, 13, 0.5);
    draw_vertical_text(cr.get(), std::to_string(rows) + " rows", map.x - 22, map.y + map.h / 2, 13);
    draw_colour_bar(cr.get(), bar, lo, hi);
    draw_vertical_text(cr.get(), "temperature", bar.x + bar.w + 66, bar.y + bar.h / 2, 13);
    return png_of(surface.get());
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

void draw_series(cairo_t *cr, const Box &plot, const PlotSeries &s, size_t bins, double y_top, double alpha) {
    size_t columns = std::min(bins, size_t(plot.w));
    std::vector<uint64_t> counts = column_counts(s.counts, bins, columns);
    Rgb c = channel_colour(s.name);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
    cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha);
    for (size_t k = 0; k < columns; ++k) {
        double x0 = std::round(plot.x + plot.w * k / columns),
               x1 = std::round(plot.x + plot.w * (k + 1) / columns);
        double h = std::round(double(counts[k]) / y_top * plot.h);
        if (h > 0) cairo_rectangle(cr, x0, plot.y + plot.h - h, std::max(1.0, x1 - x0), h);
    }
    cairo_fill(cr);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
    // The outline of the bars in full colour keeps each channel readable where they overlap.
    cairo_set_source_rgb(cr, c.r * 0.8, c.g * 0.8, c.b * 0.8);
    cairo_set_line_width(cr, 1.2);
    cairo_move_to(cr, plot.x, plot.y + plot.h);
    for (size_t k = 0; k < columns; ++k) {
        double y = plot.y + plot.h - std::round(double(counts[k]) / y_top * plot.h);
        cairo_line_to(cr, std::round(plot.x + plot.w * k / columns), y);
        cairo_line_to(cr, std::round(plot.x + plot.w * (k + 1) / columns), y);
    }
    cairo_line_to(cr, plot.x + plot.w, plot.y + plot.h);
    cairo_stroke(cr);
}

void draw_axes(cairo_t *cr, const Box &plot, double lower, double upper, double y_top) {
    cairo_set_line_width(cr, 1);
    for (double t : nice_ticks(0, y_top, 6)) {
        double y = std::round(plot.y + plot.h - t / y_top * plot.h) + 0.5;
        cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
        cairo_move_to(cr, plot.x, y);
        cairo_line_to(cr, plot.x + plot.w, y);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
        draw_text(cr, tick_label(t), plot.x - 8, y, 12, 1);
    }
    cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
    for (double t : nice_ticks(lower, upper, 8)) {
        double x = std::round(plot.x + (t - lower) / (upper - lower) * plot.w) + 0.5;
        cairo_move_to(cr, x, plot.y + plot.h);
        cairo_line_to(cr, x, plot.y + plot.h + 5);
        cairo_stroke(cr);
        draw_text(cr, tick_label(t), x, plot.y + plot.h + 16, 12, 0.5);
    }
    cairo_move_to(cr, plot.x + 0.5, plot.y);
    cairo_line_to(cr, plot.x + 0.5, plot.y + plot.h + 0.5);
    cairo_line_to(cr, plot.x + plot.w, plot.y + plot.h + 0.5);
    cairo_stroke(cr);
}

void draw_legend(cairo_t *cr, const Box &plot, const std::vector<PlotSeries> &series) {
    cairo_set_source_rgba(cr, 1, 1, 1, 0.85); // keeps the names readable over tall bars
    cairo_rectangle(cr, plot.x + plot.w - 100, plot.y, 96, 8 + 18.0 * double(series.size()));
    cairo_fill(cr);
    double y = plot.y + 12;
    for (const auto &s : series) {
        Rgb c = channel_colour(s.name);
        cairo_set_source_rgb(cr, c.r, c.g, c.b);
        cairo_rectangle(cr, plot.x + plot.w - 90, y - 6, 14, 12);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
        draw_text(cr, s.name, plot.x + plot.w - 70, y, 12, 0);
        y += 18;
    }
}

} // namespace

std::vector<uint8_t> draw_histogram(const std::vector<PlotSeries> &series, size_t bins, double lower,
                                    double upper, const std::string &title, const std::string &subtitle,
                                    const std::string &x_label) {
    const int width = 960, height = 540;
    Box plot{90, 70, width - 90 - 30.0, height - 70 - 64.0};
    uint64_t largest = 1;
    for (const auto &s : series) largest = std::max(largest, *std::max_element(s.counts, s.counts + bins));
    double y_top = double(largest) * 1.05;
    Surface surface = new_surface(width, height);
    Cairo cr(cairo_create(surface.get()), cairo_destroy);
    cairo_set_source_rgb(cr.get(), 1, 1, 1);
    cairo_paint(cr.get());
    draw_axes(cr.get(), plot, lower, upper, y_top);
    double alpha = series.size() > 1 ? 0.4 : 0.75;
    for (const auto &s : series) draw_series(cr.get(), plot, s, bins, y_top, alpha);
    cairo_set_source_rgb(cr.get(), 0.1, 0.1, 0.1);
    draw_text(cr.get(), title, width / 2.0, 24, 16, 0.5, true);
    cairo_set_source_rgb(cr.get(), 0.35, 0.35, 0.35);
    draw_text(cr.get(), subtitle, width / 2.0, 46, 12, 0.5);
    cairo_set_source_rgb(cr.get(), 0.1, 0.1, 0.1);
    draw_text(cr.get(), x_label, plot.x + plot.w / 2, height - 20, 13, 0.5);
    draw_vertical_text(cr.get(), "count", 24, plot.y + plot.h / 2, 13);
    if (series.size() > 1) draw_legend(cr.get(), plot, series);
    return png_of(surface.get());
}

} // namespace gpkcli
