// gpk histogram on images whose counts the test knows: CSV, JSON and table output, ranges, saturation,
// raw arrays with a row pitch (padding not counted), NaN, and the plot.
#include "cli_test.hpp"
#include "images.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace cli {

namespace {

void gray_csv() {
    images::Pgm pgm;
    pgm.width = 16, pgm.height = 16, pgm.maxval = 255;
    std::vector<uint64_t> expected(256, 0);
    for (unsigned i = 0; i < 256; ++i)
        pgm.samples.push_back((3 * i) % 11 + 200), ++expected[(3 * i) % 11 + 200];
    images::write_text(tmp("gray.pgm"), images::pgm_text(pgm));
    proc::Result r = expect_ok({"histogram", "--csv", tmp("gray.pgm")});
    CHECK(lines_of(r.out).at(0) == "bin,lower,upper,gray");
    CHECK(csv_counts(r.out, 0) == expected);
    CHECK(contains(r.out, "\n200,200,201,"));

    // A range and fewer bins: [200, 210) in 5 bins; the samples equal to 210 are not counted.
    r = expect_ok({"histogram", "--range", "200:210", "--bins", "5", tmp("gray.pgm")});
    std::vector<uint64_t> five(5, 0);
    for (unsigned v : pgm.samples)
        if (v < 210) ++five[(v - 200) / 2];
    std::vector<std::string> lines = lines_of(r.out);
    CHECK_EQ(lines.size(), size_t(8)); // description, column names, 5 bins, not counted
    for (size_t b = 0; b < 5 && lines.size() == 8; ++b) {
        size_t bin = 0;
        double lower = 0;
        unsigned long long count = 0;
        CHECK(std::sscanf(lines[2 + b].c_str(), "%zu %lf %llu", &bin, &lower, &count) == 3);
        CHECK(bin == b && lower == 200 + 2.0 * b && count == five[b]);
    }
    CHECK_MSG(lines.back().rfind("# not counted", 0) == 0 &&
                  std::strtoull(lines.back().c_str() + 13, nullptr, 10) == 23,
              lines.back()); // the 23 samples equal to 210
}

void rgb_json_and_plot() {
    images::PngFile f;
    f.width = 6, f.height = 4, f.color_type = PNG_COLOR_TYPE_RGB, f.bit_depth = 8;
    std::vector<std::vector<uint64_t>> expected(3, std::vector<uint64_t>(256, 0));
    for (size_t i = 0; i < 24; ++i)
        for (unsigned c = 0; c < 3; ++c) {
            unsigned v = unsigned((i * (c + 1) * 29 + c * 100) % 256);
            f.samples.push_back(v);
            ++expected[c][v];
        }
    images::write_png(tmp("rgb.png"), f);
    proc::Result r = expect_ok({"histogram", "--json", tmp("rgb.png")});
    CHECK(json_counts(r.out, "red") == expected[0]);
    CHECK(json_counts(r.out, "green") == expected[1]);
    CHECK(json_counts(r.out, "blue") == expected[2]);
    CHECK(contains(r.out, "\"bins\": 256") && contains(r.out, "\"upper\": 256"));
    expect_ok({"histogram", "--plot", tmp("hist.png"), tmp("rgb.png")});
    images::PngRead png = images::read_png(tmp("hist.png"));
    CHECK(png.ok && png.width == 960 && png.height == 540);
}

void pgm16_default_range() {
    images::Pgm pgm;
    pgm.width = 10, pgm.height = 10, pgm.maxval = 1000, pgm.ascii = true;
    pgm.samples = random_values(100, 1001, 5);
    std::vector<uint64_t> expected(10, 0);
    for (unsigned v : pgm.samples) ++expected[size_t(std::floor(v * (10.0 / 1001.0)))];
    images::write_text(tmp("g16.pgm"), images::pgm_text(pgm));
    proc::Result r = expect_ok({"histogram", "--bins", "10", "--csv", tmp("g16.pgm")});
    CHECK(csv_counts(r.out, 0) == expected);
    CHECK(contains(r.out, "\n0,0,100.1,"));
}

// The lab's layout: u32 bin IDs with a row pitch wider than the row, saturating counts.
void raw_u32_stride() {
    const size_t width = 10, height = 6, pitch = 16;
    std::vector<uint32_t> data(pitch * height, 3); // the padding holds 3s that must not be counted
    std::vector<uint64_t> expected(8, 0);
    for (size_t y = 0; y < height; ++y)
        for (size_t x = 0; x < width; ++x) ++expected[data[y * pitch + x] = uint32_t((x * 7 + y) % 8)];
    for (auto &e : expected) e = std::min<uint64_t>(e, 6);
    FILE *f = std::fopen(tmp("ids.u32").c_str(), "wb");
    std::fwrite(data.data(), 4, data.size(), f);
    std::fclose(f);
    proc::Result r = expect_ok({"histogram", "--raw", "10x6", "--dtype", "u32", "--stride", "64", "--bins",
                                "8", "--saturate", "6", "--csv", tmp("ids.u32")});
    CHECK(csv_counts(r.out, 0) == expected);
}

void raw_f32_nan() {
    const float values[] = {0.1f, 0.3f, 0.55f, 0.99f, std::nanf(""), -0.5f, 1.0f, 0.26f};
    FILE *f = std::fopen(tmp("x.f32").c_str(), "wb");
    std::fwrite(values, sizeof values, 1, f);
    std::fclose(f);
    proc::Result r =
        expect_ok({"histogram", "--raw", "4x2", "--dtype", "f32", "--bins", "4", "--json", tmp("x.f32")});
    CHECK(json_counts(r.out, "count") == std::vector<uint64_t>({1, 2, 1, 1}));
    CHECK_EQ(json_uncounted(r.out, "count"), uint64_t(3)); // NaN, below the range, and 1.0 == upper
}

} // namespace

void section_histogram() {
    gray_csv();
    rgb_json_and_plot();
    pgm16_default_range();
    raw_u32_stride();
    raw_f32_nan();
}

} // namespace cli
