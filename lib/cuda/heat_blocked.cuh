// Temporal blocking for the heat stencil: one pass advances the grid by up to T iterations, keeping the
// intermediate iterations on chip, and still reports every iteration's maxdiff.
//
// A block owns a strip of W = Threads - 2T columns and H rows. Its threads hold one column each of the
// strip widened by T columns per side (wrapping around the cylinder) and walk down the rows from T rows
// above the owned ones. Level 0 is the source grid; level k+1 of row i needs level k of rows i-1..i+1, so
// at step s level k+1 computes row L0 + s - 2k - 2 from a three-row window of level k kept in registers.
// The west + east sums need the neighbours' values: each level's newest value goes through shared memory,
// double-buffered by step parity, so one barrier per step suffices. Values near the strip's edges go wrong
// by one column per level; the W owned columns stay exact.
#pragma once

#include "cuda/heat_kernels.cuh"

namespace gpk::cuda::heat {

struct PassShape {
    int strip;          // W: owned columns per block
    int rows_per_block; // H
};

template <int T, int Threads> struct PassRegisters {
    double v[T][3];      // level k's values of its three newest complete rows (oldest first)
    double h[T][3];      // west + east of those rows
    double newest[T];    // level k's value computed in the current step (row not complete yet)
    double w[2 * T + 1]; // conductivity of rows L0 + s - j
    double md[T];        // max |level k+1 - level k| over owned cells
};

// A pass over one block's strip. `levels` (<= T) iterations; in recompute mode the pass instead runs only
// when the run converged inside the pass that the finish kernel named, from that pass's source grid.
template <int T, int Threads>
__global__ void __launch_bounds__(Threads)
    pass_kernel(Grids g, const double *__restrict__ cond, const DeviceState *state, PassShape shape,
                int levels, bool recompute, double *partials) {
    __shared__ double exchange[2][T][Threads];
    __shared__ double scratch[T][Threads / 32];
    int source;
    if (recompute) {
        if (state->passes != state->redo_pass || state->redo_levels == 0) return;
        levels = state->redo_levels;
        source = state->redo_source;
    } else {
        if (state->converged) return;
        source = state->buffer;
    }
    const double *__restrict__ src = g.cells[source];
    double *__restrict__ dst = g.cells[source ^ 1];
    const long long N = (long long)g.rows, M = (long long)g.cols, P = (long long)g.pitch;
    const int p = threadIdx.x;
    const long long c0 = (long long)blockIdx.x * shape.strip;
    const long long col = ((c0 - T + p) % M + M) % M;
    const bool owned = p >= T && p < T + shape.strip && c0 + p - T < M;
    const long long R0 = 1 + (long long)blockIdx.y * shape.rows_per_block;
    const long long R1 = R0 + shape.rows_per_block < N + 1 ? R0 + shape.rows_per_block : N + 1;
    const long long L0 = R0 - T > 0 ? R0 - T : 0;
    const long long L1 = R1 - 1 + T < N + 1 ? R1 - 1 + T : N + 1;
    const int left = p > 0 ? p - 1 : p, right = p + 1 < Threads ? p + 1 : p;

    PassRegisters<T, Threads> r;
#pragma unroll
    for (int k = 0; k < T; ++k) {
        r.md[k] = 0.0;
        r.newest[k] = 0.0;
#pragma unroll
        for (int j = 0; j < 3; ++j) r.v[k][j] = r.h[k][j] = 0.0;
    }
#pragma unroll
    for (int j = 0; j <= 2 * T; ++j) r.w[j] = 0.0;

    auto load = [&](long long row, double &x, double &w) {
        x = 0.0;
        w = 0.0;
        if (row <= L1) x = src[row * P + col];
        if (row >= 1 && row <= N && row <= L1) w = cond[(row - 1) * M + col];
    };
    double x_next, w_next;
    load(L0, x_next, w_next);
    const long long steps = R1 - L0 + 2 * T;
    for (long long s = 0; s < steps; ++s) {
        const int prev = (s + 1) & 1, cur = s & 1;
        if (s > 0) {
#pragma unroll
            for (int k = 0; k < T; ++k) {
                r.v[k][0] = r.v[k][1];
                r.v[k][1] = r.v[k][2];
                r.v[k][2] = r.newest[k];
                r.h[k][0] = r.h[k][1];
                r.h[k][1] = r.h[k][2];
                r.h[k][2] = __dadd_rn(exchange[prev][k][left], exchange[prev][k][right]);
            }
        }
#pragma unroll
        for (int j = 2 * T; j > 0; --j) r.w[j] = r.w[j - 1];
        r.newest[0] = x_next;
        r.w[0] = w_next;
        load(L0 + s + 1, x_next, w_next);
        double out = 0.0;
#pragma unroll
        for (int k = 0; k < T; ++k) {
            const long long i = L0 + s - 2 * k - 2; // row of level k+1 computed now
            const double c = r.v[k][1];
            double v = c;
            if (k < levels && i >= 1 && i <= N) {
                double wk = r.w[2 * k + 2], rc, rd;
                cell_weights(wk, rc, rd);
                v = cell_update(wk, rc, rd, c, __dadd_rn(r.v[k][0], r.v[k][2]), r.h[k][1], r.h[k][0],
                                r.h[k][2]);
                if (owned && i >= R0 && i < R1) r.md[k] = fmax(r.md[k], fabs(__dsub_rn(v, c)));
            }
            if (k + 1 < T)
                r.newest[k + 1] = v;
            else
                out = v;
        }
        const long long out_row = L0 + s - 2 * T;
        if (owned && out_row >= R0 && out_row < R1) dst[out_row * P + col] = out;
#pragma unroll
        for (int k = 0; k < T; ++k) exchange[cur][k][p] = r.newest[k];
        __syncthreads();
    }
    // Per-level block maxima, in a fixed order (max is exact, so any order gives the same bits).
    const int warp = p / 32, lane = p % 32;
#pragma unroll
    for (int k = 0; k < T; ++k) {
        double m = r.md[k];
        for (int o = 16; o > 0; o /= 2) m = fmax(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (lane == 0) scratch[k][warp] = m;
    }
    __syncthreads();
    if (p < T) {
        double m = 0.0;
        for (int q = 0; q < Threads / 32; ++q) m = fmax(m, scratch[p][q]);
        partials[(size_t)p * gridDim.x * gridDim.y + blockIdx.y * gridDim.x + blockIdx.x] = m;
    }
}

} // namespace gpk::cuda::heat
