// The CPU heat stencil shared by the whole-grid solver (heat.cpp) and the slabs of libgpk_mpi
// (heat_slab.cpp): one row's update, one row's statistics, and a band of rows advanced several iterations
// in one sweep (band_pass, the one wavefront both run). Every caller computes each cell with the same
// expression, so results do not depend on how the grid is cut into bands, threads or slabs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gpk::cpu {

// Below this many cells a pass is not worth splitting over threads (waking the workers costs more).
constexpr size_t kParallelCells = size_t(1) << 16;

// A padded grid row from m values: the interior at out[1..m], then the wrapped halo columns.
inline void load_padded_row(double *out, const double *values, size_t m) {
    std::memcpy(out + 1, values, m * sizeof(double));
    out[0] = out[m];
    out[m + 1] = out[1];
}

// Updates one interior row: out[0..m-1] (columns 1..m) from the rows above, at and below (padded rows,
// column 0 and m+1 are the wrapped halo). With `wrap`, out is a padded row too and its own halo columns
// (out[-1], out[m]) are wrapped; without, it is an unpadded row. Returns max |out - mid|. Runs the variant
// of the active instruction set (cpu/isa.hpp).
double update_row(const double *up, const double *mid, const double *down, const double *cond, double *out,
                  size_t m, bool wrap);

struct RowStats {
    double min, max, sum;
};

// Minimum, maximum and sum of m values; the sum in four fixed lanes combined in a fixed order.
RowStats row_stats(const double *row, size_t m);

// The first bad value a band met (row-major index into the initial grid or the conductivities; SIZE_MAX
// for none).
struct BandCheck {
    size_t temperature = SIZE_MAX, conductivity = SIZE_MAX;
};

// A grid as a pass sees it: rows 0..rows-1 of `pitch` doubles (halo columns 0 and m+1 included); rows 0
// and rows-1 keep their values at every level of the pass. Conductivities of grid row j (1..rows-2) are
// cond[(j-1)*m ..]. Level 0 is src, the last level goes to dst; the whole-grid solver's first and last
// passes read and write the caller's arrays instead (unpadded, row j at (j-1)*m):
struct PassGrid {
    const double *src;
    double *dst;
    size_t rows, m, pitch;
    const double *cond;
    // Level 0 of rows 1..rows-2 from here instead of src (which still gives rows 0 and rows-1), each row
    // read into the ring just before level 1 needs it.
    const double *initial = nullptr;
    double *final_out = nullptr; // the last level here instead of dst
    RowStats *stats = nullptr;   // where given, each row's statistics of the last level (row j at j-1)
};

// Doubles of ring a band pass of up to `levels` iterations needs: three rows for each level 0..levels-1
// (level 0 only where it is read from PassGrid::initial).
inline size_t band_ring_doubles(unsigned levels, size_t pitch) {
    return size_t(3) * levels * pitch;
}

// The wavefront of a band pass: level s (iteration s of the pass, 1..levels) computes row j at step
// j + s - 1, after level s-1 has produced rows j-1..j+1. Level s covers the band [r0, r1) widened by
// (levels - s) on each side (within 1..last-1, `last` the fixed row below), so the last level needs nothing
// from beyond it. Calls visit(s, j) for every level and row in that order.
template <class Visit>
void band_wavefront(size_t r0, size_t r1, size_t last, unsigned levels, Visit &&visit) {
    auto lo = [&](unsigned s) {
        size_t w = levels - s;
        return r0 > w + 1 ? r0 - w : size_t(1);
    };
    auto hi = [&](unsigned s) { return r1 + (levels - s) < last ? r1 + (levels - s) : last; };
    for (size_t step = lo(1); step + 1 < hi(1) + levels; ++step) {
        for (unsigned s = 1; s <= levels; ++s) {
            if (step + 1 < s) break;
            size_t j = step + 1 - s;
            if (j >= lo(s) && j < hi(s)) visit(s, j);
        }
    }
}

// The first row a band_wavefront's level 1 computes.
inline size_t band_first_row(size_t r0, unsigned levels) {
    return r0 > levels ? r0 - (levels - 1) : size_t(1);
}

// Advances rows [r0, r1) (within 1..rows-2) from level 0 by `levels` iterations into dst (or final_out), as
// a wavefront that keeps the intermediate iterations in `ring` (band_ring_doubles); rows beyond the band
// are recomputed from level 0, up to `levels` of them on each side. maxdiff[s] receives the largest
// |difference| of iteration s+1 over rows [r0, r1). With `check` (and level 0 from g.initial), the initial
// rows and the conductivities the band reads are checked as they are read (the contract's
// rules, engine/validate.hpp): the first bad one of each kind goes to *check.
void band_pass(const PassGrid &g, size_t r0, size_t r1, unsigned levels, double *ring, double *maxdiff,
               BandCheck *check = nullptr);

} // namespace gpk::cpu
