// gpk's CPU backend through its C API beside what a CPU user would pick instead (PERF.md, "CPU backend"):
// OpenCV 4 filters and histograms run in row bands on every core, and OpenMP loops. Every case times gpk
// and its peers in the same process on the same data, alternating (the order reversed every round), and
// prints medians, the ratio of the best peer's median to gpk's, the bytes moved per second and their
// fraction of the machine's copy bandwidth, measured here too. Results are checked against each other.
// gpk's convolution and histogram rows run once per instruction set of its CPU kernels that the machine
// has (through the test hook GPK_TEST_CPU_ISA), so that a level slower than the one below it shows.
//
// Usage: bench_cpu [--size N] [--rounds R] [--only SUBSTR[,SUBSTR...]]
#include "gpk.h"

extern "C" gpk_status gpk_internal_reload_test_hooks(void); // lib/gpk_internal.h
extern "C" int gpk_internal_test_hooks(void);

#include <omp.h>
#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Options {
    int size = 8192;
    int rounds = 9;
    std::string only;
};

bool wanted(const Options &o, const std::string &name) {
    if (o.only.empty()) return true;
    size_t p = 0;
    while (p <= o.only.size()) {
        size_t q = o.only.find(',', p);
        if (q == std::string::npos) q = o.only.size();
        if (q > p && name.find(o.only.substr(p, q - p)) != std::string::npos) return true;
        p = q + 1;
    }
    return false;
}

[[noreturn]] void die(const std::string &what) {
    std::fprintf(stderr, "bench_cpu: %s\n", what.c_str());
    std::exit(1);
}

void check(gpk_context *ctx, gpk_status s, const char *what) {
    if (s != GPK_OK) die(std::string(what) + ": " + gpk_context_last_error(ctx));
}

// One way of computing a case: gpk or a peer. `before`, where set, runs ahead of every timed call, untimed.
struct Contender {
    std::string name;
    std::function<void()> run;
    std::function<void()> before = {};
    std::vector<double> times = {};
};

// The instruction sets of gpk's CPU kernels that this machine has, widest first (the levels of the CPU
// backend's dispatcher, NOTES.md); each gpk row runs once per level through the test hook GPK_TEST_CPU_ISA.
std::vector<std::string> machine_levels() {
    if (!gpk_internal_test_hooks()) return {"machine"}; // built without -Dtest_hooks=true: its own level only
    std::vector<std::string> levels;
#if defined(__x86_64__)
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        levels.push_back("avx512");
    if (avx2) levels.push_back("avx2");
#endif
    levels.push_back("baseline");
    return levels;
}

const std::vector<std::string> &levels() {
    static const std::vector<std::string> l = machine_levels();
    return l;
}

// Has the library read GPK_TEST_CPU_ISA = level (lib/gpk_internal.h, as the tests do).
void use_level(const std::string &level) {
    if (!gpk_internal_test_hooks()) return;
    setenv("GPK_TEST_CPU_ISA", level.c_str(), 1);
    if (gpk_internal_reload_test_hooks() != GPK_OK) die("GPK_TEST_CPU_ISA=" + level);
}

// One gpk contender per level, widest first: they come first in a case's contenders.
std::vector<Contender> gpk_levels(const std::function<void()> &call) {
    std::vector<Contender> cs;
    for (const std::string &level : levels())
        cs.push_back({"gpk " + level, call, [level] { use_level(level); }});
    return cs;
}

std::vector<Contender> with_peers(std::vector<Contender> gpk, std::vector<Contender> peers) {
    for (Contender &c : peers) gpk.push_back(std::move(c));
    return gpk;
}

// Times every contender `rounds` times after a warm-up, alternating: round r runs them in order, round
// r + 1 in reverse, so that none always follows the same neighbour (caches, a peer's spinning threads).
void time_alternating(std::vector<Contender> &cs, int rounds) {
    for (auto &c : cs) {
        if (c.before) c.before();
        c.run();
    }
    for (int r = 0; r < rounds; ++r)
        for (size_t k = 0; k < cs.size(); ++k) {
            Contender &c = cs[r % 2 ? cs.size() - 1 - k : k];
            if (c.before) c.before();
            auto start = Clock::now();
            c.run();
            c.times.push_back(seconds_since(start));
        }
}

