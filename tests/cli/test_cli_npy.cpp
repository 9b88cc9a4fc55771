// NumPy .npy files through the gpk command, with files built by hand (npy_files.hpp): every supported
// dtype in both byte orders and format versions 1.0, 2.0 and 3.0, Fortran order, channels, unaligned
// data; convolve and heat round trips with the bytes gpk writes checked; bad files refused with one line;
// and a 1 GiB array counted under a data limit of a quarter of its size.
#include "cli_test.hpp"
#include "images.hpp"
#include "npy_files.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <type_traits>

namespace cli {

namespace {

void write_npy(const std::string &name, const std::string &descr, bool fortran, const std::string &shape,
               const std::string &data, int version = 1, size_t align = 64) {
    images::write_text(tmp(name), npyfile::file(npyfile::dict(descr, fortran, shape), data, version, align));
}

// The samples of `values` (each below 16) as one type, in one byte order.
std::string samples_as(const std::string &descr, const std::vector<unsigned> &values) {
    bool big = descr[0] == '>';
    std::string type = descr.substr(1);
    auto convert = [&](auto zero) {
        using T = decltype(zero);
        std::vector<T> v;
        for (unsigned x : values) v.push_back(std::is_floating_point<T>::value ? T(x + 0.5) : T(x));
        return npyfile::bytes(v, big);
    };
    if (type == "u1") return convert(uint8_t());
    if (type == "u2") return convert(uint16_t());
    if (type == "u4") return convert(uint32_t());
    if (type == "i4") return convert(int32_t());
    if (type == "f4") return convert(float());
    return convert(double());
}

std::vector<uint64_t> counts_of(const std::vector<unsigned> &values, size_t bins) {
    std::vector<uint64_t> counts(bins, 0);
    for (unsigned v : values) ++counts[v];
    return counts;
}

// Every dtype, byte order and version: a 6 x 10 array of values below 16 (floats at the bins' centres).
void histogram_dtypes() {
    std::vector<unsigned> values = random_values(60, 16, 3);
    for (const char *type : {"u1", "u2", "u4", "i4", "f4", "f8"})
        for (char order : {'<', '>', '|'})
            for (int version : {1, 2, 3}) {
                if ((order == '|') != (type[1] == '1')) continue;
                std::string descr = order + std::string(type);
                write_npy("d.npy", descr, false, "(6, 10)", samples_as(descr, values), version);
                proc::Result r =
                    expect_ok({"histogram", "--json", "--bins", "16", "--range", "0:16", tmp("d.npy")});
                CHECK_MSG(json_counts(r.out, "count") == counts_of(values, 16),
                          descr + " version " + std::to_string(version) + ": " + r.out);
                CHECK(contains(r.out, "\"width\": 10") && contains(r.out, "\"height\": 6"));
            }
    // A scalar, a 1-D array, and a 3-D array whose last axis is not channels (5 > 4).
    write_npy("s.npy", "<f8", false, "()", samples_as("<f8", {3}));
    CHECK(json_counts(expect_ok({"histogram", "--json", "--bins", "4", "--range", "0:4", tmp("s.npy")}).out,
                      "count") == std::vector<uint64_t>({0, 0, 0, 1}));
    std::vector<unsigned> sixty(values.begin(), values.begin() + 60);
    for (const char *shape : {"(60,)", "(2, 6, 5)"}) {
        write_npy("v.npy", "<u2", false, shape, samples_as("<u2", sixty));
        proc::Result r = expect_ok({"histogram", "--json", "--bins", "16", "--range", "0:16", tmp("v.npy")});
        CHECK_MSG(json_counts(r.out, "count") == counts_of(sixty, 16), std::string(shape) + ": " + r.out);
    }
}

// Channels as the last axis, stored in C order and in Fortran order (planes), in place and in pieces.
void histogram_channels() {
    const size_t h = 4, w = 5, channels = 3;
    std::vector<unsigned> c_order(h * w * channels), fortran(h * w * channels);
    std::vector<std::vector<uint64_t>> expected(channels, std::vector<uint64_t>(8, 0));
    for (size_t i = 0; i < h; ++i)
        for (size_t j = 0; j < w; ++j)
            for (size_t c = 0; c < channels; ++c) {
                unsigned v = unsigned((i * 5 + j * 3 + c * 3) % 8);
                c_order[(i * w + j) * channels + c] = v;
                fortran[i + h * j + h * w * c] = v;
                ++expected[c][v];
            }
    for (const char *descr : {"|u1", ">u2", "<f8"})
        for (bool f : {false, true}) {
            write_npy("ch.npy", descr, f, "(4, 5, 3)", samples_as(descr, f ? fortran : c_order));
            proc::Result r =
                expect_ok({"histogram", "--json", "--bins", "8", "--range", "0:8", tmp("ch.npy")});
            for (size_t c = 0; c < channels; ++c)
                CHECK_MSG(json_counts(r.out, "c" + std::to_string(c)) == expected[c],
                          std::string(descr) + (f ? " Fortran: " : " C: ") + r.out);
        }
    // Saturation applies to the exact counts, also when an array is counted in pieces.
    write_npy("ch.npy", ">u2", true, "(4, 5, 3)", samples_as(">u2", fortran));
    proc::Result r =
        expect_ok({"histogram", "--json", "--bins", "8", "--range", "0:8", "--saturate", "2", tmp("ch.npy")});
    for (auto &count : expected[1]) count = std::min<uint64_t>(count, 2);
    CHECK_MSG(json_counts(r.out, "c1") == expected[1], r.out);
}

// Data that does not start at a multiple of the sample size (a header without padding): counted from an
// aligned copy.
void histogram_unaligned() {
    std::vector<unsigned> values = random_values(30, 16, 9);
    for (const char *descr : {"<u4", "<f8", ">i4"}) {
        std::string header = npyfile::dict(descr, false, "(30,)");
        write_npy("u.npy", descr, false, "(30,)", samples_as(descr, values), 1, 1);
        CHECK_MSG((10 + header.size() + 1) % 4 != 0, "the test needs an unaligned header");
        proc::Result r = expect_ok({"histogram", "--json", "--bins", "16", "--range", "0:16", tmp("u.npy")});
        CHECK_MSG(json_counts(r.out, "count") == counts_of(values, 16), std::string(descr) + ": " + r.out);
    }
}

// The reference correlation of an f64 image with a 3x3 filter, clamped borders.
std::vector<double> correlate3(const std::vector<double> &img, size_t h, size_t w, const double taps[9]) {
    std::vector<double> out(h * w, 0);
    for (size_t i = 0; i < h; ++i)
        for (size_t j = 0; j < w; ++j)
            for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx) {
                    size_t y = size_t(std::clamp<long>(long(i) + dy, 0, long(h) - 1));
                    size_t x = size_t(std::clamp<long>(long(j) + dx, 0, long(w) - 1));
                    out[i * w + j] += taps[(dy + 1) * 3 + dx + 1] * img[y * w + x];
                }
    return out;
}

void convolve_npy() {
    // u8 with channels, C and Fortran order: identity gives the samples back in C order, and the file
    // gpk writes is NumPy's version 1.0 layout.
    std::vector<unsigned> values = random_values(4 * 5 * 3, 256, 4), fortran(values.size());
    for (size_t i = 0; i < 4; ++i)
        for (size_t j = 0; j < 5; ++j)
            for (size_t c = 0; c < 3; ++c) fortran[i + 4 * j + 20 * c] = values[(i * 5 + j) * 3 + c];
    std::vector<uint8_t> bytes(values.begin(), values.end());
    for (bool f : {false, true}) {
        write_npy("in.npy", "|u1", f, "(4, 5, 3)", samples_as("|u1", f ? fortran : values));
        expect_ok({"convolve", "-f", "identity", tmp("in.npy"), tmp("out.npy")});
        std::string file = images::read_text(tmp("out.npy"));
        npyfile::Parsed out = npyfile::parse(file);
        CHECK_MSG(out.ok && out.dict == npyfile::dict("|u1", false, "(4, 5, 3)"), out.dict);
        CHECK(out.data_offset % 64 == 0 && out.data == npyfile::bytes(bytes, false));
    }
    // Big-endian u16 of shape (3, 4) comes back in host order; (H, W, 1) keeps its channel axis.
    std::vector<unsigned> wide = random_values(12, 65536, 5);
    write_npy("in.npy", ">u2", false, "(3, 4)", samples_as(">u2", wide));
    expect_ok({"convolve", "-f", "identity", tmp("in.npy"), tmp("out.npy")});
    npyfile::Parsed out = npyfile::parse(images::read_text(tmp("out.npy")));
    CHECK_MSG(out.dict == npyfile::dict(npyfile::host_descr('u', 2), false, "(3, 4)"), out.dict);
    CHECK(out.data == samples_as(npyfile::host_big_endian() ? ">u2" : "<u2", wide));
    write_npy("in.npy", "<f4", false, "(3, 4, 1)", samples_as("<f4", wide));
    expect_ok({"convolve", "-f", "identity", tmp("in.npy"), tmp("out.npy")});
    CHECK(npyfile::parse(images::read_text(tmp("out.npy"))).dict ==
          npyfile::dict(npyfile::host_descr('f', 4), false, "(3, 4, 1)"));

    // A Laplacian on f64 against the reference (integer values: every sum exact).
    const size_t h = 7, w = 9;
    std::vector<unsigned> ints = random_values(h * w, 1000, 6);
    std::vector<double> img(ints.begin(), ints.end());
    write_npy("in.npy", ">f8", false, "(7, 9)", npyfile::bytes(img, true));
    expect_ok({"convolve", "-f", "lp3", tmp("in.npy"), tmp("out.npy")});
    const double lp3[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
    out = npyfile::parse(images::read_text(tmp("out.npy")));
    CHECK_MSG(out.dict == npyfile::dict(npyfile::host_descr('f', 8), false, "(7, 9)"), out.dict);
    CHECK(out.data == npyfile::bytes(correlate3(img, h, w, lp3), npyfile::host_big_endian()));

    // u8 to f32 (--out-type), and PNG to .npy to PNG.
    write_npy("in.npy", "|u1", false, "(4, 5, 3)", samples_as("|u1", values));
    expect_ok({"convolve", "-f", "identity", "--out-type", "f32", tmp("in.npy"), tmp("out.npy")});
    std::vector<float> as_float(values.begin(), values.end());
    out = npyfile::parse(images::read_text(tmp("out.npy")));
    CHECK(out.dict == npyfile::dict(npyfile::host_descr('f', 4), false, "(4, 5, 3)"));
    CHECK(out.data == npyfile::bytes(as_float, npyfile::host_big_endian()));
    images::PngFile png;
    png.width = 5, png.height = 4, png.color_type = PNG_COLOR_TYPE_RGB, png.samples = values;
    images::write_png(tmp("in.png"), png);
    expect_ok({"convolve", "-f", "identity", tmp("in.png"), tmp("png.npy")});
    CHECK(npyfile::parse(images::read_text(tmp("png.npy"))).data == npyfile::bytes(bytes, false));
    expect_ok({"convolve", "-f", "identity", tmp("png.npy"), tmp("back.png")});
    images::PngRead back = images::read_png(tmp("back.png"));
    CHECK(back.ok && back.width == 5 && back.height == 4 && back.samples == values);
    png.color_type = PNG_COLOR_TYPE_GRAY, png.samples.resize(20);
    images::write_png(tmp("gray.png"), png);
    expect_ok({"convolve", "-f", "identity", tmp("gray.png"), tmp("gray.npy")});
    CHECK(npyfile::parse(images::read_text(tmp("gray.npy"))).dict == npyfile::dict("|u1", false, "(4, 5)"));
    expect_failure({"convolve", "-f", "identity", tmp("out.npy"), tmp("float.png")}, 2,
                   {"f32 and f64", ".npy"});
}

std::string grid_shape(size_t rows, size_t cols) {
    return "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
}

std::vector<std::string> heat_args(const std::string &t, const std::string &c, const std::string &save,
                                   const std::string &iterations) {
    return {"heat", "-n", "12", "-m", "16", "-t", t, "-c", c, "-i", iterations, "-e", "0", "--save", save};
}

void heat_npy() {
    const size_t rows = 12, cols = 16;
    std::vector<unsigned> t = random_values(rows * cols, 200, 7);
    std::vector<double> temperatures(t.begin(), t.end()), conductivity(rows * cols), fortran(rows * cols);
    for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < cols; ++j) {
            // Rows 0 and N-1 keep their values (conductivity 1), so a run can be continued exactly.
            conductivity[i * cols + j] = i == 0 || i + 1 == rows ? 1.0 : 0.25 + 0.05 * double(j % 5);
            fortran[i + rows * j] = temperatures[i * cols + j];
        }
    std::string shape = grid_shape(rows, cols);
    write_npy("c.npy", "<f8", false, shape, npyfile::bytes(conductivity, false));
    write_npy("t.npy", ">f8", false, shape, npyfile::bytes(temperatures, true));
    expect_ok(heat_args(tmp("t.npy"), tmp("c.npy"), tmp("a.npy"), "40"));
    npyfile::Parsed a = npyfile::parse(images::read_text(tmp("a.npy")));
    CHECK_MSG(a.ok && a.dict == npyfile::dict(npyfile::host_descr('f', 8), false, shape), a.dict);
    CHECK_EQ(a.data.size(), rows * cols * 8);
    // The same values as f4, u1, or f8 in Fortran order give the same run, bit for bit.
    write_npy("t.npy", "<f4", false, shape, npyfile::bytes(std::vector<float>(t.begin(), t.end()), false));
    expect_ok(heat_args(tmp("t.npy"), tmp("c.npy"), tmp("b.npy"), "40"));
    CHECK(images::read_text(tmp("b.npy")) == images::read_text(tmp("a.npy")));
    write_npy("t.npy", "|u1", false, shape, npyfile::bytes(std::vector<uint8_t>(t.begin(), t.end()), false));
    expect_ok(heat_args(tmp("t.npy"), tmp("c.npy"), tmp("b.npy"), "40"));
    CHECK(images::read_text(tmp("b.npy")) == images::read_text(tmp("a.npy")));
    write_npy("t.npy", "<f8", true, shape, npyfile::bytes(fortran, false));
    expect_ok(heat_args(tmp("t.npy"), tmp("c.npy"), tmp("b.npy"), "40"));
    CHECK(images::read_text(tmp("b.npy")) == images::read_text(tmp("a.npy")));
    // 20 iterations, saved, then 20 more from the saved grid: the 40-iteration grid.
    expect_ok(heat_args(tmp("t.npy"), tmp("c.npy"), tmp("half.npy"), "20"));
    CHECK(images::read_text(tmp("half.npy")) != images::read_text(tmp("a.npy")));
    expect_ok(heat_args(tmp("half.npy"), tmp("c.npy"), tmp("b.npy"), "20"));
    CHECK(images::read_text(tmp("b.npy")) == images::read_text(tmp("a.npy")));
    // -L and -H map image values only; an .npy holds the temperatures themselves.
    std::vector<std::string> args = heat_args(tmp("t.npy"), tmp("c.npy"), tmp("b.npy"), "40");
    args.insert(args.end(), {"-L", "0", "-H", "1"});
    expect_ok(args);
    CHECK(images::read_text(tmp("b.npy")) == images::read_text(tmp("a.npy")));
}

} // namespace

