// Device code of the CUDA heat solver (SPEC §1): the stencil, the per-iteration bookkeeping that lets the
// host enqueue many iterations without reading anything back, the report statistics and the input checks.
// Dispatch (sizes, launches, error checks) is in heat.cu.
#pragma once

#include "common/semantics.hpp"

#include <cuda_runtime.h>
#include <cstddef>

namespace gpk::cuda::heat {

// Where the rows of a grid live: row r (0..N+1; 1..N interior, 0 and N+1 the fixed halo rows) starts at
// base + (clamp(r, lo, hi) - 1) * pitch. gpk's own grids keep their halo rows in place (lo = 0, hi = N+1);
// the caller's tinit, read in place by the first pass, has none: its halo rows are its edge rows (lo = 1,
// hi = N), which is what SPEC's halo rows hold. Halo columns are not stored: column indices wrap (the
// cylinder), which is what SPEC's halo copy computes.
struct GridView {
    double *base;
    long long pitch; // doubles
    long long lo, hi;
    __device__ __forceinline__ double *row(long long r) const {
        r = r < lo ? lo : (r > hi ? hi : r);
        return base + (r - 1) * pitch;
    }
};

// The grids a run moves between: gpk's two, the caller's tinit read in place (device data) and the caller's
// tfinal, which the pass that ends the run (or the recomputation of a converged one) writes directly.
enum ViewIndex { kGrid0 = 0, kGrid1 = 1, kInitial = 2, kFinal = 3, kViewCount = 4 };
struct Views {
    GridView v[kViewCount];
    size_t rows; // N (interior)
    size_t cols; // M
};

// Where a pass from `source` writes: the other grid, or tfinal when it ends the run.
__device__ __forceinline__ int pass_destination(int source, bool to_final) {
    return to_final ? kFinal : (source == kGrid0 ? kGrid1 : kGrid0);
}

// Device-side progress of a run. The host enqueues iterations in batches and reads this once per batch.
struct DeviceState {
    unsigned long long iter;        // iterations done on the newest grid
    unsigned long long niter;       // the iteration that converged (0: not yet)
    unsigned long long first_bad_t; // smallest row-major index of a non-finite tinit cell (all ones: none)
    unsigned long long first_bad_c; // the same for a conductivity outside [0, 1]
    int buffer;                     // view holding the newest grid
    int converged;                  // set once an iteration's maxdiff < threshold (or a bad input was seen)
    int redo;                       // the run converged inside a pass: recompute it to redo_levels
    int redo_levels;
    int redo_source; // view the recomputation starts from
    int redo_dst;    // view it writes
};

// Min, max and sum over the interior of one grid.
struct GridStats {
    double tmin, tmax, sum;
};

// One iteration's value of a cell. `ns` = north + south, `h` = west + east of the cell's row, `hn`/`hs` the
// same sums of the rows above and below. Explicit rounding intrinsics fix the arithmetic (no contraction
// left to the compiler), so that every kernel computing a cell gets the same bits.
__device__ __forceinline__ double cell_update(double w, double rc, double rd, double c, double ns, double h,
                                              double hn, double hs) {
    double dir = __dadd_rn(ns, h);
    double diag = __dadd_rn(hn, hs);
    return __fma_rn(w, c, __fma_rn(rc, dir, __dmul_rn(rd, diag)));
}

// The weights of a cell from its conductivity.
__device__ __forceinline__ void cell_weights(double w, double &rc, double &rd) {
    double r = __dsub_rn(1.0, w);
    rc = __dmul_rn(r, kHeatCdir);
    rd = __dmul_rn(r, kHeatCdiag);
}

template <int Threads> __device__ __forceinline__ double block_max(double v, double *scratch) {
    for (int o = 16; o > 0; o /= 2) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    int warp = threadIdx.x / 32 + threadIdx.y * (blockDim.x / 32);
    int lane = (threadIdx.x + threadIdx.y * blockDim.x) % 32;
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < Threads / 32 ? scratch[lane] : 0.0;
        for (int o = 16; o > 0; o /= 2) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    }
    return v; // valid in warp 0
}

