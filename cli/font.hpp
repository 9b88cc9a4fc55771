// gpk's own stroke font for the plots: every printable ASCII character drawn as lines and elliptical
// arcs on a grid of font units (baseline at 0, y up; capitals 10 units high, lower case 7, descenders to
// -3), so that text scales to any size and turns for vertical labels without a font library.
#pragma once

#include <vector>

namespace gpkcli {

struct FontPoint {
    double x, y;
};

// One pen stroke: a polyline in font units.
using FontStroke = std::vector<FontPoint>;

struct FontGlyph {
    std::vector<FontStroke> strokes; // already placed: the ink starts at the left side bearing
    double advance;                  // font units to the next glyph's origin
};

// Font units in one font size (the em): a capital is 10 units, 0.7 em.
constexpr double kFontUnitsPerEm = 10.0 / 0.7;

// The glyph of `c`; characters outside printable ASCII (the first byte of a UTF-8 character) get a box.
const FontGlyph &font_glyph(char c);

} // namespace gpkcli
