// The CUDA heat solver (lib/cuda/heat.cu and its kernels, unchanged but for the transform) on the emulated
// device, against a direct SPEC §1 loop with the same per-cell rounding: grids bit-identical, niter and
// maxdiff equal, reports within tolerance. Sizes around the strips and row blocks, every placement of the
// three arrays (and no tfinal), maxiter around the pass lengths, every pass kernel and shorter passes,
// convergence inside and at the end of passes (the first, checking one included), bad inputs in device and
// host memory (named, outputs untouched).
#include "cuda/device_context.cuh"
#include "cuda/heat.cuh"
#include "engine/error.hpp"
#include "common/semantics.hpp"
#include <cstdio>
#include <random>
#include <string>
#include <vector>
extern size_t emu_launches;
using namespace gpk;
static int failures = 0, checks = 0;
#define EXPECT(c, msg)                                                                                       \
    do {                                                                                                     \
        ++checks;                                                                                            \
        if (!(c)) {                                                                                          \
            ++failures;                                                                                      \
            std::printf("FAIL %s:%d %s\n", __FILE__, __LINE__, std::string(msg).c_str());                    \
        }                                                                                                    \
    } while (0)

struct Ref {
    std::vector<double> grid;
    std::vector<double> md;
    size_t niter;
    double tmin, tmax, tavg;
};
Ref reference(size_t N, size_t M, const std::vector<double> &t, const std::vector<double> &c, size_t maxiter,
              double thr) {
    const size_t W = M + 2;
    std::vector<double> a((N + 2) * W), b;
    for (size_t i = 1; i <= N; ++i)
        for (size_t j = 1; j <= M; ++j) a[i * W + j] = t[(i - 1) * M + j - 1];
    for (size_t j = 1; j <= M; ++j) {
        a[j] = a[W + j];
        a[(N + 1) * W + j] = a[N * W + j];
    }
    b = a;
    Ref r;
    r.niter = maxiter;
    const double cdir = kHeatCdir, cdiag = kHeatCdiag;
    for (size_t it = 1; it <= maxiter; ++it) {
        std::vector<double> &src = b, &dst = a;
        for (size_t i = 0; i <= N + 1; ++i) {
            src[i * W + M + 1] = src[i * W + 1];
            src[i * W] = src[i * W + M];
        }
        double md = 0;
        for (size_t i = 1; i <= N; ++i)
            for (size_t j = 1; j <= M; ++j) {
                auto s = [&](size_t y, size_t x) { return src[y * W + x]; };
                double w = c[(i - 1) * M + j - 1], rr = 1.0 - w, rc = rr * cdir, rd = rr * cdiag;
                double ns = s(i - 1, j) + s(i + 1, j), h = s(i, j - 1) + s(i, j + 1);
                double hn = s(i - 1, j - 1) + s(i - 1, j + 1), hs = s(i + 1, j - 1) + s(i + 1, j + 1);
                double dir = ns + h, diag = hn + hs;
                double o = std::fma(w, s(i, j), std::fma(rc, dir, rd * diag));
                dst[i * W + j] = o;
                md = std::max(md, std::fabs(o - s(i, j)));
            }
        r.md.push_back(md);
        std::swap(a, b); // b: the newest grid
        if (md < thr) {
            r.niter = it;
            break;
        }
    }
    // newest grid is b
    r.grid.resize(N * M);
    r.tmin = INFINITY;
    r.tmax = -INFINITY;
    double sum = 0;
    for (size_t i = 1; i <= N; ++i)
        for (size_t j = 1; j <= M; ++j) {
            double v = b[i * W + j];
            r.grid[(i - 1) * M + j - 1] = v;
            r.tmin = std::min(r.tmin, v);
            r.tmax = std::max(r.tmax, v);
            sum += v;
        }
    r.tavg = sum / double(N * M);
    return r;
}

enum Mem { HOST, DEV };
double *make(Mem m, size_t n) {
    void *p;
    if (m == DEV)
        cudaMalloc(&p, n * 8);
    else
        p = malloc(n * 8);
    return (double *)p;
}
void drop(Mem m, void *p) {
    if (m == DEV)
        cudaFree(p);
    else
        free(p);
}

