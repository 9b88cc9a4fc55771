// gpk_histogram on the CPU backend against a naive reference written here straight from the contract (README,
// "What gpk computes") (every sample converted to double, bin = floor((v - lower) * bins / (upper - lower))),
// over every dtype, channel count, padded stride, awkward size and bin layout, plus saturation, all-equal
// data, thread counts and a count above 2^32.
#include "capped_memory.hpp"
#include "hooks.hpp"
#include "check.hpp"
#include "cpu_context.hpp"
#include "gpk.h"
#include "samples.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

// Sanitizer allocators abort on out-of-memory instead of throwing, so the check is left to plain builds.

namespace {

struct Layout {
    gpk_dtype dtype;
    size_t width, height;
    unsigned channels;
    size_t stride; // bytes, never 0 here
    size_t bins;
    double lower, upper;
    uint64_t saturate;
};

size_t sample_size(gpk_dtype t) {
    return gpk_dtype_size(t);
}

struct Counts {
    std::vector<uint64_t> hist, uncounted;
};

// The contract in plain loops: the reference every result is compared with.
Counts reference_histogram(const Layout &l, const unsigned char *data) {
    Counts r{std::vector<uint64_t>(l.channels * l.bins, 0), std::vector<uint64_t>(l.channels, 0)};
    double scale = double(l.bins) / (l.upper - l.lower);
    size_t size = sample_size(l.dtype);
    for (size_t y = 0; y < l.height; ++y)
        for (size_t x = 0; x < l.width; ++x)
            for (unsigned c = 0; c < l.channels; ++c) {
                double v = read_sample(l.dtype, data + y * l.stride + (x * l.channels + c) * size);
                if (!(v >= l.lower && v < l.upper)) {
                    ++r.uncounted[c];
                    continue;
                }
                double b = std::floor((v - l.lower) * scale);
                size_t bin = b >= double(l.bins) ? l.bins - 1 : size_t(b);
                ++r.hist[c * l.bins + bin];
            }
    if (l.saturate)
        for (uint64_t &h : r.hist) h = std::min(h, l.saturate);
    return r;
}

gpk_status run_gpk(gpk_context *ctx, const Layout &l, const void *data, Counts &out) {
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.dtype = l.dtype;
    p.width = l.width;
    p.height = l.height;
    p.channels = l.channels;
    p.stride = l.stride;
    p.bins = l.bins;
    p.lower = l.lower;
    p.upper = l.upper;
    p.saturate = l.saturate;
    out.hist.assign(l.channels * l.bins, 0xdeadbeef); // gpk must overwrite every counter
    out.uncounted.assign(l.channels, 0xdeadbeef);
    return gpk_histogram(ctx, &p, data, out.hist.data(), out.uncounted.data());
}

std::string describe(const Layout &l) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s %zux%zu ch%u stride %zu bins %zu [%.17g, %.17g) sat %llu",
                  gpk_dtype_name(l.dtype), l.width, l.height, l.channels, l.stride, l.bins, l.lower, l.upper,
                  (unsigned long long)l.saturate);
    return buf;
}

void check_layout(gpk_context *ctx, const Layout &l, const std::vector<unsigned char> &data) {
    Counts want = reference_histogram(l, data.data()), got;
    gpk_status s = run_gpk(ctx, l, data.data(), got);
    CHECK_MSG(s == GPK_OK, describe(l) + ": " + gpk_context_last_error(ctx));
    CHECK_MSG(got.hist == want.hist, describe(l) + ": histogram differs");
    CHECK_MSG(got.uncounted == want.uncounted, describe(l) + ": uncounted differs");
}

// The special samples of a layout: both edges, just below upper, NaN and infinities where they exist.
std::vector<double> edge_values(const Layout &l) {
    std::vector<double> v = {l.lower, l.upper, std::nextafter(l.upper, -INFINITY), l.lower - 1, l.upper + 1};
    if (l.dtype == GPK_F32 || l.dtype == GPK_F64) {
        v.insert(v.end(), {NAN, INFINITY, -INFINITY, -0.0});
        if (l.dtype == GPK_F32) v.push_back(double(std::nextafter(float(l.upper), -INFINITY)));
    }
    return v;
}

