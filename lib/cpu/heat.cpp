// The CPU heat solver (SPEC §1). Each pass advances up to kMaxPassIterations iterations over the grid
// in one sweep (temporal blocking): every thread owns a band of rows and walks it as a wavefront,
// keeping the intermediate iterations in small rings of rows that stay in cache, so memory sees one
// read and one write of the grid per pass instead of per iteration. Bands overlap by the pass length
// (the overlap is recomputed, identically, by both neighbours), so threads never wait for each other.
// Every iteration's maxdiff is kept; when a run must stop inside a pass (convergence, a callback), the
// pass is redone from its untouched input up to that iteration.
#include "common/semantics.hpp"
#include "cpu/host_memory.hpp"
#include "cpu/kernels.hpp"
#include "engine/error.hpp"
#include "engine/validate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

// The row kernel is compiled for several x86 levels and picked at load time; all clones compute the
// same expression in the same order (no FMA contraction), so results do not depend on the CPU.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define GPK_HEAT_CLONES __attribute__((target_clones("avx512f", "avx2", "sse4.2", "default")))
#else
#define GPK_HEAT_CLONES
#endif

namespace gpk::cpu {
namespace {

// Below this many cells an iteration costs less than waking the workers.
constexpr size_t kParallelCells = size_t(1) << 16;
constexpr unsigned kMaxPassIterations = 4;
// Bytes of rows a thread may keep hot during a pass (rings, input window, conductivities).
constexpr size_t kPassCacheBytes = size_t(4) << 20;

// Updates one interior row: out[1..m] from the rows above, at and below (padded rows, column 0 and
// m+1 are the wrapped halo), then wraps out's own halo columns. Returns max |out - mid|. The max is
// taken on the bit patterns of the non-negative differences (ordered like the values), which gcc
// vectorises without -ffast-math.
GPK_HEAT_CLONES double update_row(const double *__restrict up, const double *__restrict mid,
                                  const double *__restrict down, const double *__restrict cond,
                                  double *__restrict out, size_t m) {
    int64_t max_bits = 0;
    for (size_t c = 1; c <= m; ++c) {
        double w = cond[c - 1], r = 1.0 - w;
        double v = w * mid[c] + (down[c] + up[c] + mid[c + 1] + mid[c - 1]) * (r * kHeatCdir) +
                   (up[c - 1] + up[c + 1] + down[c - 1] + down[c + 1]) * (r * kHeatCdiag);
        out[c] = v;
        double d = std::fabs(v - mid[c]);
        int64_t bits;
        std::memcpy(&bits, &d, sizeof bits);
        max_bits = bits > max_bits ? bits : max_bits;
    }
    out[0] = out[m];
    out[m + 1] = out[1];
    double maxdiff;
    std::memcpy(&maxdiff, &max_bits, sizeof maxdiff);
    return maxdiff;
}

struct RowStats {
    double min, max, sum;
};

// Sum in four fixed lanes combined in a fixed order: fast, and the same whatever the thread count.
RowStats row_stats(const double *row, size_t m) {
    double lane[4] = {0, 0, 0, 0};
    double mn = row[0], mx = row[0];
    size_t c = 0;
    for (; c + 4 <= m; c += 4)
        for (int k = 0; k < 4; ++k) lane[k] += row[c + k];
    for (; c < m; ++c) lane[0] += row[c];
    for (c = 0; c < m; ++c) {
        mn = row[c] < mn ? row[c] : mn;
        mx = row[c] > mx ? row[c] : mx;
    }
    return {mn, mx, (lane[0] + lane[1]) + (lane[2] + lane[3])};
}

class HeatSolver {
public:
    HeatSolver(ThreadPool &pool, const HeatJob &job);
    void run();

private:
    void allocate();
    void load_initial_grid();
    unsigned plan_pass(size_t done) const;
    void pass(unsigned iterations);
    void band_pass(unsigned part, unsigned iterations);
    const double *level_row(const double *ring, unsigned level, size_t row) const;
    gpk_heat_report report(const double *grid, size_t niter, double maxdiff) const;
    double elapsed() const;
    [[noreturn]] void out_of_memory() const;

