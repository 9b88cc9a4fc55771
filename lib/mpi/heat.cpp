// gpk_mpi_heat_run: the heat solver over ranks holding blocks of rows (gpk_mpi.h). Each rank keeps a slab
// on its backend (gpk_internal.h): its own rows and k halo rows on each side with a neighbour (one fixed
// row at the grid's ends). A pass advances k iterations; the slab hands over the own rows the neighbours
// need and computes the rest while the exchange runs here. The k iterations' maxdiffs are all-reduced
// once per pass; reports gather the rows' sums so that the mean adds them in row order (heat_mean), as
// the single-process solvers do. Callbacks and convergence follow heat_rules.hpp, the backends' rules.
#include "mpi/heat.hpp"

#include "engine/heat_rules.hpp"
#include "gpk_internal.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace gpk::mpi {
namespace {

constexpr int kHaloTag = 1401;

struct SlabFree {
    void operator()(gpk_internal_heat_slab *s) const { gpk_internal_heat_slab_destroy(s); }
};
using Slab = std::unique_ptr<gpk_internal_heat_slab, SlabFree>;

// The ranks above and below, and how many values a halo of k rows holds.
struct Neighbours {
    MPI_Comm comm;
    int up, down; // MPI_PROC_NULL at the grid's ends
    int count;    // doubles per direction
};

// Sends the first rows up and the last rows down, receives the rows above and below (MPI_PROC_NULL sides
// are no-ops).
void exchange_rows(const Neighbours &n, const double *send_up, const double *send_down, double *recv_up,
                   double *recv_down) {
    MPI_Request req[4];
    MPI_Irecv(recv_up, n.count, MPI_DOUBLE, n.up, kHaloTag, n.comm, &req[0]);
    MPI_Irecv(recv_down, n.count, MPI_DOUBLE, n.down, kHaloTag, n.comm, &req[1]);
    MPI_Isend(send_up, n.count, MPI_DOUBLE, n.up, kHaloTag, n.comm, &req[2]);
    MPI_Isend(send_down, n.count, MPI_DOUBLE, n.down, kHaloTag, n.comm, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
}

extern "C" void exchange_halo(void *user, double *const send[2], double *const recv[2]) {
    exchange_rows(*static_cast<const Neighbours *>(user), send[0], send[1], recv[0], recv[1]);
}

class DistributedHeat {
public:
    DistributedHeat(Team &team, gpk_context *ctx, const gpk_heat_params &params, const Block &block)
        : team_(team), ctx_(ctx), p_(params), block_(block), m_(params.cols) {
        job_.rows = p_.rows;
        job_.cols = p_.cols;
        job_.maxiter = p_.maxiter;
        job_.threshold = p_.threshold;
        job_.period = p_.period;
        job_.progress_interval = p_.progress_interval;
        job_.on_checkpoint = p_.on_checkpoint;
        job_.checkpoint_interval = p_.checkpoint_interval;
        job_.on_report = p_.on_report;
        job_.on_progress = p_.on_progress;
        job_.user_data = p_.user_data;
    }
    void run(const double *tinit, const double *conductivity, double *tfinal, gpk_heat_report *final);

private:
    void set_up(const double *tinit, const double *conductivity);
    void pass(unsigned levels, bool exchange, double *maxdiff);
    gpk_heat_report report(size_t niter, double maxdiff);
    int deliver(size_t iter, double maxdiff, bool converged);
    double seconds() const;

    Team &team_;
    gpk_context *ctx_;
    const gpk_heat_params &p_;
    const Block &block_;
    HeatJob job_; // the schedule's parameters (heat_rules.hpp)
    size_t m_;
    size_t depth_ = 1, above_ = 1, below_ = 1; // halo depth; rows above and below the own rows
    Neighbours links_{};
    Slab slab_;
    std::vector<double> mins_, maxs_, sums_, all_sums_, block_grid_;
    std::vector<int> counts_, displs_;
    std::chrono::steady_clock::time_point start_;
};

double DistributedHeat::seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

// The slab: k rows from each neighbour (temperatures, and conductivities for all but the outermost), or
// the fixed row at the grid's ends.
void DistributedHeat::set_up(const double *tinit, const double *conductivity) {
    const size_t own = block_.count;
    unsigned levels = gpk_internal_heat_slab_levels(ctx_);
    unsigned long long k = std::min<unsigned long long>(levels, own);
    MPI_Allreduce(MPI_IN_PLACE, &k, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, team_.comm());
    depth_ = size_t(k);
    const bool up = block_.begin > 0, down = block_.begin + own < p_.rows;
    above_ = up ? depth_ : 1;
    below_ = down ? depth_ : 1;
    links_ = Neighbours{team_.comm(), up ? team_.rank() - 1 : MPI_PROC_NULL,
                        down ? team_.rank() + 1 : MPI_PROC_NULL, int(depth_ * m_)};
    const size_t rows = above_ + own + below_;
    std::vector<double> halo;
    team_.step([&] {
        halo.resize(4 * depth_ * m_); // received temperatures above, below; conductivities above, below
        mins_.resize(own);
        maxs_.resize(own);
        sums_.resize(own);
        all_sums_.resize(p_.rows);
        if (p_.on_checkpoint) block_grid_.resize(own * m_);
    });
    const size_t n = depth_ * m_;
    exchange_rows(links_, tinit, tinit + (own - depth_) * m_, halo.data(), halo.data() + n);
    exchange_rows(links_, conductivity, conductivity + (own - depth_) * m_, halo.data() + 2 * n,
                  halo.data() + 3 * n);
    // The slab in pieces: the rows above, the own rows (the caller's), the rows below; conductivities of
    // slab rows 1..rows-2: the received rows but the outermost, then the own rows.
    const double *top = up ? halo.data() : p_.fixed_rows ? p_.fixed_rows : tinit;
    const double *bottom = down            ? halo.data() + n
                           : p_.fixed_rows ? p_.fixed_rows + m_
                                           : tinit + (own - 1) * m_;
    const double *const cells[3] = {top, tinit, bottom};
    const size_t cell_rows[3] = {above_, own, below_};
    const double *const cond[3] = {halo.data() + 2 * n + m_, conductivity, halo.data() + 3 * n};
    const size_t cond_rows[3] = {above_ - 1, own, below_ - 1};
    team_.step([&] {
        gpk_internal_heat_slab *s = nullptr;
        Outcome o = outcome_of(
            gpk_internal_heat_slab_create(&s, ctx_, rows, m_, cells, cell_rows, cond, cond_rows), ctx_);
        slab_.reset(s);
        if (o.failed()) throw Error(o.status, o.message);
    });
    counts_.resize(size_t(team_.size()));
    displs_.resize(size_t(team_.size()));
    for (int r = 0; r < team_.size(); ++r) {
        counts_[size_t(r)] = int(block_.counts[size_t(r)]);
        displs_[size_t(r)] = int(block_.begins[size_t(r)]);
    }
}

// A pass over the own rows (with the halo exchange), its result made current; every rank's maxdiffs of
// the pass reduced, a failure anywhere made everyone's.
void DistributedHeat::pass(unsigned levels, bool exchange, double *maxdiff) {
    const size_t own_begin = above_, own_end = above_ + block_.count;
    std::vector<double> reduced(levels + 1, 0.0);
    Outcome o =
        outcome_of(gpk_internal_heat_slab_pass(slab_.get(), levels, own_begin, own_end, depth_,
                                               links_.up != MPI_PROC_NULL, links_.down != MPI_PROC_NULL,
                                               exchange ? exchange_halo : nullptr, &links_, reduced.data()),
                   ctx_);
    if (!o.failed()) o = outcome_of(gpk_internal_heat_slab_swap(slab_.get()), ctx_);
    reduced[levels] = o.failed() ? 1.0 : 0.0;
    MPI_Allreduce(MPI_IN_PLACE, reduced.data(), int(levels + 1), MPI_DOUBLE, MPI_MAX, team_.comm());
    if (reduced[levels] != 0) team_.agree(o);
    std::copy_n(reduced.data(), levels, maxdiff);
}

// The whole grid's report: minimum and maximum all-reduced, the rows' sums gathered in row order.
gpk_heat_report DistributedHeat::report(size_t niter, double maxdiff) {
    const size_t own = block_.count;
    Outcome o = outcome_of(
        gpk_internal_heat_slab_row_stats(slab_.get(), above_, own, mins_.data(), maxs_.data(), sums_.data()),
        ctx_);
    double local[4] = {o.failed() ? 0.0 : -*std::min_element(mins_.begin(), mins_.end()),
                       o.failed() ? 0.0 : *std::max_element(maxs_.begin(), maxs_.end()), seconds(),
                       o.failed() ? 1.0 : 0.0};
    MPI_Allreduce(MPI_IN_PLACE, local, 4, MPI_DOUBLE, MPI_MAX, team_.comm());
    if (local[3] != 0) team_.agree(o);
    MPI_Allgatherv(sums_.data(), int(own), MPI_DOUBLE, all_sums_.data(), counts_.data(), displs_.data(),
                   MPI_DOUBLE, team_.comm());
    gpk_heat_report r{};
    r.niter = niter;
    r.tmin = -local[0];
    r.tmax = local[1];
    r.maxdiff = maxdiff;
    r.tavg = heat_mean(p_.rows, m_, [&](size_t i) { return all_sums_[i]; });
    r.time = local[2];
    return r;
}

// The callbacks due after iteration `iter` (heat_deliver, the backends' rules) on every rank: a report is
// made wherever one is due (collective), whether or not this rank's callback takes it. Then one vote:
// returns the first callback that asked to stop (HeatCallback) on the lowest such rank, times the ranks,
// plus that rank; or -1.
int DistributedHeat::deliver(size_t iter, double maxdiff, bool converged) {
    if (!heat_callbacks_due(job_, iter, converged).any()) return -1;
    const HeatCallback kind = heat_deliver(
        job_, iter, converged,
        [&] {
            gpk_heat_report r = report(iter, maxdiff);
            return p_.on_report && p_.on_report(&r, 0, p_.user_data) != 0;
        },
        [&] { return p_.on_progress && p_.on_progress(iter, maxdiff, seconds(), p_.user_data) != 0; },
        [&] {
            team_.step([&] {
                Outcome o = outcome_of(
                    gpk_internal_heat_slab_read_rows(slab_.get(), above_, block_.count, block_grid_.data()),
                    ctx_);
                if (o.failed()) throw Error(o.status, o.message);
            });
            return p_.on_checkpoint(iter, maxdiff, block_grid_.data(), p_.user_data) != 0;
        });
    int vote[2] = {int(kind), team_.rank()};
    MPI_Allreduce(MPI_IN_PLACE, vote, 1, MPI_2INT, MPI_MINLOC, team_.comm());
    if (vote[0] == int(HeatCallback::none)) return -1;
    return vote[0] * team_.size() + vote[1];
}

void DistributedHeat::run(const double *tinit, const double *conductivity, double *tfinal,
                          gpk_heat_report *final) {
    set_up(tinit, conductivity);
    start_ = std::chrono::steady_clock::now();
    size_t done = p_.start_iteration;
    double maxdiff = 0;
    int stopped = -1;
    std::vector<double> md(depth_);
    while (done < p_.maxiter) {
        const unsigned length = unsigned(heat_pass_length(job_, done, depth_));
        pass(length, team_.size() > 1, md.data());
        unsigned stop_at = 0;
        for (unsigned s = 1; s <= length && !stop_at; ++s) {
            const size_t iter = done + s;
            maxdiff = md[s - 1];
            const bool converged = maxdiff < p_.threshold;
            stopped = deliver(iter, maxdiff, converged);
            if (converged || stopped >= 0) stop_at = s;
        }
        if (stop_at && stop_at < length) { // the pass's source is the other grid: redo up to stop_at
            team_.step([&] {
                Outcome o = outcome_of(gpk_internal_heat_slab_swap(slab_.get()), ctx_);
                if (o.failed()) throw Error(o.status, o.message);
            });
            std::vector<double> again(stop_at);
            pass(stop_at, false, again.data());
        }
        done += stop_at ? stop_at : length;
        if (stop_at) break;
    }
    gpk_heat_report r = report(done, maxdiff);
    if (tfinal)
        team_.step([&] {
            Outcome o =
                outcome_of(gpk_internal_heat_slab_read_rows(slab_.get(), above_, block_.count, tfinal), ctx_);
            if (o.failed()) throw Error(o.status, o.message);
        });
    job_.final = final;
    heat_final_report(job_, r);
    if (stopped >= 0)
        heat_cancelled(HeatCallback(stopped / team_.size()), done,
                       team_.size() > 1 ? " of rank " + std::to_string(stopped % team_.size()) : "");
}

} // namespace

void heat_run(Team &team, gpk_context *ctx, const gpk_heat_params &params, const Block &block,
              const double *tinit, const double *conductivity, double *tfinal, gpk_heat_report *final) {
    DistributedHeat(team, ctx, params, block).run(tinit, conductivity, tfinal, final);
}

} // namespace gpk::mpi