// Random samples over a little more than [lower, upper] (so that some are not counted), with the edge
// values sprinkled in, and the padding of every row filled with copies of `lower` (a counted value).
std::vector<unsigned char> make_data(const Layout &l, std::mt19937_64 &rng) {
    size_t size = sample_size(l.dtype), row = l.width * l.channels * size;
    std::vector<unsigned char> data(l.stride * (l.height - 1) + row);
    unsigned char pad_sample[8];
    write_sample(l.dtype, pad_sample, l.lower);
    for (size_t y = 0; y + 1 < l.height; ++y)
        for (size_t b = row; b < l.stride; ++b) data[y * l.stride + b] = pad_sample[(b - row) % size];
    double span = l.upper - l.lower;
    std::uniform_real_distribution<double> value(l.lower - 0.1 * span, l.upper + 0.1 * span);
    std::vector<double> edges = edge_values(l);
    std::uniform_int_distribution<size_t> pick(0, edges.size() - 1);
    double type_min = l.dtype == GPK_I32 ? -2147483648.0 : 0.0;
    double type_max = l.dtype == GPK_U8    ? 255.0
                      : l.dtype == GPK_U16 ? 65535.0
                      : l.dtype == GPK_U32 ? 4294967295.0
                      : l.dtype == GPK_I32 ? 2147483647.0
                                           : INFINITY;
    bool integer = l.dtype != GPK_F32 && l.dtype != GPK_F64;
    for (size_t y = 0; y < l.height; ++y)
        for (size_t k = 0; k < l.width * l.channels; ++k) {
            double v = rng() % 16 == 0 ? edges[pick(rng)] : value(rng);
            if (integer) v = std::isfinite(v) ? std::floor(v) : 0;
            if (integer) v = std::min(std::max(v, type_min), type_max);
            write_sample(l.dtype, data.data() + y * l.stride + k * size, v);
        }
    return data;
}

// Bin layouts worth testing for a sample type: direct ones for integers, general ones for all.
std::vector<Layout> bin_layouts(gpk_dtype t) {
    std::vector<Layout> v;
    auto add = [&](size_t bins, double lo, double hi) { v.push_back({t, 0, 0, 1, 0, bins, lo, hi, 0}); };
    bool integer = t != GPK_F32 && t != GPK_F64;
    if (integer) {
        add(256, 0, 256); // direct
        add(100, 0, 100); // direct, samples >= 100 not counted
        add(1024, 0, 1024);
    }
    if (t == GPK_U8) add(300, 0, 300); // direct, more bins than values
    if (t == GPK_U16) add(65536, 0, 65536);
    add(16, 0, 256);     // general, 16 values per bin
    add(7, 3.5, 200.25); // bins not dividing the range, fractional edges
    add(1, 0, 1);        // a single bin
    add(10, -50, 50);    // negative lower edge
    add(3, 0.1, 0.4);    // a narrow range with inexact edges
    add(5, -1e6, 1e6);   // wider than most samples
    return v;
}

void test_layouts(gpk_context *ctx) {
    std::mt19937_64 rng(12345);
    const gpk_dtype types[] = {GPK_U8, GPK_U16, GPK_U32, GPK_I32, GPK_F32, GPK_F64};
    const size_t shapes[][2] = {{1, 1}, {97, 1}, {1, 13}, {7, 13}, {31, 17}, {1031, 67}};
    for (gpk_dtype t : types)
        for (Layout l : bin_layouts(t))
            for (auto shape : shapes)
                for (unsigned ch = 1; ch <= 4; ++ch)
                    for (size_t pad : {size_t(0), sample_size(t), 3 * sample_size(t)}) {
                        if (shape[0] * shape[1] > 10000 && (pad > sample_size(t) || ch == 3))
                            continue; // quick
                        l.width = shape[0];
                        l.height = shape[1];
                        l.channels = ch;
                        l.stride = l.width * ch * sample_size(t) + pad;
                        check_layout(ctx, l, make_data(l, rng));
                    }
}

