// The CUDA heat solver (lib/cuda/heat.cu and its kernels, unchanged but for the transform) on the emulated
// device, against a direct SPEC §1 loop with the same per-cell rounding: grids bit-identical, niter and
// maxdiff equal, reports within tolerance. Sizes around the strips and row blocks, every placement of the
// three arrays (and no tfinal), maxiter around the pass lengths, every pass kernel and shorter passes,
// convergence inside and at the end of passes (the first, checking one included), bad inputs in device and
// host memory (named, outputs untouched). Resumed runs (start_iteration, fixed rows in host and device
// memory) against the tail of the unbroken run; checkpoints (every interval, stopping at one, with
// convergence) against the reference's grids; libgpk_mpi's slab (heat_slab.cu, the same pass kernel on row
// ranges) against the reference: a slab of the whole grid over many passes (its row statistics' mean
// bit-identical to the whole-grid solver's report) and slabs of row ranges, one pass each.
#include "cuda/device_context.cuh"
#include "cuda/heat.cuh"
#include "cuda/heat_slab.cuh"
#include "engine/error.hpp"
#include "engine/heat_rules.hpp"
#include "common/semantics.hpp"
#include <cstdio>
#include <memory>
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
    std::vector<std::vector<double>> hist; // hist[k]: the interior after iteration k (hist[0]: tinit)
};
// fixed: the halo rows (2 * M), or null: tinit's edge rows.
Ref reference(size_t N, size_t M, const std::vector<double> &t, const std::vector<double> &c, size_t maxiter,
              double thr, const double *fixed = nullptr) {
    const size_t W = M + 2;
    std::vector<double> a((N + 2) * W), b;
    for (size_t i = 1; i <= N; ++i)
        for (size_t j = 1; j <= M; ++j) a[i * W + j] = t[(i - 1) * M + j - 1];
    for (size_t j = 1; j <= M; ++j) {
        a[j] = fixed ? fixed[j - 1] : a[W + j];
        a[(N + 1) * W + j] = fixed ? fixed[M + j - 1] : a[N * W + j];
    }
    auto interior = [&](const std::vector<double> &g) {
        std::vector<double> v(N * M);
        for (size_t i = 1; i <= N; ++i)
            for (size_t j = 1; j <= M; ++j) v[(i - 1) * M + j - 1] = g[i * W + j];
        return v;
    };
    b = a;
    Ref r;
    r.niter = maxiter;
    r.hist.push_back(t);
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
        r.hist.push_back(interior(a));
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

// A resumed run and checkpoints: fixed rows (2 * M, in memory `mfixed`) or none, the first iteration, the
// checkpoint interval (0: none) and the checkpoint whose callback asks to stop (0: none).
struct Extra {
    const std::vector<double> *fixed = nullptr;
    Mem mfixed = HOST;
    size_t start = 0, interval = 0, stop_at = 0;
};
struct Outcome {
    std::string err;
    gpk_heat_report fin{};
    std::vector<double> grid;
    int periodic = 0;
    std::vector<size_t> prog;
    std::vector<size_t> cp_iters;
    std::vector<std::vector<double>> cp_grids;
    size_t cells = 0, stop_at = 0;
};
int on_checkpoint(size_t it, double, const double *grid, void *u) {
    Outcome &o = *static_cast<Outcome *>(u);
    o.cp_iters.push_back(it);
    o.cp_grids.emplace_back(grid, grid + o.cells);
    return it == o.stop_at;
}
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
            size_t period = 0, const Extra &x = Extra()) {
    Outcome o;
    o.cells = N * M;
    o.stop_at = x.stop_at;
    double *dt = make(mt, N * M), *dc = make(mc, N * M), *df = make(mf, N * M);
    double *dx = x.fixed ? make(x.mfixed, 2 * M) : nullptr;
    if (dx) memcpy(dx, x.fixed->data(), 2 * M * 8);
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
    j.fixed_rows = dx;
    j.start_iteration = x.start;
    j.checkpoint_interval = x.interval;
    j.on_checkpoint = x.interval ? on_checkpoint : nullptr;
    try {
        cuda::heat_run(ctx, j);
    } catch (const Error &e) {
        o.err = e.what();
    }
    o.grid.assign(df, df + N * M);
    drop(mt, dt);
    drop(mc, dc);
    drop(mf, df);
    if (dx) drop(x.mfixed, dx);
    return o;
}
bool close(double a, double b) {
    return std::fabs(a - b) <= 1e-12 || std::fabs(a - b) <= 1e-9 * std::fabs(b);
}