// The machine's memory bandwidth, measured in this run: `threads` threads each copy (or read) their part
// of a 256 MiB buffer. Copy counts read + write bytes.
struct Bandwidth {
    double copy = 0, read = 0; // bytes per second
};

Bandwidth measure_bandwidth(int rounds) {
    const size_t bytes = size_t(256) << 20;
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    std::vector<char> a(bytes, 1), b(bytes, 2);
    auto parallel = [&](auto &&part) {
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < threads; ++t)
            ts.emplace_back([&, t] { part(bytes * t / threads, bytes * (t + 1) / threads); });
        for (auto &t : ts) t.join();
    };
    std::vector<double> copy, read;
    volatile uint64_t sink = 0;
    for (int r = 0; r < rounds; ++r) {
        auto start = Clock::now();
        parallel([&](size_t lo, size_t hi) { std::memcpy(b.data() + lo, a.data() + lo, hi - lo); });
        copy.push_back(seconds_since(start));
        start = Clock::now();
        parallel([&](size_t lo, size_t hi) {
            uint64_t sum = 0;
            for (size_t i = lo; i + 8 <= hi; i += 8) {
                uint64_t w;
                std::memcpy(&w, a.data() + i, 8);
                sum += w;
            }
            sink = sink + sum;
        });
        read.push_back(seconds_since(start));
    }
    return {2.0 * bytes / median(copy), bytes / median(read)};
}

// What a case prints: per contender the median time and throughput; for gpk the ratio to the best peer.
struct CaseInfo {
    std::string name;
    double work;      // units of `unit` per call
    const char *unit; // "GB/s", "MPix/s", "MCells/s"
    double bytes;     // bytes a call must move at least (read + write), for the bandwidth fraction
    std::string check;
};

// The summary's line of a case: the best peer's median over gpk's at the widest level, and each level's
// speed over the next narrower one's (medians).
struct Ratios {
    double peer = 0;
    std::vector<double> levels;
};

// cs holds gpk at every level (widest first), then the peers.
Ratios report(const CaseInfo &info, const std::vector<Contender> &cs, const Bandwidth &bw) {
    const size_t nl = levels().size();
    const double gpk = median(cs[0].times);
    double best = 1e300;
    std::string best_name;
    for (size_t k = nl; k < cs.size(); ++k)
        if (median(cs[k].times) < best) best = median(cs[k].times), best_name = cs[k].name;
    std::printf("%s  [%s]\n", info.name.c_str(), info.check.c_str());
    for (const Contender &c : cs) {
        const double t = median(c.times), fastest = *std::min_element(c.times.begin(), c.times.end());
        std::printf("  %-40s %9.3f ms (best %8.3f) %9.1f %-8s %6.1f GB/s %4.0f%% of copy bw\n",
                    c.name.c_str(), t * 1e3, fastest * 1e3, info.work / t, info.unit, info.bytes / t / 1e9,
                    100.0 * info.bytes / t / bw.copy);
    }
    Ratios r{best / gpk, {}};
    std::printf("  => gpk %s %.2fx the best peer (%s) by medians", levels()[0].c_str(), r.peer,
                best_name.c_str());
    for (size_t k = 0; k + 1 < nl; ++k) {
        r.levels.push_back(median(cs[k + 1].times) / median(cs[k].times));
        std::printf("; %s %.2fx %s", levels()[k].c_str(), r.levels.back(), levels()[k + 1].c_str());
    }
    std::printf("\n\n");
    std::fflush(stdout);
    return r;
}

// Runs `f(begin, end)` on row bands [0, rows) in cv::parallel_for_, two bands per thread: how a user puts
// OpenCV's single-threaded filters and calcHist on every core.
template <class F> void in_bands(int rows, F f) {
    const int bands = 2 * cv::getNumThreads();
    cv::parallel_for_(cv::Range(0, bands), [&](const cv::Range &r) {
        for (int b = r.start; b < r.end; ++b) f(rows * b / bands, rows * (b + 1) / bands);
    });
}

