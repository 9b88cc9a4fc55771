// gpk_convolve on the CPU backend against the naive reference of tests/common/convolve_reference.hpp
// (written from README's "What gpk computes" and NOTES.md: per pixel and per tap, in __int128 or long
// double).
#include "convolve_reference.hpp"
#include "hooks.hpp"
#include "cpu_isa.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace convref;

std::mt19937_64 rng(20240611);

double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
}
long long uniform_int(long long lo, long long hi) {
    return std::uniform_int_distribution<long long>(lo, hi)(rng);
}

struct Context {
    gpk_context *ctx = nullptr;
    explicit Context(unsigned threads) {
        gpk_context_options o;
        gpk_context_options_init(&o);
        o.backend = GPK_BACKEND_CPU;
        o.threads = threads;
        if (gpk_context_create(&ctx, &o) != GPK_OK) check::skip("no CPU context");
    }
    ~Context() { gpk_context_destroy(ctx); }
};

gpk_status run(gpk_context *ctx, const Case &k, const gpk_filter *f, const Image &in, Image &out) {
    const gpk_convolve_params p = convolve_params(f, k.border, k.norm, k.acc);
    return gpk_convolve(ctx, &p, &in.desc, in.bytes.data(), &out.desc, out.bytes.data());
}

// Runs one case against the reference; returns false (after recording a failure) when it differs.
bool check_case(gpk_context *ctx, const Case &k, const gpk_filter *f, const std::string &name) {
    const Taps t = taps_of(f);
    const Image in = random_image(rng, k.in_type, k.width, k.height, k.channels, (k.width % 3) * 8);
    Image out(k.out_type, k.width, k.height, k.channels, (k.height % 4 + 1) * 8);
    const std::string what = describe(k, name);
    if (k.norm == GPK_NORMALIZE_SUM && t.sum == 0) {
        CHECK_STATUS(ctx, run(ctx, k, f, in, out), GPK_ERR_INVALID_ARGUMENT);
        CHECK_MSG(
            std::all_of(out.bytes.begin(), out.bytes.end(), [](unsigned char b) { return b == kGarbage; }),
            what + ": rejected call wrote its output");
        return true;
    }
    gpk_status s = run(ctx, k, f, in, out);
    CHECK_MSG(s == GPK_OK, what + ": " + gpk_context_last_error(ctx));
    if (s != GPK_OK) return false;
    return check_output(k, t, in, out, what);
}

gpk_filter *named(const char *name) {
    gpk_filter *f = nullptr;
    if (gpk_filter_create_named(&f, name) != GPK_OK) check::skip(name);
    return f;
}

gpk_filter *random_2d(int kh, int kw, bool integer, double lo, double hi) {
    std::vector<double> t(static_cast<size_t>(kh * kw));
    for (double &v : t) v = integer ? double(uniform_int((long long)lo, (long long)hi)) : uniform(lo, hi);
    gpk_filter *f = nullptr;
    gpk_filter_create_2d(&f, size_t(kh), size_t(kw), t.data());
    return f;
}

gpk_filter *random_separable(int row_len, int col_len, bool integer, double lo, double hi) {
    std::vector<double> r(static_cast<size_t>(row_len)), c(static_cast<size_t>(col_len));
    for (double &v : r) v = integer ? double(uniform_int((long long)lo, (long long)hi)) : uniform(lo, hi);
    for (double &v : c) v = integer ? double(uniform_int((long long)lo, (long long)hi)) : uniform(lo, hi);
    gpk_filter *f = nullptr;
    gpk_filter_create_separable(&f, r.size(), r.data(), c.size(), c.data());
    return f;
}

struct NamedFilter {
    std::string name;
    gpk_filter *f;
};