void compare(const Outcome &o, const Ref &r, bool tfinal, const std::string &what, size_t start = 0) {
    EXPECT(o.err.empty(), what + ": " + o.err);
    EXPECT(o.fin.niter == r.niter,
           what + ": niter " + std::to_string(o.fin.niter) + " vs " + std::to_string(r.niter));
    EXPECT(o.fin.tmin == r.tmin && o.fin.tmax == r.tmax && close(o.fin.tavg, r.tavg), what + ": report");
    EXPECT(o.fin.maxdiff == r.md[r.niter - 1], what + ": maxdiff");
    EXPECT(o.prog.size() == r.niter - start && (o.prog.empty() || o.prog[0] == start + 1),
           what + ": progress count");
    if (tfinal) {
        size_t bad = 0;
        for (size_t k = 0; k < r.grid.size(); ++k) bad += !(o.grid[k] == r.grid[k]);
        EXPECT(bad == 0, what + ": " + std::to_string(bad) + " cells differ");
    }
}

bool same(const double *a, const double *b, size_t n) {
    for (size_t k = 0; k < n; ++k)
        if (!(a[k] == b[k])) return false;
    return true;
}

// A threshold that stops the run at iteration k, or 0 where none does.
double threshold_at(const Ref &full, size_t k) {
    double before = INFINITY;
    for (size_t i = 0; i + 1 < k; ++i) before = std::min(before, full.md[i]);
    return full.md[k - 1] < before ? 0.5 * (full.md[k - 1] + before) : 0.0;
}

