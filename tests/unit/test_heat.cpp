// gpk_heat_run on the CPU backend against a naive reference written here straight from the contract (README,
// "What gpk computes"), and against the course's published numbers for pat1_100x150.pgm.
#include "capped_memory.hpp"
#include "hooks.hpp"
#include "check.hpp"
#include "cpu_context.hpp"
#include "cpu_isa.hpp"
#include "heat_resume.hpp"
#include "pat1.hpp"
#include "heat_statistics.hpp"
#include "gpk.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

// Sanitizer allocators abort on out-of-memory instead of throwing, so the check is left to plain builds.

namespace {

// ---------------------------------------------------------------------------------------------------
// The reference: plain loops, the contract's order of operations, one report per periodic iteration.

struct Report {
    size_t niter;
    double tmin, tmax, maxdiff, tavg;
};

struct RefRun {
    size_t niter = 0;
    std::vector<double> maxdiffs; // of every iteration done
    std::vector<Report> periodic;
    Report final{};
    std::vector<double> grid; // final interior, N*M
};

Report interior_report(const std::vector<double> &g, size_t n, size_t m, size_t niter, double maxdiff) {
    size_t w = m + 2;
    Report r{niter, g[w + 1], g[w + 1], maxdiff, 0};
    double sum = 0;
    for (size_t i = 1; i <= n; ++i)
        for (size_t j = 1; j <= m; ++j) {
            double v = g[i * w + j];
            r.tmin = std::min(r.tmin, v);
            r.tmax = std::max(r.tmax, v);
            sum += v;
        }
    r.tavg = sum / double(n * m);
    return r;
}

RefRun reference_heat(const std::vector<double> &tinit, const std::vector<double> &cond, size_t n, size_t m,
                      size_t maxiter, double threshold, size_t period) {
    const double cdir = 0.25 * std::sqrt(2.0) / (std::sqrt(2.0) + 1.0);
    const double cdiag = 0.25 / (std::sqrt(2.0) + 1.0);
    size_t w = m + 2;
    std::vector<double> src((n + 2) * w, 0.0), dst;
    for (size_t i = 1; i <= n; ++i)
        for (size_t j = 1; j <= m; ++j) src[i * w + j] = tinit[(i - 1) * m + (j - 1)];
    for (size_t j = 1; j <= m; ++j) {
        src[j] = src[w + j];
        src[(n + 1) * w + j] = src[n * w + j];
    }
    dst = src;
    RefRun run;
    double maxdiff = 0;
    size_t iter = 1;
    for (; iter <= maxiter; ++iter) {
        std::swap(src, dst);
        for (size_t i = 0; i <= n + 1; ++i) {
            src[i * w + m + 1] = src[i * w + 1];
            src[i * w] = src[i * w + m];
        }
        maxdiff = 0;
        for (size_t i = 1; i <= n; ++i)
            for (size_t j = 1; j <= m; ++j) {
                double wc = cond[(i - 1) * m + (j - 1)], r = 1 - wc;
                auto s = [&](size_t a, size_t b) { return src[a * w + b]; };
                double v =
                    wc * s(i, j) + (s(i + 1, j) + s(i - 1, j) + s(i, j + 1) + s(i, j - 1)) * (r * cdir) +
                    (s(i - 1, j - 1) + s(i - 1, j + 1) + s(i + 1, j - 1) + s(i + 1, j + 1)) * (r * cdiag);
                dst[i * w + j] = v;
                maxdiff = std::max(maxdiff, std::fabs(v - s(i, j)));
            }
        run.maxdiffs.push_back(maxdiff);
        if (maxdiff < threshold) break;
        if (period > 0 && iter % period == 0)
            run.periodic.push_back(interior_report(dst, n, m, iter, maxdiff));
    }
    run.niter = std::min(iter, maxiter);
    run.final = interior_report(dst, n, m, run.niter, maxdiff);
    for (size_t i = 1; i <= n; ++i)
        for (size_t j = 1; j <= m; ++j) run.grid.push_back(dst[i * w + j]);
    return run;
}

// ---------------------------------------------------------------------------------------------------
// Running gpk and recording what the callbacks saw.

struct Seen {
    std::vector<gpk_heat_report> periodic;
    std::vector<gpk_heat_report> finals;
    std::vector<size_t> progress_iters;
    std::vector<double> progress_maxdiffs, progress_times;
    size_t stop_report_at = 0;   // the report callback returns 1 at this niter (0: never)
    size_t stop_progress_at = 0; // the progress callback returns 1 from this niter on (0: never)
};

int on_report(const gpk_heat_report *r, int is_final, void *user) {
    Seen *seen = static_cast<Seen *>(user);
    (is_final ? seen->finals : seen->periodic).push_back(*r);
    return !is_final && seen->stop_report_at == r->niter;
}

int on_progress(size_t niter, double maxdiff, double time, void *user) {
    Seen *seen = static_cast<Seen *>(user);
    seen->progress_iters.push_back(niter);
    seen->progress_maxdiffs.push_back(maxdiff);
    seen->progress_times.push_back(time);
    return seen->stop_progress_at && niter >= seen->stop_progress_at;
}

struct GpkRun {
    gpk_status status = GPK_OK;
    std::string message;
    gpk_heat_report final{};
    std::vector<double> grid;
    Seen seen;
};

// A run with every callback recording into run.seen; without `report`, neither the final report nor the
// report callback is asked for (and the progress callback only where progress_interval is set).
GpkRun gpk_heat(gpk_context *ctx, const std::vector<double> &tinit, const std::vector<double> &cond, size_t n,
                size_t m, size_t maxiter, double threshold, size_t period, Seen seen = {},
                size_t progress_interval = 0, bool report = true) {
    GpkRun run;
    run.seen = seen;
    run.grid.assign(n * m, -12345.0);
    gpk_heat_params p;
    gpk_heat_params_init(&p);
    p.rows = n;
    p.cols = m;
    p.maxiter = maxiter;
    p.threshold = threshold;
    p.period = period;
    p.on_report = report ? on_report : nullptr;
    p.on_progress = report || progress_interval ? on_progress : nullptr;
    p.progress_interval = progress_interval;
    p.user_data = &run.seen;
    run.status =
        gpk_heat_run(ctx, &p, tinit.data(), cond.data(), run.grid.data(), report ? &run.final : nullptr);
    run.message = gpk_context_last_error(ctx);
    return run;
}

bool close_rel(double a, double b, double rel = 1e-12) {
    return a == b || std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
}

// A report as the reference run made it, within 1e-12 relative (the reference sums in another order).
bool matches(const gpk_heat_report &got, const Report &want) {
    return got.niter == want.niter && close_rel(got.tmin, want.tmin) && close_rel(got.tmax, want.tmax) &&
           close_rel(got.maxdiff, want.maxdiff) && close_rel(got.tavg, want.tavg);
}

bool same_grid(const std::vector<double> &got, const std::vector<double> &want) {
    if (got.size() != want.size()) return false;
    for (size_t k = 0; k < got.size(); ++k)
        if (!(std::fabs(got[k] - want[k]) <= 1e-12 * std::max(1.0, std::fabs(want[k])))) return false;
    return true;
}

std::string label(size_t n, size_t m, size_t maxiter, double threshold, size_t period) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%zux%zu maxiter %zu threshold %.17g period %zu", n, m, maxiter, threshold,
                  period);
    return buf;
}

