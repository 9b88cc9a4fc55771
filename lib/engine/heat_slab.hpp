// A slab of a heat grid that stays on one backend between calls: what libgpk_mpi's distributed solver
// (lib/mpi/) drives, one slab per rank. The slab holds rows 0..rows-1 of `cols` values in two grids (the
// current one and the result of the last pass). Rows 0 and rows-1 keep their values through a pass: they
// are the fixed halo rows at the ends of the whole grid (README, "What gpk computes"), or the outermost row
// of a neighbour's halo, whose later iterations no row of this rank needs. Every cell is computed by the
// backend's one stencil function, so a slab's rows get the same bits as the same rows of a whole-grid run.
#pragma once

#include "engine/error.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace gpk {

// Rows of `cols` values in up to three consecutive pieces (a rank's own rows stay in the caller's array,
// its halo rows in the layer's): piece k holds counts[k] rows at data[k]. Host memory, or on a CUDA slab
// also memory of the slab's device (a caller's device block, copied on the device).
struct RowPieces {
    const double *data[3] = {nullptr, nullptr, nullptr};
    size_t counts[3] = {0, 0, 0};
    // Calls copy(first_row, rows, values) for each non-empty piece, in order.
    template <class Copy> void each(Copy &&copy) const {
        size_t first = 0;
        for (int k = 0; k < 3; ++k) {
            if (counts[k]) copy(first, counts[k], data[k]);
            first += counts[k];
        }
    }
};

struct HeatSlabJob {
    size_t rows = 0, cols = 0; // rows >= 3
    RowPieces cells;           // rows in all: the first current grid
    RowPieces conductivity;    // rows - 2 in all: of rows 1..rows-2
};

// How the rows of one side (0: up, 1: down) travel between two slabs (set_paths):
//   host    through the slab's host buffers, which the exchange hands to MPI;
//   device  through device buffers of the slab, which the exchange hands to a CUDA-aware MPI;
//   peer    the sender copies its rows straight into the receiver's device buffer (CUDA IPC, between ranks
//           of one node whose devices reach each other) and records an event the receiver waits on; the
//           exchange carries only a notice that the copy is enqueued (a zero-byte message).
enum class HaloPath : int { host = 0, device = 1, peer = 2 };

// The halo exchange of one pass. The slab computes the rows the neighbours need first, hands them over,
// and computes the others while run() exchanges them.
struct HaloExchange {
    size_t depth = 0;              // rows sent from each end of the own rows, and received beyond each end
    bool up = false, down = false; // which sides have a neighbour (rows to receive)
    // Called once per pass with the buffers of each side (the slab's own, depth * cols doubles, valid from
    // its creation or set_paths): send[0] holds the first `depth` own rows of the pass's result and send[1]
    // the last `depth`; run() fills recv[0] (the rows just above the own rows) where `up`, and recv[1] (just
    // below) where `down`, which the slab then writes into the result grid. Host memory on a side whose
    // path is host, device memory where it is device; on a peer side both are NULL and run() exchanges a
    // notice (no data) with that neighbour, after which the slab waits on the neighbour's event.
    void (*run)(void *user, double *const send[2], double *const recv[2]) = nullptr;
    void *user = nullptr;
};

// A pass's exchange, run at most once: a pass calls run() where the exchange belongs and again when it
// fails, at whatever point, so that the neighbours' exchanges stay matched.
class ExchangeOnce {
public:
    ExchangeOnce(const HaloExchange *x, double *const *send, double *const *recv)
        : x_(x), send_(send), recv_(recv) {}
    void run() {
        if (!x_ || !x_->run || done_) return;
        done_ = true;
        x_->run(x_->user, send_, recv_);
    }

private:
    const HaloExchange *x_;
    double *const *send_;
    double *const *recv_;
    bool done_ = false;
};

class HeatSlab {
public:
    virtual ~HeatSlab() = default;

    // The most iterations one pass may take.
    virtual unsigned max_levels() const = 0;

    // One halo exchange as a pass makes it, without computing: the first and last `depth` rows of
    // [own_begin, own_end) of the current grid go to the neighbours, and theirs land beyond those rows of the
    // current grid (what a benchmark times). Throws as launch() does, the exchange run anyway.
    virtual void exchange_only(size_t own_begin, size_t own_end, const HaloExchange &exchange) = 0;