struct Summary {
    std::vector<std::pair<std::string, Ratios>> ratios;
};

// ---------------------------------------------------------------------------------------------------
// Histograms

// Each thread counts into four private tables (consecutive samples to different ones), then adds them.
void omp_hist_u8(const uint8_t *p, size_t n, uint64_t *hist) {
    std::fill(hist, hist + 256, 0);
#pragma omp parallel
    {
        uint32_t t[4][256] = {};
#pragma omp for schedule(static) nowait
        for (size_t i = 0; i < n / 4; ++i) {
            ++t[0][p[4 * i]];
            ++t[1][p[4 * i + 1]];
            ++t[2][p[4 * i + 2]];
            ++t[3][p[4 * i + 3]];
        }
#pragma omp single nowait
        for (size_t i = n / 4 * 4; i < n; ++i) ++t[0][p[i]];
#pragma omp critical
        for (int b = 0; b < 256; ++b) hist[b] += uint64_t(t[0][b]) + t[1][b] + t[2][b] + t[3][b];
    }
}

// Two private tables per thread; values outside [0, 1024) are skipped.
void omp_hist_u32(const uint32_t *v, size_t n, uint64_t *hist) {
    std::fill(hist, hist + 1024, 0);
#pragma omp parallel
    {
        std::vector<uint32_t> t(2048, 0);
#pragma omp for schedule(static) nowait
        for (size_t i = 0; i < n / 2; ++i) {
            uint32_t a = v[2 * i], b = v[2 * i + 1];
            if (a < 1024) ++t[a];
            if (b < 1024) ++t[1024 + b];
        }
#pragma omp single nowait
        if (n % 2 && v[n - 1] < 1024) ++t[v[n - 1]];
#pragma omp critical
        for (int b = 0; b < 1024; ++b) hist[b] += uint64_t(t[b]) + t[1024 + b];
    }
}

// calcHist of each band, the bands' float histograms added.
void cv_hist_bands(const cv::Mat &img, int bins, uint64_t *hist) {
    const int bands = 2 * cv::getNumThreads();
    std::vector<cv::Mat> part(bands);
    const int channel = 0, size = bins;
    const float range[] = {0.f, float(bins)};
    const float *ranges[] = {range};
    cv::parallel_for_(cv::Range(0, bands), [&](const cv::Range &r) {
        for (int b = r.start; b < r.end; ++b) {
            cv::Mat rows = img.rowRange(img.rows * b / bands, img.rows * (b + 1) / bands);
            cv::calcHist(&rows, 1, &channel, cv::Mat(), part[b], 1, &size, ranges, true, false);
        }
    });
    for (int k = 0; k < bins; ++k) {
        double s = 0;
        for (const cv::Mat &m : part) s += m.at<float>(k);
        hist[k] = uint64_t(s);
    }
}

std::string same_counts(const std::vector<std::vector<uint64_t>> &hists) {
    for (const auto &h : hists)
        if (h != hists[0]) return "counts DIFFER";
    return "counts identical";
}

void bench_hist_u8(gpk_context *ctx, const Options &o, const Bandwidth &bw, Summary &sum, bool equal) {
    const std::string name = std::string("histogram u8 256 bins ") + (equal ? "all-equal" : "random") + ", " +
                             std::to_string(o.size) + "^2";
    if (!wanted(o, name)) return;
    const size_t n = size_t(o.size) * o.size;
    cv::Mat img(o.size, o.size, CV_8U);
    if (equal)
        img.setTo(cv::Scalar(0));
    else
        cv::RNG(12345).fill(img, cv::RNG::UNIFORM, 0, 256);
    const size_t nl = levels().size();
    std::vector<std::vector<uint64_t>> h(nl + 2, std::vector<uint64_t>(256));
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.width = p.height = size_t(o.size);
    std::vector<Contender> cs = gpk_levels({});
    for (size_t k = 0; k < nl; ++k)
        cs[k].run = [&, k] {
            check(ctx, gpk_histogram(ctx, &p, img.data, h[k].data(), nullptr), "histogram");
        };
    cs = with_peers(
        std::move(cs),
        {
            {"OpenCV calcHist in bands", [&] { cv_hist_bands(img, 256, h[nl].data()); }},
            {"OpenMP, 4 private tables a thread", [&] { omp_hist_u8(img.data, n, h[nl + 1].data()); }},
        });
    time_alternating(cs, o.rounds);
    sum.ratios.push_back({name, report({name, n / 1e9, "GB/s", double(n), same_counts(h)}, cs, bw)});
}

