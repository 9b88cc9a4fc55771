// The CPU heat solver (README, "What gpk computes"). Each pass advances up to kMaxPassIterations iterations
// over the grid in one sweep (temporal blocking): every thread owns a band of rows and walks it as a
// wavefront, keeping the intermediate iterations in small rings of rows that stay in cache, so memory sees
// one read and one write of the grid per pass instead of per iteration. Bands overlap by the pass length (the
// overlap is recomputed, identically, by both neighbours), so threads never wait for each other. Every
// iteration's maxdiff is kept; when a run converges inside a pass, the pass is redone from its untouched
// input up to that iteration. Callbacks come at pass boundaries (heat_rules.hpp): a pass ends at reports and
// checkpoints, never for progress, and a stop ends the run at the boundary it was asked at.
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
#include <emmintrin.h>
#include <string>
#include <vector>

namespace gpk::cpu {
namespace {

constexpr unsigned kMaxPassIterations = 4;
// Bytes of rows a thread may keep hot during a pass (rings, input window, conductivities).
constexpr size_t kPassCacheBytes = size_t(4) << 20;
// Grids at least this large are copied to tfinal past the caches.
constexpr size_t kStreamBytes = size_t(32) << 20;

// Copies n doubles; with `stream`, past the caches (non-temporal stores where dst is 16-byte aligned), so
// that a grid far larger than them is not first read in to be overwritten.
void copy_row(double *dst, const double *src, size_t n, bool stream) {
    size_t i = 0;
    if (stream && reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
        for (; i + 2 <= n; i += 2) {
            __m128i v;
            std::memcpy(&v, src + i, 16);
            _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i), v);
        }
        _mm_sfence();
    }
    std::memcpy(dst + i, src + i, (n - i) * sizeof(double));
}

// What one pass does besides advancing the grid.
struct PassMode {
    unsigned iterations = 1;
    bool from_tinit = false;     // level 0 is read from job.tinit (the first pass), not from src_
    bool check_inputs = false;   // and tinit and the conductivities are checked as they are read
    double *final_out = nullptr; // the last level goes to this unpadded N x M grid (tfinal), not to dst_
    bool stats = false;          // per-row min, max and sum of the last level, for a report
};

// A run's set-up is only what must happen once: the fixed halo rows. The first pass reads tinit row by
// row into a small ring (checking it on the way), the last one writes tfinal and the report's per-row
// sums as it produces its rows, and all working memory is the context's (Workspace), so that a repeated
// call costs its iterations and little more.
class HeatSolver {
public:
    HeatSolver(ThreadPool &pool, Workspace &workspace, const HeatJob &job);
    void run();

private:
    void allocate(Workspace &workspace);
    void load_halo_rows();
    unsigned plan_pass(size_t done) const;
    void pass(const PassMode &mode);
    void band_pass(unsigned part, const PassMode &mode);
    void check_results() const;
    void finish_from(const double *grid, bool stats, bool copy);
    gpk_heat_report report(size_t niter, double maxdiff) const;
    bool checkpoint(size_t iter, double maxdiff);
    double elapsed() const;

    ThreadPool &pool_;
    const HeatJob &job_;
    size_t n_, m_, pitch_;
    unsigned parts_ = 1, max_pass_ = 1;
    double *grid_a_ = nullptr, *grid_b_ = nullptr;
    double *rings_ = nullptr;                // per part: band_ring_doubles(max_pass_)
    double *src_ = nullptr, *dst_ = nullptr; // a pass reads src_ and writes dst_
    double *band_maxdiff_ = nullptr;         // parts_ x max_pass_
    double *pass_maxdiff_ = nullptr;         // max_pass_
    RowStats *row_stats_ = nullptr;          // n_, of the newest grid once a pass has made them
    double *checkpoint_ = nullptr;           // n_ x m_ where checkpoints are asked for
    std::vector<BandCheck> checks_;
    std::chrono::steady_clock::time_point start_;
};

HeatSolver::HeatSolver(ThreadPool &pool, Workspace &workspace, const HeatJob &job)
    : pool_(pool), job_(job), n_(job.rows), m_(job.cols), pitch_(job.cols + 2) {
    if (n_ * m_ >= kParallelCells) parts_ = unsigned(std::min<size_t>(pool.size(), n_));
    size_t row_bytes = pitch_ * sizeof(double);
    // Per pass of k iterations a thread keeps about 5k rows hot: 3 per ring, k+2 inputs, k conductivities.
    size_t fit = kPassCacheBytes / (5 * row_bytes);
    max_pass_ = unsigned(std::clamp<size_t>(fit, 1, kMaxPassIterations));
    checks_.resize(parts_);
    allocate(workspace);
}