void section_npy() {
    histogram_dtypes();
    histogram_channels();
    histogram_unaligned();
    convolve_npy();
    heat_npy();
}

// ---------------------------------------------------------------------------------------------------

namespace {

void expect_bad_file(const std::string &bytes, const std::vector<std::string> &parts) {
    images::write_text(tmp("bad.npy"), bytes);
    std::vector<std::string> all = parts;
    all.push_back(tmp("bad.npy") + ": ");
    expect_failure({"histogram", tmp("bad.npy")}, 1, all);
}

void expect_bad_header(const std::string &dict, const std::vector<std::string> &parts) {
    expect_bad_file(npyfile::file(dict, std::string(8, '\0')), parts);
}

void bad_headers() {
    std::string good = npyfile::file(npyfile::dict("<u4", false, "(2,)"), std::string(8, '\0'));
    expect_bad_file(good.substr(0, 6), {"truncated .npy header"});
    expect_bad_file(good.substr(0, 9), {"truncated .npy header"});
    expect_bad_file(good.substr(0, 40), {"truncated .npy header", "bytes long"});
    std::string v4 = good, v11 = good;
    v4[6] = 4, v11[7] = 1;
    expect_bad_file(v4, {"unsupported .npy format version 4.0"});
    expect_bad_file(v11, {"unsupported .npy format version 1.1"});
    expect_bad_file(good.substr(0, good.size() - 1),
                    {"truncated .npy data", "needs 8 bytes, the file has 7"});
    expect_bad_file(good + "xyz", {"3 unexpected bytes after the .npy array data"});
    expect_bad_file("\x93NUMPX", {"not a PNG, PGM or .npy file"});

    expect_bad_header("{'descr': '<u4', 'fortran_order': False, }", {"bad .npy header", "no 'shape' key"});
    expect_bad_header("{'descr': '<u4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
                      {"unexpected key 'x'"});
    expect_bad_header("{'descr': '<u4', 'descr': '<u4', 'fortran_order': False, 'shape': (2,)}",
                      {"'descr' appears twice"});
    expect_bad_header("{'descr': '<u4', 'fortran_order': False, 'shape': (2)}", {"not a tuple"});
    expect_bad_header("{'descr': '<u4', 'fortran_order': 0, 'shape': (2,)}", {"True or False"});
    expect_bad_header("{'descr': '<u4', 'fortran_order': False, 'shape': (2, -1)}", {"whole numbers"});
    expect_bad_header("{'descr': '<u4", {"bad .npy header", "not closed"});
    expect_bad_header("{'descr': '<u4', 'fortran_order': False, 'shape': (2,)} x",
                      {"after the header's closing"});
    expect_bad_header("[1, 2]", {"expected '{'"});
    expect_bad_header("{'descr': '<u4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
                      {"too large"});
    expect_bad_header("{'descr': '<u4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}",
                      {"too large"});
}

void bad_dtypes() {
    const std::pair<const char *, const char *> cases[] = {
        {"<i8", "'<i8' (int64)"},   {"<c16", "complex128"}, {"|b1", "bool"}, {"|O", "Python objects"},
        {"<U4", "unicode strings"}, {"<f2", "float16"},     {"|i1", "int8"}, {"<u8", "uint64"}};
    for (const auto &c : cases)
        expect_bad_header(npyfile::dict(c.first, false, "(2,)"), {"unsupported dtype", c.second, "float64"});
    expect_bad_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", {"structured"});
    write_npy("empty.npy", "<f8", false, "(0, 5)", "");
    expect_failure({"histogram", tmp("empty.npy")}, 1, {tmp("empty.npy"), "(0, 5) has no samples"});
}

void bad_for_commands() {
    write_npy("five.npy", "|u1", false, "(2, 3, 5)", std::string(30, '\1'));
    expect_failure({"convolve", "-f", "lp3", tmp("five.npy"), tmp("out.npy")}, 1,
                   {tmp("five.npy"), "(2, 3, 5)", "(H, W) or (H, W, C)"});
    write_npy("flat.npy", "|u1", false, "(6,)", std::string(6, '\1'));
    expect_failure({"convolve", "-f", "lp3", tmp("flat.npy"), tmp("out.npy")}, 1, {"(6,)"});
    write_npy("u4.npy", "<u4", false, "(2, 3)", std::string(24, '\1'));
    expect_failure({"convolve", "-f", "lp3", tmp("u4.npy"), tmp("out.npy")}, 1, {"convolve reads", "'<u4'"});
    CHECK(!std::filesystem::exists(tmp("out.npy")));

    std::vector<double> t(20, 1.0), c(20, 0.5);
    write_npy("t.npy", "<f8", false, "(4, 5)", npyfile::bytes(t, false));
    expect_failure({"heat", "-n", "5", "-m", "4", "-t", tmp("t.npy")}, 1,
                   {tmp("t.npy"), "(4, 5)", "-n 5 -m 4 need (5, 4)"});
    t[7] = std::nan("");
    write_npy("t.npy", "<f8", false, "(4, 5)", npyfile::bytes(t, false));
    expect_failure({"heat", "-n", "4", "-m", "5", "-t", tmp("t.npy")}, 1,
                   {"[1, 2] is nan", "temperatures must be finite"});
    c[3] = 1.5;
    write_npy("c.npy", "<f8", false, "(4, 5)", npyfile::bytes(c, false));
    expect_failure({"heat", "-n", "4", "-m", "5", "-c", tmp("c.npy")}, 1,
                   {"[0, 3] is 1.5", "conductivities must be in [0, 1]"});
    std::vector<int32_t> negative(20, 0);
    negative[19] = -1;
    write_npy("c.npy", "<i4", false, "(4, 5)", npyfile::bytes(negative, false));
    expect_failure({"heat", "-n", "4", "-m", "5", "-c", tmp("c.npy")}, 1, {"[3, 4] is -1"});
    expect_failure({"heat", "-n", "4", "-m", "5", "--save", tmp("final.txt")}, 2, {"--save", ".npy"});
    expect_failure({"heat", "-n", "4", "-m", "5", "--save", tmp("no/dir/final.npy")}, 1,
                   {"final.npy", "cannot write"});
}

} // namespace

