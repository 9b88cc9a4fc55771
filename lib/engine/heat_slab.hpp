// A slab of a heat grid that stays on one backend between calls: what libgpk_mpi's distributed solver
// (lib/mpi/) drives, one slab per rank. The slab holds rows 0..rows-1 of `cols` values in two grids (the
// current one and the result of the last pass). Rows 0 and rows-1 keep their values through a pass: they
// are SPEC's fixed rows at the ends of the whole grid, or the outermost row of a neighbour's halo, whose
// later iterations no row of this rank needs. Every cell is computed by the backend's one stencil function,
// so a slab's rows get the same bits as the same rows of a whole-grid run.
#pragma once

#include <cstddef>

namespace gpk {

// Rows of `cols` values in up to three consecutive pieces of host memory (a rank's own rows stay in the
// caller's array, its halo rows in the layer's): piece k holds counts[k] rows at data[k].
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

// The halo exchange of one pass. The slab computes the rows the neighbours need first, hands them over,
// and computes the others while run() exchanges them.
struct HaloExchange {
    size_t depth = 0;              // rows sent from each end of the own rows, and received beyond each end
    bool up = false, down = false; // which sides have a neighbour (rows to receive)
    // Called once per pass with four buffers of depth * cols doubles in host memory (the slab's own, valid
    // from its creation): send[0] holds the first `depth` own rows of the pass's result and send[1] the
    // last `depth`; run() fills recv[0] (the rows just above the own rows) where `up`, and recv[1] (just
    // below) where `down`, which the slab then writes into the result grid.
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

    // Advances rows [own_begin, own_end) (within 1..rows-2) of the current grid by `levels` iterations into
    // the other grid; rows outside are read as the current grid holds them. maxdiff[k] receives the largest
    // |difference| of iteration k+1 over the own rows. With an exchange (levels <= depth <= max_levels()
    // and <= the own rows), the rows beyond the own rows of the *result* are filled from it before the
    // call returns. Throws gpk::Error; the exchange's run() is then called anyway if it had not been yet,
    // with send buffers of unspecified contents, so that the ranks' exchanges stay matched.
    virtual void pass(unsigned levels, size_t own_begin, size_t own_end, const HaloExchange *exchange,
                      double *maxdiff) = 0;

    // The result of the last pass becomes the current grid.
    virtual void swap() = 0;

    // Rows [first, first + count) of the current grid to host memory, count * cols doubles.
    virtual void read_rows(size_t first, size_t count, double *out) = 0;

    // Minimum, maximum and sum of each of rows [first, first + count) of the current grid; each row's sum
    // as the backend's whole-grid solver computes it, so that heat_mean over them gives its bits.
    virtual void row_stats(size_t first, size_t count, double *mins, double *maxs, double *sums) = 0;
};

} // namespace gpk
