// Temporal blocking for the heat stencil: one pass advances the grid by up to T iterations, keeping the
// intermediate iterations on chip, and still reports every iteration's maxdiff.
//
// A block owns rows of a strip of W = Threads - 2T columns (its share, schedule.hpp: one or two segments,
// taken one after the other). Its threads hold one column each of the strip widened by T columns per side
// (wrapping around the cylinder) and walk down a segment's rows from T rows above the owned ones. Level 0
// is the source grid; level k+1 of row i needs level k of rows i-1..i+1, so at step s level k+1 computes
// row L0 + s - 2k - 2 from a three-row window of level k kept in registers (rotated by renaming: the step
// loop is unrolled by three). The west + east sums need the neighbours' values: each level's newest value
// goes through shared memory, double-buffered by step parity, so one barrier per step suffices. Values near
// the strip's edges go wrong by one column per level; the W owned columns stay exact. Source rows and
// conductivities arrive through shared-memory rings filled by asynchronous copies kAhead rows ahead of their
// use; the conductivity ring is long enough to serve every level from it. The first pass of a run also checks
// its inputs (Check): every tinit and conductivity cell is loaded by some thread at level 0, where a bad one
// sets a flag in the run state (no index: the host finds the first bad cell in a separate scan, only once the
// flag is seen, kernels.cuh).
//
// Lean steps (rows wholly inside the block's owned range) skip the per-level range tests that general
// steps make. In a pass of all T levels they compute every level; the checking pass takes them too (its
// checks keep no register over the steps, and it makes the neighbours' indices anew each step, so that 6/2
// fits 128 registers either way, ptxas sm_90). A shorter pass runs the kernel's Partial form, whose lean
// steps compute levels < `levels` only (a uniform test): a form of its own, because that test in the plain
// form made 6/2 spill 32 bytes; a shorter checking pass (once a run, in runs whose first batch is shorter
// than a pass) takes general steps.
#pragma once

#include "cuda/heat/kernels.cuh"
#include "cuda/heat/schedule.hpp"

#include <cuda_pipeline.h>
#include <type_traits>

namespace gpk::cuda::heat {

struct PassShape {
    int strip; // W: owned columns per block
    // The rows a launch computes, [row_begin, row_end) within 1..N: every row for a whole grid; a slab's
    // own rows, or a part of them, for libgpk_mpi (slab.cu). Rows outside are read, never written. The
    // launch's blocks (a one-dimensional grid) share them (schedule.hpp).
    long long row_begin, row_end;
};

template <int T, int Threads> struct PassShared {
    static constexpr int kRingX = 8, kAhead = 7;
    // A conductivity row t is read by level k at step t + 2k + 2 and refilled at step t + kRingW - kAhead.
    static constexpr int kRingW = 2 * T + kAhead + 1 <= 16 ? 16 : (2 * T + kAhead + 1 <= 32 ? 32 : 64);
    static_assert(kAhead < kRingX && kAhead < kRingW - 2 * T, "a ring slot is refilled only once unused");
    double exchange[2][T][Threads];
    double ring_x[kRingX][Threads];
    double ring_w[kRingW][Threads];
    double scratch[T][Threads / 32];
    // The block's segments (schedule.hpp), here so that no register holds the second over the first one's
    // steps.
    Segment parts[2];
    int segments;
};

// The block's rows, numbered from L0 (the first row it loads): loaded rows [0, loaded), interior rows
// (1..N of the grid) [interior_lo, interior_lo + interior_span], owned rows [own_lo, own_lo + own_rows).
struct BlockRows {
    long long L0;
    int loaded, interior_lo, interior_span, own_lo, own_rows;
};

__device__ __forceinline__ bool in_range(int t, int lo, int count) {
    return (unsigned)(t - lo) < (unsigned)count;
}

// Per-level block maxima to partials[level * blocks + block] (null: nowhere), or, where `fold` (the run
// state) is given, into its level maxima (atomicMax on their bits, exact; levels a pass did not compute fold
// in 0). max is exact, so the order is immaterial.
template <int T, int Threads>
__device__ __forceinline__ void store_level_maxima(const double (&md)[T], double (&scratch)[T][Threads / 32],
                                                   double *partials, DeviceState *fold) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int k = 0; k < T; ++k) {
        double m = md[k];
        for (int o = 16; o > 0; o /= 2) m = fmax(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (lane == 0) scratch[k][warp] = m;
    }
    __syncthreads();
    if (threadIdx.x < T && (partials || fold)) {
        double m = 0.0;
        for (int q = 0; q < Threads / 32; ++q) m = fmax(m, scratch[threadIdx.x][q]);
        if (fold)
            atomicMax(&fold->level_max[threadIdx.x], (unsigned long long)__double_as_longlong(m));
        else
            partials[(size_t)threadIdx.x * gridDim.x * gridDim.y + blockIdx.y * gridDim.x + blockIdx.x] = m;
    }
}

