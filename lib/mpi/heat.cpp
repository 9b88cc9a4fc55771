// gpk_mpi_heat_run: the heat solver over ranks holding blocks of rows (gpk_mpi.h). Each rank keeps a slab
// on its backend (gpk_internal.h): its own rows and k halo rows on each side with a neighbour (one fixed
// row at the grid's ends). A pass advances k iterations; the slab hands over the own rows the neighbours
// need and computes the rest while the exchange runs here. The k iterations' maxdiffs are all-reduced
// once per pass; reports gather the rows' sums so that the mean adds them in row order (heat_mean), as
// the single-process solvers do. Callbacks and convergence follow heat_rules.hpp, the backends' rules.
#include "mpi/heat.hpp"

#include "engine/heat_rules.hpp"
#include "gpk_mpi.h"
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

constexpr int kHaloTag = 1401, kLinkTag = 1402, kClosedTag = 1403;

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
// are no-ops). A side whose buffers are NULL (rows the slabs copy between themselves) exchanges a
// zero-byte notice instead, which both ends of that link post.
void exchange_rows(const Neighbours &n, const double *send_up, const double *send_down, double *recv_up,
                   double *recv_down) {
    MPI_Request req[4];
    MPI_Irecv(recv_up, recv_up ? n.count : 0, MPI_DOUBLE, n.up, kHaloTag, n.comm, &req[0]);
    MPI_Irecv(recv_down, recv_down ? n.count : 0, MPI_DOUBLE, n.down, kHaloTag, n.comm, &req[1]);
    MPI_Isend(send_up, send_up ? n.count : 0, MPI_DOUBLE, n.up, kHaloTag, n.comm, &req[2]);
    MPI_Isend(send_down, send_down ? n.count : 0, MPI_DOUBLE, n.down, kHaloTag, n.comm, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
}

extern "C" void exchange_halo(void *user, double *const send[2], double *const recv[2]) {
    exchange_rows(*static_cast<const Neighbours *>(user), send[0], send[1], recv[0], recv[1]);
}

// Sends `mine` to both neighbours and receives theirs (one fixed-size message a side, MPI_PROC_NULL sides
// left as they were).
template <class T> void swap_with_neighbours(const Neighbours &n, const T &mine, T theirs[2]) {
    MPI_Request req[4];
    const int bytes = int(sizeof(T));
    MPI_Irecv(&theirs[0], bytes, MPI_BYTE, n.up, kLinkTag, n.comm, &req[0]);
    MPI_Irecv(&theirs[1], bytes, MPI_BYTE, n.down, kLinkTag, n.comm, &req[1]);
    MPI_Isend(&mine, bytes, MPI_BYTE, n.up, kLinkTag, n.comm, &req[2]);
    MPI_Isend(&mine, bytes, MPI_BYTE, n.down, kLinkTag, n.comm, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
}

template <size_t N> void put(char (&to)[N], const std::string &text) {
    const size_t n = std::min(text.size(), N - 1);
    std::memcpy(to, text.data(), n);
    to[n] = '\0';
}

// How the halo rows of a slab travel to each neighbour (HaloPath of engine/heat_slab.hpp), chosen per
// link with both ends' consent: CUDA IPC where both ranks are on one node and each could open the other's
// offer; else device buffers where the MPI library is CUDA-aware and the slab is on a device; else pinned
// host buffers. Every step is a fixed-size message with each neighbour, posted by every rank whatever
// happened locally, so the set-up never leaves a rank waiting; a refusal at any step is kept as the reason
// (gpk info) and the link falls back, never an error.
class HaloLinks {
public:
    enum Path { host = 0, device = 1, peer = 2 };

    // Collective over the team. Throws (the same on every rank) only where set_paths fails.
    void set_up(Team &team, gpk_context *ctx, const Neighbours &n, gpk_internal_heat_slab *slab,
                size_t depth);
    // Drops the opened offers and tells each IPC neighbour so before either frees its buffers; matched on
    // both ends of every IPC link (their paths were agreed).
    void close(const Neighbours &n, gpk_internal_heat_slab *slab);
    Path path(int side) const { return paths_[side]; }
    const std::string &why(int side) const { return why_[side]; }
    // "CUDA IPC, device 0 -> 1 (peer access)", "host staging (rank 1 is on another node)".
    std::string describe(int side) const;

private:
    struct Offer {
        int leader = -1; // the lowest team rank of the sender's node
        unsigned bytes = 0;
        char blob[512] = {};
        char why[240] = {};
    };
    struct Reply {
        int accepted = 0;
        char why[240] = {};
    };
    Path paths_[2] = {host, host};
    std::string why_[2];
    bool opened_ = false, on_device_ = false;
};

void HaloLinks::set_up(Team &team, gpk_context *ctx, const Neighbours &n, gpk_internal_heat_slab *slab,
                       size_t depth) {
    on_device_ = gpk_internal_heat_slab_on_device(slab) != 0;
    const int neighbour[2] = {n.up, n.down};
    MPI_Comm node;
    int leader = team.rank();
    MPI_Comm_split_type(team.comm(), MPI_COMM_TYPE_SHARED, team.rank(), MPI_INFO_NULL, &node);
    MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    // Their node first (a message of its own, so the offer is made only where some neighbour shares it).
    int leaders[2] = {-1, -1};
    swap_with_neighbours(n, leader, leaders);
    bool local[2];
    for (int s = 0; s < 2; ++s) local[s] = neighbour[s] != MPI_PROC_NULL && leaders[s] == leader;
    Offer mine, theirs[2];
    mine.leader = leader;
    if (local[0] || local[1]) {
        size_t bytes = 0;
        char why[sizeof mine.why] = {};
        if (gpk_internal_heat_slab_offer(slab, depth, mine.blob, sizeof mine.blob, &bytes, why, sizeof why) !=
            GPK_OK)
            put(why, std::string("offer: ") + gpk_context_last_error(ctx));
        mine.bytes = unsigned(bytes);
        std::memcpy(mine.why, why, sizeof why);
    }
    swap_with_neighbours(n, mine, theirs);
    Reply reply[2], replies[2];
    for (int s = 0; s < 2; ++s) {
        if (neighbour[s] == MPI_PROC_NULL) continue;
        const std::string other = "rank " + std::to_string(neighbour[s]);
        if (!local[s]) {
            why_[s] = other + " is on another node";
        } else if (theirs[s].bytes == 0) {
            why_[s] = other + " offers no CUDA IPC: " + theirs[s].why;
        } else if (mine.bytes == 0) {
            why_[s] = std::string("this rank offers no CUDA IPC: ") + mine.why;
        } else {
            char why[sizeof reply[s].why] = {};
            int accepted = 0;
            if (gpk_internal_heat_slab_accept(slab, s, theirs[s].blob, theirs[s].bytes, &accepted, why,
                                              sizeof why) != GPK_OK)
                accepted = 0;
            reply[s].accepted = accepted;
            opened_ = opened_ || accepted;
            why_[s] = accepted ? std::string(why) : "opening " + other + "'s buffers: " + why;
        }
        put(reply[s].why, why_[s]);
    }
    // Both ends must have opened the other's: each writes into the other's buffers.
    MPI_Request req[4];
    MPI_Irecv(&replies[0], int(sizeof(Reply)), MPI_BYTE, n.up, kLinkTag, n.comm, &req[0]);
    MPI_Irecv(&replies[1], int(sizeof(Reply)), MPI_BYTE, n.down, kLinkTag, n.comm, &req[1]);
    MPI_Isend(&reply[0], int(sizeof(Reply)), MPI_BYTE, n.up, kLinkTag, n.comm, &req[2]);
    MPI_Isend(&reply[1], int(sizeof(Reply)), MPI_BYTE, n.down, kLinkTag, n.comm, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    const bool device_mpi = gpk_mpi_cuda_aware() && on_device_ && !gpk_internal_halo_host_forced();
    for (int s = 0; s < 2; ++s) {
        if (neighbour[s] == MPI_PROC_NULL) continue;
        if (reply[s].accepted && replies[s].accepted) {
            paths_[s] = peer;
            continue;
        }
        if (reply[s].accepted)
            why_[s] = "rank " + std::to_string(neighbour[s]) +
                      " could not open this rank's buffers: " + replies[s].why;
        paths_[s] = device_mpi ? device : host;
    }
    team.agree(outcome_of(gpk_internal_heat_slab_set_paths(slab, paths_[0], paths_[1]), ctx));
}

void HaloLinks::close(const Neighbours &n, gpk_internal_heat_slab *slab) {
    if (opened_) gpk_internal_heat_slab_close_peers(slab);
    opened_ = false;
    const int neighbour[2] = {n.up, n.down};
    for (int s = 0; s < 2; ++s)
        if (paths_[s] == peer) {
            MPI_Sendrecv(nullptr, 0, MPI_BYTE, neighbour[s], kClosedTag, nullptr, 0, MPI_BYTE, neighbour[s],
                         kClosedTag, n.comm, MPI_STATUS_IGNORE);
            paths_[s] = host;
        }
}

std::string HaloLinks::describe(int side) const {
    switch (paths_[side]) {
    case peer:
        return "CUDA IPC, " + why_[side];
    case device:
        return "device buffers through CUDA-aware MPI (" + why_[side] + ")";
    default:
        return "host staging (" + why_[side] +
               (on_device_ && !gpk_mpi_cuda_aware() ? "; MPI not CUDA-aware" : "") + ")";
    }
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
    ~DistributedHeat() { halo_.close(links_, slab_.get()); }
    DistributedHeat(const DistributedHeat &) = delete;
    DistributedHeat &operator=(const DistributedHeat &) = delete;
    void run(const double *tinit, const double *conductivity, double *tfinal, gpk_heat_report *final);

private:
    void set_up(const double *tinit, const double *conductivity);
    void launch(unsigned levels, bool exchange);
    void collect(unsigned levels, double *maxdiff);
    void back();
    gpk_heat_report report(size_t niter, double maxdiff);
    int deliver(size_t prev, size_t iter, double maxdiff, bool converged);
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
    HaloLinks halo_;
    bool run_ahead_ = false; // every rank's slab keeps the sources of two passes
    Outcome failed_;         // a launch's failure, for the next collect
    std::vector<double> reduced_, mins_, maxs_, sums_, all_sums_, block_grid_;
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
    std::vector<double> halo, edges;
    const bool t_dev = gpk_internal_on_device(ctx_, tinit) != 0,
               c_dev = gpk_internal_on_device(ctx_, conductivity) != 0;
    const size_t n = depth_ * m_;
    team_.step([&] {
        halo.resize(4 * n); // received temperatures above, below; conductivities above, below
        mins_.resize(own);
        maxs_.resize(own);
        sums_.resize(own);
        all_sums_.resize(p_.rows);
        if (p_.on_checkpoint) block_grid_.resize(own * m_);
        // Rows in device memory: the edge rows the neighbours need, to the host for this one exchange.
        edges.resize((t_dev || c_dev) ? 4 * n : 0);
        const double *const from[2] = {tinit, conductivity};
        const bool dev[2] = {t_dev, c_dev};
        for (int k = 0; k < 2; ++k)
            for (int e = 0; e < 2 && dev[k]; ++e) {
                const double *rows = from[k] + (e ? (own - depth_) * m_ : 0);
                const size_t bytes = n * sizeof(double);
                check_ok(gpk_internal_copy_rows(ctx_, edges.data() + size_t(2 * k + e) * n, bytes, rows,
                                                bytes, bytes, 1),
                         ctx_);
            }
    });
    const double *t_top = t_dev ? edges.data() : tinit,
                 *t_bottom = t_dev ? edges.data() + n : tinit + (own - depth_) * m_;
    const double *c_top = c_dev ? edges.data() + 2 * n : conductivity,
                 *c_bottom = c_dev ? edges.data() + 3 * n : conductivity + (own - depth_) * m_;
    exchange_rows(links_, t_top, t_bottom, halo.data(), halo.data() + n);
    exchange_rows(links_, c_top, c_bottom, halo.data() + 2 * n, halo.data() + 3 * n);
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
        const gpk_status status =
            gpk_internal_heat_slab_create(&s, ctx_, rows, m_, cells, cell_rows, cond, cond_rows);
        slab_.reset(s);
        check_ok(status, ctx_);
    });
    if (team_.size() > 1) halo_.set_up(team_, ctx_, links_, slab_.get(), depth_);
    int ahead = gpk_internal_heat_slab_ahead(slab_.get()) >= 2 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &ahead, 1, MPI_INT, MPI_MIN, team_.comm());
    run_ahead_ = ahead != 0;
    counts_.resize(size_t(team_.size()));
    displs_.resize(size_t(team_.size()));
    for (int r = 0; r < team_.size(); ++r) {
        counts_[size_t(r)] = int(block_.counts[size_t(r)]);
        displs_[size_t(r)] = int(block_.begins[size_t(r)]);
    }
}