// Everything a run must agree on with the reference: niter, every report, the final grid.
void check_against_reference(gpk_context *ctx, const std::vector<double> &t, const std::vector<double> &c,
                             size_t n, size_t m, size_t maxiter, double threshold, size_t period) {
    RefRun ref = reference_heat(t, c, n, m, maxiter, threshold, period);
    GpkRun got = gpk_heat(ctx, t, c, n, m, maxiter, threshold, period);
    std::string what = label(n, m, maxiter, threshold, period);
    CHECK_MSG(got.status == GPK_OK, what + ": " + got.message);
    CHECK_MSG(got.final.niter == ref.niter,
              what + ": niter " + std::to_string(got.final.niter) + " vs " + std::to_string(ref.niter));
    CHECK_MSG(matches(got.final, ref.final), what + ": final report");
    CHECK_MSG(got.seen.finals.size() == 1 && matches(got.seen.finals[0], ref.final),
              what + ": final callback");
    CHECK_MSG(got.seen.periodic.size() == ref.periodic.size(),
              what + ": " + std::to_string(got.seen.periodic.size()) + " periodic reports vs " +
                  std::to_string(ref.periodic.size()));
    for (size_t k = 0; k < std::min(got.seen.periodic.size(), ref.periodic.size()); ++k)
        CHECK_MSG(matches(got.seen.periodic[k], ref.periodic[k]),
                  what + ": periodic report " + std::to_string(k));
    CHECK_MSG(same_grid(got.grid, ref.grid), what + ": final grid");
}

