// The heat pass kernels and the report's row statistics, shared by the whole-grid solver (heat.cu) and
// libgpk_mpi's slabs (slab.cu), so that both launch the very same kernels and every cell gets the same
// bits. Every kernel is instantiated and launched in pass.cu alone: one copy of each in the library,
// whose attributes (the dynamic shared memory limit) are set on the very function pointer that is
// launched.
#pragma once

#include "cuda/device_context.cuh"
#include "cuda/heat/blocked.cuh"

#include <cuda_runtime.h>
#include <cstddef>

namespace gpk::cuda::heat {

using PassFn = void (*)(Views, const double *, DeviceState *, PassShape, int, bool, bool, double *,
                        DeviceState *);

// A pass kernel: up to T iterations a pass, `threads` threads a block, MinBlocks resident per SM (which caps
// its registers).
struct PassKernel {
    int levels, threads, min_blocks;
    PassFn plain, checking; // checking: the run's first pass, which also checks the inputs
    PassFn partial;         // passes of fewer levels (blocked.cuh)
    size_t smem;            // dynamic shared memory of a block
};

// The kernel a run uses: `levels` (<= kernel->levels) iterations a pass at most, per_sm blocks resident per
// SM.
struct PassChoice {
    const PassKernel *kernel;
    int levels, per_sm;
};

// The first kernel of the list (pass.cu) that fits the device (shared memory, registers): 6/2, or where
// a block's shared memory is smaller 4/2, then 4/4 (the same bits either way). Sets the chosen kernel's
// dynamic shared memory limit on the context's device (DeviceContext::resident_blocks). Throws
// GPK_ERR_UNSUPPORTED where none fits.
PassChoice choose_pass_kernel(DeviceContext &ctx);

// The kernel for a batch's shorter passes: 4/4 (the last of the list, which fits any device) where the run's
// kernel is deeper than 4 levels, else none (kernel null). A shorter pass on the run's kernel costs about a
// whole one (its steps, barriers and ring loads do not shrink with the levels it computes).
PassChoice choose_tail_kernel(DeviceContext &ctx, const PassChoice &run);

// How `count` iterations (>= 1) go into passes: `whole` passes of L levels on the run's kernel, then up to
// two shorter ones of rest[0] and rest[1] levels (0: none), on the tail kernel of R levels where `tail`,
// else rest[0] on the run's kernel (R 0: no tail kernel). The rest r = count mod L runs on the tail kernel
// where it is at most R; where it is 1 or 2 and the last whole pass with it fits two tail passes, those
// replace both (6/2 and 4/4: 7 = 4 + 3, 8 = 4 + 4); a tail pass of fewer than 3 levels costs about as much
// as one of 3 or 4 (it reads and writes the whole grid either way).
struct PassSplit {
    size_t whole = 0;
    int rest[2] = {0, 0};
    bool tail = false;
};
PassSplit split_passes(size_t count, int L, int R);

// Strips of the kernel's W columns over `cols` columns.
size_t pass_strips(const PassChoice &choice, size_t cols);

// Blocks of a launch over `rows` rows of `cols` columns (schedule.hpp: plan_pass_blocks, for the kernel's
// strips and resident blocks), and the most it gives for `cols` columns whatever the rows.
unsigned plan_pass_blocks(const PassChoice &choice, size_t rows, size_t cols, int multiprocessors,
                          bool cross = true);
size_t max_pass_blocks(const PassChoice &choice, size_t cols, int multiprocessors);

// After a launch that returned `launched`: its error, or the one that was pending before it (`pending`),
// as a gpk::Error naming `what`, the grid, the block and the dynamic shared memory (so that an earlier
// unchecked call is not taken for this launch's fault).
void check_kernel_launch(cudaError_t launched, cudaError_t pending, const char *what, dim3 grid, int threads,
                         size_t smem);

// Launches a pass kernel (its checking form where `checking`) on `stream`: one that finishes itself where
// `finish` (blocked.cuh), else one that leaves its per-level block maxima in `partials` (null: none). A
// failed launch becomes a gpk::Error (check_kernel_launch).
void launch_pass(const PassKernel &k, bool checking, dim3 grid, cudaStream_t stream, const Views &g,
                 const double *cond, DeviceState *state, const PassShape &shape, int levels, bool to_final,
                 bool recompute, double *partials, bool finish, const char *what);

// Min, max and sum of each of rows first_row .. first_row + count - 1 of the newest grid (state->buffer)
// into row_min/row_max/row_sum[0..count); skipped where `skip_if_converged` and the run has converged.
// Where `copy` is given, the rows are also copied to copy[0 .. count * copy_pitch) (row r at r * copy_pitch);
// with `copy_unless_final`, only where the newest grid is not tfinal and no bad input was found. With
// row_min null (a final report nobody asked for) only the copy is made, where it is due.
void launch_row_stats(cudaStream_t stream, const Views &g, const DeviceState *state, bool skip_if_converged,
                      size_t first_row, size_t count, double *row_min, double *row_max, double *row_sum,
                      double *copy = nullptr, size_t copy_pitch = 0, bool copy_unless_final = false);

} // namespace gpk::cuda::heat
