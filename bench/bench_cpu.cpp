// gpk's CPU backend through its C API beside what a CPU user would pick instead (PERF.md, "CPU backend"):
// OpenCV 4 filters and histograms run in row bands on every core, and OpenMP loops. Every case times gpk
// and its peers in the same process on the same data, alternating (the order reversed every round), and
// prints medians, the ratio of the best peer's median to gpk's, the bytes moved per second and their
// fraction of the machine's copy bandwidth, measured here too. Results are checked against each other.
//
// Usage: bench_cpu [--size N] [--rounds R] [--only SUBSTR[,SUBSTR...]]
#include "gpk.h"

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

// One way of computing a case: gpk or a peer.
struct Contender {
    std::string name;
    std::function<void()> run;
    std::vector<double> times = {};
};

// Times every contender `rounds` times after a warm-up, alternating: round r runs them in order, round
// r + 1 in reverse, so that none always follows the same neighbour (caches, a peer's spinning threads).
void time_alternating(std::vector<Contender> &cs, int rounds) {
    for (auto &c : cs) c.run();
    for (int r = 0; r < rounds; ++r)
        for (size_t k = 0; k < cs.size(); ++k) {
            Contender &c = cs[r % 2 ? cs.size() - 1 - k : k];
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

double report(const CaseInfo &info, const std::vector<Contender> &cs, const Bandwidth &bw) {
    const double gpk = median(cs[0].times);
    double best = 1e300;
    std::string best_name;
    for (size_t k = 1; k < cs.size(); ++k)
        if (median(cs[k].times) < best) best = median(cs[k].times), best_name = cs[k].name;
    std::printf("%s  [%s]\n", info.name.c_str(), info.check.c_str());
    for (const Contender &c : cs) {
        const double t = median(c.times), fastest = *std::min_element(c.times.begin(), c.times.end());
        std::printf("  %-40s %9.3f ms (best %8.3f) %9.1f %-8s %6.1f GB/s %4.0f%% of copy bw\n",
                    c.name.c_str(), t * 1e3, fastest * 1e3, info.work / t, info.unit, info.bytes / t / 1e9,
                    100.0 * info.bytes / t / bw.copy);
    }
    std::printf("  => gpk %.2fx the best peer (%s) by medians\n\n", best / gpk, best_name.c_str());
    std::fflush(stdout);
    return best / gpk;
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
    std::vector<std::pair<std::string, double>> ratios;
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
    std::vector<std::vector<uint64_t>> h(3, std::vector<uint64_t>(256));
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.width = p.height = size_t(o.size);
    std::vector<Contender> cs = {
        {"gpk", [&] { check(ctx, gpk_histogram(ctx, &p, img.data, h[0].data(), nullptr), "histogram"); }},
        {"OpenCV calcHist in bands", [&] { cv_hist_bands(img, 256, h[1].data()); }},
        {"OpenMP, 4 private tables a thread", [&] { omp_hist_u8(img.data, n, h[2].data()); }},
    };
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
    std::vector<std::vector<uint64_t>> h(2, std::vector<uint64_t>(1024));
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.dtype = GPK_U32;
    p.width = p.height = size_t(o.size);
    p.bins = 1024;
    p.upper = 1024;
    std::vector<Contender> cs = {
        {"gpk", [&] { check(ctx, gpk_histogram(ctx, &p, v.data(), h[0].data(), nullptr), "histogram"); }},
        {"OpenMP, 2 private tables a thread", [&] { omp_hist_u32(v.data(), n, h[1].data()); }},
    };
    time_alternating(cs, o.rounds);
    sum.ratios.push_back({name, report({name, 4.0 * n / 1e9, "GB/s", 4.0 * n, same_counts(h)}, cs, bw)});
}

// ---------------------------------------------------------------------------------------------------
// Filters: the same float taps for gpk (f32 accumulation, clamp) and OpenCV (BORDER_REPLICATE).

std::vector<float> random_taps(cv::RNG &rng, int count) {
    std::vector<float> t(static_cast<size_t>(count));
    double s = 0;
    for (float &x : t) s += (x = float(rng.uniform(0.1, 1.0)));
    for (float &x : t) x = float(x / s);
    return t;
}

std::vector<float> gaussian_taps(int taps) {
    cv::Mat g = cv::getGaussianKernel(taps, (taps / 2) / 3.0, CV_32F);
    return std::vector<float>(g.ptr<float>(), g.ptr<float>() + taps);
}

// The largest difference between two images of the same type, as double.
double max_difference(const cv::Mat &a, const cv::Mat &b) {
    return cv::norm(a, b, cv::NORM_INF);
}

std::string filter_check(const std::vector<cv::Mat> &outs, bool integer) {
    double worst = 0, scale = integer ? 1.0 : std::max(1e-30, cv::norm(outs[0], cv::NORM_INF));
    for (size_t k = 1; k < outs.size(); ++k) worst = std::max(worst, max_difference(outs[0], outs[k]));
    char buf[96];
    if (integer)
        std::snprintf(buf, sizeof buf, "max |gpk - peer| = %.0f", worst);
    else
        std::snprintf(buf, sizeof buf, "max |gpk - peer| / max |out| = %.1e", worst / scale);
    return buf;
}

void run_filter_case(gpk_context *ctx, const Options &o, const Bandwidth &bw, Summary &sum,
                     const std::string &name, int type, const gpk_filter *f,
                     const std::function<void(const cv::Mat &, cv::Mat &)> &peer,
                     const std::string &peer_name) {
    const int n = o.size;
    cv::Mat in(n, n, type);
    cv::RNG rng(4242);
    if (type == CV_8U)
        rng.fill(in, cv::RNG::UNIFORM, 0, 256);
    else
        rng.fill(in, cv::RNG::UNIFORM, 0.0, 1.0);
    std::vector<cv::Mat> outs = {cv::Mat(n, n, type), cv::Mat(n, n, type)};
    gpk_image desc;
    gpk_image_init(&desc, type == CV_8U ? GPK_U8 : GPK_F32, size_t(n), size_t(n), 1);
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = f;
    p.accumulate = GPK_ACCUMULATE_F32;
    std::vector<Contender> cs = {
        {"gpk", [&] { check(ctx, gpk_convolve(ctx, &p, &desc, in.data, &desc, outs[0].data), "convolve"); }},
        {peer_name,
         [&] {
             in_bands(n, [&](int y0, int y1) {
                 cv::Mat d = outs[1].rowRange(y0, y1);
                 peer(in.rowRange(y0, y1), d);
             });
         }},
    };
    time_alternating(cs, o.rounds);
    const double pixels = double(n) * n, bytes = 2.0 * pixels * in.elemSize();
    sum.ratios.push_back(
        {name, report({name, pixels / 1e6, "MPix/s", bytes, filter_check(outs, type == CV_8U)}, cs, bw)});
}

void bench_filter_2d(gpk_context *ctx, const Options &o, const Bandwidth &bw, Summary &sum, int type, int k) {
    const std::string kn = std::to_string(k) + "x" + std::to_string(k);
    const std::string name = std::string("filter ") + (type == CV_8U ? "u8 " : "f32 ") + kn + " clamp, " +
                             std::to_string(o.size) + "^2";
    if (!wanted(o, name)) return;
    cv::RNG rng(uint64_t(100 + k));
    std::vector<float> taps = random_taps(rng, k * k);
    std::vector<double> dtaps(taps.begin(), taps.end());
    gpk_filter *f = nullptr;
    if (gpk_filter_create_2d(&f, size_t(k), size_t(k), dtaps.data()) != GPK_OK) die("filter");
    cv::Mat kernel(k, k, CV_32F, taps.data());
    run_filter_case(
        ctx, o, bw, sum, name, type, f,
        [&](const cv::Mat &in, cv::Mat &out) {
            cv::filter2D(in, out, -1, kernel, cv::Point(-1, -1), 0, cv::BORDER_REPLICATE);
        },
        "OpenCV filter2D in bands");
    gpk_filter_destroy(f);
}

void bench_separable(gpk_context *ctx, const Options &o, const Bandwidth &bw, Summary &sum, int taps,
                     bool gauss) {
    const std::string name = "separable f32 " + std::to_string(taps) + " taps " +
                             (gauss ? "Gaussian" : "random") + ", " + std::to_string(o.size) + "^2";
    if (!wanted(o, name)) return;
    cv::RNG rng(uint64_t(200 + taps));
    std::vector<float> kx = gauss ? gaussian_taps(taps) : random_taps(rng, taps);
    std::vector<float> ky = gauss ? kx : random_taps(rng, taps);
    std::vector<double> dx(kx.begin(), kx.end()), dy(ky.begin(), ky.end());
    gpk_filter *f = nullptr;
    if (gpk_filter_create_separable(&f, size_t(taps), dx.data(), size_t(taps), dy.data()) != GPK_OK)
        die("filter");
    cv::Mat mx(taps, 1, CV_32F, kx.data()), my(taps, 1, CV_32F, ky.data());
    run_filter_case(
        ctx, o, bw, sum, name, CV_32F, f,
        [&](const cv::Mat &in, cv::Mat &out) {
            cv::sepFilter2D(in, out, -1, mx, my, cv::Point(-1, -1), 0, cv::BORDER_REPLICATE);
        },
        "OpenCV sepFilter2D in bands");
    gpk_filter_destroy(f);
}

// ---------------------------------------------------------------------------------------------------
// Heat: gpk's calls of several lengths, fitted to fixed + per-iteration costs, beside one iteration of
// an OpenMP loop vectorised with `omp simd` (SPEC §1's update on the padded grid, halo columns wrapped).

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
    sum.ratios.push_back({name + " per iteration", peer / fit.per_iteration});
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
    Summary sum;
    bench_hist_u8(ctx, o, bw, sum, false);
    bench_hist_u8(ctx, o, bw, sum, true);
    bench_hist_u32(ctx, o, bw, sum);
    for (int k : {3, 5, 9}) bench_filter_2d(ctx, o, bw, sum, CV_8U, k);
    for (int k : {3, 9}) bench_filter_2d(ctx, o, bw, sum, CV_32F, k);
    for (int taps : {17, 65})
        for (bool gauss : {false, true}) bench_separable(ctx, o, bw, sum, taps, gauss);
    bench_heat(ctx, o, bw, sum);
    const Bandwidth after = measure_bandwidth(o.rounds);
    std::printf("memory bandwidth after: copy %.1f GB/s, read %.1f GB/s\n\nsummary (best peer / gpk):\n",
                after.copy / 1e9, after.read / 1e9);
    for (const auto &r : sum.ratios)
        std::printf("  %-44s %5.2fx%s\n", r.first.c_str(), r.second, r.second < 1.1 ? "  < 1.1" : "");
    gpk_context_destroy(ctx);
    return 0;
}
