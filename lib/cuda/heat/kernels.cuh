// Device code of the CUDA heat solver (README, "What gpk computes", heat): the stencil, the per-iteration
// bookkeeping that lets the host enqueue many iterations without reading anything back, the report statistics
// and the input checks. Dispatch (sizes, launches, error checks) is in heat.cu.
#pragma once

#include "common/semantics.hpp"

#include <cuda_runtime.h>
#include <cstddef>

namespace gpk::cuda::heat {

// Where the rows of a grid live: row r (0..N+1; 1..N interior, 0 and N+1 the fixed halo rows) starts at
// base + (clamp(r, lo, hi) - 1) * pitch. gpk's own grids keep their halo rows in place (lo = 0, hi = N+1);
// the caller's tinit, read in place by the first pass, has none: its halo rows are its edge rows (lo = 1,
// hi = N), which is what the contract's halo rows hold. Halo columns are not stored: column indices wrap (the
// cylinder), which is what the contract's wrapped halo columns hold.
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

// The deepest pass kernel built (pass.cu).
constexpr int kMaxPassLevels = 6;

// Device-side progress of a run. The host enqueues iterations in batches and reads this once per batch.
struct DeviceState {
    unsigned long long iter;        // iterations done on the newest grid
    unsigned long long niter;       // the iteration that converged (0: not yet)
    unsigned long long first_bad_t; // smallest row-major index of a non-finite tinit cell (all ones: none),
    unsigned long long first_bad_c; // the same for a conductivity outside [0, 1]: set by first_bad_kernel
    int bad_input;                  // set by the checking pass where it loaded a bad cell
    int buffer;                     // view holding the newest grid
    int converged;                  // set once an iteration's maxdiff < threshold (or a bad input was seen)
    int redo;                       // the run converged inside a pass: recompute it to redo_levels
    int redo_levels;
    int redo_source; // view the recomputation starts from
    int redo_dst;    // view it writes
    // Set by the host before the run, for finish_pass: the threshold, the maxdiff log ring, and whether a
    // recomputation writes tfinal (a device tfinal written directly).
    double threshold;
    double *log;
    unsigned log_capacity;
    int redo_to_final;
    // A pass that finishes itself (blocked.cuh, finish_if_last): the blocks that have folded their
    // maxima in, and each level's maximum over them as the bits of a double (non-negative doubles order as
    // their bits, so an integer atomicMax folds them exactly). The pass's last block takes both back to 0.
    unsigned arrived;
    unsigned long long level_max[kMaxPassLevels];
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

// The bookkeeping after a pass of `levels` iterations whose level k reached the maximum difference lm[k],
// by one thread: records each iteration's maxdiff in the log ring, finds the first iteration under the
// threshold and moves the newest grid to the pass's destination; when convergence fell inside the pass,
// asks for the recomputation of the pass up to that level (from its source, which no later pass
// overwrites: they all return at once). A bad input found by the checking pass stops the run with nothing
// recomputed. Every field is loaded before anything is stored (one round of loads, not one per level); the
// fields other blocks of the pass may have written are read past L1 (__ldcg): in a pass's last block, L1
// may hold lines of the state from before.
__device__ __forceinline__ void finish_pass(const double (&lm)[kMaxPassLevels], int levels, bool to_final,
                                            DeviceState *state) {
    const int bad = __ldcg(&state->bad_input), source = __ldcg(&state->buffer);
    const unsigned long long iter = __ldcg(&state->iter);
    const double threshold = state->threshold;
    double *const log = state->log;
    const unsigned capacity = state->log_capacity;
    const bool redo_to_final = state->redo_to_final != 0;
    if (bad) {
        state->converged = 1; // the host reports the bad cell
        return;
    }
    int converged_level = -1;
#pragma unroll
    for (int level = 0; level < kMaxPassLevels; ++level)
        if (level < levels) {
            log[(iter + level) % capacity] = lm[level];
            if (converged_level < 0 && lm[level] < threshold) converged_level = level;
        }
    const int dst = pass_destination(source, to_final);
    if (converged_level < 0) {
        state->buffer = dst;
        state->iter = iter + levels;
        return;
    }
    const int done = converged_level + 1; // the levels up to the one that converged
    state->converged = 1;
    state->iter = state->niter = iter + done;
    state->buffer = dst;
    if (done < levels) {
        state->redo = 1;
        state->redo_levels = done;
        state->redo_source = source;
        state->redo_dst = state->buffer = redo_to_final ? kFinal : dst;
    }
}

// Min, max and sum of each of rows first_row .. first_row + count - 1 of the newest grid, a warp per row:
// lane l adds columns l, l + 32, ... in order, then a fixed butterfly combines the lanes (each addition
// commutes, so every lane ends with the same bits). A row's sum therefore does not depend on the grid or
// slab it lies in, and the host adds the rows in order (heat_mean): any split of the grid into row blocks
// gives the same mean. Where `copy` is given, row first_row + r is also written to copy + r * copy_pitch
// (the caller's tfinal, when the run ended on one of gpk's grids: one read of the grid for both); with
// `copy_unless_final`, only where the newest grid is not tfinal (kFinal) and no bad input was found (nothing
// reaches the outputs then), decided here for statistics enqueued before the host has seen the run's end.
// Without Stats the kernel only copies (a run whose final report nobody asked for), and row_min, row_max
// and row_sum are not touched. Launched through pass.cu only (one instantiation of each form in the
// library).
template <int Threads, bool Stats>
__global__ void __launch_bounds__(Threads)
    row_stats_kernel(Views g, const DeviceState *state, bool skip_if_converged, size_t first_row,
                     size_t count, double *row_min, double *row_max, double *row_sum, double *copy,
                     size_t copy_pitch, bool copy_unless_final) {
    if (skip_if_converged && state->converged) return;
    if (copy_unless_final && (state->buffer == kFinal || state->bad_input)) copy = nullptr;
    if (!Stats && !copy) return;
    const GridView cells = g.v[state->buffer];
    const int lane = threadIdx.x % 32;
    const size_t warps = (size_t)gridDim.x * (Threads / 32);
    for (size_t r = (size_t)blockIdx.x * (Threads / 32) + threadIdx.x / 32; r < count; r += warps) {
        const double *row = cells.row((long long)(first_row + r));
        double *to = copy ? copy + r * copy_pitch : nullptr;
        double sum = 0.0, mn = INFINITY, mx = -INFINITY;
        // kBatch loads in flight before they are added in order (the same sums as one at a time).
        constexpr int kBatch = 8;
        for (size_t j0 = lane; j0 < g.cols; j0 += 32 * kBatch) {
            double v[kBatch];
#pragma unroll
            for (int u = 0; u < kBatch; ++u) v[u] = j0 + 32 * u < g.cols ? row[j0 + 32 * u] : 0.0;
#pragma unroll
            for (int u = 0; u < kBatch; ++u) {
                if (j0 + 32 * u >= g.cols) break;
                if (to) to[j0 + 32 * u] = v[u];
                if constexpr (!Stats) continue;
                sum = __dadd_rn(sum, v[u]);
                mn = fmin(mn, v[u]);
                mx = fmax(mx, v[u]);
            }
        }
        if constexpr (Stats) {
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
}

// The fixed halo rows of both grids (rows 0 and N+1) from rows 1 and N of view `from`: the caller's tinit
// in place, or grid 0 holding an upload of it; and, where `state` is given, the run's initial state (a
// kernel parameter: no copy from the host before the first pass). Internal linkage: this header is included
// by several files.
static __global__ void halo_rows_kernel(Views g, int from, DeviceState *state, DeviceState initial) {
    if (state && blockIdx.x == 0 && threadIdx.x == 0) *state = initial;
    const long long N = (long long)g.rows;
    const double *top = g.v[from].row(1), *bottom = g.v[from].row(N);
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < g.cols;
         j += (size_t)gridDim.x * blockDim.x)
        for (int b = kGrid0; b <= kGrid1; ++b) {
            g.v[b].row(0)[j] = top[j];
            g.v[b].row(N + 1)[j] = bottom[j];
        }
}

// The smallest row-major index of a bad tinit cell (view `initial`'s rows 1..N: the caller's tinit in place
// or grid 0 holding its upload) and of a bad conductivity into state->first_bad_t / first_bad_c (the
// contract's rules, engine/validate.hpp); run only after the checking pass flagged a bad input. Each thread
// takes indices in ascending order and stops at its first bad one of each kind; a warp's smallest goes to the
// state by atomicMin. Internal linkage: this header is included by several files.
static __global__ void first_bad_kernel(Views g, int initial, const double *cond, DeviceState *state) {
    const size_t M = g.cols, n = g.rows * M, stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long bad_t = ~0ull, bad_c = ~0ull;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
         k < n && (bad_t == ~0ull || bad_c == ~0ull); k += stride) {
        if (bad_t == ~0ull && !isfinite(g.v[initial].row((long long)(k / M) + 1)[k % M])) bad_t = k;
        const double w = cond[k];
        if (bad_c == ~0ull && !(w >= 0.0 && w <= 1.0)) bad_c = k;
    }
    for (int o = 16; o > 0; o /= 2) {
        bad_t = min(bad_t, __shfl_xor_sync(0xffffffffu, bad_t, o));
        bad_c = min(bad_c, __shfl_xor_sync(0xffffffffu, bad_c, o));
    }
    if (threadIdx.x % 32 == 0) {
        if (bad_t != ~0ull) atomicMin(&state->first_bad_t, bad_t);
        if (bad_c != ~0ull) atomicMin(&state->first_bad_c, bad_c);
    }
}

} // namespace gpk::cuda::heat
