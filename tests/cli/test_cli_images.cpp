// Image round trips through the gpk command: every PNG colour type and bit depth (palettes and tRNS
// expanded, interlaced) and PGM P2/P5 with several maxvals. Each file is decoded by gpk (an identity
// filter to a raw f32 file shows the samples it read), written back by gpk, and read by this test.
#include "cli_test.hpp"
#include "images.hpp"

namespace cli {

namespace {

struct PngCase {
    std::string name;
    images::PngFile file;
    std::vector<unsigned> expected; // samples gpk must decode
    int channels;                   // after expansion
    int bit_depth;                  // 8 or 16 after expansion
};

images::PngFile png_file(int color_type, int depth, unsigned modulo, uint64_t seed) {
    images::PngFile f;
    f.width = 7;
    f.height = 5;
    f.color_type = color_type;
    f.bit_depth = depth;
    f.samples = random_values(f.width * f.height * size_t(f.channels()), modulo, seed);
    return f;
}

// Gray, gray+alpha, RGB and RGBA at 8 and 16 bits, and gray at 1, 2 and 4 bits (scaled to 8).
void plain_cases(std::vector<PngCase> &cases) {
    const int types[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                         PNG_COLOR_TYPE_RGB_ALPHA};
    for (int t = 0; t < 4; ++t)
        for (int depth : {8, 16}) {
            images::PngFile f =
                png_file(types[t], depth, depth == 16 ? 65536 : 256, uint64_t(10 * t + depth));
            cases.push_back({"type" + std::to_string(types[t]) + "_" + std::to_string(depth), f, f.samples,
                             t + 1, depth});
        }
    for (int depth : {1, 2, 4}) {
        images::PngFile f = png_file(PNG_COLOR_TYPE_GRAY, depth, 1u << depth, uint64_t(depth));
        std::vector<unsigned> scaled;
        for (unsigned v : f.samples) scaled.push_back(v * 255 / ((1u << depth) - 1));
        cases.push_back({"gray" + std::to_string(depth), f, scaled, 1, 8});
    }
    images::PngFile f = png_file(PNG_COLOR_TYPE_RGB, 8, 256, 99);
    f.interlaced = true;
    cases.push_back({"rgb8_interlaced", f, f.samples, 3, 8});
}

// Gray with a transparent value (tRNS) becomes gray+alpha.
void gray_trns_cases(std::vector<PngCase> &cases) {
    for (int depth : {8, 16}) {
        images::PngFile f = png_file(PNG_COLOR_TYPE_GRAY, depth, 4, uint64_t(depth) + 7);
        f.trns_gray = 2;
        std::vector<unsigned> expected;
        unsigned opaque = depth == 16 ? 65535 : 255;
        for (unsigned v : f.samples) expected.push_back(v), expected.push_back(v == 2 ? 0 : opaque);
        cases.push_back({"gray" + std::to_string(depth) + "_trns", f, expected, 2, depth});
    }
}

// Palettes become RGB, or RGBA when they have transparency.
void palette_cases(std::vector<PngCase> &cases) {
    for (int depth : {2, 4, 8}) {
        bool alpha = depth == 4;
        images::PngFile f = png_file(PNG_COLOR_TYPE_PALETTE, depth, 1u << depth, uint64_t(depth) + 3);
        for (unsigned i = 0; i < (1u << depth); ++i)
            f.palette.push_back({png_byte(i * 37 % 256), png_byte(255 - i), png_byte(i * 11 % 256)});
        if (alpha) f.palette_alpha = {0, 128, 255, 7}; // shorter than the palette: the rest are opaque
        std::vector<unsigned> expected;
        for (unsigned v : f.samples) {
            expected.insert(expected.end(), {f.palette[v].red, f.palette[v].green, f.palette[v].blue});
            if (alpha) expected.push_back(v < f.palette_alpha.size() ? f.palette_alpha[v] : 255);
        }
        cases.push_back({"palette" + std::to_string(depth), f, expected, alpha ? 4 : 3, 8});
    }
}

// The samples gpk reads from `path`, through an identity filter into a raw f32 file.
std::vector<unsigned> decoded_by_gpk(const std::string &path) {
    expect_ok({"convolve", "--filter", "identity", "--out-type", "f32", path, tmp("decoded.raw")});
    std::vector<unsigned> out;
    for (float v : read_raw<float>(tmp("decoded.raw"))) out.push_back(unsigned(v));
    return out;
}

void check_png_case(const PngCase &c) {
    std::string in = tmp(c.name + ".png"), out = tmp(c.name + "_out.png");
    CHECK_MSG(images::write_png(in, c.file), c.name);
    CHECK_MSG(decoded_by_gpk(in) == c.expected, c.name + ": decoded samples differ");
    expect_ok({"convolve", "--filter", "identity", in, out});
    images::PngRead back = images::read_png(out);
    CHECK_MSG(back.ok && back.channels == c.channels && back.bit_depth == c.bit_depth,
              c.name + ": written PNG");
    CHECK_MSG(back.samples == c.expected, c.name + ": written samples differ");
    if (c.channels != 1) return;
    for (bool ascii : {false, true}) {
        std::string pgm = tmp(c.name + (ascii ? "_p2.pgm" : "_p5.pgm"));
        std::vector<std::string> args = {"convolve", "--filter", "identity", in, pgm};
        if (ascii) args.push_back("--ascii");
        expect_ok(args);
        images::Pgm p = images::read_pgm(pgm);
        CHECK_MSG(p.ok && p.ascii == ascii && p.maxval == (c.bit_depth == 16 ? 65535u : 255u), pgm);
        CHECK_MSG(p.samples == c.expected, c.name + ": PGM samples differ");
        for (const auto &line : lines_of(p.text))
            CHECK_MSG(line.size() <= 70, pgm + ": a line over 70 characters");
    }
}

struct PgmCase {
    images::Pgm pgm;
    std::string comment;
};

void check_pgm_case(const PgmCase &c, size_t index) {
    std::string name = "pgm" + std::to_string(index), in = tmp(name + ".pgm"), out = tmp(name + "_out.pgm");
    CHECK(images::write_text(in, images::pgm_text(c.pgm, c.comment)));
    CHECK_MSG(decoded_by_gpk(in) == c.pgm.samples, name + ": decoded samples differ");
    std::vector<std::string> args = {"convolve", "--filter", "identity", in, out};
    if (c.pgm.ascii) args.push_back("--ascii");
    expect_ok(args);
    images::Pgm back = images::read_pgm(out);
    CHECK_MSG(back.ok && back.ascii == c.pgm.ascii && back.maxval == c.pgm.maxval, name + ": header differs");
    CHECK_MSG(back.samples == c.pgm.samples, name + ": samples differ");
    if (c.pgm.maxval != 255 && c.pgm.maxval != 65535) return;
    // Through PNG and back.
    expect_ok({"convolve", "--filter", "identity", in, tmp(name + ".png")});
    images::PngRead png = images::read_png(tmp(name + ".png"));
    CHECK(png.ok && png.channels == 1 && png.bit_depth == (c.pgm.maxval > 255 ? 16 : 8) &&
          png.samples == c.pgm.samples);
    expect_ok({"convolve", "--filter", "identity", tmp(name + ".png"), tmp(name + "_back.pgm")});
    back = images::read_pgm(tmp(name + "_back.pgm"));
    CHECK(back.ok && back.maxval == c.pgm.maxval && back.samples == c.pgm.samples);
}

std::vector<PgmCase> pgm_cases() {
    std::vector<PgmCase> cases;
    const struct {
        bool ascii;
        unsigned maxval;
        const char *comment;
    } kinds[] = {
        {true, 255, ""},    {true, 1000, "made by test_cli"}, {true, 7, ""},   {false, 255, "a comment"},
        {false, 65535, ""}, {false, 100, "maxval 100"},       {false, 300, ""}};
    uint64_t seed = 1;
    for (const auto &k : kinds) {
        PgmCase c;
        c.pgm.ascii = k.ascii;
        c.pgm.maxval = k.maxval;
        c.pgm.width = 9;
        c.pgm.height = 4;
        c.pgm.samples = random_values(36, k.maxval + 1, seed++);
        c.comment = k.comment;
        cases.push_back(c);
    }
    return cases;
}

} // namespace

void section_images() {
    std::vector<PngCase> cases;
    plain_cases(cases);
    gray_trns_cases(cases);
    palette_cases(cases);
    for (const auto &c : cases) check_png_case(c);
    std::vector<PgmCase> pgms = pgm_cases();
    for (size_t i = 0; i < pgms.size(); ++i) check_pgm_case(pgms[i], i);
}

} // namespace cli