// Resumed runs and checkpoints against the unbroken run's reference (17 iterations).
void check_resume(cuda::DeviceContext &ctx, size_t N, size_t M, const std::vector<double> &t,
                  const std::vector<double> &c, std::mt19937_64 &rng) {
    const std::string name = std::to_string(N) + "x" + std::to_string(M);
    const Ref full = reference(N, M, t, c, 17, 0);
    std::vector<double> edges(2 * M);
    std::copy(t.begin(), t.begin() + M, edges.begin());
    std::copy(t.end() - M, t.end(), edges.begin() + M);
    for (size_t s : {1, 5, 6, 7, 12, 16})
        for (int pl = 0; pl < 4; ++pl) {
            Extra x;
            x.fixed = &edges;
            x.mfixed = pl & 1 ? DEV : HOST;
            x.start = s;
            Mem mt = pl & 2 ? HOST : DEV;
            compare(run(ctx, N, M, full.hist[s], c, 17, 0, mt, DEV, DEV, true, 0, x), full, true,
                    name + " resumed at " + std::to_string(s) + " pl " + std::to_string(pl), s);
        }
    // Fixed rows unlike tinit's edges, from the first iteration.
    std::uniform_real_distribution<double> T(-100, 100);
    std::vector<double> fixed(2 * M);
    for (auto &v : fixed) v = T(rng);
    const Ref other = reference(N, M, t, c, 9, 0, fixed.data());
    for (Mem m : {HOST, DEV}) {
        Extra x;
        x.fixed = &fixed;
        x.mfixed = m;
        compare(run(ctx, N, M, t, c, 9, 0, m, m, DEV, true, 4, x), other, true, name + " fixed rows");
    }
    // Checkpoints: every multiple of the interval before the run's end, with that iteration's grid.
    for (size_t interval : {1, 4, 6, 7})
        for (size_t start : {0, 5})
            for (size_t period : {0, 3}) {
                Extra x;
                x.fixed = start ? &edges : nullptr;
                x.start = start;
                x.interval = interval;
                const std::string what = name + " checkpoints every " + std::to_string(interval) + " from " +
                                         std::to_string(start) + " period " + std::to_string(period);
                Outcome o = run(ctx, N, M, full.hist[start], c, 17, 0, DEV, HOST, DEV, true, period, x);
                compare(o, full, true, what, start);
                std::vector<size_t> want;
                for (size_t it = start + 1; it < 17; ++it)
                    if (it % interval == 0) want.push_back(it);
                EXPECT(o.cp_iters == want, what + ": iterations");
                bool grids = o.cp_iters.size() == o.cp_grids.size();
                for (size_t k = 0; grids && k < o.cp_iters.size(); ++k)
                    grids = same(o.cp_grids[k].data(), full.hist[o.cp_iters[k]].data(), N * M);
                EXPECT(grids, what + ": grids");
            }
    // A checkpoint that stops the run: cancelled there, tfinal that iteration's grid.
    for (size_t stop : {4, 8}) {
        Extra x;
        x.interval = 4;
        x.stop_at = stop;
        Outcome o = run(ctx, N, M, t, c, 17, 0, DEV, DEV, DEV, true, 0, x);
        const std::string what = name + " stopped by the checkpoint at " + std::to_string(stop);
        EXPECT(o.err.find("cancelled by the checkpoint callback at iteration " + std::to_string(stop)) !=
                   std::string::npos,
               what + ": " + o.err);
        EXPECT(o.fin.niter == stop && same(o.grid.data(), full.hist[stop].data(), N * M), what + ": grid");
    }
    // Convergence: no checkpoint at the converging iteration or after it.
    for (size_t k : {5, 8, 9}) {
        const double thr = threshold_at(full, k);
        if (thr == 0) continue;
        const Ref r = reference(N, M, t, c, 17, thr);
        for (size_t start : {0, 2}) {
            Extra x;
            x.fixed = &edges;
            x.start = start;
            x.interval = 4;
            Outcome o = run(ctx, N, M, full.hist[start], c, 17, thr, DEV, DEV, HOST, true, 0, x);
            const std::string what = name + " converging at " + std::to_string(k) + " from " +
                                     std::to_string(start) + " with checkpoints";
            compare(o, r, true, what, start);
            std::vector<size_t> want;
            for (size_t it = 4; it < r.niter; it += 4)
                if (it > start) want.push_back(it);
            EXPECT(o.cp_iters == want, what + ": iterations");
        }
    }
}

void check_slab_exchange(cuda::DeviceContext &ctx, size_t N, size_t M, const std::vector<double> &padded,
                         const std::vector<double> &c, const Ref &full);

// A slab of `rows` rows of the padded grid (rows 0..N+1) from row lo.
std::unique_ptr<HeatSlab> padded_slab(cuda::DeviceContext &ctx, const std::vector<double> &padded,
                                      const std::vector<double> &c, size_t M, size_t lo, size_t rows) {
    HeatSlabJob job;
    job.rows = rows;
    job.cols = M;
    job.cells.data[0] = padded.data() + lo * M;
    job.cells.counts[0] = rows;
    job.conductivity.data[0] = c.data() + lo * M;
    job.conductivity.counts[0] = rows - 2;
    return cuda::make_heat_slab(ctx, job);
}

// The maxdiff of iteration k + 1 over rows [a, b) of the padded grid.
double rows_maxdiff(const Ref &full, size_t M, size_t a, size_t b, size_t k) {
    double want = 0;
    for (size_t q = (a - 1) * M; q < (b - 1) * M; ++q)
        want = std::max(want, std::fabs(full.hist[k + 1][q] - full.hist[k][q]));
    return want;
}

