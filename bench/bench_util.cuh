// What the gpk-versus-peer benchmarks share: checked CUDA calls, median timing with CUDA events after a
// warm-up, the ceilings of the machine measured in the same run, and the table they print.
#pragma once

#include "gpk.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <string>
#include <vector>

namespace bench {

inline void ck(cudaError_t e, const char *what, int line) {
    if (e == cudaSuccess) return;
    std::printf("CUDA error in %s (line %d): %s\n", what, line, cudaGetErrorString(e));
    std::exit(1);
}
#define CK(x) ::bench::ck((x), #x, __LINE__)

inline void gpk_ck(gpk_context *ctx, gpk_status s, const char *what, int line) {
    if (s == GPK_OK) return;
    std::printf("gpk error in %s (line %d): %s: %s\n", what, line, gpk_status_string(s),
                gpk_context_last_error(ctx));
    std::exit(1);
}
#define GK(ctx, x) ::bench::gpk_ck((ctx), (x), #x, __LINE__)

// Median of `reps` runs of f (which enqueues on `s`), timed with events after `warm` untimed runs.
template <class F> float median_ms(cudaStream_t s, F f, int reps = 20, int warm = 3) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < warm; ++i) f(i);
    CK(cudaStreamSynchronize(s));
    std::vector<float> ts;
    for (int i = 0; i < reps; ++i) {
        CK(cudaEventRecord(a, s));
        f(warm + i);
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        ts.push_back(ms);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
}

// Median wall-clock milliseconds of f, for calls that finish on the host (end-to-end from host memory).
template <class F> double median_wall_ms(F f, int reps = 5, int warm = 1) {
    for (int i = 0; i < warm; ++i) f(i);
    std::vector<double> ts;
    for (int i = 0; i < reps; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        f(warm + i);
        ts.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
}

__global__ void read_all(const uint4 *__restrict__ p, size_t n, unsigned long long *sink) {
    unsigned s = 0;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
         i += size_t(gridDim.x) * blockDim.x) {
        uint4 v = __ldg(p + i);
        s += v.x ^ v.y ^ v.z ^ v.w;
    }
    if (s == 0x12345678u) atomicAdd(sink, 1ull);
}

struct Ceilings {
    double read_gbs = 0, copy_gbs = 0, h2d_pinned_gbs = 0, h2d_pageable_gbs = 0;
};

// Device read-only bandwidth (2 GiB), device-to-device copy (read + write counted), host-to-device from
// pinned and pageable memory (1 GiB): the ceilings the table's fractions refer to.
inline Ceilings measure_ceilings(cudaStream_t s) {
    Ceilings c;
    size_t nb = size_t(2) << 30;
    char *x, *y;
    unsigned long long *sink;
    CK(cudaMalloc(&x, nb));
    CK(cudaMalloc(&y, nb));
    CK(cudaMalloc(&sink, 8));
    CK(cudaMemset(x, 7, nb));
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    float ms = median_ms(
        s, [&](int) { read_all<<<sms * 8, 512, 0, s>>>((const uint4 *)x, nb / 16, sink); }, 10);
    c.read_gbs = nb / ms / 1e6;
    ms = median_ms(
        s, [&](int) { CK(cudaMemcpyAsync(y, x, nb, cudaMemcpyDeviceToDevice, s)); }, 10);
    c.copy_gbs = 2.0 * nb / ms / 1e6;
    size_t hb = size_t(1) << 30;
    char *pinned;
    CK(cudaMallocHost(&pinned, hb));
    std::vector<char> pageable(hb, 1);
    ms = median_ms(
        s, [&](int) { CK(cudaMemcpyAsync(x, pinned, hb, cudaMemcpyHostToDevice, s)); }, 5, 1);
    c.h2d_pinned_gbs = hb / ms / 1e6;
    double wall =
        median_wall_ms([&](int) { CK(cudaMemcpy(x, pageable.data(), hb, cudaMemcpyHostToDevice)); }, 3);
    c.h2d_pageable_gbs = hb / wall / 1e6;
    CK(cudaFreeHost(pinned));
    CK(cudaFree(x));
    CK(cudaFree(y));
    CK(cudaFree(sink));
    std::printf("ceilings: device read %.0f GB/s, device copy %.0f GB/s (read+write), H2D pinned %.1f GB/s, "
                "H2D pageable %.1f GB/s\n",
                c.read_gbs, c.copy_gbs, c.h2d_pinned_gbs, c.h2d_pageable_gbs);
    return c;
}