void bench_hist_u32(gpk_context *ctx, const Options &o, const Bandwidth &bw, Summary &sum) {
    const std::string name = "histogram u32 1024 bins random, " + std::to_string(o.size) + "^2";
    if (!wanted(o, name)) return;
    const size_t n = size_t(o.size) * o.size;
    std::vector<uint32_t> v(n);
    std::mt19937 gen(777);
    for (auto &x : v) x = gen() & 1023u;
    const size_t nl = levels().size();
    std::vector<std::vector<uint64_t>> h(nl + 1, std::vector<uint64_t>(1024));
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.dtype = GPK_U32;
    p.width = p.height = size_t(o.size);
    p.bins = 1024;
    p.upper = 1024;
    std::vector<Contender> cs = gpk_levels({});
    for (size_t k = 0; k < nl; ++k)
        cs[k].run = [&, k] {
            check(ctx, gpk_histogram(ctx, &p, v.data(), h[k].data(), nullptr), "histogram");
        };
    cs =
        with_peers(std::move(cs),
                   {{"OpenMP, 2 private tables a thread", [&] { omp_hist_u32(v.data(), n, h[nl].data()); }}});
    time_alternating(cs, o.rounds);
    sum.ratios.push_back({name, report({name, 4.0 * n / 1e9, "GB/s", 4.0 * n, same_counts(h)}, cs, bw)});
}

// ---------------------------------------------------------------------------------------------------
// Filters: the same taps for gpk and OpenCV (BORDER_REPLICATE, gpk's clamp). Float taps run on gpk's float
// path with f32 sums; integer taps with sum normalisation on its exact path, beside OpenCV's filter of the
// taps divided by their sum (which rounds its float sums: outputs may differ by 1).

std::vector<float> random_taps(cv::RNG &rng, int count) {
    std::vector<float> t(static_cast<size_t>(count));
    double s = 0;
    for (float &x : t) s += (x = float(rng.uniform(0.1, 1.0)));
    for (float &x : t) x = float(x / s);
    return t;
}

std::vector<float> gaussian_taps(int taps, double sigma) {
    cv::Mat g = cv::getGaussianKernel(taps, sigma, CV_32F);
    return std::vector<float>(g.ptr<float>(), g.ptr<float>() + taps);
}

std::vector<float> binomial_taps(int taps) {
    std::vector<float> t(1, 1.f);
    for (int k = 1; k < taps; ++k) {
        std::vector<float> next(t.size() + 1, 0.f);
        for (size_t i = 0; i < t.size(); ++i) next[i] += t[i], next[i + 1] += t[i];
        t = next;
    }
    return t;
}

// The largest difference between two images of the same type, as double.
double max_difference(const cv::Mat &a, const cv::Mat &b) {
    return cv::norm(a, b, cv::NORM_INF);
}

// Every contender's output against gpk's at the widest level.
std::string filter_check(const std::vector<cv::Mat> &outs, size_t count, bool integer) {
    double worst = 0, scale = integer ? 1.0 : std::max(1e-30, cv::norm(outs[0], cv::NORM_INF));
    for (size_t k = 1; k < count; ++k) worst = std::max(worst, max_difference(outs[0], outs[k]));
    char buf[96];
    if (integer)
        std::snprintf(buf, sizeof buf, "max |difference| = %.0f", worst);
    else
        std::snprintf(buf, sizeof buf, "max |difference| / max |out| = %.1e", worst / scale);
    return buf;
}

// A filter as both libraries take it: gpk's (2D or separable) and OpenCV's call on a band of rows.
struct FilterCase {
    std::string name = {};
    int type = CV_8U;   // CV_8U, CV_8UC3, CV_32F
    bool exact = false; // integer taps, sum normalisation (gpk's exact path); else float taps, f32 sums
    std::vector<float> taps2d = {}; // k x k (2D), or empty for a separable filter
    int k = 0;
    std::vector<float> row = {}, col = {}; // separable
};