// libgpk_mpi's slab: the whole grid over many passes, then row ranges one pass each.
void check_slab(cuda::DeviceContext &ctx, size_t N, size_t M, const std::vector<double> &t,
                const std::vector<double> &c) {
    const std::string name = std::to_string(N) + "x" + std::to_string(M) + " slab";
    const size_t iters = 17;
    const Ref full = reference(N, M, t, c, iters, 0);
    std::vector<double> padded((N + 2) * M);
    std::copy(t.begin(), t.begin() + M, padded.begin());
    std::copy(t.begin(), t.end(), padded.begin() + M);
    std::copy(t.end() - M, t.end(), padded.end() - M);
    {
        HeatSlabJob job;
        job.rows = N + 2;
        job.cols = M;
        job.cells.data[0] = padded.data();
        job.cells.counts[0] = 1;
        job.cells.data[1] = t.data();
        job.cells.counts[1] = N;
        job.cells.data[2] = padded.data() + (N + 1) * M;
        job.cells.counts[2] = 1;
        job.conductivity.data[0] = c.data();
        job.conductivity.counts[0] = N;
        auto slab = cuda::make_heat_slab(ctx, job);
        const size_t L = slab->max_levels();
        EXPECT(L == cuda::heat_slab_levels(ctx), name + ": levels");
        bool md_ok = true;
        for (size_t done = 0; done < iters;) {
            const size_t lv = std::min(L, iters - done);
            std::vector<double> md(lv);
            slab->pass(unsigned(lv), 1, N + 1, nullptr, md.data());
            slab->swap();
            for (size_t k = 0; k < lv; ++k) md_ok &= md[k] == full.md[done + k];
            done += lv;
        }
        EXPECT(md_ok, name + ": maxdiffs");
        std::vector<double> out(N * M), mins(N), maxs(N), sums(N);
        slab->read_rows(1, N, out.data());
        EXPECT(same(out.data(), full.grid.data(), N * M), name + ": grid");
        slab->row_stats(1, N, mins.data(), maxs.data(), sums.data());
        Outcome whole = run(ctx, N, M, t, c, iters, 0, DEV, DEV, DEV, true);
        EXPECT(*std::min_element(mins.begin(), mins.end()) == full.tmin &&
                   *std::max_element(maxs.begin(), maxs.end()) == full.tmax,
               name + ": row minima and maxima");
        const double mean = heat_mean(N, M, [&](size_t i) { return sums[i]; });
        EXPECT(mean == whole.fin.tavg, name + ": mean bit-identical to the whole-grid report's");
    }
    // Own rows [a, b) of the padded grid (1..N interior) with lv rows beyond each end (or the fixed rows):
    // one pass of lv levels gives the reference's rows after lv iterations.
    const size_t L = cuda::heat_slab_levels(ctx);
    for (size_t a : {size_t(1), N / 3 + 1, N})
        for (size_t b : {a + 1, (a + N + 2) / 2, N + 1})
            for (size_t lv : {size_t(1), L}) {
                if (b <= a || b > N + 1) continue;
                const size_t lo = a > lv ? a - lv : 0, hi = std::min(N + 1, b - 1 + lv), rows = hi - lo + 1;
                auto slab = padded_slab(ctx, padded, c, M, lo, rows);
                std::vector<double> md(lv), out((b - a) * M);
                slab->pass(unsigned(lv), a - lo, b - lo, nullptr, md.data());
                slab->swap();
                slab->read_rows(a - lo, b - a, out.data());
                const std::string what = name + " rows " + std::to_string(a) + ".." + std::to_string(b) +
                                         " levels " + std::to_string(lv);
                EXPECT(same(out.data(), full.hist[lv].data() + (a - 1) * M, (b - a) * M), what + ": rows");
                bool md_ok = true;
                for (size_t k = 0; k < lv; ++k) md_ok &= md[k] == rows_maxdiff(full, M, a, b, k);
                EXPECT(md_ok, what + ": maxdiffs");
            }
    check_slab_exchange(ctx, N, M, padded, c, full);
}