struct FilterSet {
    std::vector<NamedFilter> two_d, separable;
    FilterSet() {
        for (const char *n : {"identity", "lp3", "lp5", "log9", "smooth5"}) two_d.push_back({n, named(n)});
        two_d.push_back({"int 3x5", random_2d(3, 5, true, -5, 5)});
        two_d.push_back({"int 7x3", random_2d(7, 3, true, -3, 9)});
        two_d.push_back({"float 5x5", random_2d(5, 5, false, -1, 1)});
        two_d.push_back({"float 1x7", random_2d(1, 7, false, 0, 1)});
        two_d.push_back({"float 9x11", random_2d(9, 11, false, -0.5, 1)});
        for (const char *n : {"box:3", "box:9", "gauss:1.5", "gauss:0.7"}) separable.push_back({n, named(n)});
        separable.push_back({"int 5|3", random_separable(5, 3, true, -4, 6)});
        separable.push_back({"int 13|1", random_separable(13, 1, true, 0, 9)});
        separable.push_back({"float 9|5", random_separable(9, 5, false, -1, 1)});
        separable.push_back({"float 1|7", random_separable(1, 7, false, 0, 1)});
    }
    ~FilterSet() {
        for (auto &f : two_d) gpk_filter_destroy(f.f);
        for (auto &f : separable) gpk_filter_destroy(f.f);
    }
};

// Calls body(k, turn) for every dtype pair x channels x border x normalisation, turn counting from 0; the
// accumulation precisions and the sizes (width, height) are taken in turn. Returns the number of turns.
template <size_t kSizes, class Body>
size_t for_each_combination(const size_t (&sizes)[kSizes][2], Body &&body) {
    const gpk_accumulate accs[] = {GPK_ACCUMULATE_F32, GPK_ACCUMULATE_F64, GPK_ACCUMULATE_AUTO};
    size_t turn = 0;
    for (gpk_dtype in : kTypes)
        for (gpk_dtype out : kTypes)
            for (unsigned ch = 1; ch <= 4; ++ch)
                for (gpk_border b : kBorders)
                    for (gpk_normalize nm : kNorms) {
                        const size_t *size = sizes[turn % kSizes];
                        body(Case{in, out, ch, b, nm, accs[turn % 3], size[0], size[1]}, turn);
                        ++turn;
                    }
    return turn;
}

// Every dtype pair x channels x border x normalisation, with a 2D and a separable filter each (the filters,
// sizes and accumulation precisions taken in turn).
void test_matrix(gpk_context *ctx) {
    const FilterSet filters;
    const size_t sizes[][2] = {{1, 1},   {1, 9},  {9, 1},  {7, 5},  {13, 11},
                               {37, 23}, {70, 3}, {3, 70}, {31, 17}};
    size_t failed = 0;
    const size_t turns = for_each_combination(sizes, [&](const Case &k, size_t turn) {
        const auto &f2 = filters.two_d[turn % filters.two_d.size()];
        const auto &fs = filters.separable[turn % filters.separable.size()];
        failed += !check_case(ctx, k, f2.f, f2.name);
        failed += !check_case(ctx, k, fs.f, fs.name);
    });
    std::printf("matrix: %zu cases, %zu failed\n", 2 * turns, failed);
}

// Filters far larger than the image: 63x63 and 129-tap separable filters on 1x1, 1xN, Nx1 and small images.
void test_large_filters(gpk_context *ctx) {
    gpk_filter *filters[] = {random_2d(63, 63, true, -3, 3),
                             random_2d(63, 61, false, 0, 1),
                             random_separable(129, 129, false, 0, 1),
                             random_separable(129, 3, true, -2, 2),
                             named("gauss:21.5"),
                             named("box:129")};
    const char *names[] = {"int 63x63", "float 63x61", "float 129|129", "int 129|3", "gauss:21.5", "box:129"};
    const size_t sizes[][2] = {{1, 1}, {1, 6}, {5, 1}, {2, 2}, {17, 13}, {23, 19}};
    const gpk_dtype pairs[][2] = {
        {GPK_U8, GPK_U8}, {GPK_U16, GPK_F32}, {GPK_F32, GPK_F64}, {GPK_F64, GPK_U16}};
    size_t turn = 0;
    for (size_t fi = 0; fi < 6; ++fi)
        for (const auto &size : sizes)
            for (gpk_border b : kBorders)
                for (gpk_normalize nm : kNorms) {
                    const auto &pair = pairs[turn % 4];
                    Case k{pair[0], pair[1], unsigned(turn % 4 + 1),
                           b,       nm,      turn % 2 ? GPK_ACCUMULATE_F64 : GPK_ACCUMULATE_F32,
                           size[0], size[1]};
                    check_case(ctx, k, filters[fi], names[fi]);
                    ++turn;
                }
    for (gpk_filter *f : filters) gpk_filter_destroy(f);
}

