// The glyphs of the stroke font, each a short path: "M x y" moves the pen, "L x y" draws a line to a
// point, "C cx cy rx ry a0 a1" starts a new stroke with an elliptical arc (centre, radii, from angle a0 to
// a1 in degrees, counter-clockwise when a1 > a0), "A ..." is an arc that continues the current stroke
// (joined by a line from the pen). The letter shapes are a plain geometric sans-serif of our own design.
#include "font.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace gpkcli {

namespace {

struct GlyphPath {
    char c;
    const char *path;
};

const GlyphPath kGlyphPaths[] = {
    {'!', "M0 10 L0 2.8 M0 0 L0 0.15"},
    {'"', "M0 10 L0 7.2 M2.2 10 L2.2 7.2"},
    {'#', "M1.9 0 L2.9 10 M4.9 0 L5.9 10 M0.3 3.3 L7.3 3.3 M0.6 6.7 L7.6 6.7"},
    {'$', "C3.1 7.5 2.9 2.5 25 270 A3.1 2.5 3.1 2.5 90 -155 M3.1 -1.2 L3.1 11.2"},
    {'%', "C1.7 7.8 1.7 2.2 0 360 C6.5 2.2 1.7 2.2 0 360 M7 10 L1.2 0"},
    {'&', "M6.8 0 L1.6 6.8 A3.1 8.3 1.55 1.7 210 -30 L0.9 3.7 A2.8 2.35 2.6 2.35 150 340 L6.9 4.6"},
    {'\'', "M0 10 L0 7.2"},
    {'(', "C4.3 4.2 4.3 7.2 123 237"},
    {')', "C-2.3 4.2 4.3 7.2 57 -57"},
    {'*', "M3 10 L3 4.6 M0.6 8.7 L5.4 5.9 M0.6 5.9 L5.4 8.7"},
    {'+', "M0 4 L6.4 4 M3.2 0.8 L3.2 7.2"},
    {',', "M0.5 0.4 L-0.5 -2"},
    {'-', "M0 3.9 L3.4 3.9"},
    {'.', "M0 0 L0 0.15"},
    {'/', "M0 -1.2 L4.6 10.6"},
    {'0', "C3.1 5 3.1 5 0 360"},
    {'1', "M0 8.1 L2.7 10 L2.7 0"},
    {'2', "C3 7.1 2.9 2.9 155 -30 L0 0 L6.1 0"},
    {'3', "C3 7.6 2.8 2.4 150 -90 A3 2.6 3.1 2.6 90 -150"},
    {'4', "M4.6 0 L4.6 10 L0 3 L6.5 3"},
    {'5', "M5.7 10 L1.1 10 L0.8 5.3 A3.1 3.25 3.1 3.25 137 -142"},
    {'6', "C3.1 3.15 3.1 3.15 0 360 M0 3.15 L0 5.3 A3.3 5.3 3.3 4.7 180 58"},
    {'7', "M0 10 L6.2 10 L2 0"},
    {'8', "C3.1 7.6 2.7 2.4 0 360 C3.1 2.6 3.1 2.6 0 360"},
    {'9', "C3.1 6.85 3.1 3.15 0 360 M6.2 6.85 L6.2 4.7 A2.9 4.7 3.3 4.7 0 -122"},
    {':', "M0 0 L0 0.15 M0 6.6 L0 6.75"},
    {';', "M0.5 0.4 L-0.5 -2 M0.5 6.6 L0.5 6.75"},
    {'<', "M6 7.4 L0 4.1 L6 0.8"},
    {'=', "M0 2.8 L6.2 2.8 M0 5.4 L6.2 5.4"},
    {'>', "M0 7.4 L6 4.1 L0 0.8"},
    {'?', "C2.8 7.5 2.8 2.5 165 -55 L2.8 3.9 L2.8 2.8 M2.8 0 L2.8 0.15"},
    {'@', "C4.3 4.4 1.7 2.2 0 360 M6 6.4 L6 3.1 A7.1 3.1 1.1 1.2 180 320 A4.8 4.4 4.8 5.2 0 295"},
    {'A', "M0 0 L3.7 10 L7.4 0 M1.35 3.6 L6.05 3.6"},
    {'B', "M0 5.2 L3.9 5.2 A3.9 7.6 2.4 2.4 -90 90 L0 10 L0 0 L4.1 0 A4.1 2.6 2.6 2.6 -90 90 L0 5.2"},
    {'C', "C4 5 4 5 47 313"},
    {'D', "M0 0 L0 10 L2.8 10 A2.8 5 4.4 5 90 -90 L0 0"},
    {'E', "M6 10 L0 10 L0 0 L6 0 M0 5.1 L5.1 5.1"},
    {'F', "M6 10 L0 10 L0 0 M0 5.1 L5.1 5.1"},
    {'G', "C4 5 4 5 47 345 L7.9 4.6 L4.6 4.6"},
    {'H', "M0 0 L0 10 M6.6 0 L6.6 10 M0 5.1 L6.6 5.1"},
    {'I', "M0 0 L0 10"},
    {'J', "M4.6 10 L4.6 2.6 A2.3 2.6 2.3 2.6 0 -160"},
    {'K', "M0 0 L0 10 M6.2 10 L0 3.4 M2.2 5.7 L6.5 0"},
    {'L', "M0 10 L0 0 L5.6 0"},
    {'M', "M0 0 L0 10 L4.2 1.6 L8.4 10 L8.4 0"},
    {'N', "M0 0 L0 10 L6.8 0 L6.8 10"},
    {'O', "C4.1 5 4.1 5 0 360"},
    {'P', "M0 0 L0 10 L3.7 10 A3.7 7.3 2.7 2.7 90 -90 L0 4.6"},
    {'Q', "C4.1 5 4.1 5 0 360 M5 2.3 L8.1 -0.8"},
    {'R', "M0 0 L0 10 L3.7 10 A3.7 7.35 2.65 2.65 90 -90 L0 4.7 M3.5 4.7 L6.6 0"},
    {'S', "C3.3 7.5 3 2.5 25 270 A3.3 2.5 3.2 2.5 90 -155"},
    {'T', "M0 10 L7.2 10 M3.6 10 L3.6 0"},
    {'U', "M0 10 L0 3.3 A3.3 3.3 3.3 3.3 180 360 L6.6 10"},
    {'V', "M0 10 L3.6 0 L7.2 10"},
    {'W', "M0 10 L2.5 0 L5.1 8.2 L7.7 0 L10.2 10"},
    {'X', "M0 10 L6.8 0 M0 0 L6.8 10"},
    {'Y', "M0 10 L3.5 5 L7 10 M3.5 5 L3.5 0"},
    {'Z', "M0.3 10 L6.5 10 L0 0 L6.7 0"},
    {'[', "M2.5 10.6 L0 10.6 L0 -1.8 L2.5 -1.8"},
    {'\\', "M0 10.6 L4.6 -1.2"},
    {']', "M0 10.6 L2.5 10.6 L2.5 -1.8 L0 -1.8"},
    {'^', "M0 7 L2.6 10.2 L5.2 7"},
    {'_', "M0 -1.6 L6.4 -1.6"},
    {'`', "M0 10.4 L1.7 8.6"},
    {'a', "M5.8 7 L5.8 0 C2.9 3.5 2.9 3.5 0 360"},
    {'b', "M0 10.4 L0 0 C2.9 3.5 2.9 3.5 0 360"},
    {'c', "C3 3.5 3 3.5 45 315"},
    {'d', "M5.8 10.4 L5.8 0 C2.9 3.5 2.9 3.5 0 360"},
    {'e', "M0.1 3.6 L5.95 3.6 A3 3.5 2.95 3.5 2 318"},
    {'f', "M1.4 0 L1.4 8 A3.5 8 2.1 2.2 180 60 M0 7 L3.9 7"},
    {'g', "M5.8 7 L5.8 -0.6 A2.9 -0.6 2.9 2.4 0 -150 C2.9 3.5 2.9 3.5 0 360"},
    {'h', "M0 10.4 L0 0 M0 4.2 A2.85 4.2 2.85 2.8 180 0 L5.7 0"},
    {'i', "M0 0 L0 7 M0 9.5 L0 9.65"},
    {'j', "M1.3 7 L1.3 -1.2 A-0.7 -1.2 2 1.8 0 -110 M1.3 9.5 L1.3 9.65"},
    {'k', "M0 0 L0 10.4 M5.3 7 L0 2.4 M1.9 4.1 L5.7 0"},
    {'l', "M0 0 L0 10.4"},
    {'m', "M0 0 L0 7 M0 4.6 A2.25 4.6 2.25 2.4 180 0 L4.5 0 M4.5 4.6 A6.75 4.6 2.25 2.4 180 0 L9 0"},
    {'n', "M0 0 L0 7 M0 4.2 A2.85 4.2 2.85 2.8 180 0 L5.7 0"},
    {'o', "C3 3.5 3 3.5 0 360"},
    {'p', "M0 7 L0 -3 C2.9 3.5 2.9 3.5 0 360"},
    {'q', "M5.8 7 L5.8 -3 C2.9 3.5 2.9 3.5 0 360"},
    {'r', "M0 0 L0 7 M0 4 A3 4 3 3 180 72"},
    {'s', "C2.75 5.25 2.5 1.75 25 270 A2.75 1.75 2.8 1.75 90 -155"},
    {'t', "M1.4 9.4 L1.4 1.5 A3.1 1.5 1.7 1.5 180 300 M0 7 L3.9 7"},
    {'u', "M0 7 L0 2.8 A2.85 2.8 2.85 2.8 180 360 M5.7 7 L5.7 0"},
    {'v', "M0 7 L3.1 0 L6.2 7"},
    {'w', "M0 7 L2.2 0 L4.4 5.6 L6.6 0 L8.8 7"},
    {'x', "M0 7 L5.8 0 M0 0 L5.8 7"},
    {'y', "M0 7 L3.2 0 M6.3 7 L2.6 -1.8 L2.1 -2.6 L0.8 -3"},
    {'z', "M0.2 7 L5.7 7 L0 0 L5.9 0"},
    {'{', "M2.9 10.6 A2.9 9.1 1.3 1.5 90 180 L1.6 5.8 L0 4.4 L1.6 3 L1.6 -0.3 A2.9 -0.3 1.3 1.5 180 270"},
    {'|', "M0 -2 L0 10.6"},
    {'}', "M0 10.6 A0 9.1 1.3 1.5 90 0 L1.3 5.8 L2.9 4.4 L1.3 3 L1.3 -0.3 A0 -0.3 1.3 1.5 0 -90"},
    {'~', "M0 3.7 L1.4 4.7 L3.2 3.8 L4.6 4.8"},
    {'\x7f', "M0 0 L6 0 L6 10 L0 10 L0 0"}, // anything else: an empty box
};

// Units either side of a glyph's ink (the stroke's own half width comes on top), and a space's advance.
const double kSideBearing = 1.3;
const double kSpaceAdvance = 4.2;

// Reads the paths' numbers; the table above is the only input, so a malformed path is a programming
// error found by the first run of any plot.
class PathReader {
public:
    explicit PathReader(const char *path) : p_(path) {}