// finish_pass in the last block of a pass to end (finish_if_last): the levels' maxima read (all at once,
// past L1) and reset, and the arrival count reset; every block has arrived, so nothing else touches them.
// Not inlined: inlined, it made every 6/2 form spill 68-80 bytes (ptxas, sm_90).
inline __device__ __noinline__ void finish_last_block(DeviceState *state, int levels, bool to_final) {
    __threadfence();
    double lm[kMaxPassLevels] = {};
#pragma unroll
    for (int level = 0; level < kMaxPassLevels; ++level)
        if (level < levels) lm[level] = __longlong_as_double((long long)__ldcg(&state->level_max[level]));
#pragma unroll
    for (int level = 0; level < kMaxPassLevels; ++level)
        if (level < levels) state->level_max[level] = 0;
    state->arrived = 0;
    finish_pass(lm, levels, to_final, state);
}

// The end of a block of a pass that finishes itself, once its maxima are folded into the state's
// (store_level_maxima): its arrival counted; the block that arrives last runs finish_last_block, so that no
// kernel of its own runs between passes. Every block of a pass either runs to here or returns at its start
// (the run had converged), so the count reaches the grid's size exactly when the pass ran. The fences order
// this block's maxima and any bad-input flag before its arrival, and the others' before the last block's
// reads.
__device__ __forceinline__ void finish_if_last(DeviceState *state, int levels, bool to_final) {
    __syncthreads();
    if (threadIdx.x != 0) return;
    __threadfence();
    if (atomicAdd(&state->arrived, 1u) == gridDim.x * gridDim.y - 1)
        finish_last_block(state, levels, to_final);
}

// The rows of a block that owns rows [R0, R1) of 1..N.
__device__ __forceinline__ BlockRows block_rows(const Views &g, long long R0, long long R1, int T) {
    const long long N = (long long)g.rows;
    const long long L0 = R0 - T > 0 ? R0 - T : 0;
    const long long L1 = R1 - 1 + T < N + 1 ? R1 - 1 + T : N + 1;
    return BlockRows{L0, (int)(L1 - L0 + 1), (int)(1 - L0), (int)(N - 1), (int)(R0 - L0), (int)(R1 - R0)};
}

// The most shared memory a block may have on the architecture being compiled, where it is less than some
// pass kernel's (sm_75: 64 KiB); 0 elsewhere (the host pass, and every other architecture).
constexpr size_t arch_block_smem_cap() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750
    return 64 * 1024;
#else
    return 0;
#endif
}