std::vector<double> random_values(size_t count, double lo, double hi, std::mt19937_64 &rng) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> v(count);
    for (double &x : v) x = dist(rng);
    return v;
}

// A threshold under which the run converges at iteration k: between maxdiff(k) and every earlier one.
// Returns 0 when the maxdiffs do not allow it.
double threshold_converging_at(const std::vector<double> &maxdiffs, size_t k) {
    double earlier = INFINITY;
    for (size_t i = 0; i + 1 < k; ++i) earlier = std::min(earlier, maxdiffs[i]);
    double at = maxdiffs[k - 1];
    return at < earlier ? (std::isinf(earlier) ? at * 2 : 0.5 * (at + earlier)) : 0;
}

void test_random_grids(gpk_context *ctx) {
    std::mt19937_64 rng(20240601);
    const size_t shapes[][2] = {{1, 1}, {1, 37}, {29, 1}, {7, 13}, {31, 17}, {2, 2}, {3, 64}, {257, 263}};
    for (auto shape : shapes) {
        size_t n = shape[0], m = shape[1];
        auto t = random_values(n * m, -100, 100, rng);
        auto c = random_values(n * m, 0, 1, rng);
        c[0] = 0; // the end points of the conductivity range are valid
        c[n * m - 1] = 1;
        for (size_t maxiter : {1, 2, 5, 23})
            for (size_t period : {0, 1, 3, 7}) check_against_reference(ctx, t, c, n, m, maxiter, 0.0, period);
        // Convergence mid-run, on and off a period boundary and inside a pass of several iterations.
        RefRun free_run = reference_heat(t, c, n, m, 40, 0.0, 0);
        for (size_t k : {1, 6, 9, 14, 21}) {
            double threshold = threshold_converging_at(free_run.maxdiffs, k);
            if (threshold <= 0) continue;
            for (size_t period : {0, 1, 3, 7}) {
                check_against_reference(ctx, t, c, n, m, 40, threshold, period);
                RefRun ref = reference_heat(t, c, n, m, 40, threshold, period);
                CHECK_MSG(ref.niter == k, label(n, m, 40, threshold, period) +
                                              ": the reference converges at " + std::to_string(ref.niter));
                for (const Report &r : ref.periodic) CHECK(r.niter < k); // none on the converging iteration
            }
        }
    }
}

// The course pattern's check, from its image (pat1_100x150.pgm), with the published values.

// Maps pixel values to [lo, hi] the way the heat command does: lo + v*(hi-lo)/maxval.
std::vector<double> scaled(const std::vector<long> &pixels, long maxval, double lo, double hi) {
    std::vector<double> out(pixels.size());
    for (size_t k = 0; k < out.size(); ++k) out[k] = lo + double(pixels[k]) * (hi - lo) / double(maxval);
    return out;
}

// Returns false when the data folder is absent.
bool test_pat1(gpk_context *ctx) {
    const char *dir = std::getenv("GPK_TEST_DATA");
    if (!dir) return false;
    std::string path = std::string(dir) + "/pat1_100x150.pgm";
    std::ifstream probe(path);
    if (!probe) return false;
    size_t width = 0, height = 0;
    long maxval = 0;
    std::vector<long> pixels;
    CHECK_MSG(read_pgm(path, width, height, maxval, pixels), "cannot read " + path);
    CHECK_EQ(width, size_t(100));
    CHECK_EQ(height, size_t(150));
    if (width != 100 || height != 150) return true;
    auto t = scaled(pixels, maxval, -100, 100), c = scaled(pixels, maxval, 0, 1);
    GpkRun got = gpk_heat(ctx, t, c, 150, 100, 5000, 0.001, 500);
    CHECK_MSG(got.status == GPK_OK, got.message);
    CHECK_EQ(got.final.niter, size_t(5000));
    CHECK_MSG(e6(got.final.tmin) == "-6.818562e+00", e6(got.final.tmin));
    CHECK_MSG(e6(got.final.tmax) == "2.687404e+01", e6(got.final.tmax));
    CHECK_MSG(e6(got.final.maxdiff) == "4.175908e-03", e6(got.final.maxdiff));
    CHECK_MSG(e6(got.final.tavg) == "8.652341e+00", e6(got.final.tavg));
    CHECK_EQ(got.seen.periodic.size(), size_t(10)); // 500, 1000, ..., 5000
    check_against_reference(ctx, t, c, 150, 100, 5000, 0.001, 500);
    return true;
}

