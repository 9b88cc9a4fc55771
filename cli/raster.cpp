// The canvas and its text. A glyph's strokes are drawn with round ends and joins, antialiased
// analytically: a pixel's coverage is how far its centre lies inside the stroke's half width (its distance
// to the nearest segment), smoothed over one pixel. Overlapping strokes of a glyph take the nearest one,
// so crossings do not darken.
#include "raster.hpp"

#include "font.hpp"
#include "image_io.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gpkcli {

namespace {

// Stroke widths in ems.
const double kStrokeRegular = 0.085, kStrokeBold = 0.125;

struct Segment {
    double x0, y0, x1, y1;
};

double distance_to(const Segment &s, double x, double y) {
    double dx = s.x1 - s.x0, dy = s.y1 - s.y0;
    double len2 = dx * dx + dy * dy;
    double t = len2 > 0 ? std::clamp(((x - s.x0) * dx + (y - s.y0) * dy) / len2, 0.0, 1.0) : 0.0;
    double ex = s.x0 + t * dx - x, ey = s.y0 + t * dy - y;
    return std::sqrt(ex * ex + ey * ey);
}

// Where a point of text space (u along the baseline from its start, v up from it, in pixels) falls.
struct TextFrame {
    double x, y; // the start of the baseline
    bool upward;
    void place(double u, double v, double *px, double *py) const {
        *px = upward ? x - v : x + u;
        *py = upward ? y - u : y - v;
    }
};

void draw_glyph(Canvas &canvas, const FontGlyph &glyph, const TextFrame &frame, double pen, double unit,
                double half_width, Rgb colour) {
    std::vector<Segment> segments;
    double lo_x = 1e300, lo_y = 1e300, hi_x = -1e300, hi_y = -1e300;
    for (const auto &stroke : glyph.strokes) {
        double px0 = 0, py0 = 0;
        for (size_t k = 0; k < stroke.size(); ++k) {
            double px, py;
            frame.place(pen + stroke[k].x * unit, stroke[k].y * unit, &px, &py);
            lo_x = std::min(lo_x, px), hi_x = std::max(hi_x, px);
            lo_y = std::min(lo_y, py), hi_y = std::max(hi_y, py);
            if (k > 0 || stroke.size() == 1) segments.push_back({k ? px0 : px, k ? py0 : py, px, py});
            px0 = px, py0 = py;
        }
    }
    double reach = half_width + 1;
    int x0 = int(std::floor(lo_x - reach)), x1 = int(std::ceil(hi_x + reach));
    int y0 = int(std::floor(lo_y - reach)), y1 = int(std::ceil(hi_y + reach));
    for (int y = std::max(y0, 0); y < std::min(y1, canvas.height()); ++y) {
        for (int x = std::max(x0, 0); x < std::min(x1, canvas.width()); ++x) {
            double d = 1e300;
            for (const auto &s : segments) d = std::min(d, distance_to(s, x + 0.5, y + 0.5));
            double coverage = std::clamp(half_width + 0.5 - d, 0.0, 1.0);
            if (coverage > 0) canvas.blend(x, y, colour, coverage);
        }
    }
}

// A UTF-8 continuation byte: a character outside ASCII is drawn as one box, at its first byte.
bool continues_character(char c) {
    return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

} // namespace

Rgb rgb(double r, double g, double b) {
    auto byte = [](double v) { return uint8_t(std::lround(std::clamp(v, 0.0, 1.0) * 255)); };
    return {byte(r), byte(g), byte(b)};
}

Canvas::Canvas(int width, int height, Rgb background) : width_(width), height_(height) {
    if (width < 1 || height < 1 || width > 16384 || height > 16384)
        throw std::invalid_argument("canvas of " + std::to_string(width) + "x" + std::to_string(height));
    rgb_.resize(size_t(width) * size_t(height) * 3);
    fill(0, 0, width, height, background);
}

Rgb Canvas::pixel(int x, int y) const {
    const uint8_t *p = &rgb_[(size_t(y) * size_t(width_) + size_t(x)) * 3];
    return {p[0], p[1], p[2]};
}

void Canvas::set(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
    uint8_t *p = &rgb_[(size_t(y) * size_t(width_) + size_t(x)) * 3];
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
}

void Canvas::blend(int x, int y, Rgb c, double alpha) {
    if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
    Rgb old = pixel(x, y);
    auto mix = [alpha](uint8_t a, uint8_t b) { return uint8_t(std::lround(a + (b - a) * alpha)); };
    set(x, y, {mix(old.r, c.r), mix(old.g, c.g), mix(old.b, c.b)});
}

void Canvas::fill(int x0, int y0, int x1, int y1, Rgb c, double alpha) {
    for (int y = std::max(y0, 0); y < std::min(y1, height_); ++y)
        for (int x = std::max(x0, 0); x < std::min(x1, width_); ++x)
            alpha >= 1 ? set(x, y, c) : blend(x, y, c, alpha);
}

double text_length(const std::string &text, double size) {
    double units = 0;
    for (char c : text)
        if (!continues_character(c)) units += font_glyph(c).advance;
    return units * size / kFontUnitsPerEm;
}

double Canvas::text(const std::string &text, double x, double y, const TextStyle &style) {
    double unit = style.size / kFontUnitsPerEm, length = text_length(text, style.size);
    double half_width = style.size * (style.bold ? kStrokeBold : kStrokeRegular) / 2;
    double start = -style.align * length, middle = 5 * unit; // capitals are 10 units high
    TextFrame frame =
        style.upward ? TextFrame{x + middle, y - start, true} : TextFrame{x + start, y + middle, false};
    double pen = 0;
    for (char c : text) {
        if (continues_character(c)) continue;
        const FontGlyph &glyph = font_glyph(c);
        draw_glyph(*this, glyph, frame, pen, unit, half_width, style.colour);
        pen += glyph.advance * unit;
    }
    return length;
}

std::vector<uint8_t> Canvas::png() const {
    Image image;
    image.width = size_t(width_);
    image.height = size_t(height_);
    image.channels = 3;
    image.bit_depth = 8;
    image.maxval = 255;
    image.pixels = rgb_;
    return encode_png(image);
}

} // namespace gpkcli