// Integer taps large enough to need each accumulator of the exact path, up to the 2^54 limit, and beyond it
// (the float path).
void test_exact_limits(gpk_context *ctx) {
    const double big = 0x1p37 + 0x1p36; // 1x1 tap: u16 bound in [2^53, 2^54)
    std::vector<double> taps_i32 = {1000, -999, 1000, 0, 1000, -1000, 999, 1000, -1000};
    std::vector<double> taps_f64 = {0x1p30, -0x1p30 + 7, 5, 0x1p29, 3, -0x1p30, 1, 0, 0x1p28};
    std::vector<double> taps_over = {0x1p40, 3, -0x1p40 + 5};
    gpk_filter *filters[4] = {};
    gpk_filter_create_2d(&filters[0], 3, 3, taps_i32.data());
    gpk_filter_create_2d(&filters[1], 3, 3, taps_f64.data());
    gpk_filter_create_2d(&filters[2], 1, 1, &big);
    gpk_filter_create_2d(&filters[3], 1, 3, taps_over.data());
    const char *names[] = {"int32-sized taps", "double-sized taps", "int64-sized tap", "over 2^54"};
    for (int fi = 0; fi < 4; ++fi)
        for (gpk_dtype out : kTypes)
            for (gpk_border b : kBorders)
                for (gpk_normalize nm : kNorms) {
                    Case k{GPK_U16, out, unsigned(fi + 1), b, nm, GPK_ACCUMULATE_F64, 19, 7};
                    check_case(ctx, k, filters[fi], names[fi]);
                }
    for (gpk_filter *f : filters) gpk_filter_destroy(f);
}

// The Laplacian exercise, checked by hand on one bright pixel: lp3, zero border, minmax, u8 -> u8.
void test_laplacian_exercise(gpk_context *ctx) {
    gpk_filter *lp3 = named("lp3");
    Image in(GPK_U8, 5, 5, 1, 3), out(GPK_U8, 5, 5, 1, 3);
    for (size_t y = 0; y < 5; ++y)
        for (size_t x = 0; x < 5; ++x) in.set(x, y, 0, x == 2 && y == 2 ? 100 : 0);
    Case k{GPK_U8, GPK_U8, 1, GPK_BORDER_ZERO, GPK_NORMALIZE_MINMAX, GPK_ACCUMULATE_AUTO, 5, 5};
    CHECK_OK(ctx, run(ctx, k, lp3, in, out));
    // Filtered: -400 at the centre, 100 at its 4 neighbours, 0 elsewhere: (v + 400) * 255 / 500.
    for (size_t y = 0; y < 5; ++y)
        for (size_t x = 0; x < 5; ++x) {
            int d = std::abs(int(x) - 2) + std::abs(int(y) - 2);
            CHECK_EQ((int)out.get(x, y, 0), d == 0 ? 0 : d == 1 ? 255 : 204);
        }
    // And on random images of awkward sizes against the reference.
    for (size_t size : {1, 2, 3, 64, 101}) {
        Case r{GPK_U8, GPK_U8, 1, GPK_BORDER_ZERO, GPK_NORMALIZE_MINMAX, GPK_ACCUMULATE_AUTO, size, size + 2};
        check_case(ctx, r, lp3, "lp3 exercise");
    }
    gpk_filter_destroy(lp3);
}