struct Row {
    std::string name;
    double gpk_ms;       // CUDA events around the call on a caller stream: the device time of the call's work
    double rate;         // in `unit`
    std::string unit;    // "GB/s" or "GPix/s"
    double ceiling_frac; // of the matching ceiling (bytes moved / ceiling)
    std::string peer;    // "" when none
    double peer_ms;      // 0 when none
    std::string agreement; // "exact", "max|d|<=1", "relL2 3e-7", "DIFFER"
    double api_ms = 0;     // wall clock of a synchronous call through the C API on device data (0: not timed)
};

// "API ms" is the wall clock of a synchronous call through the C API (device pointers, no caller stream),
// "API - gpk" what the call costs beyond its device work (PERF.md: at most 10 us).
inline void print_table(const std::vector<Row> &rows) {
    std::printf(
        "\n| case | gpk ms | gpk rate | of ceiling | peer | peer ms | peer / gpk | results | API ms | API - "
        "gpk us |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (const Row &r : rows) {
        char peer_ms[32] = "-", ratio[32] = "-", api[32] = "-", extra[32] = "-";
        if (r.peer_ms > 0) {
            std::snprintf(peer_ms, sizeof peer_ms, "%.3f", r.peer_ms);
            std::snprintf(ratio, sizeof ratio, "%.2fx", r.peer_ms / r.gpk_ms);
        }
        if (r.api_ms > 0) {
            std::snprintf(api, sizeof api, "%.3f", r.api_ms);
            std::snprintf(extra, sizeof extra, "%.1f", 1e3 * (r.api_ms - r.gpk_ms));
        }
        std::printf("| %s | %.3f | %.1f %s | %.0f%% | %s | %s | %s | %s | %s | %s |\n", r.name.c_str(),
                    r.gpk_ms, r.rate, r.unit.c_str(), 100 * r.ceiling_frac,
                    r.peer.empty() ? "-" : r.peer.c_str(), peer_ms, ratio, r.agreement.c_str(), api, extra);
    }
}

__global__ void empty_kernel() {}

// What any synchronous call on device data costs at least on this machine: an empty kernel launched and
// waited for (wall clock), and one cudaPointerGetAttributes on device and on pageable memory.
inline void print_call_floor() {
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    double launch_sync = median_wall_ms(
        [&](int) {
            empty_kernel<<<1, 32, 0, s>>>();
            CK(cudaStreamSynchronize(s));
        },
        200, 20);
    void *dev = nullptr;
    CK(cudaMalloc(&dev, 1 << 20));
    std::vector<char> host(1 << 20);
    auto query_us = [&](void *p) { // the wall milliseconds of 1000 queries are microseconds per query
        return median_wall_ms(
            [&](int) {
                cudaPointerAttributes a;
                for (int i = 0; i < 1000; ++i) CK(cudaPointerGetAttributes(&a, p));
            },
            9, 1);
    };
    double q_dev = query_us(dev), q_host = query_us(host.data());
    std::printf(
        "call floor: empty kernel + stream sync %.1f us (wall); cudaPointerGetAttributes %.2f us on device "
        "memory, %.2f us on pageable memory\n",
        1e3 * launch_sync, q_dev, q_host);
    CK(cudaFree(dev));
    CK(cudaStreamDestroy(s));
}

// Arguments, if any, name the groups of cases to run (default: all).
inline bool wanted(int argc, char **argv, const char *group) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], group) == 0) return true;
    return false;
}

inline void print_device() {
    gpk_device_info info;
    info.struct_size = sizeof info;
    if (gpk_device_get_info(&info, 0) == GPK_OK)
        std::printf("device: %s (cc %d.%d, %d SMs, L2 %d MB), driver %d, runtime %d\n", info.name,
                    info.compute_major, info.compute_minor, info.multiprocessors, info.l2_bytes >> 20,
                    info.driver_version, info.runtime_version);
}

// threads: the CPU threads of the context (0: one a core).
inline gpk_context *cuda_context(cudaStream_t s, unsigned threads = 0) {
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = GPK_BACKEND_CUDA;
    o.stream = s;
    o.threads = threads;
    gpk_context *ctx = nullptr;
    GK(nullptr, gpk_context_create(&ctx, &o));
    return ctx;
}

inline gpk_context *cpu_context() {
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = GPK_BACKEND_CPU;
    gpk_context *ctx = nullptr;
    GK(nullptr, gpk_context_create(&ctx, &o));
    return ctx;
}

} // namespace bench