// A pass over the own rows (with the halo exchange), its result made current at once; a failure is kept for
// the next collect(), which every rank reaches.
void DistributedHeat::launch(unsigned levels, bool exchange) {
    const Outcome o =
        outcome_of(gpk_internal_heat_slab_launch(slab_.get(), levels, above_, above_ + block_.count, depth_,
                                                 links_.up != MPI_PROC_NULL, links_.down != MPI_PROC_NULL,
                                                 exchange ? exchange_halo : nullptr, &links_),
                   ctx_);
    if (o.failed() && !failed_.failed()) failed_ = o;
}

// The maxdiffs of the oldest pass not collected yet (`levels` of them), reduced over the ranks; a failure
// anywhere since the last collect made everyone's.
void DistributedHeat::collect(unsigned levels, double *maxdiff) {
    reduced_.assign(levels + 1, 0.0);
    if (!failed_.failed()) {
        const Outcome o = outcome_of(gpk_internal_heat_slab_collect(slab_.get(), reduced_.data()), ctx_);
        if (o.failed()) failed_ = o;
    }
    reduced_[levels] = failed_.failed() ? 1.0 : 0.0;
    MPI_Allreduce(MPI_IN_PLACE, reduced_.data(), int(levels + 1), MPI_DOUBLE, MPI_MAX, team_.comm());
    if (reduced_[levels] != 0) team_.agree(failed_);
    std::copy_n(reduced_.data(), levels, maxdiff);
}