// The smoothing exercise: smooth5 with sum normalisation, checked by hand on a constant image.
void test_smoothing_exercise(gpk_context *ctx) {
    gpk_filter *smooth = named("smooth5");
    Image in(GPK_U8, 6, 4, 1, 0), out(GPK_U8, 6, 4, 1, 0);
    for (size_t y = 0; y < 4; ++y)
        for (size_t x = 0; x < 6; ++x) in.set(x, y, 0, 7);
    Case k{GPK_U8, GPK_U8, 1, GPK_BORDER_CLAMP, GPK_NORMALIZE_SUM, GPK_ACCUMULATE_AUTO, 6, 4};
    CHECK_OK(ctx, run(ctx, k, smooth, in, out));
    for (size_t y = 0; y < 4; ++y)
        for (size_t x = 0; x < 6; ++x) CHECK_EQ((int)out.get(x, y, 0), 7);
    // Zero border, corner: the taps inside are 3 2 1 / 2 2 1 / 1 1 1 (14): 14 * 7 / 35 = 2.8 -> 3.
    k.border = GPK_BORDER_ZERO;
    CHECK_OK(ctx, run(ctx, k, smooth, in, out));
    CHECK_EQ((int)out.get(0, 0, 0), 3);
    for (size_t size : {1, 5, 33}) {
        Case r{GPK_U8, GPK_U8, 3, GPK_BORDER_REFLECT, GPK_NORMALIZE_SUM, GPK_ACCUMULATE_AUTO, size + 4, size};
        check_case(ctx, r, smooth, "smooth5 exercise");
    }
    gpk_filter_destroy(smooth);
}

// Threads 1, 2 and 3 give bit-identical results on every path, with whole rows and with column strips.
void test_thread_independence() {
    Context one(1), two(2), three(3);
    const FilterSet filters;
    const Case cases[] = {
        {GPK_U8, GPK_U8, 1, GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_AUTO, 301, 257},
        {GPK_F32, GPK_F32, 3, GPK_BORDER_MIRROR, GPK_NORMALIZE_SUM, GPK_ACCUMULATE_F32, 130, 211},
        {GPK_F64, GPK_U16, 2, GPK_BORDER_WRAP, GPK_NORMALIZE_MINMAX, GPK_ACCUMULATE_F64, 97, 199},
        {GPK_U16, GPK_F32, 4, GPK_BORDER_ZERO, GPK_NORMALIZE_MINMAX, GPK_ACCUMULATE_AUTO, 64, 150},
    };
    hooks::Hook hook("GPK_TEST_CONV_CPU_STRIP", nullptr);
    for (const char *strip : {"", "100"}) {
        if (*strip && hooks::skip_part("threads on column strips (GPK_TEST_CONV_CPU_STRIP)")) continue;
        hook.set(strip); // empty: unset
        for (const Case &k : cases)
            for (const auto *set : {&filters.two_d, &filters.separable})
                for (const NamedFilter &f : *set) {
                    if (k.norm == GPK_NORMALIZE_SUM && taps_of(f.f).sum == 0) continue;
                    const Image in = random_image(rng, k.in_type, k.width, k.height, k.channels, 16);
                    Image a(k.out_type, k.width, k.height, k.channels, 8), b = a, c = a;
                    CHECK_OK(one.ctx, run(one.ctx, k, f.f, in, a));
                    CHECK_OK(two.ctx, run(two.ctx, k, f.f, in, b));
                    CHECK_OK(three.ctx, run(three.ctx, k, f.f, in, c));
                    CHECK_MSG(a.bytes == b.bytes && a.bytes == c.bytes,
                              describe(k, f.name) + " strips " + strip + ": threads differ");
                }
    }
}

// Float images whose accumulation type is their own are read in place between two edge lines: wide rows
// (several blocks) with every border, wide filters and all channel counts.
void test_in_place_rows(gpk_context *ctx) {
    gpk_filter *filters[] = {random_2d(5, 9, false, -1, 1), random_2d(3, 63, false, 0, 1),
                             random_separable(129, 3, false, 0, 1), random_separable(33, 5, false, -1, 1)};
    const char *names[] = {"float 5x9", "float 3x63", "float 129|3", "float 33|5"};
    const size_t widths[] = {300, 517, 1100};
    size_t turn = 0;
    for (int fi = 0; fi < 4; ++fi)
        for (gpk_border b : kBorders)
            for (size_t w : widths) {
                const gpk_dtype t = turn % 2 ? GPK_F64 : GPK_F32;
                Case k{t,
                       turn % 3 ? t : GPK_U8,
                       unsigned(turn % 4 + 1),
                       b,
                       kNorms[turn % 3],
                       t == GPK_F64 ? GPK_ACCUMULATE_F64 : GPK_ACCUMULATE_F32,
                       w,
                       6};
                check_case(ctx, k, filters[fi], names[fi]);
                ++turn;
            }
    for (gpk_filter *f : filters) gpk_filter_destroy(f);
}