// ---------------------------------------------------------------------------------------------------

void test_thread_counts() {
    std::mt19937_64 rng(7);
    const size_t n = 301, m = 409; // above the single-thread limit: bands and several-iteration passes
    auto t = random_values(n * m, -100, 100, rng), c = random_values(n * m, 0, 1, rng);
    gpk_context *one = cpu_context(1), *two = cpu_context(2), *three = cpu_context(3);
    GpkRun a = gpk_heat(one, t, c, n, m, 30, 0.0, 4);
    GpkRun b = gpk_heat(two, t, c, n, m, 30, 0.0, 4);
    GpkRun d = gpk_heat(three, t, c, n, m, 30, 0.0, 4);
    for (const GpkRun *r : {&b, &d}) {
        CHECK(r->status == GPK_OK);
        CHECK(std::memcmp(&r->final.tavg, &a.final.tavg, sizeof(double)) == 0); // bit-identical
        CHECK(r->final.tmin == a.final.tmin && r->final.tmax == a.final.tmax);
        CHECK(r->final.maxdiff == a.final.maxdiff);
        CHECK(std::memcmp(r->grid.data(), a.grid.data(), n * m * sizeof(double)) == 0);
        CHECK_EQ(r->seen.periodic.size(), a.seen.periodic.size());
        for (size_t k = 0; k < std::min(r->seen.periodic.size(), a.seen.periodic.size()); ++k)
            CHECK(std::memcmp(&r->seen.periodic[k].tavg, &a.seen.periodic[k].tavg, sizeof(double)) == 0);
    }
    check_against_reference(two, t, c, n, m, 30, 0.0, 4);
    RefRun free_run = reference_heat(t, c, n, m, 30, 0.0, 0);
    double threshold = threshold_converging_at(free_run.maxdiffs, 11); // inside a pass
    CHECK(threshold > 0);
    if (threshold > 0) check_against_reference(two, t, c, n, m, 30, threshold, 0);
    gpk_context_destroy(one);
    gpk_context_destroy(two);
    gpk_context_destroy(three);
}

