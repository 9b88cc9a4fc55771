// The heat pass kernels built, the choice among them, and the launches of every kernel that both the
// whole-grid solver (heat.cu) and libgpk_mpi's slabs (slab.cu) run: this file alone instantiates them
// (pass.cuh).
#include "cuda/heat/pass.cuh"

#include "cuda/check.cuh"
#include "cuda/heat/kernels.cuh"
#include "engine/error.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

namespace gpk::cuda::heat {
namespace {

constexpr int kStatsThreads = 256;
constexpr int kStatsBlocks = 2048; // at most; each row's sum is the same whatever the count

// The form for shorter passes; a kernel without lean steps needs none of its own.
template <int T, int Threads, int B, bool Lean> constexpr PassFn partial_form() {
    if constexpr (Lean)
        return pass_kernel<T, Threads, B, false, true, true>;
    else
        return pass_kernel<T, Threads, B, false, false>;
}

template <int T, int Threads, int B, bool Lean = true> constexpr PassKernel pass_kernel_of() {
    static_assert(T <= kMaxPassLevels, "kernels.cuh: kMaxPassLevels is the deepest kernel");
    return {T,
            Threads,
            B,
            pass_kernel<T, Threads, B, false, Lean>,
            pass_kernel<T, Threads, B, true, Lean>,
            partial_form<T, Threads, B, Lean>(),
            sizeof(PassShared<T, Threads>)};
}

// The kernels built, the default first; the first one that fits the device runs (the last, of 128-thread
// blocks and 32 KiB of shared memory, fits any device gpk builds for). The internal knobs
// GPK_TEST_HEAT_PASS_LEVELS=L (iterations per pass: the first kernel of at least L levels runs passes of at
// most L) and GPK_TEST_HEAT_KERNEL=T/B (the kernel of T levels, B blocks per SM) exist for tests and
// benchmarks: every choice gives the same bits. 6 levels is the deepest pass whose lean steps
// (blocked.cuh) fit 128 registers without spilling (ptxas, sm_90); 7 spills; 8/2 takes general steps
// only (with lean ones it spilled 304 bytes; round 1's default, 0.807 ms an iteration at 16384² on the
// H100); 8/1 and 12/1 have a whole SM's registers for 8 warps.
constexpr PassKernel kPassKernels[] = {pass_kernel_of<6, 256, 2>(), pass_kernel_of<4, 256, 2>(),
                                       pass_kernel_of<7, 256, 2>(), pass_kernel_of<8, 256, 2, false>(),
                                       pass_kernel_of<8, 256, 1>(), pass_kernel_of<12, 256, 1>(),
                                       pass_kernel_of<4, 128, 4>()};

// The kernel the knobs ask for (the default without them).
PassChoice knob_choice() {
    PassChoice c{&kPassKernels[0], kPassKernels[0].levels, 0};
    if (const char *knob = std::getenv("GPK_TEST_HEAT_KERNEL")) {
        int t = 0, b = 0;
        if (std::sscanf(knob, "%d/%d", &t, &b) == 2)
            for (const PassKernel &k : kPassKernels)
                if (k.levels == t && k.min_blocks == b) {
                    c = {&k, t, 0};
                    break;
                }
    }
    if (const char *knob = std::getenv("GPK_TEST_HEAT_PASS_LEVELS")) {
        int v = std::atoi(knob);
        if (v >= 1 && v <= c.kernel->levels) {
            c.levels = v;
        } else if (v >= 1) {
            for (const PassKernel &k : kPassKernels)
                if (k.levels >= v && (c.kernel->levels < v || k.levels < c.kernel->levels)) c = {&k, v, 0};
        }
    }
    return c;
}

// Blocks of both forms of a pass kernel resident per SM; 0 where it does not fit the device.
int resident(DeviceContext &ctx, const PassKernel &k) {
    int n = INT_MAX;
    for (PassFn f : {k.plain, k.checking, k.partial})
        n = std::min(n, ctx.resident_blocks(reinterpret_cast<const void *>(f), k.threads, k.smem));
    return n;
}

// GPK_TEST_HEAT_PARTIAL=0 (NOTES.md, internal knobs): shorter passes take the plain form (general steps).
bool partial_form_wanted() {
    const char *knob = std::getenv("GPK_TEST_HEAT_PARTIAL");
    return !(knob && std::strcmp(knob, "0") == 0);
}

} // namespace

PassChoice choose_pass_kernel(DeviceContext &ctx) {
    PassChoice c = knob_choice();
    c.per_sm = resident(ctx, *c.kernel);
    for (const PassKernel &k : kPassKernels) {
        if (c.per_sm >= 1) break;
        if ((c.per_sm = resident(ctx, k)) >= 1) c = {&k, std::min(c.levels, k.levels), c.per_sm};
    }
    if (c.per_sm < 1) fail(GPK_ERR_UNSUPPORTED, "heat: no pass kernel fits this device's shared memory");
    return c;
}

PassChoice choose_tail_kernel(DeviceContext &ctx, const PassChoice &run) {
    const PassKernel &k = kPassKernels[std::size(kPassKernels) - 1];
    const char *knob = std::getenv("GPK_TEST_HEAT_TAIL");
    if (run.levels <= k.levels || (knob && std::strcmp(knob, "0") == 0)) return {nullptr, 0, 0};
    const int per_sm = resident(ctx, k);
    if (per_sm < 1) return {nullptr, 0, 0};
    return {&k, k.levels, per_sm};
}

PassSplit split_passes(size_t count, int L, int R) {
    PassSplit p;
    p.whole = count / (size_t)L;
    const int r = (int)(count % (size_t)L);
    if (r == 0) return p;
    if (R > 0 && r <= R && (r >= 3 || p.whole == 0)) {
        p.rest[0] = r;
        p.tail = true;
    } else if (R > 0 && r <= 2 && p.whole > 0 && L + r <= 2 * R) {
        --p.whole;
        p.rest[0] = (L + r + 1) / 2;
        p.rest[1] = (L + r) / 2;
        p.tail = true;
    } else {
        p.rest[0] = r;
    }
    return p;
}

int plan_rows_per_block(const PassChoice &choice, size_t rows, size_t cols, int multiprocessors) {
    const int T = choice.kernel->levels;
    const size_t strip = (size_t)(choice.kernel->threads - 2 * T);
    const size_t nx = (cols + strip - 1) / strip;
    const size_t slots = (size_t)std::max(multiprocessors, 1) * (size_t)choice.per_sm;
    const size_t h_min = std::max<size_t>(2 * T, (rows + 65534) / 65535);
    size_t best = rows;
    double best_cost = INFINITY;
    for (size_t h = h_min; h <= std::min(rows, std::max<size_t>(h_min, 4096)); ++h) {
        size_t blocks = nx * ((rows + h - 1) / h);
        double cost = (double)((blocks + slots - 1) / slots) * ((double)h + 2.5 * T);
        if (cost < best_cost) best_cost = cost, best = h;
    }
    return (int)std::max<size_t>(best, 1);
}

void check_kernel_launch(cudaError_t launched, cudaError_t pending, const char *what, dim3 grid, int threads,
                         size_t smem) {
    cudaError_t e = cudaGetLastError();
    if (launched != cudaSuccess) e = launched;
    if (e == cudaSuccess && fault::inject(fault::Point::launch)) e = cudaErrorLaunchFailure;
    if (e == cudaSuccess) return;
    std::string name = std::string(what) + " (grid " + std::to_string(grid.x) + "x" + std::to_string(grid.y) +
                       ", block " + std::to_string(threads) + ", " + std::to_string(smem) +
                       " bytes of dynamic shared memory" +
                       (pending != cudaSuccess
                            ? std::string("; ") + cudaGetErrorName(pending) + " was pending before the launch"
                            : std::string()) +
                       ")";
    check(e, name.c_str());
}

void launch_pass(const PassKernel &k, bool checking, dim3 grid, cudaStream_t stream, const Views &g,
                 const double *cond, DeviceState *state, const PassShape &shape, int levels, bool to_final,
                 bool recompute, double *partials, bool finish, const char *what, bool pdl) {
    const cudaError_t pending = cudaPeekAtLastError();
    const LaunchConfig c(grid, k.threads, k.smem, stream, pdl);
    // A recomputation (levels 0 here) learns its length on the device: the plain form.
    const PassFn fn = checking                                                   ? k.checking
                      : !recompute && levels < k.levels && partial_form_wanted() ? k.partial
                                                                                 : k.plain;
    const cudaError_t launched = cudaLaunchKernelEx(&c.config, fn, g, cond, state, shape, levels, to_final,
                                                    recompute, partials, finish ? state : nullptr);
    check_kernel_launch(launched, pending, what, grid, k.threads, k.smem);
}

void launch_row_stats(cudaStream_t stream, const Views &g, const DeviceState *state, bool skip_if_converged,
                      size_t first_row, size_t count, double *row_min, double *row_max, double *row_sum,
                      double *copy, size_t copy_pitch, bool copy_unless_final) {
    if (count == 0) return;
    const int per_block = kStatsThreads / 32;
    const dim3 blocks((unsigned)std::min<size_t>((count + per_block - 1) / per_block, kStatsBlocks));
    const cudaError_t pending = cudaPeekAtLastError();
    if (row_min)
        row_stats_kernel<kStatsThreads, true>
            <<<blocks, kStatsThreads, 0, stream>>>(g, state, skip_if_converged, first_row, count, row_min,
                                                   row_max, row_sum, copy, copy_pitch, copy_unless_final);
    else
        row_stats_kernel<kStatsThreads, false>
            <<<blocks, kStatsThreads, 0, stream>>>(g, state, skip_if_converged, first_row, count, nullptr,
                                                   nullptr, nullptr, copy, copy_pitch, copy_unless_final);
    check_kernel_launch(cudaSuccess, pending, "heat row_stats_kernel", blocks, kStatsThreads, 0);
}

} // namespace gpk::cuda::heat