void test_saturation(gpk_context *ctx) {
    std::mt19937_64 rng(99);
    for (uint64_t sat : {uint64_t(1), uint64_t(3), uint64_t(255)}) {
        Layout l{GPK_U8, 211, 23, 2, 211 * 2 + 5, 256, 0, 256, sat};
        check_layout(ctx, l, make_data(l, rng));
        l = Layout{GPK_F32, 101, 7, 3, 101 * 12, 9, -10, 20, sat};
        check_layout(ctx, l, make_data(l, rng));
    }
    // The lab: 1024 bins of u32 bin IDs, rows of 4096 values of which 3984 are data, 8-bit saturation.
    // IDs are skewed (bin b drawn about (b+1) times as often as bin 0) so that some bins stay below 255.
    for (size_t height : {size_t(64), size_t(4096)}) {
        Layout l{GPK_U32, 3984, height, 1, 4096 * 4, 1024, 0, 1024, 255};
        std::vector<unsigned char> data(l.stride * height);
        std::uniform_real_distribution<double> u(0, 1);
        for (size_t y = 0; y < height; ++y)
            for (size_t x = 0; x < 4096; ++x) {
                uint32_t id = x < 3984 ? uint32_t(1024 * std::sqrt(u(rng))) : 7; // padding: a counted ID
                std::memcpy(data.data() + y * l.stride + x * 4, &id, 4);
            }
        Counts want = reference_histogram(l, data.data()), got;
        check_layout(ctx, l, data);
        size_t below = 0, at = 0;
        for (uint64_t h : want.hist) ++(h < 255 ? below : at);
        CHECK_MSG(below > 0 && at > 0, "the lab data should have bins both under and at 255");
        Layout exact = l;
        exact.saturate = 0;
        check_layout(ctx, exact, data);
    }
}

void test_all_equal(gpk_context *ctx) {
    for (gpk_dtype t : {GPK_U8, GPK_U16, GPK_U32, GPK_I32, GPK_F32, GPK_F64})
        for (unsigned ch : {1u, 2u, 3u, 4u}) {
            Layout l{t, 1500, 700, ch, 1500 * ch * sample_size(t), 256, 0, 256, 0};
            std::vector<unsigned char> data(l.stride * l.height);
            for (size_t k = 0; k < l.width * l.height * ch; ++k)
                write_sample(t, data.data() + k * sample_size(t), 17);
            check_layout(ctx, l, data);
            Counts got;
            run_gpk(ctx, l, data.data(), got);
            CHECK_EQ(got.hist[17], uint64_t(1500 * 700));
        }
    Layout black{GPK_U8, 4096, 2048, 1, 4096, 256, 0, 256, 0}; // an all-black image
    check_layout(ctx, black, std::vector<unsigned char>(4096 * 2048, 0));
}

// Flat data: pixels repeated over runs of random length (whole 8-byte words of one pixel, and runs that
// straddle words and rows), each channel with its own value, in padded rows.
void test_runs(gpk_context *ctx) {
    std::mt19937_64 rng(31);
    for (gpk_dtype t : {GPK_U8, GPK_U16, GPK_U32, GPK_I32})
        for (unsigned ch = 1; ch <= 4; ++ch) {
            size_t size = sample_size(t);
            Layout l{t, 1009, 37, ch, 1009 * ch * size + 3 * size, 256, 0, 256, 0};
            std::vector<unsigned char> data = make_data(l, rng);
            double pixel[4] = {0, 0, 0, 0};
            size_t left = 0;
            for (size_t y = 0; y < l.height; ++y)
                for (size_t x = 0; x < l.width; ++x) {
                    if (left == 0) {
                        left = 1 + rng() % 40;
                        for (double &v : pixel)
                            v = double(rng() % (t == GPK_U8 ? 256 : 300)); // some beyond the bins but u8
                    }
                    --left;
                    for (unsigned c = 0; c < ch; ++c)
                        write_sample(t, data.data() + y * l.stride + (x * ch + c) * size, pixel[c]);
                }
            check_layout(ctx, l, data);
        }
}

// Rows whose samples repeat with a period of 1, 2, 3, 4 or 8 samples whatever the channel count: words
// that repeat a pattern other than one pixel must not be taken for runs of one pixel.
void test_periodic(gpk_context *ctx) {
    std::mt19937_64 rng(53);
    for (gpk_dtype t : {GPK_U8, GPK_U16, GPK_U32, GPK_I32})
        for (unsigned ch = 1; ch <= 4; ++ch)
            for (size_t period : {1, 2, 3, 4, 8}) {
                size_t size = sample_size(t);
                Layout l{t, 640, 5, ch, 640 * ch * size + 2 * size, 256, 0, 256, 0};
                std::vector<unsigned char> data = make_data(l, rng);
                double pattern[8];
                for (double &v : pattern) v = double(rng() % 256);
                for (size_t y = 0; y < l.height; ++y)
                    for (size_t k = 0; k < l.width * ch; ++k)
                        write_sample(t, data.data() + y * l.stride + k * size, pattern[k % period]);
                check_layout(ctx, l, data);
            }
}

