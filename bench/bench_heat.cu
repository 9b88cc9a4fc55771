// gpk_heat_run on device data against the naive peer of PERF.md: one stencil kernel per iteration with the
// halo columns wrapped first, a maxdiff reduction, and the host reading maxdiff back every iteration.
// Prints the median per-iteration time, GCells/s, the effective bandwidth of one pass per iteration (24
// bytes per cell) as a fraction of the device-to-device ceiling, and the ratio; checks gpk's grid against
// the peer's after the same iterations. Then, per size, each pass kernel of the library (6/2, and the 4/2
// and 4/4 that devices with less shared memory a block take, reached by capping it: GPK_TEST_SHARED_LIMIT)
// and a call's fixed cost: whole synchronous calls of 1, 2, 8, 50 and 100 iterations through the C API, the
// cost outside the iterations being T(50) - 50 * (T(100) - T(50)) / 50, with device pointers and (at the
// smaller size) pageable host pointers; and the intercept of a least-squares line through calls of 6 to 96
// iterations (interleaved rounds: at 16384^2 the two-call difference swings by several iterations).
// `bench_heat sweep N [H...]` times kernels and block heights at N x N (GPK_TEST_HEAT_ROWS);
// `bench_heat profile N [ITERS]` makes two calls for a profiler; `bench_heat fixed N ROUNDS [NAME=VALUE...]`
// alternates a call's fixed cost with and without internal knobs.
#include "gpk.h"
#include "hooks.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr double kCopyCeilingGBs = 3025.0; // PERF.md: device-to-device copy on the H100
constexpr int kBlockX = 32, kBlockY = 8;

#define BENCH_CHECK(call)                                                                                    \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));      \
            std::exit(1);                                                                                    \
        }                                                                                                    \
    } while (0)

// Random-looking but reproducible inputs, made on the device: temperatures in [-100, 100), conductivities
// in [0, 1).
__global__ void fill_inputs(double *t, double *c, size_t n) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n;
         k += (size_t)gridDim.x * blockDim.x) {
        unsigned long long h = (k + 1) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 31;
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
        t[k] = -100.0 + 200.0 * (double)(h >> 11) * 0x1.0p-53;
        c[k] = (double)((h * 0x94D049BB133111EBull) >> 11) * 0x1.0p-53;
    }
}

// An N x N heat problem on the device: tinit and conductivities filled by fill_inputs, and room for tfinal.
struct DeviceInputs {
    double *t = nullptr, *c = nullptr, *out = nullptr;
    explicit DeviceInputs(size_t cells) {
        BENCH_CHECK(cudaMalloc(&t, cells * sizeof(double)));
        BENCH_CHECK(cudaMalloc(&c, cells * sizeof(double)));
        BENCH_CHECK(cudaMalloc(&out, cells * sizeof(double)));
        fill_inputs<<<4096, 256>>>(t, c, cells);
        BENCH_CHECK(cudaDeviceSynchronize());
    }
    ~DeviceInputs() {
        cudaFree(t);
        cudaFree(c);
        cudaFree(out);
    }
    DeviceInputs(const DeviceInputs &) = delete;
    DeviceInputs &operator=(const DeviceInputs &) = delete;
};

// ---- the naive peer: grids of (N+2) x (M+2) with halo columns (README, "What gpk computes") ----

__global__ void peer_load(const double *t, double *g, int n, int m) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < m) g[(size_t)(i + 1) * (m + 2) + j + 1] = t[(size_t)i * m + j];
}

__global__ void peer_halo_rows(double *g, int n, int m) {
    int j = blockIdx.x * blockDim.x + threadIdx.x + 1;
    if (j <= m) {
        g[j] = g[(size_t)(m + 2) + j];
        g[(size_t)(n + 1) * (m + 2) + j] = g[(size_t)n * (m + 2) + j];
    }
}

__global__ void peer_wrap(double *g, int n, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n + 1) {
        g[(size_t)i * (m + 2) + m + 1] = g[(size_t)i * (m + 2) + 1];
        g[(size_t)i * (m + 2)] = g[(size_t)i * (m + 2) + m];
    }
}