void run_filter_case(gpk_context *ctx, const Options &o, const Bandwidth &bw, Summary &sum,
                     const FilterCase &fc) {
    const std::string name = fc.name + ", " + std::to_string(o.size) + "^2";
    if (!wanted(o, name)) return;
    const int n = o.size;
    cv::Mat in(n, n, fc.type);
    cv::RNG rng(4242);
    const bool bytes = CV_MAT_DEPTH(fc.type) == CV_8U;
    if (bytes)
        rng.fill(in, cv::RNG::UNIFORM, 0, 256);
    else
        rng.fill(in, cv::RNG::UNIFORM, 0.0, 1.0);
    const size_t nl = levels().size();
    std::vector<cv::Mat> outs;
    for (size_t k = 0; k < nl + 2; ++k) outs.push_back(cv::Mat(n, n, fc.type));
    // gpk's filter, and OpenCV's taps divided by the sum where gpk normalises.
    const bool separable = fc.taps2d.empty();
    double tap_sum = 1;
    gpk_filter *f = nullptr;
    if (separable) {
        std::vector<double> dr(fc.row.begin(), fc.row.end()), dc(fc.col.begin(), fc.col.end());
        if (gpk_filter_create_separable(&f, dr.size(), dr.data(), dc.size(), dc.data()) != GPK_OK)
            die("filter");
        if (fc.exact)
            tap_sum = std::accumulate(dr.begin(), dr.end(), 0.0) * std::accumulate(dc.begin(), dc.end(), 0.0);
    } else {
        std::vector<double> d(fc.taps2d.begin(), fc.taps2d.end());
        if (gpk_filter_create_2d(&f, size_t(fc.k), size_t(fc.k), d.data()) != GPK_OK) die("filter");
        if (fc.exact) tap_sum = std::accumulate(d.begin(), d.end(), 0.0);
    }
    const float scale = float(1.0 / std::sqrt(tap_sum));
    cv::Mat kernel, mx, my;
    if (separable) {
        mx = cv::Mat(fc.row, true) * scale;
        my = cv::Mat(fc.col, true) * scale;
        kernel = my * mx.t(); // the outer product: column taps down, row taps across
    } else {
        kernel = cv::Mat(fc.k, fc.k, CV_32F, const_cast<float *>(fc.taps2d.data())) * (scale * scale);
    }
    gpk_image desc;
    gpk_image_init(&desc, bytes ? GPK_U8 : GPK_F32, size_t(n), size_t(n), unsigned(CV_MAT_CN(fc.type)));
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = f;
    if (fc.exact)
        p.normalize = GPK_NORMALIZE_SUM;
    else
        p.accumulate = GPK_ACCUMULATE_F32;
    std::vector<Contender> cs = gpk_levels({});
    for (size_t k = 0; k < nl; ++k)
        cs[k].run = [&, k] {
            check(ctx, gpk_convolve(ctx, &p, &desc, in.data, &desc, outs[k].data), "convolve");
        };
    // OpenCV's 2D filter is a peer of every case; its separable one of the separable cases, beside it.
    std::vector<Contender> peers = {{"OpenCV filter2D in bands", [&] {
                                         in_bands(n, [&](int y0, int y1) {
                                             cv::Mat d = outs[nl].rowRange(y0, y1);
                                             cv::filter2D(in.rowRange(y0, y1), d, -1, kernel,
                                                          cv::Point(-1, -1), 0, cv::BORDER_REPLICATE);
                                         });
                                     }}};
    if (separable)
        peers.push_back({"OpenCV sepFilter2D in bands", [&] {
                             in_bands(n, [&](int y0, int y1) {
                                 cv::Mat d = outs[nl + 1].rowRange(y0, y1);
                                 cv::sepFilter2D(in.rowRange(y0, y1), d, -1, mx, my, cv::Point(-1, -1), 0,
                                                 cv::BORDER_REPLICATE);
                             });
                         }});
    cs = with_peers(std::move(cs), std::move(peers));
    time_alternating(cs, o.rounds);
    const double pixels = double(n) * n, moved = 2.0 * pixels * double(in.elemSize());
    sum.ratios.push_back(
        {name, report({name, pixels / 1e6, "MPix/s", moved, filter_check(outs, cs.size(), bytes)}, cs, bw)});
    gpk_filter_destroy(f);
}

