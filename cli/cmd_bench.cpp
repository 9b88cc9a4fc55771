// gpk bench: a short benchmark of the three operations on the current backend through the public API,
// with data in host memory (so on a GPU the times include the transfers). Median of several runs after
// a warm-up.
#include "args.hpp"
#include "commands.hpp"
#include "common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <numeric>

namespace gpkcli {

namespace {

const std::vector<OptionSpec> kBenchOptions = {
    {0, "size", "N", "image side in pixels (default 4096 on the CPU, 8192 on a GPU); heat uses N/2"},
    {0, "runs", "N", "timed runs per case after one warm-up (default 5)"},
    {0, "json", nullptr, "print JSON"},
    {0, "backend", "NAME", "auto, cpu or cuda (default auto)"},
    {'h', "help", nullptr, "show this help"},
};

struct BenchCase {
    std::string name;
    size_t width, height;
    double work;      // units of `unit` per run, before dividing by the time
    const char *unit; // "GB/s", "MPix/s", "GCells/s"
    std::function<void()> run;
    double median = 0, best = 0;
};

// Deterministic pseudo-random bytes (xorshift64*), so that no case times zeros.
std::vector<uint32_t> random_words(size_t count, uint32_t modulo) {
    std::vector<uint32_t> out(count);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (auto &v : out) {
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        v = uint32_t((x * 0x2545F4914F6CDD1Dull) >> 32) % modulo;
    }
    return out;
}

void time_case(BenchCase &c, size_t runs) {
    c.run(); // warm-up: allocations, first-touch, GPU start
    std::vector<double> times;
    for (size_t r = 0; r < runs; ++r) {
        auto start = std::chrono::steady_clock::now();
        c.run();
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    c.median = times[times.size() / 2];
    c.best = times.front();
}

// The inputs every case reads; kept alive for the whole benchmark.
struct BenchData {
    size_t side, heat_side;
    std::vector<uint8_t> u8_image, u8_out;
    std::vector<uint32_t> bin_ids;
    std::vector<float> f32_image, f32_out;
    std::vector<double> heat_t, heat_c;
    std::vector<uint64_t> hist;
    Filter lp3, log9, gauss;
};

BenchData make_data(size_t side) {
    BenchData d;
    d.side = side;
    d.heat_side = std::max<size_t>(side / 2, 1);
    size_t n = side * side;
    std::vector<uint32_t> words = random_words(n, 256);
    d.u8_image.assign(words.begin(), words.end());
    d.u8_out.resize(n);
    d.f32_image.assign(words.begin(), words.end());
    d.f32_out.resize(n);
    d.bin_ids = random_words(n, 1024);
    std::vector<uint32_t> heat = random_words(d.heat_side * d.heat_side, 201);
    d.heat_t.assign(heat.begin(), heat.end());
    for (auto &t : d.heat_t) t -= 100;
    d.heat_c.assign(heat.size(), 0.5);
    d.hist.resize(1024);
    gpk_filter *f = nullptr;
    gpk_filter_create_named(&f, "lp3"), d.lp3.reset(f);
    gpk_filter_create_named(&f, "log9"), d.log9.reset(f);
    gpk_filter_create_named(&f, "gauss:2.5"), d.gauss.reset(f);
    return d;
}

void histogram_case(gpk_context *ctx, BenchData &d, gpk_dtype dtype, size_t bins, const void *data) {
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.dtype = dtype;
    p.width = p.height = d.side;
    p.bins = bins;
    p.upper = double(bins);
    check_status(gpk_histogram(ctx, &p, data, d.hist.data(), nullptr), ctx, "histogram");
    if (std::accumulate(d.hist.begin(), d.hist.begin() + long(bins), uint64_t(0)) !=
        uint64_t(d.side) * d.side)
        throw Failure("histogram: the counts do not add up to the number of samples");
}

void convolve_case(gpk_context *ctx, size_t side, const gpk_filter *f, gpk_dtype dtype, const void *in,
                   void *out) {
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = f;
    gpk_image desc;
    gpk_image_init(&desc, dtype, side, side, 1);
    check_status(gpk_convolve(ctx, &p, &desc, in, &desc, out), ctx, "convolve");
}

void heat_case(gpk_context *ctx, BenchData &d, size_t iterations) {
    gpk_heat_params p;
    gpk_heat_params_init(&p);
    p.rows = p.cols = d.heat_side;
    p.maxiter = iterations;
    check_status(gpk_heat_run(ctx, &p, d.heat_t.data(), d.heat_c.data(), nullptr, nullptr), ctx, "heat");
}

std::vector<BenchCase> make_cases(gpk_context *ctx, BenchData &d) {
    // On a GPU the grid's upload and download would dwarf 50 iterations.
    const size_t n = d.side * d.side, iterations = gpk_context_backend(ctx) == GPK_BACKEND_CUDA ? 1000 : 50;
    const double mpix = double(n) / 1e6;
    return {
        {"heat f64, " + std::to_string(iterations) + " iterations", d.heat_side, d.heat_side,
         double(d.heat_side) * d.heat_side * iterations / 1e9, "GCells/s",
         [=, &d] { heat_case(ctx, d, iterations); }},
        {"histogram u8, 256 bins", d.side, d.side, double(n) / 1e9, "GB/s",
         [=, &d] { histogram_case(ctx, d, GPK_U8, 256, d.u8_image.data()); }},
        {"histogram u32, 1024 bins", d.side, d.side, double(n) * 4 / 1e9, "GB/s",
         [=, &d] { histogram_case(ctx, d, GPK_U32, 1024, d.bin_ids.data()); }},
        {"convolve u8 lp3 3x3, clamp", d.side, d.side, mpix, "MPix/s",
         [=, &d] { convolve_case(ctx, d.side, d.lp3.get(), GPK_U8, d.u8_image.data(), d.u8_out.data()); }},
        {"convolve u8 log9 9x9, clamp", d.side, d.side, mpix, "MPix/s",
         [=, &d] { convolve_case(ctx, d.side, d.log9.get(), GPK_U8, d.u8_image.data(), d.u8_out.data()); }},
        {"convolve f32 gauss:2.5 separable 17", d.side, d.side, mpix, "MPix/s",
         [=, &d] {
             convolve_case(ctx, d.side, d.gauss.get(), GPK_F32, d.f32_image.data(), d.f32_out.data());
         }},
    };
}

// A heat call's cost outside its iterations: calls of two lengths (whole passes of 4 iterations on either
// backend) timed like the cases, fitted to fixed + iterations * per_iteration.
struct HeatFit {
    size_t short_run, long_run;
    double short_time = 0, long_time = 0, per_iteration = 0, fixed = 0;
};

HeatFit fit_heat(gpk_context *ctx, BenchData &d, size_t runs, size_t long_run) {
    HeatFit f{long_run / 6 / 4 * 4 + 4, long_run};
    for (size_t *len : {&f.short_run, &f.long_run}) {
        BenchCase c{"", 0, 0, 0, "", [&, len] { heat_case(ctx, d, *len); }};
        time_case(c, runs);
        (len == &f.short_run ? f.short_time : f.long_time) = c.median;
    }
    f.per_iteration = (f.long_time - f.short_time) / double(f.long_run - f.short_run);
    f.fixed = f.short_time - double(f.short_run) * f.per_iteration;
    return f;
}

void print_table(const std::vector<BenchCase> &cases, gpk_backend backend, size_t runs) {
    std::printf("gpk %s bench on the %s backend: median of %zu runs after a warm-up, data in host memory\n",
                gpk_version_string(), gpk_backend_name(backend), runs);
    std::printf("%-36s %11s %12s %12s\n", "case", "size", "median", "throughput");
    for (const auto &c : cases) {
        std::string size = std::to_string(c.width) + "x" + std::to_string(c.height);
        std::printf("%-36s %11s %9.3f ms %7.2f %s\n", c.name.c_str(), size.c_str(), c.median * 1e3,
                    c.work / c.median, c.unit);
    }
}

void print_heat_fit(const HeatFit &f, size_t side) {
    std::printf(
        "heat %zux%zu, maxiter %zu and %zu fitted: a call costs %.3f ms + %.3f ms per iteration (the fixed "
        "part is %.2f iterations)\n",
        side, side, f.short_run, f.long_run, f.fixed * 1e3, f.per_iteration * 1e3, f.fixed / f.per_iteration);
}

void print_json(const std::vector<BenchCase> &cases, const HeatFit &fit, gpk_backend backend, size_t runs) {
    std::printf("{\n  \"version\": \"%s\",\n  \"backend\": \"%s\",\n  \"runs\": %zu,\n  \"cases\": [",
                gpk_version_string(), gpk_backend_name(backend), runs);
    for (size_t i = 0; i < cases.size(); ++i) {
        const BenchCase &c = cases[i];
        std::printf(
            "%s\n    {\"name\": %s, \"width\": %zu, \"height\": %zu, \"median_s\": %s, \"best_s\": %s, "
            "\"throughput\": %s, \"unit\": \"%s\"}",
            i ? "," : "", json_string(c.name).c_str(), c.width, c.height, json_number(c.median).c_str(),
            json_number(c.best).c_str(), json_number(c.work / c.median).c_str(), c.unit);
    }
    std::printf("\n  ],\n  \"heat_fit\": {\"short_maxiter\": %zu, \"long_maxiter\": %zu, \"fixed_s\": %s, "
                "\"per_iteration_s\": %s}\n}\n",
                fit.short_run, fit.long_run, json_number(fit.fixed).c_str(),
                json_number(fit.per_iteration).c_str());
}

} // namespace

int run_bench(const Args &args) {
    ParsedArgs p = parse_args(args, kBenchOptions);
    if (p.has("help")) {
        std::printf(
            "Usage: gpk bench [OPTION]...\nTimes heat, histogram and convolution on the current backend."
            "\n\nOptions:\n%s",
            options_help(kBenchOptions).c_str());
        return kExitOk;
    }
    if (!p.positional().empty()) throw UsageError("unexpected argument '" + p.positional()[0] + "'");
    size_t runs = p.whole("runs", 5);
    if (runs == 0) throw UsageError("--runs must be at least 1");
    Context ctx = open_context(parse_backend(p.text("backend", "auto")));
    gpk_backend backend = gpk_context_backend(ctx.get());
    size_t side = p.whole("size", backend == GPK_BACKEND_CUDA ? 8192 : 4096);
    if (side < 2 || side > 65536) throw UsageError("--size must be in 2..65536");
    BenchData data = make_data(side);
    std::vector<BenchCase> cases = make_cases(ctx.get(), data);
    for (auto &c : cases) time_case(c, runs);
    const HeatFit fit = fit_heat(ctx.get(), data, runs, backend == GPK_BACKEND_CUDA ? 1000 : 48);
    if (p.has("json")) {
        print_json(cases, fit, backend, runs);
    } else {
        print_table(cases, backend, runs);
        print_heat_fit(fit, data.heat_side);
    }
    return kExitOk;
}

} // namespace gpkcli