// One block of the context's memory, cut into 64-byte aligned pieces. A failure leaves tfinal and the
// report untouched.
void HeatSolver::allocate(Workspace &workspace) {
    auto doubles = [](size_t count) { return (count + 7) / 8 * 8; };
    const size_t grid = doubles((n_ + 2) * pitch_),
                 rings = doubles(parts_ * band_ring_doubles(max_pass_, pitch_)),
                 band = doubles(size_t(parts_) * max_pass_), per_pass = doubles(max_pass_),
                 stats = doubles(n_ * sizeof(RowStats) / sizeof(double)),
                 ckpt = job_.on_checkpoint ? doubles(n_ * m_) : 0;
    const size_t total = 2 * grid + rings + band + per_pass + stats + ckpt;
    if (total > SIZE_MAX / sizeof(double))
        fail(GPK_ERR_OUT_OF_MEMORY, "heat: the grids of " + std::to_string(n_ + 2) + " x " +
                                        std::to_string(pitch_) + " doubles are too large");
    auto *base = static_cast<double *>(workspace.heat.reserve(total * sizeof(double), "heat",
                                                              "two " + std::to_string(n_ + 2) + " x " +
                                                                  std::to_string(pitch_) +
                                                                  " grids of doubles and their row buffers"));
    grid_a_ = base;
    grid_b_ = grid_a_ + grid;
    rings_ = grid_b_ + grid;
    band_maxdiff_ = rings_ + rings;
    pass_maxdiff_ = band_maxdiff_ + band;
    row_stats_ = reinterpret_cast<RowStats *>(pass_maxdiff_ + per_pass);
    checkpoint_ = job_.on_checkpoint ? pass_maxdiff_ + per_pass + stats : nullptr;
}

// The fixed halo rows (job_.fixed_rows, or the initial rows 1 and N; wrapped) in both grids; the interior
// comes with the first pass.
void HeatSolver::load_halo_rows() {
    const double *top = job_.fixed_rows ? job_.fixed_rows : job_.tinit;
    const double *bottom = job_.fixed_rows ? job_.fixed_rows + m_ : job_.tinit + (n_ - 1) * m_;
    for (double *g : {grid_a_, grid_b_}) {
        load_padded_row(g, top, m_);
        load_padded_row(g + (n_ + 1) * pitch_, bottom, m_);
    }
    src_ = grid_a_;
    dst_ = grid_b_;
}

// A pass ends at the next periodic report and checkpoint (whose grids must then be whole) and at maxiter.
unsigned HeatSolver::plan_pass(size_t done) const {
    return unsigned(heat_pass_length(job_, done, max_pass_));
}

// Hands the newest grid (dst_: passes end at checkpoints, and none is due at maxiter, the only pass that
// writes tfinal instead) to the checkpoint callback, unpadded; true to stop.
bool HeatSolver::checkpoint(size_t iter, double maxdiff) {
    for (size_t i = 0; i < n_; ++i)
        std::memcpy(checkpoint_ + i * m_, dst_ + (i + 1) * pitch_ + 1, m_ * sizeof(double));
    return job_.on_checkpoint(iter, maxdiff, checkpoint_, job_.user_data) != 0;
}

// One band's wavefront (band_pass); the first pass reads tinit row by row into the ring, checking it and
// the conductivities on the way, and the last level may go to tfinal with the rows' statistics.
void HeatSolver::band_pass(unsigned part, const PassMode &mode) {
    const size_t r0 = 1 + n_ * part / parts_, r1 = 1 + n_ * (part + 1) / parts_;
    PassGrid g{src_, dst_, n_ + 2, m_, pitch_, job_.conductivity};
    g.initial = mode.from_tinit ? job_.tinit : nullptr;
    g.final_out = mode.final_out;
    g.stats = mode.stats ? row_stats_ : nullptr;
    cpu::band_pass(g, r0, r1, mode.iterations, rings_ + part * band_ring_doubles(max_pass_, pitch_),
                   band_maxdiff_ + size_t(part) * max_pass_, mode.check_inputs ? &checks_[part] : nullptr);
}

void HeatSolver::pass(const PassMode &mode) {
    pool_.run([&](unsigned part, unsigned) { band_pass(part, mode); }, parts_);
    for (unsigned s = 0; s < mode.iterations; ++s) {
        double md = 0;
        for (unsigned p = 0; p < parts_; ++p) md = std::max(md, band_maxdiff_[size_t(p) * max_pass_ + s]);
        pass_maxdiff_[s] = md;
    }
}

// After the checking pass: the first bad temperature anywhere, else the first bad conductivity, as
// check_heat_inputs names them.
void HeatSolver::check_results() const {
    size_t t = SIZE_MAX, c = SIZE_MAX;
    for (const BandCheck &b : checks_) {
        t = std::min(t, b.temperature);
        c = std::min(c, b.conductivity);
    }
    if (t != SIZE_MAX) invalid_temperature(t, m_, job_.tinit[t]);
    if (c != SIZE_MAX) invalid_conductivity(c, m_, job_.conductivity[c]);
}