// The exchange of a slab pass: checks the rows sent against the reference after `level` iterations and
// receives the neighbours' rows from it.
struct Exchange {
    const Ref *full;
    size_t M, a, b, d, level;
    bool sent_ok = true;
};
void exchange_rows(void *user, double *const send[2], double *const recv[2]) {
    Exchange &x = *static_cast<Exchange *>(user);
    const std::vector<double> &g = x.full->hist[x.level];
    const size_t n = x.d * x.M; // padded row r is interior row r - 1
    x.sent_ok &=
        same(send[0], g.data() + (x.a - 1) * x.M, n) && same(send[1], g.data() + (x.b - 1 - x.d) * x.M, n);
    if (x.a > 1) std::copy_n(g.data() + (x.a - 1 - x.d) * x.M, n, recv[0]);
    if (x.b < x.full->hist[0].size() / x.M + 1) std::copy_n(g.data() + (x.b - 1) * x.M, n, recv[1]);
}

// Own rows [a, b) of the padded grid with d rows of neighbours beyond each inner end: two passes of `lv`
// levels with halo exchanges (the exchange fed from the reference), overlapped or not.
void check_slab_exchange(cuda::DeviceContext &ctx, size_t N, size_t M, const std::vector<double> &padded,
                         const std::vector<double> &c, const Ref &full) {
    const size_t d = cuda::heat_slab_levels(ctx);
    const size_t cases[][2] = {
        {1 + d, N + 1 - d}, {1, N + 1 - d}, {1 + d, N + 1}, {1 + 2 * d, N + 1 - 2 * d}};
    for (auto ab : cases)
        for (size_t lv : {d, size_t(1)})
            for (const char *overlap : {"1", "0"}) {
                const size_t a = ab[0], b = ab[1];
                if (b > N + 1 || a >= b || b - a < d) continue;
                const bool up = a > 1, down = b < N + 1;
                const size_t lo = up ? a - d : 0, hi = down ? b - 1 + d : N + 1, rows = hi - lo + 1;
                setenv("GPK_TEST_MPI_OVERLAP", overlap, 1);
                auto slab = padded_slab(ctx, padded, c, M, lo, rows);
                unsetenv("GPK_TEST_MPI_OVERLAP");
                Exchange ex{&full, M, a, b, d, 0};
                HaloExchange x;
                x.depth = d;
                x.up = up;
                x.down = down;
                x.run = exchange_rows;
                x.user = &ex;
                std::vector<double> md(lv);
                bool md_ok = true;
                for (size_t done = 0; done < 2 * lv; done += lv) {
                    ex.level = done + lv;
                    slab->pass(unsigned(lv), a - lo, b - lo, &x, md.data());
                    slab->swap();
                    for (size_t k = 0; k < lv; ++k) md_ok &= md[k] == rows_maxdiff(full, M, a, b, done + k);
                }
                std::vector<double> out((b - a) * M);
                slab->read_rows(a - lo, b - a, out.data());
                const std::string what = std::to_string(N) + "x" + std::to_string(M) +
                                         " slab exchanging rows " + std::to_string(a) + ".." +
                                         std::to_string(b) + " levels " + std::to_string(lv) + " overlap " +
                                         overlap;
                EXPECT(ex.sent_ok, what + ": rows sent");
                EXPECT(md_ok, what + ": maxdiffs");
                EXPECT(same(out.data(), full.hist[2 * lv].data() + (a - 1) * M, (b - a) * M),
                       what + ": rows");
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
        check_resume(ctx, N, M, t, c, rng);
        check_slab(ctx, N, M, t, c);
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