__global__ void peer_step(const double *src, double *dst, const double *cond, int n, int m, double cdir,
                          double cdiag, double *partials) {
    __shared__ double block_max[kBlockX * kBlockY];
    int j = blockIdx.x * blockDim.x + threadIdx.x + 1, i = blockIdx.y * blockDim.y + threadIdx.y + 1;
    int tid = threadIdx.y * blockDim.x + threadIdx.x;
    double d = 0;
    if (i <= n && j <= m) {
        size_t w = m + 2;
        auto s = [&](int a, int b) { return src[(size_t)a * w + b]; };
        double c = cond[(size_t)(i - 1) * m + j - 1], r = 1 - c;
        double v = c * s(i, j) + (s(i + 1, j) + s(i - 1, j) + s(i, j + 1) + s(i, j - 1)) * (r * cdir) +
                   (s(i - 1, j - 1) + s(i - 1, j + 1) + s(i + 1, j - 1) + s(i + 1, j + 1)) * (r * cdiag);
        dst[(size_t)i * w + j] = v;
        d = fabs(v - s(i, j));
    }
    block_max[tid] = d;
    __syncthreads();
    for (int half = kBlockX * kBlockY / 2; half > 0; half /= 2) {
        if (tid < half) block_max[tid] = fmax(block_max[tid], block_max[tid + half]);
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.y * gridDim.x + blockIdx.x] = block_max[0];
}

__global__ void peer_reduce(const double *partials, int count, double *out) {
    __shared__ double m[1024];
    double v = 0;
    for (int k = threadIdx.x; k < count; k += blockDim.x) v = fmax(v, partials[k]);
    m[threadIdx.x] = v;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) m[threadIdx.x] = fmax(m[threadIdx.x], m[threadIdx.x + half]);
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = m[0];
}

struct Peer {
    int n, m;
    double *grid[2], *partials, *maxdiff;
    dim3 block{kBlockX, kBlockY}, cells;