// Progress is a request, not a barrier: it comes at pass boundaries (4 iterations on these grids), at the
// first one at or after each multiple of the interval, with that iteration and its maxdiff; a stop ends
// the run at that boundary.
void test_progress_and_cancel(gpk_context *ctx, size_t n, size_t m) {
    std::mt19937_64 rng(n * 1000 + m);
    auto t = random_values(n * m, -100, 100, rng), c = random_values(n * m, 0, 1, rng);
    RefRun ref = reference_heat(t, c, n, m, 10, 0.0, 0);

    GpkRun p = gpk_heat(ctx, t, c, n, m, 10, 0.0, 0, {}, 3);
    CHECK(p.status == GPK_OK);
    CHECK(p.seen.progress_iters == std::vector<size_t>({4, 8, 10})); // for 3, 6 and 9
    for (size_t k = 0; k < p.seen.progress_iters.size() && k < 3; ++k) {
        CHECK(close_rel(p.seen.progress_maxdiffs[k], ref.maxdiffs[p.seen.progress_iters[k] - 1]));
        CHECK(p.seen.progress_times[k] >= 0 &&
              (k == 0 || p.seen.progress_times[k] >= p.seen.progress_times[k - 1]));
    }
    CHECK(p.final.time >= p.seen.progress_times.back());
    // Every boundary with interval 1; an interval longer than a pass comes at the boundary after it.
    CHECK(gpk_heat(ctx, t, c, n, m, 10, 0.0, 0, {}, 1).seen.progress_iters ==
          std::vector<size_t>({4, 8, 10}));
    CHECK(gpk_heat(ctx, t, c, n, m, 10, 0.0, 0, {}, 5).seen.progress_iters == std::vector<size_t>({8, 10}));
    // Periodic reports end passes (at 3, 6, 9): progress comes there too.
    CHECK(gpk_heat(ctx, t, c, n, m, 10, 0.0, 3, {}, 2).seen.progress_iters ==
          std::vector<size_t>({3, 6, 9, 10}));
    // A run that converges inside a pass (at 6) ends at a boundary of its own.
    const double converging = threshold_converging_at(ref.maxdiffs, 6);
    CHECK(converging > 0);
    GpkRun conv = gpk_heat(ctx, t, c, n, m, 10, converging, 0, {}, 5);
    CHECK(conv.status == GPK_OK && conv.final.niter == 6);
    CHECK(conv.seen.progress_iters == std::vector<size_t>({6}));
    CHECK(conv.seen.progress_maxdiffs.size() == 1 &&
          close_rel(conv.seen.progress_maxdiffs[0], ref.maxdiffs[5]));

    // The progress callback asks to stop at iteration 7 (the boundary at 8): the state of iteration 8, the
    // final report delivered.
    Seen stop_progress;
    stop_progress.stop_progress_at = 7;
    GpkRun a = gpk_heat(ctx, t, c, n, m, 100, 0.0, 0, stop_progress, 1);
    RefRun ref8 = reference_heat(t, c, n, m, 8, 0.0, 0);
    CHECK_MSG(a.status == GPK_ERR_CANCELLED, a.message);
    CHECK_MSG(a.message.find("progress") != std::string::npos &&
                  a.message.find("iteration 8") != std::string::npos,
              a.message);
    CHECK_EQ(a.final.niter, size_t(8));
    CHECK(matches(a.final, ref8.final));
    CHECK(a.seen.finals.size() == 1 && matches(a.seen.finals[0], ref8.final));
    CHECK(same_grid(a.grid, ref8.grid));
    CHECK(a.seen.progress_iters == std::vector<size_t>({4, 8}));

    // The report callback stops the run at its second periodic report (iteration 10).
    Seen stop_report;
    stop_report.stop_report_at = 10;
    GpkRun b = gpk_heat(ctx, t, c, n, m, 100, 0.0, 5, stop_report);
    RefRun ref10 = reference_heat(t, c, n, m, 10, 0.0, 5);
    CHECK_MSG(b.status == GPK_ERR_CANCELLED, b.message);
    CHECK_MSG(b.message.find("report") != std::string::npos &&
                  b.message.find("iteration 10") != std::string::npos,
              b.message);
    CHECK_EQ(b.seen.periodic.size(), size_t(2));
    CHECK(matches(b.final, ref10.final));
    CHECK(b.seen.finals.size() == 1);
    CHECK(same_grid(b.grid, ref10.grid));

    // A stop asked for on the iteration that ends the run anyway cancels nothing.
    Seen stop_last;
    stop_last.stop_progress_at = 10;
    GpkRun e = gpk_heat(ctx, t, c, n, m, 10, 0.0, 0, stop_last, 5);
    CHECK_MSG(e.status == GPK_OK, e.message);
    CHECK_EQ(e.final.niter, size_t(10));
}

void test_invalid_data(gpk_context *ctx) {
    const size_t n = 5, m = 4;
    std::vector<double> t(n * m, 10.0), c(n * m, 0.5);
    struct Case {
        bool temperature;
        size_t index;
        double value;
        const char *shown;
    };
    const Case cases[] = {{true, 13, NAN, "nan"},   {true, 0, INFINITY, "inf"}, {true, 19, -INFINITY, "-inf"},
                          {false, 6, -0.1, "-0.1"}, {false, 19, 1.5, "1.5"},    {false, 2, NAN, "nan"},
                          {false, 0, -0.0, nullptr}};
    for (const Case &k : cases) {
        auto tt = t, cc = c;
        (k.temperature ? tt : cc)[k.index] = k.value;
        std::string name =
            std::string(k.temperature ? "tinit[" : "conductivity[") + std::to_string(k.index) + "]";
        GpkRun r = gpk_heat(ctx, tt, cc, n, m, 10, 0.0, 1, {}, 1);
        if (!k.shown) { // -0.0 is inside [0, 1]
            CHECK_MSG(r.status == GPK_OK, r.message);
            continue;
        }
        CHECK_MSG(r.status == GPK_ERR_INVALID_ARGUMENT, name + ": " + gpk_status_string(r.status));
        CHECK_MSG(r.message.find(name) != std::string::npos && r.message.find(k.shown) != std::string::npos,
                  r.message);
        bool untouched = true;
        for (double v : r.grid) untouched = untouched && v == -12345.0;
        CHECK_MSG(untouched, name + ": tfinal was written");
        CHECK(r.seen.periodic.empty() && r.seen.finals.empty() && r.seen.progress_iters.empty());
    }
    // The final report is untouched too.
    gpk_heat_report sentinel{};
    sentinel.niter = 777;
    gpk_heat_params p;
    gpk_heat_params_init(&p);
    p.rows = n;
    p.cols = m;
    auto bad = c;
    bad[3] = 2.0;
    CHECK_STATUS(ctx, gpk_heat_run(ctx, &p, t.data(), bad.data(), nullptr, &sentinel),
                 GPK_ERR_INVALID_ARGUMENT);
    CHECK_EQ(sentinel.niter, size_t(777));
}