struct Outcome {
    std::string err;
    gpk_heat_report fin{};
    std::vector<double> grid;
    int periodic = 0;
    std::vector<size_t> prog;
};
int on_report(const gpk_heat_report *, int fin, void *u) {
    if (!fin) ++static_cast<Outcome *>(u)->periodic;
    return 0;
}
int on_prog(size_t it, double, double, void *u) {
    static_cast<Outcome *>(u)->prog.push_back(it);
    return 0;
}

Outcome run(cuda::DeviceContext &ctx, size_t N, size_t M, const std::vector<double> &t,
            const std::vector<double> &c, size_t maxiter, double thr, Mem mt, Mem mc, Mem mf, bool tfinal,
            size_t period = 0) {
    Outcome o;
    double *dt = make(mt, N * M), *dc = make(mc, N * M), *df = make(mf, N * M);
    memcpy(dt, t.data(), N * M * 8);
    memcpy(dc, c.data(), N * M * 8);
    for (size_t k = 0; k < N * M; ++k) df[k] = NAN;
    HeatJob j;
    j.rows = N;
    j.cols = M;
    j.maxiter = maxiter;
    j.threshold = thr;
    j.tinit = dt;
    j.conductivity = dc;
    j.tfinal = tfinal ? df : nullptr;
    j.final = &o.fin;
    j.period = period;
    j.on_report = on_report;
    j.user_data = &o;
    j.on_progress = on_prog;
    j.progress_interval = 1;
    try {
        cuda::heat_run(ctx, j);
    } catch (const Error &e) {
        o.err = e.what();
    }
    o.grid.assign(df, df + N * M);
    drop(mt, dt);
    drop(mc, dc);
    drop(mf, df);
    return o;
}
bool close(double a, double b) {
    return std::fabs(a - b) <= 1e-12 || std::fabs(a - b) <= 1e-9 * std::fabs(b);
}

void compare(const Outcome &o, const Ref &r, bool tfinal, const std::string &what) {
    EXPECT(o.err.empty(), what + ": " + o.err);
    EXPECT(o.fin.niter == r.niter,
           what + ": niter " + std::to_string(o.fin.niter) + " vs " + std::to_string(r.niter));
    EXPECT(o.fin.tmin == r.tmin && o.fin.tmax == r.tmax && close(o.fin.tavg, r.tavg), what + ": report");
    EXPECT(o.fin.maxdiff == r.md[r.niter - 1], what + ": maxdiff");
    EXPECT(o.prog.size() == r.niter, what + ": progress count");
    if (tfinal) {
        size_t bad = 0;
        for (size_t k = 0; k < r.grid.size(); ++k) bad += !(o.grid[k] == r.grid[k]);
        EXPECT(bad == 0, what + ": " + std::to_string(bad) + " cells differ");
    }
}