    char command() {
        while (*p_ == ' ') ++p_;
        return *p_ ? *p_++ : 0;
    }
    double number() {
        char *end = nullptr;
        double v = std::strtod(p_, &end);
        if (end == p_) throw std::logic_error(std::string("bad font path near '") + p_ + "'");
        p_ = end;
        return v;
    }

private:
    const char *p_;
};

// Adds an arc to `stroke` in steps of at most 12 degrees.
void add_arc(FontStroke &stroke, PathReader &in) {
    double cx = in.number(), cy = in.number(), rx = in.number(), ry = in.number();
    double a0 = in.number(), a1 = in.number();
    int steps = std::max(2, int(std::ceil(std::fabs(a1 - a0) / 12)));
    for (int k = 0; k <= steps; ++k) {
        double a = (a0 + (a1 - a0) * k / steps) * 3.14159265358979323846 / 180;
        stroke.push_back({cx + rx * std::cos(a), cy + ry * std::sin(a)});
    }
}

std::vector<FontStroke> parse_path(const char *path) {
    std::vector<FontStroke> strokes;
    PathReader in(path);
    for (char cmd = in.command(); cmd; cmd = in.command()) {
        if (cmd == 'M' || cmd == 'C') strokes.emplace_back();
        if (strokes.empty()) throw std::logic_error(std::string("font path starts with ") + cmd);
        if (cmd == 'M' || cmd == 'L') {
            double x = in.number();
            strokes.back().push_back({x, in.number()});
        } else if (cmd == 'A' || cmd == 'C') {
            add_arc(strokes.back(), in);
        } else {
            throw std::logic_error(std::string("unknown font path command ") + cmd);
        }
    }
    return strokes;
}

// The side bearings are measured on the ink above the baseline, so that the hook of a j or the tail of a
// comma reaches under its neighbour as in set type; only glyphs wholly below it ('_') use all of it.
FontGlyph make_glyph(const char *path) {
    FontGlyph g{parse_path(path), 0};
    double lo = 1e9, hi = -1e9;
    for (bool all : {false, true}) {
        for (const auto &s : g.strokes)
            for (const auto &p : s)
                if (all || p.y >= 0) lo = std::min(lo, p.x), hi = std::max(hi, p.x);
        if (lo <= hi) break;
    }
    for (auto &s : g.strokes)
        for (auto &p : s) p.x += kSideBearing - lo;
    g.advance = hi - lo + 2 * kSideBearing;
    return g;
}

struct Font {
    std::array<FontGlyph, 128> glyphs;
    Font() {
        glyphs[' '] = FontGlyph{{}, kSpaceAdvance};
        for (const auto &gp : kGlyphPaths) glyphs[size_t(gp.c)] = make_glyph(gp.path);
    }
};

} // namespace

const FontGlyph &font_glyph(char c) {
    static const Font font;
    auto u = static_cast<unsigned char>(c);
    return u >= ' ' && u < 0x7f ? font.glyphs[u] : font.glyphs[0x7f];
}

} // namespace gpkcli