// Runs case k with rows cut into column strips of `strip` samples (the internal knob
// GPK_TEST_CONV_CPU_STRIP, NOTES.md) and without, on the same input; the results must be the same bits.
bool strips_match(gpk_context *ctx, const Case &k, const gpk_filter *f, const std::string &name,
                  const char *strip) {
    const Image in = random_image(rng, k.in_type, k.width, k.height, k.channels, (k.width % 3) * 8);
    Image whole(k.out_type, k.width, k.height, k.channels, 8), strips = whole;
    hooks::Hook hook("GPK_TEST_CONV_CPU_STRIP", nullptr);
    const gpk_status a = run(ctx, k, f, in, whole);
    hook.set(strip);
    const gpk_status b = run(ctx, k, f, in, strips);
    hook.set(nullptr);
    const std::string what = describe(k, name) + " strips of " + strip;
    CHECK_MSG(a == b, what + ": statuses " + std::to_string(a) + " and " + std::to_string(b));
    const bool ok = a == b && whole.bytes == strips.bytes;
    CHECK_MSG(ok, what + ": differs from whole rows");
    return ok;
}

// Column strips (the CPU backend's path for rows too long for whole-row scratch), forced narrow: bit for bit
// the whole-row results for every type pair, channel count, border and normalisation, with 2D filters up to
// 63x63 and separable ones up to 129 taps, exact and float paths (every accumulator), strips narrower than
// the filter's halo (the narrowest is one block of the tap loop), width 1, widths that are not a multiple
// of the strip, several chunks of rows, float images read in place; some also against the reference.
void test_column_strips(gpk_context *ctx) {
    if (hooks::skip_part("column strips (GPK_TEST_CONV_CPU_STRIP)")) return;
    const FilterSet filters;
    std::vector<NamedFilter> large = {{"int 63x63", random_2d(63, 63, true, -3, 3)},
                                      {"float 63x61", random_2d(63, 61, false, 0, 1)},
                                      {"float 3x63", random_2d(3, 63, false, -1, 1)},
                                      {"float 129|129", random_separable(129, 129, false, 0, 1)},
                                      {"int 129|3", random_separable(129, 3, true, -2, 2)},
                                      {"float 1|129", random_separable(1, 129, false, -1, 1)},
                                      {"int 3x3 int32 sums", random_2d(3, 3, true, -1000, 1000)},
                                      {"int 3x3 double sums", random_2d(3, 3, true, -0x1p29, 0x1p29)},
                                      {"int 1x3 int64 sums", random_2d(1, 3, true, -0x1p37, 0x1p37)}};
    const char *strip_widths[] = {"1", "100", "700", "5000"};
    const size_t sizes[][2] = {{1, 1}, {1, 7}, {37, 3}, {130, 1}, {333, 5}, {1029, 2}, {97, 40}, {2100, 1}};
    size_t failed = 0;
    const size_t turns = for_each_combination(sizes, [&](const Case &k, size_t turn) {
        const char *strip = strip_widths[turn % 4];
        const auto &f2 = filters.two_d[turn % filters.two_d.size()];
        const auto &fs = filters.separable[turn % filters.separable.size()];
        failed += !strips_match(ctx, k, f2.f, f2.name, strip);
        failed += !strips_match(ctx, k, fs.f, fs.name, strip);
        // The large filters on smaller images (they cost kh * kw per sample), in the narrowest strips.
        const auto &fl = large[turn % large.size()];
        Case small = k;
        small.width = std::min<size_t>(k.width, 300);
        small.height = std::min<size_t>(k.height, 5);
        failed += !strips_match(ctx, small, fl.f, fl.name, strip_widths[(turn / 4) % 2]);
        if (turn % 11 == 0) {
            hooks::Hook hook("GPK_TEST_CONV_CPU_STRIP", strip);
            failed += !check_case(ctx, k, f2.f, f2.name + " in strips");
            small.width = std::min<size_t>(small.width, 64);
            failed += !check_case(ctx, small, fl.f, fl.name + " in strips");
        }
    });
    std::printf("column strips: %zu cases, %zu failed\n", 3 * turns, failed);
    // The knob is read: a value that is not a width is refused.
    gpk_filter *id = named("identity");
    Image img(GPK_U8, 5, 2, 1, 0), out = img;
    const Case k{GPK_U8, GPK_U8, 1, GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_AUTO, 5, 2};
    hooks::Hook hook("GPK_TEST_CONV_CPU_STRIP", nullptr);
    for (const char *bad : {"0", "wide", "-3", "12x"}) {
        hook.set(bad);
        CHECK_STATUS(ctx, run(ctx, k, id, img, out), GPK_ERR_INVALID_ARGUMENT);
        CHECK(std::string(gpk_context_last_error(ctx)).find("GPK_TEST_CONV_CPU_STRIP") != std::string::npos);
    }
    hook.set(nullptr);
    gpk_filter_destroy(id);
    for (auto &f : large) gpk_filter_destroy(f.f);
}

