// A small RGB canvas for the plots, written as PNG through libpng: filled rectangles (optionally
// translucent), crisp one-pixel lines, and antialiased text in gpk's stroke font (font.hpp), level or
// turned to read upwards. No Cairo and no font files, so every build draws the same pixels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpkcli {

struct Rgb {
    uint8_t r, g, b;
};

// An RGB colour from components in [0, 1] (rounded to nearest).
Rgb rgb(double r, double g, double b);

struct TextStyle {
    double size = 12; // the em in pixels: capitals are 0.7 of it
    Rgb colour{0, 0, 0};
    double align = 0;    // the anchor is at 0 the start, 0.5 the middle, 1 the end of the text
    bool bold = false;   // a heavier stroke
    bool upward = false; // turned a quarter to the left, reading bottom to top
};

class Canvas {
public:
    // Sizes up to 16384 pixels a side; the canvas starts filled with `background`.
    Canvas(int width, int height, Rgb background);

    int width() const { return width_; }
    int height() const { return height_; }

    Rgb pixel(int x, int y) const;
    void set(int x, int y, Rgb c);
    // Mixes `c` over the pixel with weight alpha in [0, 1]; pixels outside the canvas are left alone.
    void blend(int x, int y, Rgb c, double alpha);

    // The pixels x0 <= x < x1, y0 <= y < y1 (clipped to the canvas).
    void fill(int x0, int y0, int x1, int y1, Rgb c, double alpha = 1);

    // Text whose anchor is at (x, y): along the text as TextStyle::align says, across it at the middle
    // of the capitals. Returns its length in pixels.
    double text(const std::string &text, double x, double y, const TextStyle &style);

    // The PNG file of the canvas (8-bit RGB).
    std::vector<uint8_t> png() const;

private:
    int width_, height_;
    std::vector<uint8_t> rgb_;
};

// The length in pixels of `text` drawn at `size` (the same for bold and upward text).
double text_length(const std::string &text, double size);

} // namespace gpkcli