// The CPU backend checks the inputs while its first pass reads them, each thread its own band of rows:
// on a grid of several bands the value named must still be the first bad one in row-major order (tinit
// before conductivity), wherever the bands lie, and nothing may be written, also when that first pass is
// the last one (maxiter 1).
void test_invalid_data_in_bands() {
    const size_t n = 300, m = 257; // three bands with three threads
    std::vector<double> t(n * m, 10.0), c(n * m, 0.5);
    gpk_context *ctx = cpu_context(3);
    struct Case {
        size_t temperature[2], conductivity[2]; // indices made bad (n * m: none)
        bool want_temperature;
        size_t want;
    };
    const size_t none = n * m, band2 = 150 * m + 3, band3 = 260 * m + 200, band1 = 40 * m + 70;
    const Case cases[] = {
        {{band3, band2}, {none, none}, true, band2},
        {{none, none}, {band3, band2}, false, band2},
        {{band3, none}, {band1, none}, true, band3},
        {{none, none}, {n * m - 1, none}, false, n * m - 1},
        {{band2 + 63, band2 + 64}, {none, none}, true, band2 + 63},
        {{0, none}, {0, none}, true, 0},
    };
    for (size_t maxiter : {1, 2, 9})
        for (const Case &k : cases) {
            auto tt = t, cc = c;
            for (size_t i : k.temperature)
                if (i < none) tt[i] = NAN;
            for (size_t i : k.conductivity)
                if (i < none) cc[i] = 1.25;
            const std::string name =
                std::string(k.want_temperature ? "tinit[" : "conductivity[") + std::to_string(k.want) + "]";
            GpkRun r = gpk_heat(ctx, tt, cc, n, m, maxiter, 0.0, 1, {}, 1);
            const std::string what = "maxiter " + std::to_string(maxiter) + ", " + name;
            CHECK_MSG(r.status == GPK_ERR_INVALID_ARGUMENT && r.message.find(name + " ") != std::string::npos,
                      what + ": " + r.message);
            bool untouched = true;
            for (double v : r.grid) untouched = untouched && v == -12345.0;
            CHECK_MSG(untouched, what + ": tfinal was written");
            CHECK(r.seen.periodic.empty() && r.seen.finals.empty() && r.seen.progress_iters.empty());
        }
    gpk_context_destroy(ctx);
}

// Random inputs on one band (9 x 11) and on several (301 x 409), the same for every caller.
template <class F> void for_each_band_shape(unsigned seed, F &&body) {
    std::mt19937_64 rng(seed);
    for (size_t n : {9, 301}) {
        const size_t m = n == 9 ? 11 : 409;
        auto t = random_values(n * m, -100, 100, rng), c = random_values(n * m, 0, 1, rng);
        body(n, m, t, c);
    }
}

// Without tfinal the reports must not change, on one band and on several, for every pass length that
// ends a run (the CPU backend writes tfinal from its last pass, or copies it when a run stops elsewhere).
void test_without_tfinal() {
    gpk_context *ctx = cpu_context(2);
    for_each_band_shape(
        99, [&](size_t n, size_t m, const std::vector<double> &t, const std::vector<double> &c) {
            for (size_t maxiter : {1, 3, 4, 5, 11}) {
                RefRun ref = reference_heat(t, c, n, m, maxiter, 0.0, 0);
                gpk_heat_params p;
                gpk_heat_params_init(&p);
                p.rows = n;
                p.cols = m;
                p.maxiter = maxiter;
                gpk_heat_report r{};
                CHECK_OK(ctx, gpk_heat_run(ctx, &p, t.data(), c.data(), nullptr, &r));
                CHECK_MSG(matches(r, ref.final), label(n, m, maxiter, 0, 0) + ": report without tfinal");
            }
        });
    gpk_context_destroy(ctx);
}