// An output larger than the caches (over 32 MiB) that is finished from accumulated rows is written with
// streaming stores: check such an image, with padded rows, against the reference too. Float outputs of the
// accumulation type with no normalisation are written by the tap loop itself, whole blocks straight into
// the rows (rows of a multiple of 16 bytes here and not: heights of 4k + 1 give 16 bytes of padding), a
// last partial block finished from scratch.
void test_large_image(gpk_context *ctx) {
    gpk_filter *f = random_2d(3, 3, false, -0.5, 1), *s = random_separable(5, 3, false, -1, 1);
    Case k{GPK_U8, GPK_F32, 1, GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_F32, 4099, 2053};
    check_case(ctx, k, f, "3x3 on 4099x2053");
    Case direct{GPK_F32, GPK_F32, 1, GPK_BORDER_REFLECT, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_F32, 4100, 2049};
    check_case(ctx, direct, f, "3x3 on 4100x2049, written by the tap loop");
    direct.width = 4096;
    check_case(ctx, direct, f, "3x3 on 4096x2049, written by the tap loop");
    Case wide{GPK_F64, GPK_F64, 1, GPK_BORDER_WRAP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_F64, 2052, 2049};
    check_case(ctx, wide, s, "separable 5|3 on 2052x2049 f64, written by the tap loop");
    gpk_filter_destroy(f);
    gpk_filter_destroy(s);
}

// NaN samples: integer outputs get 0, float outputs keep the NaN.
void test_nan(gpk_context *ctx) {
    gpk_filter *id = named("identity");
    Image in(GPK_F32, 3, 1, 1, 0), out8(GPK_U8, 3, 1, 1, 0), out32(GPK_F32, 3, 1, 1, 0);
    in.set(0, 0, 0, 2.5);
    in.set(1, 0, 0, NAN);
    in.set(2, 0, 0, -3);
    Case k{GPK_F32, GPK_U8, 1, GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_AUTO, 3, 1};
    CHECK_OK(ctx, run(ctx, k, id, in, out8));
    CHECK_EQ((int)out8.get(0, 0, 0), 3); // 2.5 rounds away from zero
    CHECK_EQ((int)out8.get(1, 0, 0), 0);
    CHECK_EQ((int)out8.get(2, 0, 0), 0);
    k.out_type = GPK_F32;
    CHECK_OK(ctx, run(ctx, k, id, in, out32));
    CHECK(std::isnan((double)out32.get(1, 0, 0)));
    // Min/max ignores NaN (NOTES.md): -3 -> 0, 2.5 -> 255, the NaN sample -> 0. Two channels, the second
    // all NaN: 0 everywhere.
    Image in2(GPK_F32, 3, 1, 2, 0), out2(GPK_U8, 3, 1, 2, 0);
    for (size_t x = 0; x < 3; ++x) in2.set(x, 0, 0, in.get(x, 0, 0)), in2.set(x, 0, 1, NAN);
    Case m{GPK_F32, GPK_U8, 2, GPK_BORDER_CLAMP, GPK_NORMALIZE_MINMAX, GPK_ACCUMULATE_AUTO, 3, 1};
    CHECK_OK(ctx, run(ctx, m, id, in2, out2));
    const int want[6] = {255, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < 6; ++i) CHECK_EQ((int)out2.get(i / 2, 0, unsigned(i % 2)), want[i]);
    gpk_filter_destroy(id);
}