// The newest pass's source made current again (the pass dropped), the same on every rank.
void DistributedHeat::back() {
    team_.step([&] { check_ok(gpk_internal_heat_slab_back(slab_.get()), ctx_); });
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

// The callbacks due at the boundary `iter`, reached from `prev` (heat_deliver, the backends' rules), on
// every rank: a report is made wherever one is due (collective), whether or not this rank's callback takes
// it. Then one vote: returns the first callback that asked to stop (HeatCallback) on the lowest such rank,
// times the ranks, plus that rank; or -1.
int DistributedHeat::deliver(size_t prev, size_t iter, double maxdiff, bool converged) {
    if (!heat_callbacks_due(job_, prev, iter, converged).any()) return -1;
    const HeatCallback kind = heat_deliver(
        job_, prev, iter, converged,
        [&] {
            gpk_heat_report r = report(iter, maxdiff);
            return p_.on_report && p_.on_report(&r, 0, p_.user_data) != 0;
        },
        [&] { return p_.on_progress && p_.on_progress(iter, maxdiff, seconds(), p_.user_data) != 0; },
        [&] {
            team_.step([&] {
                check_ok(
                    gpk_internal_heat_slab_read_rows(slab_.get(), above_, block_.count, block_grid_.data()),
                    ctx_);
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
    const bool exchange = team_.size() > 1;
    size_t done = p_.start_iteration, enqueued = done;
    double maxdiff = 0;
    int stopped = -1;
    std::vector<double> md(depth_);
    // Passes launched and not collected yet (their lengths, oldest first). Where every slab keeps the
    // sources of two passes, the next pass is launched before the host waits for the maxdiffs of the one
    // before, so that the device never waits for the host between passes; the decision lags one pass, and
    // a pass launched beyond the iteration that ends the run is dropped (back()), its exchange made all the
    // same on every rank. Not beyond a pass whose grid a report or a checkpoint reads.
    unsigned queued[2] = {0, 0};
    int in_flight = 0;
    auto next = [&] {
        const unsigned length = unsigned(heat_pass_length(job_, enqueued, depth_));
        launch(length, exchange);
        queued[in_flight++] = length;
        enqueued += length;
    };
    while (done < p_.maxiter) {
        if (in_flight == 0) next();
        if (run_ahead_ && in_flight == 1 && enqueued < p_.maxiter) {
            const HeatCallbacksDue due = heat_callbacks_due(job_, done, enqueued, false);
            if (!due.report && !due.checkpoint) next();
        }
        const unsigned length = queued[0];
        queued[0] = queued[1];
        --in_flight;
        collect(length, md.data());
        // The pass's boundary: its end, or the iteration it converged at; callbacks come there once, and a
        // stop ends the run there.
        const size_t converged_at = heat_converged_in(job_, md.data(), length);
        const size_t iter = done + (converged_at ? converged_at : length);
        maxdiff = md[iter - done - 1];
        stopped = deliver(done, iter, maxdiff, converged_at != 0);
        const bool ends = converged_at || stopped >= 0;
        if (ends && in_flight) { // the pass after this one is not part of the run
            back();
            in_flight = 0;
        }
        if (converged_at && converged_at < length) { // the pass's source is kept: redo up to converged_at
            back();
            std::vector<double> again(converged_at);
            launch(unsigned(converged_at), false);
            collect(unsigned(converged_at), again.data());
        }
        done = iter;
        if (ends) break;
    }
    gpk_heat_report r = report(done, maxdiff);
    if (tfinal)
        team_.step([&] {
            check_ok(gpk_internal_heat_slab_read_rows(slab_.get(), above_, block_.count, tfinal), ctx_);
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

namespace {

// A slab of k own rows between k halo rows a side, its links set up as a run's are, closed on the way out.
struct ProbeSlab {
    Neighbours n{};
    Slab slab;
    HaloLinks links;
    ~ProbeSlab() { links.close(n, slab.get()); }
};

} // namespace

void halo_paths(Team &team, gpk_context *ctx, size_t cols, unsigned exchanges, std::string *text,
                double *seconds) {
    unsigned long long k = gpk_internal_heat_slab_levels(ctx);
    MPI_Allreduce(MPI_IN_PLACE, &k, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, team.comm());
    const size_t d = size_t(k), rows = 3 * d;
    ProbeSlab probe;
    probe.n = Neighbours{team.comm(), team.rank() > 0 ? team.rank() - 1 : MPI_PROC_NULL,
                         team.rank() + 1 < team.size() ? team.rank() + 1 : MPI_PROC_NULL, int(d * cols)};
    std::vector<double> zeros;
    team.step([&] {
        if (d == 0) fail(GPK_ERR_INTERNAL, "the backend's slab passes have no length");
        zeros.assign(rows * cols, 0.0);
        const double *const cells[3] = {zeros.data(), nullptr, nullptr};
        const size_t cell_rows[3] = {rows, 0, 0}, cond_rows[3] = {rows - 2, 0, 0};
        gpk_internal_heat_slab *s = nullptr;
        const gpk_status status =
            gpk_internal_heat_slab_create(&s, ctx, rows, cols, cells, cell_rows, cells, cond_rows);
        probe.slab.reset(s);
        check_ok(status, ctx);
    });
    probe.links.set_up(team, ctx, probe.n, probe.slab.get(), d);
    // Each rank describes the link below it; every rank gets every line.
    constexpr size_t kLine = 480;
    char line[kLine] = {};
    if (probe.n.down != MPI_PROC_NULL)
        put(line, "rank " + std::to_string(team.rank()) + " <-> " + std::to_string(probe.n.down) + ": " +
                      probe.links.describe(1));
    std::vector<char> lines(kLine * size_t(team.size()));
    MPI_Allgather(line, int(kLine), MPI_CHAR, lines.data(), int(kLine), MPI_CHAR, team.comm());
    text->clear();
    for (int r = 0; r + 1 < team.size(); ++r) *text += std::string(&lines[size_t(r) * kLine]) + "\n";
    std::vector<double> times;
    for (unsigned i = 0; i < exchanges; ++i) {
        MPI_Barrier(team.comm());
        const auto t0 = std::chrono::steady_clock::now();
        Outcome o = outcome_of(
            gpk_internal_heat_slab_exchange(probe.slab.get(), d, 2 * d, d, probe.n.up != MPI_PROC_NULL,
                                            probe.n.down != MPI_PROC_NULL, exchange_halo, &probe.n),
            ctx);
        double v[2] = {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                       o.failed() ? 1.0 : 0.0};
        MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, team.comm());
        if (v[1] != 0) team.agree(o);
        times.push_back(v[0]);
    }
    if (!times.empty()) {
        std::sort(times.begin(), times.end());
        *seconds = times[times.size() / 2];
    }
}

} // namespace gpk::mpi