// For a run that stopped where no pass wrote tfinal or the per-row results: both from `grid`, in one
// sweep.
void HeatSolver::finish_from(const double *grid, bool stats, bool copy) {
    if (!stats && !copy) return;
    const bool stream = n_ * m_ * sizeof(double) >= kStreamBytes;
    auto rows = [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
            const double *row = grid + (i + 1) * pitch_ + 1;
            if (stats) row_stats_[i] = row_stats(row, m_);
            if (copy) copy_row(job_.tfinal + i * m_, row, m_, stream);
        }
    };
    if (parts_ > 1)
        pool_.parallel_for(n_, rows, 16);
    else
        rows(0, n_);
}

double HeatSolver::elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

// A report from the per-row results of the newest grid, combined in row order.
gpk_heat_report HeatSolver::report(size_t niter, double maxdiff) const {
    gpk_heat_report r{};
    r.niter = niter;
    r.maxdiff = maxdiff;
    r.tmin = row_stats_[0].min;
    r.tmax = row_stats_[0].max;
    for (size_t i = 0; i < n_; ++i) {
        r.tmin = std::min(r.tmin, row_stats_[i].min);
        r.tmax = std::max(r.tmax, row_stats_[i].max);
    }
    r.tavg = heat_mean(n_, m_, [&](size_t i) { return row_stats_[i].sum; });
    r.time = elapsed();
    return r;
}

// A pass that ends the run as planned (at maxiter) writes tfinal itself, and so does the redo of a pass
// that converged inside. The first pass checks the inputs and writes no output, since a band may write its
// rows before another finds a bad value.
void HeatSolver::run() {
    if (job_.fixed_rows) check_fixed_rows(job_.fixed_rows, m_);
    load_halo_rows();
    start_ = std::chrono::steady_clock::now();
    size_t done = job_.start_iteration; // a resumed run counts on from its checkpoint
    double maxdiff = 0;
    HeatCallback stopped_by = HeatCallback::none; // the callback that cancelled the run
    bool stats_valid = false, tfinal_written = false;
    // Someone takes the final report: else the final grid's per-row results are not made.
    const bool report_wanted = job_.final || job_.on_report;
    while (done < job_.maxiter) {
        PassMode mode;
        mode.iterations = plan_pass(done);
        mode.from_tinit = mode.check_inputs = done == job_.start_iteration;
        const size_t end = done + mode.iterations;
        const bool planned_final = end == job_.maxiter;
        const bool report_due = job_.period > 0 && end % job_.period == 0 && job_.on_report;
        if (planned_final && !mode.check_inputs) mode.final_out = job_.tfinal;
        mode.stats = (planned_final && report_wanted) || report_due;
        pass(mode);
        if (mode.check_inputs) check_results();
        // The pass's boundary: its end, or the iteration it converged at. Callbacks come there once.
        const unsigned converged_at = unsigned(heat_converged_in(job_, pass_maxdiff_, mode.iterations));
        const unsigned reached = converged_at ? converged_at : mode.iterations;
        const size_t iter = done + reached;
        maxdiff = pass_maxdiff_[reached - 1];
        stopped_by = heat_deliver(
            job_, done, iter, converged_at != 0,
            [&] {
                if (!job_.on_report) return false;
                gpk_heat_report r = report(iter, maxdiff); // passes end at reports
                return job_.on_report(&r, 0, job_.user_data) != 0;
            },
            [&] {
                return job_.on_progress && job_.on_progress(iter, maxdiff, elapsed(), job_.user_data) != 0;
            },
            [&] { return checkpoint(iter, maxdiff); });
        if (converged_at && converged_at < mode.iterations) { // src_ (or tinit) is untouched: redo to there
            mode.iterations = converged_at;
            mode.check_inputs = false;
            mode.final_out = job_.tfinal;
            mode.stats = report_wanted;
            pass(mode);
        }
        stats_valid = mode.stats;
        tfinal_written = mode.final_out != nullptr;
        std::swap(src_, dst_);
        done = iter;
        if (converged_at || stopped_by != HeatCallback::none) break;
    }
    // The newest grid is src_, unless the last pass wrote tfinal instead (and then the per-row results).
    finish_from(src_, report_wanted && !stats_valid, job_.tfinal && !tfinal_written);
    if (report_wanted) heat_final_report(job_, report(done, maxdiff));
    if (stopped_by != HeatCallback::none) heat_cancelled(stopped_by, done);
}

} // namespace

void heat_run(ThreadPool &pool, Workspace &workspace, const HeatJob &job) {
    HeatSolver(pool, workspace, job).run();
}

} // namespace gpk::cpu