// A pass over one block's strip: `levels` (<= T) iterations from the newest grid to the other grid, or to
// tfinal (`to_final`) when the pass ends the run. In recompute mode the pass runs only when the run
// converged inside a pass of this batch, from that pass's source to redo_levels, and keeps no maxima
// (partials null). MinBlocks resident per SM caps the registers (65536 / (MinBlocks * Threads)). Dynamic
// shared memory: sizeof(PassShared<T, Threads>). Partial: the form for passes of fewer than T levels (not
// with Check). A pass keeps its per-level block maxima in partials[level * blocks + block] for a later
// kernel to finish it (libgpk_mpi's slabs), or, where `finish` is given (the run state, the same as
// `state`), finishes itself (finish_if_last). The end of a pass takes the state from `finish`, a parameter
// of its own: had it reused `state`, the compiler would keep that pointer in registers over the steps, and
// 6/2 would spill.
template <int T, int Threads, int MinBlocks, bool Check, bool Partial = false>
__global__ void __launch_bounds__(Threads, MinBlocks)
    pass_kernel(Views g, const double *__restrict__ cond, DeviceState *state, PassShape shape, int levels,
                bool to_final, bool recompute, double *partials, DeviceState *finish) {
    static_assert(!(Check && Partial), "a shorter checking pass takes general steps");
    using Shared = PassShared<T, Threads>;
    // A block that does not fit the architecture's shared memory is never launched there: resident_blocks
    // finds 0 blocks for it and choose_pass_kernel passes it by. Its body is not compiled for it.
    if constexpr (arch_block_smem_cap() != 0 && sizeof(Shared) > arch_block_smem_cap()) {
        __trap();
        return;
    }
    extern __shared__ __align__(16) unsigned char shared_raw[];
    Shared &sm = *reinterpret_cast<Shared *>(shared_raw);
    int source, dst;
    if (recompute) {
        if (!state->redo) return;
        levels = state->redo_levels;
        source = state->redo_source;
        dst = state->redo_dst;
    } else {
        if (state->converged) return;
        source = state->buffer;
        dst = pass_destination(source, to_final);
    }
    const GridView src = g.v[source], out_view = g.v[dst];
    const long long M = (long long)g.cols;
    const int p = threadIdx.x;
    const int left = p > 0 ? p - 1 : p, right = p + 1 < Threads ? p + 1 : p;
    double md[T] = {};
    if (p == 0) {
        const long long strips = (M + shape.strip - 1) / shape.strip, rows = shape.row_end - shape.row_begin;
        Segment *parts = sm.parts;
        sm.segments = pass_segment(strips, rows, gridDim.x, blockIdx.x, 0, parts[0]);
        sm.segments += sm.segments && pass_segment(strips, rows, gridDim.x, blockIdx.x, 1, parts[1]);
    }
    __syncthreads();
    // The block's segments one after the other (not unrolled: one copy of the steps). Between them every
    // thread has passed the last step's barrier and every copy has landed, so the next segment's first
    // fills and stores touch nothing still read.
#pragma unroll 1
    for (int i = 0; i < sm.segments; ++i) {
        const Segment part = sm.parts[i];
        const long long c0 = part.strip * shape.strip;
        const long long col = ((c0 - T + p) % M + M) % M;
        const bool owned = p >= T && p < T + shape.strip && c0 + p - T < M;
        const BlockRows rows = block_rows(g, shape.row_begin + part.r0, shape.row_begin + part.r1, T);

        // Block row t into the rings; every call commits one group, empty past the last row.
        auto fetch = [&](int t) {
            const long long row = rows.L0 + t;
            if (t < rows.loaded)
                __pipeline_memcpy_async(&sm.ring_x[t & (Shared::kRingX - 1)][p], src.row(row) + col, 8);
            if (t < rows.loaded && in_range(t, rows.interior_lo, rows.interior_span + 1))
                __pipeline_memcpy_async(&sm.ring_w[t & (Shared::kRingW - 1)][p], &cond[(row - 1) * M + col],
                                        8);
            else
                sm.ring_w[t & (Shared::kRingW - 1)][p] = 0.0;
            __pipeline_commit();
        };
        // Check: a thread that loads a bad tinit or conductivity cell at level 0 sets the run state's flag
        // (a store where one is found, rare: no register kept over the steps for it).
        auto flag_bad = [&](bool bad) {
            if (Check && bad) state->bad_input = 1;
        };

        double v[T][3] = {}, h[T][3] = {};
        auto step = [&](auto phase, auto lean, int s) {
            constexpr int S0 = decltype(phase)::value, S1 = (S0 + 1) % 3, S2 = (S0 + 2) % 3;
            constexpr bool kLean = decltype(lean)::value;
            // A level the pass does not compute (Partial: k >= levels) passes its values on unchanged: no
            // west + east sums, no exchange through shared memory.
            if (kLean || s > 0) {
                // The checking form makes the neighbours' indices anew each step: held over the steps, they
                // spilled there (elsewhere held, which is faster).
                int w = left, e = right;
                if (Check) {
                    int q = p;
                    asm volatile("" : "+r"(q));
                    w = q > 0 ? q - 1 : q;
                    e = q + 1 < Threads ? q + 1 : q;
                }
#pragma unroll
                for (int k = 0; k < T; ++k)
                    if (!Partial || k < levels)
                        h[k][S2] = __dadd_rn(sm.exchange[(s + 1) & 1][k][w], sm.exchange[(s + 1) & 1][k][e]);
            }
            __pipeline_wait_prior(Shared::kAhead - 1); // block row s has landed
            const double x = sm.ring_x[s & (Shared::kRingX - 1)][p];
            // In lean steps row s is an interior or halo row that was loaded, or past the grid's last row,
            // whose ring slot still holds a row loaded 8 steps before (s >= 2T >= 8): halo rows are tinit's
            // edge rows or checked fixed rows, so no range test is needed for the flag.
            if (Check &&
                (kLean || (s < rows.loaded && in_range(s, rows.interior_lo, rows.interior_span + 1))))
                flag_bad(!isfinite(x));
            fetch(s + Shared::kAhead);
            double out[T];
#pragma unroll
            for (int k = 0; k < T; ++k) {
                const int t = s - 2 * k - 2; // block row of level k+1 computed now
                const double c = v[k][S1];
                out[k] = c;
                if (kLean ? !Partial || k < levels
                          : k < levels && in_range(t, rows.interior_lo, rows.interior_span + 1)) {
                    double w = sm.ring_w[t & (Shared::kRingW - 1)][p], rc, rd;
                    // Rows before the block's first (t < 0) are outside its pyramid: their ring slots hold
                    // garbage. In lean steps t >= 0, and rows outside the grid hold 0.
                    if (Check && k == 0 && (kLean || in_range(t, 0, rows.loaded)))
                        flag_bad(!(w >= 0.0 && w <= 1.0));
                    cell_weights(w, rc, rd);
                    out[k] = cell_update(w, rc, rd, c, __dadd_rn(v[k][S0], v[k][S2]), h[k][S1], h[k][S0],
                                         h[k][S2]);
                    // max(md, |d|) as fmax gives it (md is never NaN; a NaN |d| leaves md as fmax does), in
                    // every column: the columns outside the strip are dropped at the end.
                    const double d = fabs(__dsub_rn(out[k], c));
                    if ((kLean || in_range(t, rows.own_lo, rows.own_rows)) && d > md[k]) md[k] = d;
                }
            }
            v[0][S0] = x;
#pragma unroll
            for (int k = 1; k < T; ++k) v[k][S0] = out[k - 1];
            const int t_out = s - 2 * T;
            if (owned && (kLean || in_range(t_out, rows.own_lo, rows.own_rows)))
                out_view.row(rows.L0 + t_out)[col] = out[T - 1];
#pragma unroll
            for (int k = 0; k < T; ++k)
                if (!Partial || k < levels) sm.exchange[s & 1][k][p] = v[k][S0];
            __syncthreads();
        };

#pragma unroll
        for (int a = 0; a < Shared::kAhead; ++a) fetch(a);
        const int steps = rows.own_lo + rows.own_rows + 2 * T;
        const int lean_lo = rows.own_lo + 2 * T;
        const int lean_hi = levels < T && !Partial ? 0 : rows.own_lo + rows.own_rows + 2;
        using P0 = std::integral_constant<int, 0>;
        using P1 = std::integral_constant<int, 1>;
        using P2 = std::integral_constant<int, 2>;
        auto general = [&](int s) { // steps s..s+2 that exist, with every range test
            step(P0(), std::false_type(), s);
            if (s + 1 < steps) step(P1(), std::false_type(), s + 1);
            if (s + 2 < steps) step(P2(), std::false_type(), s + 2);
        };
        for (int s = 0;;) {
            for (; s < steps && (s < lean_lo || s + 3 > lean_hi); s += 3) general(s);
            if (s >= steps) break;
            for (; s + 3 <= lean_hi; s += 3) {
                step(P0(), std::true_type(), s);
                step(P1(), std::true_type(), s + 1);
                step(P2(), std::true_type(), s + 2);
            }
        }
        __pipeline_wait_prior(0);
    }
    // The strip's columns are exact; past the grid's last column (in the last strip) they are its first
    // columns again, of the same rows: their differences change no maximum.
    if (p < T || p >= T + shape.strip)
#pragma unroll
        for (int k = 0; k < T; ++k) md[k] = 0.0;
    store_level_maxima<T, Threads>(md, sm.scratch, partials, finish);
    if (finish) finish_if_last(finish, levels, to_final);
}

} // namespace gpk::cuda::heat