// A call that asks for no report (final NULL, no report callback; a progress callback or none) leaves out
// the final grid's statistics: tfinal must hold the very bits of the same call with a report, on one band
// and on several, for runs of one pass, whole passes and shorter last passes, stopped by convergence inside a
// pass or at maxiter, and cancelled by the progress callback at a pass boundary.
void test_without_report() {
    gpk_context *ctx = cpu_context(2);
    for_each_band_shape(
        123, [&](size_t n, size_t m, const std::vector<double> &t, const std::vector<double> &c) {
            RefRun free_run = reference_heat(t, c, n, m, 20, 0.0, 0);
            std::vector<double> thresholds = {0.0};
            for (size_t k : {2, 7})
                if (double th = threshold_converging_at(free_run.maxdiffs, k); th > 0)
                    thresholds.push_back(th);
            for (size_t maxiter : {1, 3, 4, 5, 11, 20})
                for (double threshold : thresholds)
                    for (int progress : {0, 1, 2}) { // none; every 2 iterations; every 2, stopping from 5
                        Seen seen;
                        seen.stop_progress_at = progress == 2 ? 5 : 0;
                        const size_t every = progress ? 2 : 0;
                        GpkRun with = gpk_heat(ctx, t, c, n, m, maxiter, threshold, 0, seen, every);
                        GpkRun without = gpk_heat(ctx, t, c, n, m, maxiter, threshold, 0, seen, every, false);
                        const std::string what = label(n, m, maxiter, threshold, 0) + " progress " +
                                                 std::to_string(progress) + ", without a report";
                        CHECK_MSG(without.status == with.status, what + ": " + without.message);
                        CHECK_MSG(std::memcmp(without.grid.data(), with.grid.data(),
                                              with.grid.size() * sizeof(double)) == 0,
                                  what + ": tfinal differs from the call with a report");
                        CHECK_MSG(without.seen.progress_iters == with.seen.progress_iters,
                                  what + ": progress calls");
                        CHECK_MSG(without.seen.finals.empty() && without.seen.periodic.empty(),
                                  what + ": a report was delivered");
                    }
        });
    gpk_context_destroy(ctx);
}

