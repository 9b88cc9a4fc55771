// Test images written and read independently of the CLI's image code: PNG files of every colour type
// and bit depth written row by row with libpng (samples packed by hand, no libpng transforms), PNG files
// read back without transforms, and PGM files written and parsed by hand.
#pragma once

#include <png.h>

#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace images {

struct PngFile {
    size_t width = 0, height = 0;
    int color_type = PNG_COLOR_TYPE_GRAY;
    int bit_depth = 8;
    bool interlaced = false;
    std::vector<unsigned> samples;      // as stored: palette indices for palette images
    std::vector<png_color> palette;     // palette images
    std::vector<uint8_t> palette_alpha; // tRNS of a palette image (may be shorter than the palette)
    int trns_gray = -1;                 // tRNS of a gray image, -1 for none

    int channels() const {
        switch (color_type) {
        case PNG_COLOR_TYPE_GRAY_ALPHA:
            return 2;
        case PNG_COLOR_TYPE_RGB:
            return 3;
        case PNG_COLOR_TYPE_RGB_ALPHA:
            return 4;
        default:
            return 1;
        }
    }
};

// One row packed as PNG stores it: big-endian 16-bit samples, sub-byte samples most significant first.
inline std::vector<uint8_t> pack_row(const PngFile &f, size_t y) {
    size_t n = f.width * size_t(f.channels());
    std::vector<uint8_t> row((n * size_t(f.bit_depth) + 7) / 8, 0);
    for (size_t i = 0; i < n; ++i) {
        unsigned v = f.samples[y * n + i];
        if (f.bit_depth == 16) {
            row[2 * i] = uint8_t(v >> 8);
            row[2 * i + 1] = uint8_t(v);
        } else {
            size_t bit = i * size_t(f.bit_depth);
            row[bit / 8] |= uint8_t(v << (8 - f.bit_depth - bit % 8));
        }
    }
    return row;
}

inline bool write_png_rows(png_structp png, png_infop info, const PngFile &f,
                           std::vector<std::vector<uint8_t>> &rows) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_set_IHDR(png, info, png_uint_32(f.width), png_uint_32(f.height), f.bit_depth, f.color_type,
                 f.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (!f.palette.empty()) png_set_PLTE(png, info, f.palette.data(), int(f.palette.size()));
    if (!f.palette_alpha.empty())
        png_set_tRNS(png, info, f.palette_alpha.data(), int(f.palette_alpha.size()), nullptr);
    png_color_16 gray{};
    gray.gray = png_uint_16(f.trns_gray);
    if (f.trns_gray >= 0) png_set_tRNS(png, info, nullptr, 0, &gray);
    png_write_info(png, info);
    int passes = f.interlaced ? png_set_interlace_handling(png) : 1;
    for (int p = 0; p < passes; ++p)
        for (auto &row : rows) png_write_row(png, row.data());
    png_write_end(png, nullptr);
    return true;
}

inline bool write_png(const std::string &path, const PngFile &f) {
    FILE *fp = std::fopen(path.c_str(), "wb");
    if (!fp) return false;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, fp);
    std::vector<std::vector<uint8_t>> rows;
    for (size_t y = 0; y < f.height; ++y) rows.push_back(pack_row(f, y));
    bool ok = write_png_rows(png, info, f, rows);
    png_destroy_write_struct(&png, &info);
    std::fclose(fp);
    return ok;
}

// A PNG read without transforms: header fields and samples as stored (8- or 16-bit only).
struct PngRead {
    bool ok = false;
    size_t width = 0, height = 0;
    int color_type = -1, bit_depth = 0, channels = 0;
    std::vector<unsigned> samples;
};

inline bool read_png_rows(png_structp png, png_infop info, PngRead &r,
                          std::vector<std::vector<uint8_t>> &rows) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_read_info(png, info);
    r.width = png_get_image_width(png, info);
    r.height = png_get_image_height(png, info);
    r.color_type = png_get_color_type(png, info);
    r.bit_depth = png_get_bit_depth(png, info);
    r.channels = png_get_channels(png, info);
    rows.assign(r.height, std::vector<uint8_t>(png_get_rowbytes(png, info)));
    for (auto &row : rows) png_read_row(png, row.data(), nullptr);
    png_read_end(png, nullptr);
    return true;
}

inline PngRead read_png(const std::string &path) {
    PngRead r;
    FILE *fp = std::fopen(path.c_str(), "rb");
    if (!fp) return r;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, fp);
    std::vector<std::vector<uint8_t>> rows;
    r.ok = read_png_rows(png, info, r, rows);
    png_destroy_read_struct(&png, &info, nullptr);
    std::fclose(fp);
    if (!r.ok || (r.bit_depth != 8 && r.bit_depth != 16)) return r.ok = false, r;
    for (const auto &row : rows)
        for (size_t i = 0; i < r.width * size_t(r.channels); ++i)
            r.samples.push_back(r.bit_depth == 16 ? unsigned(row[2 * i]) << 8 | row[2 * i + 1] : row[i]);
    return r;
}

struct Pgm {
    bool ok = false;
    bool ascii = false;
    size_t width = 0, height = 0;
    unsigned maxval = 0;
    std::vector<unsigned> samples;
    std::string text; // the whole file
};

inline std::string pgm_text(const Pgm &p, const std::string &comment = "") {
    std::ostringstream s;
    s << (p.ascii ? "P2\n" : "P5\n");
    if (!comment.empty()) s << "# " << comment << "\n";
    s << p.width << " " << p.height << "\n" << p.maxval << "\n";
    for (size_t i = 0; i < p.samples.size(); ++i) {
        unsigned v = p.samples[i];
        if (p.ascii)
            s << v << ((i + 1) % p.width ? " " : "\n");
        else if (p.maxval > 255)
            s << char(v >> 8) << char(v & 255);
        else
            s << char(v);
    }
    return s.str();
}

inline std::string read_text(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline bool write_text(const std::string &path, const std::string &text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    return bool(f);
}

// Parses a PGM file as the netpbm description says (comments in the header only).
inline Pgm read_pgm(const std::string &path) {
    Pgm p;
    p.text = read_text(path);
    std::istringstream s(p.text);
    std::string magic;
    s >> magic;
    p.ascii = magic == "P2";
    if (magic != "P2" && magic != "P5") return p;
    auto number = [&s]() {
        while (s >> std::ws && s.peek() == '#') s.ignore(1 << 20, '\n');
        unsigned long v = 0;
        s >> v;
        return v;
    };
    p.width = number(), p.height = number(), p.maxval = unsigned(number());
    if (!s) return p;
    if (!p.ascii) s.get(); // the one whitespace byte
    for (size_t i = 0; i < p.width * p.height; ++i) {
        if (p.ascii) {
            p.samples.push_back(unsigned(number()));
        } else {
            unsigned v = uint8_t(s.get());
            if (p.maxval > 255) v = v << 8 | uint8_t(s.get());
            p.samples.push_back(v);
        }
    }
    p.ok = bool(s);
    return p;
}

} // namespace images