// The convolution rows: 2D and separable filters on one and three channels, exact and float.
std::vector<FilterCase> filter_cases() {
    std::vector<FilterCase> cases;
    auto box = [](int k) { return std::vector<float>(size_t(k) * size_t(k), 1.f); };
    auto outer = [](const std::vector<float> &a) {
        std::vector<float> t;
        for (float x : a)
            for (float y : a) t.push_back(x * y);
        return t;
    };
    for (int k : {3, 5, 9}) {
        const std::string kn = std::to_string(k) + "x" + std::to_string(k);
        cases.push_back({"filter u8 " + kn + " box, sum, clamp", CV_8U, true, box(k), k});
    }
    for (int k : {3, 9}) {
        cv::RNG rng(uint64_t(100 + k));
        const std::string kn = std::to_string(k) + "x" + std::to_string(k);
        cases.push_back(
            {"filter f32 " + kn + " random taps, clamp", CV_32F, false, random_taps(rng, k * k), k});
    }
    for (int taps : {17, 65})
        for (bool gauss : {false, true}) {
            cv::RNG rng(uint64_t(200 + taps));
            FilterCase c{"separable f32 " + std::to_string(taps) + " taps " + (gauss ? "Gaussian" : "random"),
                         CV_32F, false};
            c.row = gauss ? gaussian_taps(taps, (taps / 2) / 3.0) : random_taps(rng, taps);
            c.col = gauss ? c.row : random_taps(rng, taps);
            cases.push_back(c);
        }
    cases.push_back({"filter u8 3 channels 3x3 1-2-1, sum", CV_8UC3, true, outer({1, 2, 1}), 3});
    cases.push_back({"filter u8 3 channels 5x5 box, sum", CV_8UC3, true, box(5), 5});
    FilterCase gauss{"separable u8 5x5 Gaussian real taps (sigma 1)", CV_8U, false};
    gauss.row = gauss.col = gaussian_taps(5, 1.0);
    cases.push_back(gauss);
    FilterCase binomial{"separable u8 7x7 binomial, sum", CV_8U, true};
    binomial.row = binomial.col = binomial_taps(7);
    cases.push_back(binomial);
    return cases;
}

// ---------------------------------------------------------------------------------------------------
// Heat: gpk's calls of several lengths, fitted to fixed + per-iteration costs, beside one iteration of
// an OpenMP loop vectorised with `omp simd` (the README's update rule, "What gpk computes", on the padded
// grid, halo columns wrapped).

double omp_heat_iteration(const double *cond, double *src, double *dst, size_t n, size_t m) {
    const size_t w = m + 2;
    const double cdir = 0.25 * std::sqrt(2.0) / (std::sqrt(2.0) + 1.0), cdiag = 0.25 / (std::sqrt(2.0) + 1.0);
    double maxdiff = 0;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (size_t i = 0; i < n + 2; ++i) {
            src[i * w + m + 1] = src[i * w + 1];
            src[i * w] = src[i * w + m];
        }
#pragma omp for schedule(static) reduction(max : maxdiff)
        for (size_t i = 1; i <= n; ++i) {
            const double *up = src + (i - 1) * w, *mid = src + i * w, *down = src + (i + 1) * w;
            const double *c = cond + (i - 1) * m;
            double *out = dst + i * w, md = 0;
#pragma omp simd reduction(max : md)
            for (size_t j = 1; j <= m; ++j) {
                const double k = c[j - 1], r = 1 - k;
                const double v = k * mid[j] + (down[j] + up[j] + mid[j + 1] + mid[j - 1]) * (r * cdir) +
                                 (up[j - 1] + up[j + 1] + down[j - 1] + down[j + 1]) * (r * cdiag);
                out[j] = v;
                md = std::max(md, std::fabs(v - mid[j]));
            }
            maxdiff = std::max(maxdiff, md);
        }
    }
    return maxdiff;
}

