// The heat pass kernels built, the choice among them, and the launches of every kernel that both the
// whole-grid solver (heat.cu) and libgpk_mpi's slabs (slab.cu) run: this file alone instantiates them
// (pass.cuh).
#include "cuda/heat/pass.cuh"

#include "cuda/check.cuh"
#include "cuda/heat/kernels.cuh"
#include "engine/error.hpp"

#include <algorithm>
#include <climits>
#include <iterator>
#include <string>

namespace gpk::cuda::heat {
namespace {

constexpr int kStatsThreads = 256;
constexpr int kStatsBlocks = 2048; // at most; each row's sum is the same whatever the count

template <int T, int Threads, int B> constexpr PassKernel pass_kernel_of() {
    static_assert(T <= kMaxPassLevels, "kernels.cuh: kMaxPassLevels is the deepest kernel");
    return {T,
            Threads,
            B,
            pass_kernel<T, Threads, B, false>,
            pass_kernel<T, Threads, B, true>,
            pass_kernel<T, Threads, B, false, true>,
            sizeof(PassShared<T, Threads>)};
}

// The kernels built, in the order they are tried; the first one that fits the device runs. 6/2 is the
// deepest pass whose lean steps (blocked.cuh) fit 128 registers without spilling (ptxas, sm_90). 4/2 needs
// about 64 KiB of shared memory a block where 6/2 needs about 104 KiB; 4/4, of 128-thread blocks and 32 KiB,
// fits any device gpk builds for and also runs a batch's shorter passes (choose_tail_kernel).
constexpr PassKernel kPassKernels[] = {pass_kernel_of<6, 256, 2>(), pass_kernel_of<4, 256, 2>(),
                                       pass_kernel_of<4, 128, 4>()};

// Blocks of every form of a pass kernel resident per SM; 0 where it does not fit the device.
int resident(DeviceContext &ctx, const PassKernel &k) {
    int n = INT_MAX;
    for (PassFn f : {k.plain, k.checking, k.partial})
        n = std::min(n, ctx.resident_blocks(reinterpret_cast<const void *>(f), k.threads, k.smem));
    return n;
}

} // namespace

PassChoice choose_pass_kernel(DeviceContext &ctx) {
    for (const PassKernel &k : kPassKernels)
        if (const int per_sm = resident(ctx, k); per_sm >= 1) return {&k, k.levels, per_sm};
    fail(GPK_ERR_UNSUPPORTED, "heat: no pass kernel fits this device's shared memory");
}

PassChoice choose_tail_kernel(DeviceContext &ctx, const PassChoice &run) {
    const PassKernel &k = kPassKernels[std::size(kPassKernels) - 1];
    if (run.levels <= k.levels) return {nullptr, 0, 0};
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

size_t pass_strips(const PassChoice &choice, size_t cols) {
    const size_t strip = (size_t)(choice.kernel->threads - 2 * choice.kernel->levels);
    return (cols + strip - 1) / strip;
}

namespace {
long long slots_of(const PassChoice &choice, int multiprocessors) {
    return (long long)std::max(multiprocessors, 1) * choice.per_sm;
}
} // namespace

unsigned plan_pass_blocks(const PassChoice &choice, size_t rows, size_t cols, int multiprocessors,
                          bool cross) {
    return (unsigned)heat::plan_pass_blocks((long long)pass_strips(choice, cols), (long long)rows,
                                            slots_of(choice, multiprocessors), choice.kernel->levels, cross);
}

size_t max_pass_blocks(const PassChoice &choice, size_t cols, int multiprocessors) {
    return (size_t)heat::max_pass_blocks((long long)pass_strips(choice, cols),
                                         slots_of(choice, multiprocessors));
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
                 bool recompute, double *partials, bool finish, const char *what) {
    const cudaError_t pending = cudaPeekAtLastError();
    // A recomputation (levels 0 here) learns its length on the device: the plain form.
    const PassFn fn = checking ? k.checking : !recompute && levels < k.levels ? k.partial : k.plain;
    fn<<<grid, k.threads, k.smem, stream>>>(g, cond, state, shape, levels, to_final, recompute, partials,
                                            finish ? state : nullptr);
    check_kernel_launch(cudaSuccess, pending, what, grid, k.threads, k.smem);
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