// u32 and i32 bin IDs mostly below a power of two, with rare outliers: IDs between it and bins,
// IDs of bins and beyond, negative i32 (also INT32_MIN + k, whose low bits are in range), alone in
// their groups of samples.
void test_sparse_outliers(gpk_context *ctx) {
    std::mt19937_64 rng(47);
    for (gpk_dtype t : {GPK_U32, GPK_I32})
        for (unsigned ch : {1u, 2u, 3u, 4u})
            for (size_t bins : {size_t(1000), size_t(1024), size_t(1) << 20}) {
                Layout l{t, 2001, 19, ch, 2001 * ch * 4 + 4, bins, 0, double(bins), 0};
                std::vector<unsigned char> data = make_data(l, rng);
                for (size_t y = 0; y < l.height; ++y)
                    for (size_t k = 0; k < l.width * ch; ++k) {
                        double v = double(rng() % 512);
                        unsigned pick = unsigned(rng() % 64);
                        if (pick == 0) v = double(bins - 1 - rng() % 400);
                        if (pick == 1) v = double(bins + rng() % 3);
                        if (pick == 2) v = t == GPK_I32 ? -1.0 - double(rng() % 5) : 4294967295.0;
                        if (pick == 3) v = t == GPK_I32 ? -2147483648.0 + double(rng() % 5) : 2147483648.0;
                        write_sample(t, data.data() + y * l.stride + k * 4, v);
                    }
                check_layout(ctx, l, data);
            }
}

void test_thread_counts() {
    std::mt19937_64 rng(77);
    gpk_context *ctxs[] = {cpu_context(1), cpu_context(2), cpu_context(3)};
    for (gpk_dtype t : {GPK_U8, GPK_U16, GPK_U32, GPK_F32}) {
        Layout l{t, 2003, 301, 2, 2003 * 2 * sample_size(t) + 8, 200, -5, 250, 0};
        std::vector<unsigned char> data = make_data(l, rng);
        Counts first;
        run_gpk(ctxs[0], l, data.data(), first);
        for (gpk_context *ctx : ctxs) {
            Counts got;
            CHECK_OK(ctx, run_gpk(ctx, l, data.data(), got));
            CHECK_MSG(got.hist == first.hist && got.uncounted == first.uncounted, describe(l));
            check_layout(ctx, l, data);
        }
    }
    for (gpk_context *ctx : ctxs) gpk_context_destroy(ctx);
}

// One-channel u8 counted by bit planes (AVX-512 with GFNI, VBMI, VPOPCNTDQ; blocks of 512 samples, 16
// blocks at a time, blocks of one repeated byte added whole) and by the scalar kernels (GPK_TEST_CPU_ISA=
// avx2): lengths around every block and chunk multiple, in dense and padded rows (dense rows are counted as
// one run), random bytes, runs of one byte of random length, and repeated bytes with one odd byte in some
// places; on 1 and 2 threads and all.
void test_u8_planes() {
    std::mt19937_64 rng(2024);
    const char *saved = std::getenv("GPK_TEST_CPU_ISA");
    const std::string kept = saved ? saved : "";
    hooks::Hook hook("GPK_TEST_CPU_ISA", saved);
    gpk_context *ctxs[] = {cpu_context(0), cpu_context(1), cpu_context(2)};
    const size_t widths[] = {1, 63, 511, 512, 513, 1023, 8191, 8192, 8193, 8192 * 2 + 512 * 3 + 7, 70001};
    for (const char *isa : {"", "avx2"}) {
        if (*isa && hooks::skip_part("the scalar kernels (GPK_TEST_CPU_ISA=avx2)")) continue;
        hook.set(*isa ? isa : saved ? kept.c_str() : nullptr);
        for (size_t width : widths)
            for (size_t height : {size_t(1), size_t(5)})
                for (size_t pad : {size_t(0), size_t(1), size_t(64)})
                    for (int kind = 0; kind < 3; ++kind) {
                        if (height == 1 && pad > 0) continue; // no row below the padding
                        Layout l{GPK_U8, width, height, 1, width + pad, 256, 0, 256, 0};
                        std::vector<unsigned char> data(l.stride * height);
                        unsigned char value = 0;
                        size_t left = 0;
                        for (unsigned char &b : data) {
                            if (kind == 0) {
                                b = (unsigned char)rng();
                            } else if (kind == 1) {
                                if (left == 0) {
                                    left = 1 + rng() % 2000;
                                    value = (unsigned char)rng();
                                }
                                --left;
                                b = value;
                            } else {
                                b = rng() % 700 == 0 ? (unsigned char)rng() : 201;
                            }
                        }
                        for (gpk_context *ctx : ctxs) check_layout(ctx, l, data);
                    }
    }
    for (gpk_context *ctx : ctxs) gpk_context_destroy(ctx);
}