void section_npy_bad() {
    bad_headers();
    bad_dtypes();
    bad_for_commands();
}

// ---------------------------------------------------------------------------------------------------

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GPK_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GPK_TEST_SANITIZED 1
#endif

// 2^28 u32 samples (a 1 GiB sparse file: values 1..1000, zeros, and a 7 at the end) counted with the
// program's data (heap and private writable memory) limited to 256 MiB: the file is used in place, in
// either byte order; a --raw read of the same samples too.
void section_npy_large() {
#ifdef GPK_TEST_SANITIZED
    skip_section("sanitizer runtimes reserve more than the data limit");
#endif
    const size_t n = size_t(1) << 28;
    std::vector<uint32_t> head(1000);
    for (uint32_t i = 0; i < 1000; ++i) head[i] = i + 1;
    proc::Options limited;
    limited.data_limit = size_t(256) << 20;
    for (bool big : {false, true}) {
        std::string header = npyfile::file(npyfile::dict(big ? ">u4" : "<u4", false, "(268435456,)"), "");
        for (bool raw : {false, true}) {
            if (raw && big) continue;
            std::string path = tmp(raw ? "large.u32" : "large.npy");
            FILE *f = std::fopen(path.c_str(), "wb");
            std::string start = (raw ? "" : header) + npyfile::bytes(head, big);
            std::string end = npyfile::bytes(std::vector<uint32_t>{7}, big);
            bool written = f && std::fwrite(start.data(), 1, start.size(), f) == start.size() &&
                           std::fseek(f, long((raw ? 0 : header.size()) + 4 * (n - 1)), SEEK_SET) == 0 &&
                           std::fwrite(end.data(), 1, 4, f) == 4;
            if (f) std::fclose(f);
            CHECK_MSG(written, path);
            std::vector<std::string> args = {"histogram", "--backend", "cpu", "--bins",
                                             "1024",      "--csv",     path};
            if (raw) args.insert(args.end() - 1, {"--raw", "268435456x1", "--dtype", "u32"});
            std::vector<uint64_t> counts = csv_counts(expect_ok(args, limited).out, 0);
            CHECK_MSG(counts.size() == 1024 && counts[0] == n - 1001 && counts[7] == 2 && counts[8] == 1 &&
                          counts[1000] == 1 && counts[1001] == 0,
                      std::string(big ? "big" : "little") + (raw ? " raw" : " npy"));
            std::remove(path.c_str());
        }
    }
}

} // namespace cli