int main() {
    cuda::DeviceContext ctx(0, nullptr, 2);
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> T(-100, 100), C(0, 1);
    const size_t sizes[][2] = {{1, 1}, {3, 5}, {9, 100}, {20, 130}, {37, 61}, {2, 150}, {90, 70}};
    for (auto &nm : sizes) {
        size_t N = nm[0], M = nm[1];
        std::vector<double> t(N * M), c(N * M);
        for (auto &v : t) v = T(rng);
        for (auto &v : c) v = C(rng);
        for (size_t maxiter : {1, 2, 9, 17}) {
            Ref r = reference(N, M, t, c, maxiter, 0);
            for (int pl = 0; pl < 6; ++pl) {
                Mem mt = pl == 1 || pl == 3 ? HOST : DEV, mc = pl == 1 || pl == 2 ? HOST : DEV,
                    mf = pl == 1 || pl == 4 ? HOST : DEV;
                bool tf = pl != 5;
                std::string what = std::to_string(N) + "x" + std::to_string(M) + " it " +
                                   std::to_string(maxiter) + " pl " + std::to_string(pl);
                compare(run(ctx, N, M, t, c, maxiter, 0, mt, mc, mf, tf, maxiter > 8 ? 4 : 0), r, tf, what);
            }
            if (maxiter != 17 && maxiter != 2) continue;
            for (const char *k : {"4/2", "7/2", "8/2", "8/1", "12/1", "4/4"}) {
                setenv("GPK_TEST_HEAT_KERNEL", k, 1);
                for (const char *lv : {"", "3"}) {
                    if (*lv) setenv("GPK_TEST_HEAT_PASS_LEVELS", lv, 1);
                    compare(run(ctx, N, M, t, c, maxiter, 0, DEV, DEV, DEV, true), r, true,
                            std::to_string(N) + "x" + std::to_string(M) + " it " + std::to_string(maxiter) +
                                " kernel " + k + " levels " + lv);
                    unsetenv("GPK_TEST_HEAT_PASS_LEVELS");
                }
                unsetenv("GPK_TEST_HEAT_KERNEL");
            }
        }
        // convergence at each k
        Ref full = reference(N, M, t, c, 40, 0);
        for (size_t k : {1, 3, 8, 9, 16, 25}) {
            double before = INFINITY;
            for (size_t i = 0; i + 1 < k; ++i) before = std::min(before, full.md[i]);
            if (!(full.md[k - 1] < before)) continue;
            double thr = 0.5 * (full.md[k - 1] + before);
            Ref r = reference(N, M, t, c, 40, thr);
            for (size_t maxiter : {size_t(40), k})
                for (int pl : {0, 1, 2, 4}) {
                    Mem mt = pl == 1 ? HOST : DEV, mc = pl == 1 ? HOST : DEV,
                        mf = pl == 1 || pl == 4 ? HOST : DEV;
                    if (pl == 2) mt = HOST;
                    Ref rr = maxiter == 40 ? r : reference(N, M, t, c, maxiter, thr);
                    compare(run(ctx, N, M, t, c, maxiter, thr, mt, mc, mf, true, 3), rr, true,
                            std::to_string(N) + "x" + std::to_string(M) + " converging at " +
                                std::to_string(k) + " maxiter " + std::to_string(maxiter) + " pl " +
                                std::to_string(pl));
                }
        }
        // bad inputs: named, tfinal untouched
        if (N * M >= 10) {
            for (int which = 0; which < 2; ++which)
                for (Mem m : {DEV, HOST})
                    for (size_t maxiter : {1, 5, 20}) {
                        auto tb = t, cb = c;
                        size_t idx = N * M / 2 + 1;
                        if (which == 0) {
                            tb[idx] = NAN;
                            tb[N * M - 1] = INFINITY;
                        } else {
                            cb[idx] = 1.5;
                            cb[N * M - 1] = -0.1;
                            tb[N * M - 1] = NAN;
                        }
                        Outcome o = run(ctx, N, M, tb, cb, maxiter, 0, m, m, m, true);
                        std::string want = which == 0 ? "tinit[" + std::to_string(idx) + "]"
                                                      : "tinit[" + std::to_string(N * M - 1) + "]";
                        if (which == 1) { /* both bad: temperatures named first */
                        }
                        EXPECT(o.err.find(want) != std::string::npos, "bad input message: " + o.err);
                        bool untouched = true;
                        for (double v : o.grid) untouched &= std::isnan(v);
                        EXPECT(untouched, "bad input: tfinal written");
                        auto cb2 = c;
                        cb2[idx] = 1.5;
                        Outcome o2 = run(ctx, N, M, t, cb2, maxiter, 0, m, m, m, true);
                        EXPECT(o2.err.find("conductivity[" + std::to_string(idx) + "] (row " +
                                           std::to_string(idx / M)) != std::string::npos &&
                                   o2.err.find("1.5") != std::string::npos,
                               "cond message: " + o2.err);
                    }
        }
        std::printf("%zux%zu done: %d checks, %d failures, %zu launches\n", N, M, checks, failures,
                    emu_launches);
        std::fflush(stdout);
    }
    std::printf("%d checks, %d failed\n", checks, failures);
    std::fflush(stdout);
    std::_Exit(failures != 0);
}