// After a pass of `levels` iterations whose blocks left per-level maxima in partials[level * nparts + b]:
// records each iteration's maxdiff in the log ring, finds the first iteration under the threshold and
// moves the newest grid to the pass's destination; when convergence fell inside the pass, asks for the
// recomputation of the pass up to that level (from its source, which no later pass overwrites: they all
// return at once). A bad input found by the checking pass stops the run with nothing recomputed. One block.
template <int Threads>
__global__ void __launch_bounds__(Threads)
    finish_pass_kernel(const double *partials, int nparts, int levels, double threshold, DeviceState *state,
                       double *log, unsigned log_capacity, bool to_final, bool redo_to_final) {
    __shared__ double scratch[Threads / 32];
    __shared__ int converged_level;
    if (state->converged) return;
    if (state->first_bad_t != ~0ull || state->first_bad_c != ~0ull) {
        if (threadIdx.x == 0) state->converged = 1; // the host reports the bad cell
        return;
    }
    if (threadIdx.x == 0) converged_level = -1;
    const unsigned long long iter = state->iter;
    for (int k = 0; k < levels; ++k) {
        double m = 0.0;
        for (int p = threadIdx.x; p < nparts; p += Threads) m = fmax(m, partials[(size_t)k * nparts + p]);
        m = block_max<Threads>(m, scratch);
        if (threadIdx.x == 0) {
            log[(iter + k) % log_capacity] = m;
            if (converged_level < 0 && m < threshold) converged_level = k;
        }
        __syncthreads(); // scratch is reused by the next level
    }
    if (threadIdx.x != 0) return;
    const int source = state->buffer, dst = pass_destination(source, to_final);
    state->buffer = dst;
    if (converged_level < 0) {
        state->iter = iter + levels;
        return;
    }
    state->converged = 1;
    state->iter = iter + converged_level + 1;
    state->niter = state->iter;
    if (converged_level + 1 < levels) {
        state->redo = 1;
        state->redo_levels = converged_level + 1;
        state->redo_source = source;
        state->redo_dst = redo_to_final ? kFinal : dst;
        state->buffer = state->redo_dst;
    }
}

// Min, max and sum of the interior of the newest grid: block b takes rows b, b + gridDim.x, ...; thread t
// columns t, t + Threads, ... Fixed assignment and fixed reduction trees make the sum deterministic.
template <int Threads>
__global__ void __launch_bounds__(Threads)
    stats_kernel(Views g, const DeviceState *state, bool skip_if_converged, GridStats *partials) {
    __shared__ GridStats scratch[Threads];
    if (skip_if_converged && state->converged) return;
    const GridView cells = g.v[state->buffer];
    GridStats s{INFINITY, -INFINITY, 0.0};
    for (size_t i = blockIdx.x + 1; i <= g.rows; i += gridDim.x) {
        const double *row = cells.row((long long)i);
        double row_sum = 0.0;
        for (size_t j = threadIdx.x; j < g.cols; j += Threads) {
            double v = row[j];
            s.tmin = fmin(s.tmin, v);
            s.tmax = fmax(s.tmax, v);
            row_sum += v;
        }
        s.sum += row_sum;
    }
    scratch[threadIdx.x] = s;
    __syncthreads();
    for (int half = Threads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            GridStats o = scratch[threadIdx.x + half];
            GridStats &m = scratch[threadIdx.x];
            m.tmin = fmin(m.tmin, o.tmin);
            m.tmax = fmax(m.tmax, o.tmax);
            m.sum += o.sum;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = scratch[0];
}

// Reduces the stats kernel's partials in a fixed order into *out. One block.
template <int Threads>
__global__ void __launch_bounds__(Threads)
    stats_finish_kernel(const GridStats *partials, int nparts, const DeviceState *state,
                        bool skip_if_converged, GridStats *out) {
    __shared__ GridStats scratch[Threads];
    if (skip_if_converged && state->converged) return;
    GridStats s{INFINITY, -INFINITY, 0.0};
    for (int p = threadIdx.x; p < nparts; p += Threads) {
        s.tmin = fmin(s.tmin, partials[p].tmin);
        s.tmax = fmax(s.tmax, partials[p].tmax);
        s.sum += partials[p].sum;
    }
    scratch[threadIdx.x] = s;
    __syncthreads();
    for (int half = Threads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            GridStats o = scratch[threadIdx.x + half];
            GridStats &m = scratch[threadIdx.x];
            m.tmin = fmin(m.tmin, o.tmin);
            m.tmax = fmax(m.tmax, o.tmax);
            m.sum += o.sum;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = scratch[0];
}

// The fixed halo rows of both grids (rows 0 and N+1) from rows 1 and N of view `from`: the caller's tinit
// in place, or grid 0 holding an upload of it.
__global__ void halo_rows_kernel(Views g, int from) {
    const long long N = (long long)g.rows;
    const double *top = g.v[from].row(1), *bottom = g.v[from].row(N);
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < g.cols;
         j += (size_t)gridDim.x * blockDim.x)
        for (int b = kGrid0; b <= kGrid1; ++b) {
            g.v[b].row(0)[j] = top[j];
            g.v[b].row(N + 1)[j] = bottom[j];
        }
}

} // namespace gpk::cuda::heat