// A row's sum in the CPU backend's documented order (NOTES.md, heat checkpoints): four lanes, lane k adding
// columns k, k + 4, ... in turn while whole groups of four remain, the last m % 4 columns into lane 0, then
// (lane 0 + lane 1) + (lane 2 + lane 3).
double documented_cpu_row_sum(const double *row, size_t m) {
    double lane[4] = {0, 0, 0, 0};
    size_t c = 0;
    for (; c + 4 <= m; c += 4)
        for (int k = 0; k < 4; ++k) lane[k] += row[c + k];
    for (; c < m; ++c) lane[0] += row[c];
    return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

// The final report's statistics against tfinal itself, under the active instruction set
// (check_final_statistics: tavg from documented_cpu_row_sum), for widths around every lane and vector width
// the row statistics use (groups of 4 and 8 columns), one pass and several, one thread's band and several.
void test_report_statistics(gpk_context *ctx) {
    const size_t widths[] = {1,  2,  3,  4,  5,  7,  8,  9,  11, 12, 13,  15,  16,
                             17, 23, 24, 25, 31, 32, 33, 63, 64, 65, 257, 1029};
    unsigned seed = 4100;
    for (size_t m : widths)
        for (size_t n : {1, 3, 40}) {
            std::mt19937_64 rng(seed++);
            std::uniform_real_distribution<double> temp(-50.0, 80.0), cond(0.0, 1.0);
            std::vector<double> t(n * m), c(n * m);
            for (double &v : t) v = temp(rng);
            for (double &v : c) v = cond(rng);
            for (size_t maxiter : {1, 5, 9}) {
                GpkRun run = gpk_heat(ctx, t, c, n, m, maxiter, 0.0, 0);
                const std::string what = label(n, m, maxiter, 0.0, 0) + ": final statistics";
                CHECK_MSG(run.status == GPK_OK, what + ": " + run.message);
                if (run.status != GPK_OK) continue;
                check_final_statistics(run.final, run.grid, n, m, documented_cpu_row_sum, what);
            }
        }
}

// GPK_TEST_CPU_ISA takes avx512, avx2 or baseline; anything else fails the call, naming the knob.
void test_isa_knob(gpk_context *ctx) {
    if (hooks::skip_part("GPK_TEST_CPU_ISA's bad values")) return;
    std::vector<double> t(12, 1.0), c(12, 0.5);
    {
        hooks::Hook hook("GPK_TEST_CPU_ISA", nullptr);
        for (const char *bad : {"avx", "AVX2", "avx512 ", "sse2"}) {
            hook.set(bad);
            GpkRun r = gpk_heat(ctx, t, c, 3, 4, 2, 0.0, 0);
            CHECK_MSG(r.status == GPK_ERR_INVALID_ARGUMENT &&
                          r.message.find("GPK_TEST_CPU_ISA is \"" + std::string(bad) + "\"") !=
                              std::string::npos,
                      std::string(bad) + ": " + r.message);
        }
    } // the value found restored
    CHECK(gpk_heat(ctx, t, c, 3, 4, 2, 0.0, 0).status == GPK_OK);
}

// With the address space capped a little above what the process uses, the grids cannot be allocated:
// GPK_ERR_OUT_OF_MEMORY naming at least the bytes of the two grids, and tfinal untouched.
void test_out_of_memory(gpk_context *ctx) {
#if GPK_TEST_CAN_CAP_MEMORY
    const size_t n = 2048, m = 2048;
    std::vector<double> t(n * m, 1.0), c(n * m, 0.5), tfinal(n * m, -12345.0);
    gpk_heat_params p;
    gpk_heat_params_init(&p);
    p.rows = n;
    p.cols = m;
    gpk_status status = with_capped_memory(
        [&] { return gpk_heat_run(ctx, &p, t.data(), c.data(), tfinal.data(), nullptr); }, GPK_OK);
    std::string message = gpk_context_last_error(ctx);
    CHECK_MSG(status == GPK_ERR_OUT_OF_MEMORY, std::string(gpk_status_string(status)) + ": " + message);
    unsigned long long bytes = bytes_named(message);
    CHECK_MSG(bytes >= 2 * (n + 2) * (m + 2) * sizeof(double) && message.find("bytes") != std::string::npos,
              message);
    bool untouched = true;
    for (double v : tfinal) untouched = untouched && v == -12345.0;
    CHECK(untouched);
#else
    (void)ctx;
    std::printf("note: the out-of-memory check needs Linux (RLIMIT_AS) and no sanitizer; not run\n");
#endif
}

// Checkpoints every 1, 3 and 8 iterations on one and two threads, runs that end at maxiter and that
// converge inside a pass and on a checkpoint iteration; resumed runs end bit for bit as the whole run.
void test_checkpoints() {
    std::mt19937_64 rng(99);
    gpk_context *one = cpu_context(1), *two = cpu_context(2);
    const size_t shapes[][2] = {{1, 5}, {7, 13}, {301, 409}};
    for (auto shape : shapes) {
        const size_t n = shape[0], m = shape[1];
        auto t = random_values(n * m, -100, 100, rng), c = random_values(n * m, 0, 1, rng);
        RefRun free_run = reference_heat(t, c, n, m, 30, 0.0, 0);
        std::vector<double> thresholds = {0.0};
        for (size_t k : {11, 12})
            if (double threshold = threshold_converging_at(free_run.maxdiffs, k); threshold > 0)
                thresholds.push_back(threshold);
        for (double threshold : thresholds) {
            for (size_t interval : {1, 3, 8})
                for (gpk_context *ctx : {one, two})
                    heat_resume::check_resume(ctx, {n, m, 30, threshold, 7}, t, c, interval,
                                              label(n, m, 30, threshold, 7) + " checkpoint every " +
                                                  std::to_string(interval));
        }
    }
    heat_resume::check_resume_arguments(one);
    gpk_context_destroy(one);
    gpk_context_destroy(two);
}

} // namespace

int main() {
    gpk_context *ctx = cpu_context(0);
    for_each_cpu_isa([&](const std::string &) { // every variant of the row kernel
        test_random_grids(ctx);
        test_thread_counts();
        test_progress_and_cancel(ctx, 301, 409); // several threads
        test_report_statistics(ctx);             // every variant of the row statistics
    });
    test_isa_knob(ctx);
    test_progress_and_cancel(ctx, 9, 11);
    test_invalid_data(ctx);
    test_invalid_data_in_bands();
    test_without_tfinal();
    test_without_report();
    test_checkpoints();
    test_out_of_memory(ctx);
    bool have_data = test_pat1(ctx);
    gpk_context_destroy(ctx);
    if (!have_data && check::failures() == 0)
        check::skip("GPK_TEST_DATA (pat1_100x150.pgm) is absent; every other heat check passed");
    return check::finish("test_heat");
}