// Rounding of float results to integer outputs at the halves, where a careless add-0.5 goes wrong.
void test_rounding(gpk_context *ctx) {
    gpk_filter *id = named("identity");
    const float values[] = {0.49999997f, 0.5f,     1.5f,     2.5f,  254.5f, 255.49998f,
                            255.5f,      65534.5f, 65535.5f, -0.5f, 1e30f,  -1e30f};
    const size_t n = sizeof values / sizeof values[0];
    Image in(GPK_F32, n, 1, 1, 0), o8(GPK_U8, n, 1, 1, 0), o16(GPK_U16, n, 1, 1, 0);
    for (size_t i = 0; i < n; ++i) in.set(i, 0, 0, values[i]);
    Case k{GPK_F32, GPK_U8, 1, GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_F32, n, 1};
    CHECK_OK(ctx, run(ctx, k, id, in, o8));
    k.out_type = GPK_U16;
    CHECK_OK(ctx, run(ctx, k, id, in, o16));
    for (size_t i = 0; i < n; ++i) {
        CHECK_EQ((double)o8.get(i, 0, 0), (double)round_half_away(values[i], 255));
        CHECK_EQ((double)o16.get(i, 0, 0), (double)round_half_away(values[i], 65535));
    }
    gpk_filter_destroy(id);
}

// The named filters carry the taps gpk.h gives (gpk_filter_named).
void test_named_taps() {
    const double lp3[] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
    const double smooth5[] = {1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 2, 3, 2, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1};
    const double log9_rows[5][9] = {{0, 1, 1, 2, 2, 2, 1, 1, 0},
                                    {1, 2, 4, 5, 5, 5, 4, 2, 1},
                                    {1, 4, 5, 3, 0, 3, 5, 4, 1},
                                    {2, 5, 3, -12, -24, -12, 3, 5, 2},
                                    {2, 5, 0, -24, -40, -24, 0, 5, 2}};
    gpk_filter *f = named("lp3");
    CHECK(taps_of(f).taps == std::vector<double>(lp3, lp3 + 9));
    gpk_filter_destroy(f);
    f = named("smooth5");
    CHECK(taps_of(f).taps == std::vector<double>(smooth5, smooth5 + 25));
    CHECK_EQ(taps_of(f).sum, 35.0);
    gpk_filter_destroy(f);
    f = named("lp5");
    Taps t = taps_of(f);
    CHECK(t.kh == 5 && t.kw == 5 && t.taps[12] == 24 && std::count(t.taps.begin(), t.taps.end(), -1.0) == 24);
    gpk_filter_destroy(f);
    f = named("log9");
    t = taps_of(f);
    for (int r = 0; r < 9; ++r)
        for (int c = 0; c < 9; ++c) CHECK_EQ(t.taps[size_t(r * 9 + c)], log9_rows[r < 5 ? r : 8 - r][c]);
    gpk_filter_destroy(f);
    f = named("gauss:2");
    t = taps_of(f);
    CHECK(t.separable && t.kw == 13 && t.kh == 13);
    double s = 0;
    for (int i = 0; i < 13; ++i) s += std::exp(-0.125 * (i - 6) * (i - 6));
    for (int i = 0; i < 13; ++i)
        CHECK(std::fabs(t.row[size_t(i)] - std::exp(-0.125 * (i - 6) * (i - 6)) / s) < 1e-15);
    gpk_filter_destroy(f);
}