// Least squares t = fixed + per_iteration * iterations.
struct Fit {
    double fixed, per_iteration;
};

Fit fit_line(const std::vector<double> &x, const std::vector<double> &y) {
    double mx = 0, my = 0;
    for (size_t k = 0; k < x.size(); ++k) mx += x[k] / x.size(), my += y[k] / y.size();
    double sxy = 0, sxx = 0;
    for (size_t k = 0; k < x.size(); ++k) sxy += (x[k] - mx) * (y[k] - my), sxx += (x[k] - mx) * (x[k] - mx);
    const double slope = sxy / sxx;
    return {my - slope * mx, slope};
}

void bench_heat(gpk_context *ctx, const Options &o, const Bandwidth &bw, Summary &sum) {
    const size_t n = 4096, m = 4096;
    const std::string name = "heat f64 4096^2";
    if (!wanted(o, name)) return;
    std::mt19937_64 gen(99);
    std::uniform_real_distribution<double> ut(-100, 100), uc(0, 1);
    std::vector<double> tinit(n * m), cond(n * m), tfinal(n * m);
    for (size_t k = 0; k < n * m; ++k) tinit[k] = ut(gen), cond[k] = uc(gen);
    // The peer's padded grids, halo rows fixed in both.
    const size_t w = m + 2;
    std::vector<double> a((n + 2) * w), b((n + 2) * w);
    for (size_t i = 0; i < n; ++i) std::memcpy(&a[(i + 1) * w + 1], &tinit[i * m], m * sizeof(double));
    std::memcpy(&a[1], &a[w + 1], m * sizeof(double));
    std::memcpy(&a[(n + 1) * w + 1], &a[n * w + 1], m * sizeof(double));
    b = a;
    double *src = a.data(), *dst = b.data();
    // A call with the final report asked for (final != NULL: the final grid's min, max and mean) and
    // without it (which skips them).
    gpk_heat_report report;
    auto gpk_call = [&](size_t iterations, bool with_report) {
        gpk_heat_params p;
        gpk_heat_params_init(&p);
        p.rows = n;
        p.cols = m;
        p.maxiter = iterations;
        check(
            ctx,
            gpk_heat_run(ctx, &p, tinit.data(), cond.data(), tfinal.data(), with_report ? &report : nullptr),
            "heat");
    };
    const size_t lengths[] = {1, 4, 8, 40, 80};
    std::vector<Contender> cs;
    for (bool with_report : {false, true})
        for (size_t len : lengths)
            cs.push_back({"gpk, maxiter " + std::to_string(len) + (with_report ? ", final report" : ""),
                          [&, len, with_report] { gpk_call(len, with_report); }});
    cs.push_back({"OpenMP + omp simd, 1 iteration", [&] {
                      std::swap(src, dst);
                      omp_heat_iteration(cond.data(), src, dst, n, m);
                  }});
    time_alternating(cs, o.rounds);
    auto fit_of = [&](size_t first) { // calls of 4, 8, 40 and 80 iterations from cs[first]
        std::vector<double> x, y;
        for (size_t k = 1; k < 5; ++k)
            x.push_back(double(lengths[k])), y.push_back(median(cs[first + k].times));
        return fit_line(x, y);
    };
    const Fit fit = fit_of(0), fit_report = fit_of(5);
    const double peer = median(cs.back().times), cells = double(n) * m;
    std::printf("%s  [maxiter 4, 8, 40, 80 fitted: time = fixed + maxiter * per-iteration]\n", name.c_str());
    for (const Contender &c : cs) std::printf("  %-44s %9.3f ms\n", c.name.c_str(), median(c.times) * 1e3);
    std::printf(
        "  gpk per iteration %.3f ms (%.0f MCells/s), fixed cost of a call %.3f ms (%.2f iterations); "
        "a 1-iteration call %.3f ms\n",
        fit.per_iteration * 1e3, cells / fit.per_iteration / 1e6, fit.fixed * 1e3,
        fit.fixed / fit.per_iteration, median(cs[0].times) * 1e3);
    std::printf("  with the final report: per iteration %.3f ms, fixed cost %.3f ms (%.2f iterations); "
                "a 1-iteration call %.3f ms\n",
                fit_report.per_iteration * 1e3, fit_report.fixed * 1e3,
                fit_report.fixed / fit_report.per_iteration, median(cs[5].times) * 1e3);
    std::printf("  peer per iteration %.3f ms (%.0f MCells/s, %.1f GB/s, %.0f%% of copy bw at 24 B/cell)\n",
                peer * 1e3, cells / peer / 1e6, 24 * cells / peer / 1e9, 100 * 24 * cells / peer / bw.copy);
    std::printf("  => gpk %.2fx the peer per iteration\n\n", peer / fit.per_iteration);
    sum.ratios.push_back({name + " per iteration", {peer / fit.per_iteration, {}}});
}