    Peer(const double *t, int n_, int m_) : n(n_), m(m_) {
        size_t bytes = (size_t)(n + 2) * (m + 2) * sizeof(double);
        cells = dim3((m + kBlockX - 1) / kBlockX, (n + kBlockY - 1) / kBlockY);
        for (double *&g : grid) {
            BENCH_CHECK(cudaMalloc(&g, bytes));
            peer_load<<<cells, block>>>(t, g, n, m);
            peer_halo_rows<<<(m + 255) / 256, 256>>>(g, n, m);
        }
        BENCH_CHECK(cudaMalloc(&partials, (size_t)cells.x * cells.y * sizeof(double)));
        BENCH_CHECK(cudaMalloc(&maxdiff, sizeof(double)));
        BENCH_CHECK(cudaDeviceSynchronize());
    }
    ~Peer() {
        cudaFree(grid[0]);
        cudaFree(grid[1]);
        cudaFree(partials);
        cudaFree(maxdiff);
    }
    // One iteration, the contract's loop: the host reads maxdiff before deciding to go on.
    double iterate(const double *cond) {
        std::swap(grid[0], grid[1]);
        peer_wrap<<<(n + 2 + 255) / 256, 256>>>(grid[0], n, m);
        const double cdir = 0.25 * std::sqrt(2.0) / (std::sqrt(2.0) + 1.0),
                     cdiag = 0.25 / (std::sqrt(2.0) + 1.0);
        peer_step<<<cells, block>>>(grid[0], grid[1], cond, n, m, cdir, cdiag, partials);
        peer_reduce<<<1, 1024>>>(partials, (int)(cells.x * cells.y), maxdiff);
        double host = 0;
        BENCH_CHECK(cudaMemcpy(&host, maxdiff, sizeof host, cudaMemcpyDeviceToHost));
        return host;
    }
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Median time of one peer iteration (CUDA events around each, readback included), over `iters`.
double time_peer(Peer &peer, const double *cond, int iters) {
    cudaEvent_t a, b;
    BENCH_CHECK(cudaEventCreate(&a));
    BENCH_CHECK(cudaEventCreate(&b));
    std::vector<double> ms;
    for (int k = 0; k < iters; ++k) {
        BENCH_CHECK(cudaEventRecord(a));
        peer.iterate(cond);
        BENCH_CHECK(cudaEventRecord(b));
        BENCH_CHECK(cudaEventSynchronize(b));
        float t = 0;
        BENCH_CHECK(cudaEventElapsedTime(&t, a, b));
        ms.push_back(t);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return median(ms);
}

// A synchronous call's wall time; `final` receives the final report (null: none asked for, so that the
// call leaves out the final grid's statistics).
double run_gpk(gpk_context *ctx, int n, int m, size_t iters, const double *t, const double *c, double *out,
               gpk_heat_report *final = nullptr) {
    gpk_heat_params p;
    gpk_heat_params_init(&p);
    p.rows = n;
    p.cols = m;
    p.maxiter = iters;
    auto start = std::chrono::steady_clock::now();
    gpk_status s = gpk_heat_run(ctx, &p, t, c, out, final);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (s != GPK_OK) {
        std::fprintf(stderr, "gpk_heat_run: %s: %s\n", gpk_status_string(s), gpk_context_last_error(ctx));
        std::exit(1);
    }
    return ms;
}

// gpk's marginal cost of an iteration: whole calls of `base` and `base + extra` iterations (each call
// synchronous), the median difference over `reps` pairs divided by `extra`. Setup and the final copy cancel.
double time_gpk(gpk_context *ctx, int n, const double *t, const double *c, double *out, size_t base,
                size_t extra, int reps) {
    run_gpk(ctx, n, n, base + extra, t, c, out); // warm-up
    std::vector<double> per_iter;
    for (int r = 0; r < reps; ++r) {
        double short_run = run_gpk(ctx, n, n, base, t, c, out);
        double long_run = run_gpk(ctx, n, n, base + extra, t, c, out);
        per_iter.push_back((long_run - short_run) / (double)extra);
    }
    return median(per_iter);
}

// gpk's grid after `iters` iterations against the peer's after as many (1e-9 relative or 1e-12 absolute).
size_t count_mismatches(gpk_context *ctx, Peer &peer, int n, const double *t, const double *c, double *out,
                        size_t iters) {
    run_gpk(ctx, n, n, iters, t, c, out);
    std::vector<double> mine((size_t)n * n), theirs((size_t)(n + 2) * (n + 2));
    BENCH_CHECK(cudaMemcpy(mine.data(), out, mine.size() * sizeof(double), cudaMemcpyDeviceToHost));
    BENCH_CHECK(
        cudaMemcpy(theirs.data(), peer.grid[1], theirs.size() * sizeof(double), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            double a = mine[(size_t)i * n + j], b = theirs[(size_t)(i + 1) * (n + 2) + j + 1];
            bad += !(std::fabs(a - b) <= 1e-12 || std::fabs(a - b) <= 1e-9 * std::fabs(b));
        }
    return bad;
}

// Whole calls of `iters` iterations: the median wall time of `reps` calls (after one warm-up call).
double call_ms(gpk_context *ctx, int n, size_t iters, const double *t, const double *c, double *out,
               int reps) {
    gpk_heat_report final{};
    run_gpk(ctx, n, n, iters, t, c, out, &final);
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) ms.push_back(run_gpk(ctx, n, n, iters, t, c, out, &final));
    return median(ms);
}

// A call's cost outside its iterations, through the C API, synchronous calls that ask for the final report.
void fixed_cost(gpk_context *ctx, int n, const double *t, const double *c, double *out, const char *where,
                int reps) {
    double t1 = call_ms(ctx, n, 1, t, c, out, reps), t2 = call_ms(ctx, n, 2, t, c, out, reps);
    double t8 = call_ms(ctx, n, 8, t, c, out, reps), t50 = call_ms(ctx, n, 50, t, c, out, reps);
    double t100 = call_ms(ctx, n, 100, t, c, out, reps);
    double per_iter = (t100 - t50) / 50, fixed = t50 - 50 * per_iter;
    std::printf(
        "heat f64 %5dx%-5d  %-10s call: 1 it %8.3f ms, 2 it %8.3f, 8 it %8.3f, 50 it %8.3f, 100 it %8.3f "
        "| per iteration %7.4f ms | fixed cost %7.3f ms = %5.2f iterations (target <= 2)\n",
        n, n, where, t1, t2, t8, t50, t100, per_iter, fixed, fixed / per_iter);
}

// A line y = intercept + slope * x fitted by least squares through (x[k], y[k]), k in [first, count).
struct Line {
    double slope, intercept;
};
Line least_squares(const size_t *x, const double *y, int first, int count) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    const int n = count - first;
    for (int k = first; k < count; ++k) {
        const double xk = (double)x[k];
        sx += xk, sy += y[k], sxx += xk * xk, sxy += xk * y[k];
    }
    const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    return {slope, (sy - slope * sx) / n};
}

// A call's fixed cost as the intercept of a least-squares line through calls of 6, 12, 24, 48 and 96
// iterations (whole passes of the default kernel), `rounds` rounds that each time every count once, with
// and without the final report asked for (interleaved, so that a drift of the clocks moves every count
// alike), the median of each. A call that asks for no report leaves out the final grid's statistics, one
// more read of the grid. A second line leaves out the calls of 6 iterations: a call of one pass also copies
// the grid to tfinal once more (its only pass is the checking one, and nothing reaches tfinal before the
// inputs are known good), so that point lies above the line of longer calls and lifts the first fit's
// intercept by about 0.4 of its excess.
void fitted_cost(gpk_context *ctx, int n, const double *t, const double *c, double *out, const char *where,
                 int rounds) {
    const size_t counts[] = {6, 12, 24, 48, 96};
    constexpr int kCounts = 5;
    std::vector<double> ms[2][kCounts];
    gpk_heat_report final{};
    run_gpk(ctx, n, n, counts[0], t, c, out, &final);
    for (int r = 0; r < rounds; ++r)
        for (int k = 0; k < kCounts; ++k)
            for (int w = 0; w < 2; ++w)
                ms[w][k].push_back(run_gpk(ctx, n, n, counts[k], t, c, out, w ? nullptr : &final));
    for (int w = 0; w < 2; ++w) {
        double y[kCounts];
        for (int k = 0; k < kCounts; ++k) y[k] = median(ms[w][k]);
        const Line all = least_squares(counts, y, 0, kCounts), multi = least_squares(counts, y, 1, kCounts);
        std::printf("heat f64 %5dx%-5d  %-10s %-9s fit of calls of 6/12/24/48/96 it (%8.3f / %8.3f / %8.3f / "
                    "%8.3f / %8.3f ms, medians of %d): per iteration %7.4f ms | fixed cost %7.3f ms = %5.2f "
                    "iterations (target <= 2) | calls of 12-96 alone (two passes or more): %7.3f ms = %5.2f "
                    "iterations\n",
                    n, n, where, w ? "no report" : "report", y[0], y[1], y[2], y[3], y[4], rounds, all.slope,
                    all.intercept, all.intercept / all.slope, multi.intercept, multi.intercept / multi.slope);
    }
    std::fflush(stdout);
}

// A test hook "NAME=VALUE" (NOTES.md) set for the object's lifetime (null: none).
struct KnobSetting {
    std::optional<hooks::Hook> hook;
    explicit KnobSetting(const char *knob) {
        if (!knob) return;
        const std::string text = knob;
        const std::string name = text.substr(0, text.find('='));
        hook.emplace(name.c_str(), text.substr(name.size() + 1));
    }
};

// The pass kernels: 6/2 (the default), and those the solver takes where a block's shared memory is
// smaller, reached by capping it (GPK_TEST_SHARED_LIMIT).
struct Kernel {
    const char *name, *shared_limit;
};
constexpr Kernel kKernels[] = {{"6/2", ""}, {"4/2", "100000"}, {"4/4", "60000"}};

// One pass kernel, timed over whole passes: calls of 2T and 2T + ~extra iterations; `rows` > 0 sets the
// block height (GPK_TEST_HEAT_ROWS).
void time_kernel(gpk_context *ctx, int n, const double *t, const double *c, double *out, size_t extra,
                 const Kernel &kernel, int rows) {
    const size_t levels = (size_t)std::atoi(kernel.name);
    double ms;
    {
        hooks::Hook limit("GPK_TEST_SHARED_LIMIT", *kernel.shared_limit ? kernel.shared_limit : nullptr);
        hooks::Hook block_rows("GPK_TEST_HEAT_ROWS", rows > 0 ? std::to_string(rows).c_str() : nullptr);
        ms = time_gpk(ctx, n, t, c, out, 2 * levels, (extra + levels - 1) / levels * levels, 5);
    }
    char rows_text[32] = "planned";
    if (rows > 0) std::snprintf(rows_text, sizeof rows_text, "%d", rows);
    // The "as built" column keeps the fields where tools/gpu/heatfix.sh reads them.
    std::printf("heat f64 %5dx%-5d  kernel %-5s rows %-7s %-28s %8.4f ms/iteration %7.1f GCells/s\n", n, n,
                kernel.name, rows_text, "as built", ms, (double)n * n / (ms * 1e-3) / 1e9);
    std::fflush(stdout);
}

// Each pass kernel the library has at its planned block height.
void kernel_sweep(gpk_context *ctx, int n, const double *t, const double *c, double *out, size_t extra) {
    for (const Kernel &k : kKernels) time_kernel(ctx, n, t, c, out, extra, k, 0);
}

void bench_size(gpk_context *ctx, int n, size_t extra, int peer_iters) {
    const size_t cells = (size_t)n * n;
    const DeviceInputs in(cells);
    double *t = in.t, *c = in.c, *out = in.out;
    double peer_ms, bad;
    {
        Peer peer(t, n, n);
        const size_t check_iters = 11;
        for (size_t k = 0; k < check_iters; ++k) peer.iterate(c);
        bad = (double)count_mismatches(ctx, peer, n, t, c, out, check_iters);
        peer_ms = time_peer(peer, c, peer_iters);
    }
    double gpk_ms = time_gpk(ctx, n, t, c, out, 12, extra, 7); // whole passes of the default kernel (6)
    auto gcells = [&](double ms) { return (double)cells / (ms * 1e-3) / 1e9; };
    auto fraction = [&](double ms) { return 24.0 * (double)cells / (ms * 1e-3) / 1e9 / kCopyCeilingGBs; };
    std::printf(
        "heat f64 %5dx%-5d  gpk %8.4f ms %7.1f GCells/s %5.2f of 1-pass ceiling | peer %8.4f ms %6.1f "
        "GCells/s %5.2f | peer/gpk %5.2fx | check: %s\n",
        n, n, gpk_ms, gcells(gpk_ms), fraction(gpk_ms), peer_ms, gcells(peer_ms), fraction(peer_ms),
        peer_ms / gpk_ms, bad == 0 ? "ok" : "MISMATCH");
    std::fflush(stdout);
    kernel_sweep(ctx, n, t, c, out, extra);
    fixed_cost(ctx, n, t, c, out, "device", n > 8192 ? 3 : 7);
    fitted_cost(ctx, n, t, c, out, "device", n > 8192 ? 9 : 15);
    if (n <= 8192) {
        std::vector<double> ht(cells), hc(cells), hout(cells);
        BENCH_CHECK(cudaMemcpy(ht.data(), t, cells * sizeof(double), cudaMemcpyDeviceToHost));
        BENCH_CHECK(cudaMemcpy(hc.data(), c, cells * sizeof(double), cudaMemcpyDeviceToHost));
        fixed_cost(ctx, n, ht.data(), hc.data(), hout.data(), "pageable", 3);
        // What the copies alone cost: tinit and the conductivities up, tfinal down, by cudaMemcpy from and to
        // the same pageable arrays (medians of 3).
        auto copy_ms = [&](void *dst, const void *src) {
            std::vector<double> ms;
            for (int r = 0; r < 3; ++r) {
                auto t0 = std::chrono::steady_clock::now();
                BENCH_CHECK(cudaMemcpy(dst, src, cells * sizeof(double), cudaMemcpyDefault));
                ms.push_back(
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            }
            return median(ms);
        };
        const double up = copy_ms(out, ht.data()), up2 = copy_ms(out, hc.data()),
                     down = copy_ms(hout.data(), out);
        const double gb = (double)cells * sizeof(double) / 1e9;
        std::printf(
            "heat f64 %5dx%-5d  pageable transfer floor %8.3f ms: 2 uploads %.3f + %.3f ms (%.1f GB/s), "
            "download %.3f ms (%.1f GB/s)\n",
            n, n, up + up2 + down, up, up2, 2 * gb / ((up + up2) * 1e-3), down, gb / (down * 1e-3));
    }
    std::fflush(stdout);
    if (bad != 0) std::exit(1);
}

} // namespace

int main(int argc, char **argv) {
    int devices = 0;
    if (gpk_device_count(&devices) != GPK_OK || devices == 0) {
        std::printf("SKIP: no CUDA device\n");
        return 77;
    }
    gpk_device_info info{};
    info.struct_size = sizeof info;
    gpk_device_get_info(&info, 0);
    std::printf("device: %s; per-iteration medians; 1-pass ceiling = 24 B/cell at %.0f GB/s\n", info.name,
                kCopyCeilingGBs);
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = GPK_BACKEND_CUDA;
    gpk_context *ctx = nullptr;
    if (gpk_context_create(&ctx, &o) != GPK_OK) {
        std::fprintf(stderr, "gpk_context_create: %s\n", gpk_context_last_error(nullptr));
        return 1;
    }
    if (argc >= 3 && std::strcmp(argv[1], "profile") == 0) {
        // `bench_heat profile N [ITERS]`: two calls on an N x N device grid, for a profiler to look at.
        const int n = std::atoi(argv[2]);
        const size_t iters = argc >= 4 ? (size_t)std::atoll(argv[3]) : 16;
        const DeviceInputs in((size_t)n * n);
        // Twice: the first call also makes the context's buffers, the second is the steady state. Each asks
        // for the final report (its statistics kernel shows).
        gpk_heat_report final{};
        for (const char *which : {"first", "second"})
            std::printf("%s call, %zu iterations: %.3f ms\n", which, iters,
                        run_gpk(ctx, n, n, iters, in.t, in.c, in.out, &final));
        gpk_context_destroy(ctx);
        return 0;
    }
    if (argc >= 4 && std::strcmp(argv[1], "fixed") == 0) {
        // `bench_heat fixed N ROUNDS [NAME=VALUE...]`: a call's fixed cost at N x N on device pointers, in
        // rounds that alternate the default with each internal knob given (A/B in one process).
        const int n = std::atoi(argv[2]), rounds = std::max(1, std::atoi(argv[3]));
        const DeviceInputs in((size_t)n * n);
        for (int r = 0; r < rounds; ++r)
            for (int a = 3; a < argc; ++a) {
                const char *knob = a == 3 ? nullptr : argv[a];
                const KnobSetting setting(knob);
                fixed_cost(ctx, n, in.t, in.c, in.out, knob ? knob : "device", 7);
                fitted_cost(ctx, n, in.t, in.c, in.out, knob ? knob : "device", n > 8192 ? 21 : 25);
            }
        gpk_context_destroy(ctx);
        return 0;
    }
    if (argc >= 3 && std::strcmp(argv[1], "sweep") == 0) {
        // `bench_heat sweep N [H...]`: each kernel at block heights H (default: the planned one and a spread
        // around one and two waves of blocks); then a call's fixed cost.
        const int n = std::atoi(argv[2]);
        const DeviceInputs in((size_t)n * n);
        std::vector<int> heights;
        for (int a = 3; a < argc; ++a) heights.push_back(std::atoi(argv[a]));
        if (heights.empty()) heights = {0, 64, 96, 128, 137, 171, 205, 256, 274, 342, 410, 512, 1024};
        const size_t extra = (size_t)std::max(42.0, 6.6e9 / ((double)n * n));
        for (const Kernel &k : kKernels)
            for (int h : heights) time_kernel(ctx, n, in.t, in.c, in.out, extra, k, h);
        fixed_cost(ctx, n, in.t, in.c, in.out, "device", 7);
        gpk_context_destroy(ctx);
        return 0;
    }
    bench_size(ctx, 4096, 402, 100);
    bench_size(ctx, 16384, 42, 20);
    gpk_context_destroy(ctx);
    return 0;
}