    ThreadPool &pool_;
    const HeatJob &job_;
    size_t n_, m_, pitch_;
    unsigned parts_ = 1, max_pass_ = 1;
    HostArray<double> grid_a_, grid_b_, rings_;
    double *src_ = nullptr, *dst_ = nullptr; // a pass reads src_ and writes dst_
    HostArray<double> band_maxdiff_;         // parts_ x max_pass_
    HostArray<double> pass_maxdiff_;         // max_pass_
    HostArray<RowStats> row_stats_;
    std::chrono::steady_clock::time_point start_;
};

HeatSolver::HeatSolver(ThreadPool &pool, const HeatJob &job)
    : pool_(pool), job_(job), n_(job.rows), m_(job.cols), pitch_(job.cols + 2) {
    if (n_ * m_ >= kParallelCells) parts_ = unsigned(std::min<size_t>(pool.size(), n_));
    size_t row_bytes = pitch_ * sizeof(double);
    // Per pass of k iterations a thread keeps about 5k rows hot: 3 per ring, k+2 inputs, k conductivities.
    size_t fit = kPassCacheBytes / (5 * row_bytes);
    max_pass_ = unsigned(std::clamp<size_t>(fit, 1, kMaxPassIterations));
}

// Names everything the run asks for: the grids, the row rings and the per-row and per-pass results.
[[noreturn]] void HeatSolver::out_of_memory() const {
    size_t doubles =
        (2 * (n_ + 2) + size_t(parts_) * 3 * (max_pass_ - 1)) * pitch_ + (size_t(parts_) + 1) * max_pass_;
    out_of_host_memory("heat", doubles * sizeof(double) + n_ * sizeof(RowStats),
                       "two " + std::to_string(n_ + 2) + " x " + std::to_string(pitch_) +
                           " grids of doubles and their row buffers");
}

// Everything is allocated before the run starts, so that a failure leaves tfinal and the report untouched.
void HeatSolver::allocate() {
    bool ok = grid_a_.allocate((n_ + 2) * pitch_) && grid_b_.allocate((n_ + 2) * pitch_) &&
              rings_.allocate(size_t(parts_) * 3 * (max_pass_ - 1) * pitch_) &&
              band_maxdiff_.allocate(size_t(parts_) * max_pass_) && pass_maxdiff_.allocate(max_pass_) &&
              row_stats_.allocate(n_);
    if (!ok) out_of_memory();
}

// Interior from tinit, fixed halo rows copied from the first and last rows into both grids, and every
// row's halo columns wrapped (the update wraps the rows it writes from then on).
void HeatSolver::load_initial_grid() {
    double *a = grid_a_.get(), *b = grid_b_.get();
    for (size_t i = 1; i <= n_; ++i)
        std::memcpy(a + i * pitch_ + 1, job_.tinit + (i - 1) * m_, m_ * sizeof(double));
    std::memcpy(a + 1, a + pitch_ + 1, m_ * sizeof(double));
    std::memcpy(a + (n_ + 1) * pitch_ + 1, a + n_ * pitch_ + 1, m_ * sizeof(double));
    for (size_t i = 0; i <= n_ + 1; ++i) {
        a[i * pitch_] = a[i * pitch_ + m_];
        a[i * pitch_ + m_ + 1] = a[i * pitch_ + 1];
    }
    std::memcpy(b, a, pitch_ * sizeof(double));
    std::memcpy(b + (n_ + 1) * pitch_, a + (n_ + 1) * pitch_, pitch_ * sizeof(double));
    src_ = a;
    dst_ = b;
}

// A pass ends at the next periodic report (whose grid must then be whole) and at maxiter.
unsigned HeatSolver::plan_pass(size_t done) const {
    size_t length = std::min<size_t>(max_pass_, job_.maxiter - done);
    if (job_.period > 0) length = std::min(length, job_.period - done % job_.period);
    return unsigned(length);
}

// Row `row` of iteration `level` of the current pass (level 0 is src_). The fixed halo rows are the
// same at every level.
const double *HeatSolver::level_row(const double *ring, unsigned level, size_t row) const {
    if (level == 0 || row == 0 || row == n_ + 1) return src_ + row * pitch_;
    return ring + ((level - 1) * 3 + row % 3) * pitch_;
}

// One band's wavefront: level s (iteration s of the pass) computes row j at step j + s - 1, after
// level s-1 has produced rows j-1..j+1. Level s covers the own rows widened by (iterations - s) on
// each side, so the last level needs nothing from the neighbours.
void HeatSolver::band_pass(unsigned part, unsigned iterations) {
    size_t r0 = 1 + n_ * part / parts_, r1 = 1 + n_ * (part + 1) / parts_;
    double *ring = rings_.get() + size_t(part) * 3 * (max_pass_ - 1) * pitch_;
    double maxdiff[kMaxPassIterations] = {}; // local: the bands' slots share a cache line
    auto lo = [&](unsigned s) {
        size_t w = iterations - s;
        return r0 > w + 1 ? r0 - w : size_t(1);
    };
    auto hi = [&](unsigned s) { return std::min(n_ + 1, r1 + (iterations - s)); };
    for (size_t step = lo(1); step + 1 < hi(1) + iterations; ++step) {
        for (unsigned s = 1; s <= iterations; ++s) {
            if (step + 1 < s) break;
            size_t j = step + 1 - s;
            if (j < lo(s) || j >= hi(s)) continue;
            double *out = s == iterations ? dst_ + j * pitch_ : ring + ((s - 1) * 3 + j % 3) * pitch_;
            double d = update_row(level_row(ring, s - 1, j - 1), level_row(ring, s - 1, j),
                                  level_row(ring, s - 1, j + 1), job_.conductivity + (j - 1) * m_, out, m_);
            if (j >= r0 && j < r1) maxdiff[s - 1] = std::max(maxdiff[s - 1], d);
        }
    }
    std::copy(maxdiff, maxdiff + iterations, band_maxdiff_.get() + size_t(part) * max_pass_);
}

void HeatSolver::pass(unsigned iterations) {
    pool_.run([&](unsigned part, unsigned) { band_pass(part, iterations); }, parts_);
    for (unsigned s = 0; s < iterations; ++s) {
        double md = 0;
        for (unsigned p = 0; p < parts_; ++p) md = std::max(md, band_maxdiff_[size_t(p) * max_pass_ + s]);
        pass_maxdiff_[s] = md;
    }
}

double HeatSolver::elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

// A report on `grid`: per-row results combined in row order.
gpk_heat_report HeatSolver::report(const double *grid, size_t niter, double maxdiff) const {
    auto rows = [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) row_stats_[i] = row_stats(grid + (i + 1) * pitch_ + 1, m_);
    };
    if (parts_ > 1)
        pool_.parallel_for(n_, rows, 16);
    else
        rows(0, n_);
    gpk_heat_report r{};
    r.niter = niter;
    r.maxdiff = maxdiff;
    r.tmin = row_stats_[0].min;
    r.tmax = row_stats_[0].max;
    double sum = 0;
    for (const RowStats &s : row_stats_) {
        r.tmin = std::min(r.tmin, s.min);
        r.tmax = std::max(r.tmax, s.max);
        sum += s.sum;
    }
    r.tavg = sum / double(n_ * m_);
    r.time = elapsed();
    return r;
}

void HeatSolver::run() {
    check_heat_inputs(job_.tinit, job_.conductivity, n_, m_);
    allocate();
    load_initial_grid();
    start_ = std::chrono::steady_clock::now();
    size_t done = 0;
    double maxdiff = 0;
    const char *stopped_by = nullptr; // the callback that cancelled the run
    while (done < job_.maxiter) {
        unsigned length = plan_pass(done), stop_at = 0;
        pass(length);
        for (unsigned s = 1; s <= length && !stop_at; ++s) {
            size_t iter = done + s;
            maxdiff = pass_maxdiff_[s - 1];
            bool converged = maxdiff < job_.threshold;
            if (!converged && job_.period > 0 && iter % job_.period == 0 && job_.on_report) {
                gpk_heat_report r = report(dst_, iter, maxdiff); // s == length: passes end at reports
                if (job_.on_report(&r, 0, job_.user_data)) stopped_by = stopped_by ? stopped_by : "report";
            }
            if (job_.on_progress && job_.progress_interval > 0 && iter % job_.progress_interval == 0 &&
                job_.on_progress(iter, maxdiff, elapsed(), job_.user_data))
                stopped_by = stopped_by ? stopped_by : "progress";
            if (stopped_by && (converged || iter == job_.maxiter)) stopped_by = nullptr; // ended anyway
            if (converged || stopped_by) stop_at = s;
        }
        if (stop_at && stop_at < length) pass(stop_at); // src_ is untouched: redo up to stop_at
        std::swap(src_, dst_);
        done += stop_at ? stop_at : length;
        if (stop_at) break;
    }
    gpk_heat_report final_report = report(src_, done, maxdiff);
    if (job_.tfinal)
        for (size_t i = 0; i < n_; ++i)
            std::memcpy(job_.tfinal + i * m_, src_ + (i + 1) * pitch_ + 1, m_ * sizeof(double));
    if (job_.final) *job_.final = final_report;
    if (job_.on_report) job_.on_report(&final_report, 1, job_.user_data);
    if (stopped_by)
        fail(GPK_ERR_CANCELLED, std::string("heat: cancelled by the ") + stopped_by +
                                    " callback at iteration " + std::to_string(done));
}

} // namespace

void heat_run(ThreadPool &pool, const HeatJob &job) {
    HeatSolver(pool, job).run();
}

} // namespace gpk::cpu