    // Advances rows [own_begin, own_end) (within 1..rows-2) of the current grid by `levels` iterations into
    // another grid, which becomes the current one; rows outside are read as the source holds them. With an
    // exchange (levels <= depth <= max_levels() and <= the own rows), the rows beyond the own rows of the
    // result are filled from it. The pass may still be running when launch() returns: collect() hands over
    // its maxdiffs (maxdiff[k]: the largest |difference| of iteration k+1 over the own rows) once it is done,
    // the oldest uncollected pass first. Throws gpk::Error; the exchange's run() is then called anyway if it
    // had not been yet, with send buffers of unspecified contents, so that the ranks' exchanges stay matched.
    virtual void launch(unsigned levels, size_t own_begin, size_t own_end, const HaloExchange *exchange) = 0;
    virtual void collect(double *maxdiff) = 0;

    // Makes the source of the newest pass current again (its maxdiffs, where not collected yet, dropped).
    // A slab keeps the sources of its last ahead() passes: up to ahead() passes may be launched before the
    // first of them is collected, and back() may be called as many times in a row.
    virtual unsigned ahead() const = 0;
    virtual void back() = 0;

    // Rows [first, first + count) of the current grid to host memory, count * cols doubles.
    virtual void read_rows(size_t first, size_t count, double *out) = 0;

    // Minimum, maximum and sum of each of rows [first, first + count) of the current grid; each row's sum
    // as the backend's whole-grid solver computes it, so that heat_mean over them gives its bits.
    virtual void row_stats(size_t first, size_t count, double *mins, double *maxs, double *sums) = 0;

    // Links to the neighbours' slabs, set up once per slab before its first exchanged pass (the layer
    // carries the bytes between ranks and agrees on the paths with both sides; heat.cpp):
    //   peer_offer   writes what a neighbour needs to reach this slab's receive buffers and events for
    //                halos of `depth` rows (at most `capacity` bytes) and returns its size; 0 where this slab
    //                cannot be reached (the reason in *why). Never throws for a refusal.
    //   peer_accept  opens a neighbour's offer for `side`; false with the reason in *why where it cannot
    //                (another device this one cannot reach, the opening refused); never throws.
    //   set_paths    the agreed path of each side; drops what an unused side opened; throws gpk::Error
    //                where the buffers of a device path cannot be had.
    //   close_peers  drops every opened offer (before the neighbours free their buffers).
    // The CPU slab is reached through host memory only.
    virtual size_t peer_offer(size_t depth, void *blob, size_t capacity, std::string *why) {
        (void)depth, (void)blob, (void)capacity;
        *why = "the rows are in host memory";
        return 0;
    }
    virtual bool peer_accept(int side, const void *blob, size_t bytes, std::string *why) {
        (void)side, (void)blob, (void)bytes;
        *why = "the rows are in host memory";
        return false;
    }
    virtual void set_paths(HaloPath up, HaloPath down);
    virtual void close_peers() {}
    // Whether the slab's rows are in device memory (a CUDA-aware MPI could take its device buffers).
    virtual bool on_device() const { return false; }
};

// A slab of two grids whose passes are done when pass() returns: launch() is a pass and a swap, the source
// left in the other grid for back(); one pass ahead at most.
class TwoGridHeatSlab : public HeatSlab {
public:
    // launch() without making the result current: it is in the other grid until swap().
    virtual void pass(unsigned levels, size_t own_begin, size_t own_end, const HaloExchange *exchange,
                      double *maxdiff) = 0;
    virtual void swap() = 0;

    void launch(unsigned levels, size_t own_begin, size_t own_end, const HaloExchange *exchange) override {
        collected_.assign(levels, 0.0);
        pass(levels, own_begin, own_end, exchange, collected_.data());
        swap();
    }
    void collect(double *maxdiff) override { std::copy(collected_.begin(), collected_.end(), maxdiff); }
    unsigned ahead() const override { return 1; }
    void back() override { swap(); }

private:
    std::vector<double> collected_;
};

inline void HeatSlab::set_paths(HaloPath up, HaloPath down) {
    if (up != HaloPath::host || down != HaloPath::host)
        fail(GPK_ERR_INTERNAL, "heat slab: a slab in host memory exchanges through host buffers only");
}

} // namespace gpk
