// The CPU heat solver (SPEC §1). Each pass advances up to kMaxPassIterations iterations over the grid
// in one sweep (temporal blocking): every thread owns a band of rows and walks it as a wavefront,
// keeping the intermediate iterations in small rings of rows that stay in cache, so memory sees one
// read and one write of the grid per pass instead of per iteration. Bands overlap by the pass length
// (the overlap is recomputed, identically, by both neighbours), so threads never wait for each other.
// Every iteration's maxdiff is kept; when a run must stop inside a pass (convergence, a callback), the
// pass is redone from its untouched input up to that iteration.
#include "common/semantics.hpp"
#include "cpu/heat_band.hpp"
#include "cpu/host_memory.hpp"
#include "cpu/kernels.hpp"
#include "engine/error.hpp"
#include "engine/heat_rules.hpp"
#include "engine/validate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace gpk::cpu {
namespace {

// Below this many cells an iteration costs less than waking the workers.
constexpr size_t kParallelCells = size_t(1) << 16;
constexpr unsigned kMaxPassIterations = 4;
// Bytes of rows a thread may keep hot during a pass (rings, input window, conductivities).
constexpr size_t kPassCacheBytes = size_t(4) << 20;

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
    gpk_heat_report report(const double *grid, size_t niter, double maxdiff) const;
    bool checkpoint(size_t iter, double maxdiff);
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
    HostArray<double> checkpoint_; // n_ x m_ where checkpoints are asked for
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
    size_t doubles = (2 * (n_ + 2) + size_t(parts_) * 3 * (max_pass_ - 1)) * pitch_ +
                     (size_t(parts_) + 1) * max_pass_ + (job_.on_checkpoint ? n_ * m_ : 0);
    out_of_host_memory("heat", doubles * sizeof(double) + n_ * sizeof(RowStats),
                       "two " + std::to_string(n_ + 2) + " x " + std::to_string(pitch_) +
                           " grids of doubles and their row buffers");
}

// Everything is allocated before the run starts, so that a failure leaves tfinal and the report untouched.
void HeatSolver::allocate() {
    bool ok = grid_a_.allocate((n_ + 2) * pitch_) && grid_b_.allocate((n_ + 2) * pitch_) &&
              rings_.allocate(size_t(parts_) * 3 * (max_pass_ - 1) * pitch_) &&
              band_maxdiff_.allocate(size_t(parts_) * max_pass_) && pass_maxdiff_.allocate(max_pass_) &&
              row_stats_.allocate(n_) && checkpoint_.allocate(job_.on_checkpoint ? n_ * m_ : 0, false);
    if (!ok) out_of_memory();
}

// Interior from tinit, fixed halo rows (job_.fixed_rows, or tinit's first and last rows) into both
// grids, and every row's halo columns wrapped (the update wraps the rows it writes from then on).
void HeatSolver::load_initial_grid() {
    double *a = grid_a_.get(), *b = grid_b_.get();
    for (size_t i = 1; i <= n_; ++i)
        std::memcpy(a + i * pitch_ + 1, job_.tinit + (i - 1) * m_, m_ * sizeof(double));
    const double *top = job_.fixed_rows ? job_.fixed_rows : job_.tinit;
    const double *bottom = job_.fixed_rows ? job_.fixed_rows + m_ : job_.tinit + (n_ - 1) * m_;
    std::memcpy(a + 1, top, m_ * sizeof(double));
    std::memcpy(a + (n_ + 1) * pitch_ + 1, bottom, m_ * sizeof(double));
    for (size_t i = 0; i <= n_ + 1; ++i) {
        a[i * pitch_] = a[i * pitch_ + m_];
        a[i * pitch_ + m_ + 1] = a[i * pitch_ + 1];
    }
    std::memcpy(b, a, pitch_ * sizeof(double));
    std::memcpy(b + (n_ + 1) * pitch_, a + (n_ + 1) * pitch_, pitch_ * sizeof(double));
    src_ = a;
    dst_ = b;
}

// A pass ends at the next periodic report and checkpoint (whose grids must then be whole) and at maxiter.
unsigned HeatSolver::plan_pass(size_t done) const {
    return unsigned(heat_pass_length(job_, done, max_pass_));
}

// One band of the pass: the threads' rows, split evenly.
void HeatSolver::band_pass(unsigned part, unsigned iterations) {
    size_t r0 = 1 + n_ * part / parts_, r1 = 1 + n_ * (part + 1) / parts_;
    double *ring = rings_.get() + size_t(part) * band_ring_doubles(max_pass_, pitch_);
    cpu::band_pass(PassGrid{src_, dst_, n_ + 2, m_, pitch_, job_.conductivity}, r0, r1, iterations, ring,
                   band_maxdiff_.get() + size_t(part) * max_pass_);
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
    for (const RowStats &s : row_stats_) {
        r.tmin = std::min(r.tmin, s.min);
        r.tmax = std::max(r.tmax, s.max);
    }
    r.tavg = heat_mean(n_, m_, [&](size_t i) { return row_stats_[i].sum; });
    r.time = elapsed();
    return r;
}

// Hands the newest grid (dst_: passes end at checkpoints) to the checkpoint callback; true to stop.
bool HeatSolver::checkpoint(size_t iter, double maxdiff) {
    for (size_t i = 0; i < n_; ++i)
        std::memcpy(checkpoint_.get() + i * m_, dst_ + (i + 1) * pitch_ + 1, m_ * sizeof(double));
    return job_.on_checkpoint(iter, maxdiff, checkpoint_.get(), job_.user_data) != 0;
}

void HeatSolver::run() {
    check_heat_inputs(job_.tinit, job_.conductivity, n_, m_);
    if (job_.fixed_rows) check_fixed_rows(job_.fixed_rows, m_);
    allocate();
    load_initial_grid();
    start_ = std::chrono::steady_clock::now();
    size_t done = job_.start_iteration;
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
            if (!converged && heat_checkpoint_due(job_, iter) && checkpoint(iter, maxdiff))
                stopped_by = stopped_by ? stopped_by : "checkpoint";
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
