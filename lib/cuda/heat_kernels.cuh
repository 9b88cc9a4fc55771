// Device code of the CUDA heat solver (SPEC §1): the stencil, the per-iteration bookkeeping that lets the
// host enqueue many iterations without reading anything back, the report statistics and the input checks.
// Dispatch (sizes, launches, error checks) is in heat.cu.
#pragma once

#include "common/semantics.hpp"

#include <cuda_runtime.h>
#include <cstddef>

namespace gpk::cuda::heat {

// The two grids: rows 0..N+1 of `pitch` doubles each; row 0 and row N+1 are the fixed halo rows. Halo
// columns are not stored: column indices wrap (the cylinder), which is what SPEC's halo copy computes.
struct Grids {
    double *cells[2];
    size_t pitch; // doubles
    size_t rows;  // N (interior)
    size_t cols;  // M
};

// Device-side progress of a run. The host enqueues iterations in batches and reads this once per batch.
struct DeviceState {
    unsigned long long iter;      // iterations done on the newest grid
    unsigned long long niter;     // the iteration that converged (0: not yet)
    unsigned long long passes;    // passes finished (incremented also after convergence)
    unsigned long long redo_pass; // the pass whose grid must be recomputed to an earlier level
    int redo_levels;              // levels of that recomputation
    int redo_source;              // buffer the recomputation starts from
    int buffer;                   // buffer holding the newest grid
    int converged;                // set once an iteration's maxdiff < threshold
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
// records each iteration's maxdiff in the log ring, finds the first iteration under the threshold, flips
// the buffer and, when convergence fell inside the pass, asks for the recomputation of the pass's grid
// up to that level. One block.
template <int Threads>
__global__ void __launch_bounds__(Threads)
    finish_pass_kernel(const double *partials, int nparts, int levels, double threshold, DeviceState *state,
                       double *log, unsigned log_capacity) {
    __shared__ double scratch[Threads / 32];
    __shared__ int converged_level;
    if (state->converged) {
        if (threadIdx.x == 0) state->passes += 1;
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
    const int b = state->buffer;
    state->passes += 1;
    state->buffer = b ^ 1;
    if (converged_level < 0) {
        state->iter = iter + levels;
        return;
    }
    state->converged = 1;
    state->iter = iter + converged_level + 1;
    state->niter = state->iter;
    if (converged_level + 1 < levels) {
        state->redo_pass = state->passes;
        state->redo_levels = converged_level + 1;
        state->redo_source = b;
    }
}

// Min, max and sum of each of rows first_row .. first_row + count - 1 of the newest grid, a warp per row:
// lane l adds columns l, l + 32, ... in order, then a fixed butterfly combines the lanes (each addition
// commutes, so every lane ends with the same bits). A row's sum therefore does not depend on the grid or
// slab it lies in, and the host adds the rows in order (heat_mean): any split of the grid into row blocks
// gives the same mean.
template <int Threads>
__global__ void __launch_bounds__(Threads)
    row_stats_kernel(Grids g, const DeviceState *state, bool skip_if_converged, size_t first_row,
                     size_t count, double *row_min, double *row_max, double *row_sum) {
    if (skip_if_converged && state->converged) return;
    const double *cells = g.cells[state->buffer];
    const int lane = threadIdx.x % 32;
    const size_t warps = (size_t)gridDim.x * (Threads / 32);
    for (size_t r = (size_t)blockIdx.x * (Threads / 32) + threadIdx.x / 32; r < count; r += warps) {
        const double *row = cells + (first_row + r) * g.pitch;
        double sum = 0.0, mn = INFINITY, mx = -INFINITY;
        for (size_t j = lane; j < g.cols; j += 32) {
            const double v = row[j];
            sum = __dadd_rn(sum, v);
            mn = fmin(mn, v);
            mx = fmax(mx, v);
        }
        for (int o = 16; o > 0; o /= 2) {
            sum = __dadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, o));
            mn = fmin(mn, __shfl_xor_sync(0xffffffffu, mn, o));
            mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        }
        if (lane == 0) {
            row_min[r] = mn;
            row_max[r] = mx;
            row_sum[r] = sum;
        }
    }
}

// Input checks on device data: the smallest row-major index of a non-finite temperature (read from the
// grid's interior) or of a conductivity outside [0, 1] (or NaN) goes to *first (initialised to all ones).
// Internal linkage: this header is included by heat.cu and heat_slab.cu.
static __global__ void first_bad_temperature_kernel(Grids g, int buffer, unsigned long long *first) {
    const double *cells = g.cells[buffer];
    for (size_t i = blockIdx.y; i < g.rows; i += gridDim.y)
        for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < g.cols;
             j += (size_t)gridDim.x * blockDim.x)
            if (!isfinite(cells[(i + 1) * g.pitch + j]))
                atomicMin(first, (unsigned long long)(i * g.cols + j));
}

static __global__ void first_bad_conductivity_kernel(const double *cond, size_t n, unsigned long long *first) {
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (size_t)gridDim.x * blockDim.x) {
        double w = cond[k];
        if (!(w >= 0.0 && w <= 1.0)) atomicMin(first, (unsigned long long)k);
    }
}

} // namespace gpk::cuda::heat