// More than 2^32 samples of one value: exact 64-bit counts, on one thread and on all. The buffer is
// 4.3 GB of u8 filled with memset, read as a 2D image and as one long row.
void test_beyond_2_32(gpk_context *all) {
    const size_t width = (size_t(1) << 20) + 3, height = 4097, total = width * height; // > 2^32
    const size_t tail = 1000003;                                                       // samples of 9
    auto *data = static_cast<unsigned char *>(std::malloc(total));
    if (!data) {
        std::printf("note: no memory for %zu bytes; the > 2^32 check did not run\n", total);
        return;
    }
    std::memset(data, 7, total - tail);
    std::memset(data + total - tail, 9, tail);
    gpk_context *one = cpu_context(1);
    const Layout layouts[] = {{GPK_U8, width, height, 1, width, 16, 0, 16, 0},
                              {GPK_U8, total, 1, 1, total, 16, 0, 16, 0}};
    for (const Layout &l : layouts)
        for (gpk_context *ctx : {all, one}) {
            if (ctx == one && l.height == 1) continue; // one thread reads the 2D layout only: time
            Counts got;
            CHECK_OK(ctx, run_gpk(ctx, l, data, got));
            CHECK_MSG(got.hist[7] == total - tail && got.hist[9] == tail,
                      describe(l) + ": " + std::to_string(got.hist[7]) + " sevens");
            CHECK(got.hist[7] > (uint64_t(1) << 32));
            CHECK_EQ(got.uncounted[0], uint64_t(0));
        }
    gpk_context_destroy(one);
    std::free(data);
}

// With the address space capped a little above what the process uses, 2^24 bins (128 MiB of 64-bit
// counters per thread) cannot be counted: GPK_ERR_OUT_OF_MEMORY naming the bytes, hist untouched.
void test_out_of_memory(gpk_context *ctx) {
#if GPK_TEST_CAN_CAP_MEMORY
    const size_t bins = size_t(1) << 24;
    Layout l{GPK_U32, 1000, 1, 1, 4000, bins, 0, double(bins), 0};
    std::vector<unsigned char> data(4000);
    for (size_t k = 0; k < 1000; ++k)
        write_sample(GPK_U32, data.data() + 4 * k, double(k % 7 == 0 ? bins + 1 : k));
    std::vector<uint64_t> hist(bins, 77);
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.dtype = l.dtype;
    p.width = l.width;
    p.bins = l.bins;
    p.upper = l.upper;
    gpk_status status =
        with_capped_memory([&] { return gpk_histogram(ctx, &p, data.data(), hist.data(), nullptr); }, GPK_OK);
    std::string message = gpk_context_last_error(ctx);
    CHECK_MSG(status == GPK_ERR_OUT_OF_MEMORY, std::string(gpk_status_string(status)) + ": " + message);
    unsigned long long bytes = bytes_named(message);
    CHECK_MSG(bytes >= bins * sizeof(uint64_t) && message.find("bytes") != std::string::npos, message);
    bool untouched = true;
    for (uint64_t h : hist) untouched = untouched && h == 77;
    CHECK(untouched);
    check_layout(ctx, l, data); // with the memory back, the same call works
#else
    (void)ctx;
    std::printf("note: the out-of-memory check needs Linux (RLIMIT_AS) and no sanitizer; not run\n");
#endif
}

} // namespace

int main() {
    gpk_context *ctx = cpu_context(0);
    test_layouts(ctx);
    test_saturation(ctx);
    test_all_equal(ctx);
    test_runs(ctx);
    test_periodic(ctx);
    test_sparse_outliers(ctx);
    test_thread_counts();
    test_u8_planes();
    test_beyond_2_32(ctx);
    test_out_of_memory(ctx);
    gpk_context_destroy(ctx);
    return check::finish("test_histogram");
}