Options parse(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--size" && i + 1 < argc)
            o.size = std::atoi(argv[++i]);
        else if (a == "--rounds" && i + 1 < argc)
            o.rounds = std::atoi(argv[++i]);
        else if (a == "--only" && i + 1 < argc)
            o.only = argv[++i];
        else
            die("usage: bench_cpu [--size N] [--rounds R] [--only SUBSTR[,SUBSTR...]]");
    }
    if (o.size < 64 || o.rounds < 1) die("--size must be at least 64 and --rounds at least 1");
    return o;
}

} // namespace

int main(int argc, char **argv) {
    // OpenMP threads that spin after a loop would take a core from gpk's next call: they sleep instead.
    // libgomp reads the variable when it starts, so the program starts itself again with it set.
    if (!std::getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
    }
    const Options o = parse(argc, argv);
    gpk_context_options co;
    gpk_context_options_init(&co);
    co.backend = GPK_BACKEND_CPU;
    gpk_context *ctx = nullptr;
    if (gpk_context_create(&ctx, &co) != GPK_OK) die(gpk_context_last_error(nullptr));
    std::printf(
        "gpk %s CPU backend beside OpenCV %s (%d threads) and OpenMP (%d threads, OMP_WAIT_POLICY=%s); "
        "medians of %d alternating rounds\n",
        gpk_version_string(), CV_VERSION, cv::getNumThreads(), omp_get_max_threads(),
        std::getenv("OMP_WAIT_POLICY"), o.rounds);
    const Bandwidth bw = measure_bandwidth(o.rounds);
    std::printf("memory bandwidth, %u threads: copy %.1f GB/s (read + write), read %.1f GB/s\n\n",
                std::max(1u, std::thread::hardware_concurrency()), bw.copy / 1e9, bw.read / 1e9);
    if (levels()[0] == "machine") {
        std::printf(
            "this libgpk has no test hooks (-Dtest_hooks=true): gpk runs at the machine's own level\n\n");
    } else {
        std::printf("gpk's CPU kernels on this machine: ");
        for (const std::string &level : levels())
            std::printf("%s%s", level.c_str(), &level == &levels().back() ? "" : ", ");
        std::printf(" (each gpk row runs at every level, widest first; heat at the widest)\n\n");
    }
    Summary sum;
    bench_hist_u8(ctx, o, bw, sum, false);
    bench_hist_u8(ctx, o, bw, sum, true);
    bench_hist_u32(ctx, o, bw, sum);
    for (const FilterCase &c : filter_cases()) run_filter_case(ctx, o, bw, sum, c);
    use_level(levels()[0]);
    bench_heat(ctx, o, bw, sum);
    const Bandwidth after = measure_bandwidth(o.rounds);
    std::printf("memory bandwidth after: copy %.1f GB/s, read %.1f GB/s\n\nsummary (best peer / gpk):\n",
                after.copy / 1e9, after.read / 1e9);
    for (const auto &r : sum.ratios) {
        std::printf("  %-56s %5.2fx%s", r.first.c_str(), r.second.peer,
                    r.second.peer < 1.1 ? "  < 1.1" : "       ");
        for (size_t k = 0; k < r.second.levels.size(); ++k)
            std::printf("   %s/%s %5.2fx", levels()[k].c_str(), levels()[k + 1].c_str(), r.second.levels[k]);
        std::printf("\n");
    }
    gpk_context_destroy(ctx);
    return 0;
}