// Images beyond 2^31 and 2^32 samples (periodic::beyond_2_32_cases), every output sample and the row
// padding checked against the closed form of periodic_image.hpp. The CPU backend filters the row of 2^32
// pixels in column strips (NOTES.md); where the library says it has no memory for the bytes it names, and
// they are more than the machine has, that case is noted, not failed.
void test_beyond_2_32(gpk_context *ctx) {
    if (GPK_TEST_SANITIZED) {
        std::printf("note: sanitizer build; the > 2^32 checks did not run (over a minute here)\n");
        return;
    }
    const std::vector<periodic::Case> cases = periodic::beyond_2_32_cases();
    size_t out_bytes = 0;
    for (const periodic::Case &b : cases) out_bytes = std::max(out_bytes, b.out.bytes());
    const size_t avail = periodic::available_memory();
    auto *out = avail == 0 || avail > out_bytes + (size_t(1) << 30)
                    ? static_cast<unsigned char *>(std::malloc(out_bytes))
                    : nullptr;
    if (!out) {
        std::printf("note: no memory for %zu bytes (%zu available); the > 2^32 checks did not run\n",
                    out_bytes, avail);
        return;
    }
    const unsigned threads = periodic::cores();
    using Clock = std::chrono::steady_clock;
    auto seconds = [](Clock::time_point a, Clock::time_point b) {
        return std::chrono::duration<double>(b - a).count();
    };
    for (const periodic::Case &b : cases) {
        const std::string what = b.in.describe() + " -> " + b.out.describe() + ", " +
                                 b.conv.filter.describe() + " border " + std::to_string(b.conv.border);
        const auto t0 = Clock::now();
        const periodic::Input in(b.in, threads);
        if (!in.data()) {
            std::printf("note: no memory for the %zu-byte input; %s did not run\n", b.in.bytes(),
                        what.c_str());
            continue;
        }
        periodic::clear(b.out, out, threads);
        const auto t1 = Clock::now();
        const gpk_status s = periodic::run(ctx, b.conv, b.in, in.data(), b.out, out);
        const auto t2 = Clock::now();
        const std::string message = gpk_context_last_error(ctx);
        const size_t at = message.find("allocating ");
        const size_t asked =
            at == std::string::npos ? 0 : std::strtoull(message.c_str() + at + 11, nullptr, 10);
        if (s == GPK_ERR_OUT_OF_MEMORY && asked > periodic::available_memory()) {
            std::printf("note: %s did not run: %s (%zu bytes available)\n", what.c_str(), message.c_str(),
                        periodic::available_memory());
            continue;
        }
        CHECK_MSG(s == GPK_OK, what + ": " + message);
        if (s == GPK_OK) {
            const periodic::Result r = periodic::check(b.in, b.out, b.conv, out, threads);
            CHECK_MSG(r.mismatches == 0,
                      what + ": " + std::to_string(r.mismatches) + " wrong, first " + r.first);
        }
        std::printf("beyond 2^32: %s: set-up %.1f s, gpk_convolve %.1f s, check %.1f s\n", what.c_str(),
                    seconds(t0, t1), seconds(t1, t2), seconds(t2, Clock::now()));
    }
    std::free(out);
}

} // namespace

int main() {
    test_named_taps();
    Context ctx(0);
    for_each_cpu_isa([&](const std::string &) { // every variant of the row kernels
        test_matrix(ctx.ctx);
        test_large_filters(ctx.ctx);
        test_exact_limits(ctx.ctx);
        test_laplacian_exercise(ctx.ctx);
        test_smoothing_exercise(ctx.ctx);
        test_in_place_rows(ctx.ctx);
        test_column_strips(ctx.ctx);
        test_nan(ctx.ctx);
        test_rounding(ctx.ctx);
    });
    test_large_image(ctx.ctx);
    test_thread_independence();
    test_beyond_2_32(ctx.ctx);
    return check::finish("test_convolve");
}
