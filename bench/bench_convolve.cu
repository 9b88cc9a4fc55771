// gpk_convolve beside NPP (FilterBorder, FilterRowBorder + FilterColumnBorder) on the convolution cases of
// PERF.md: 8192x8192 device images, clamp border, median of CUDA-event timings after a warm-up, inputs
// rotated where several copies fit; every result compared with NPP's and with gpk's CPU backend.
#include "bench_util.cuh"
#include "hooks.hpp"

#include <nppi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using bench::Row;

constexpr int W = 8192, H = 8192;

// A context without a caller stream: its calls return when done, as a user's plain call does; the table's
// "API ms" is their wall clock.
gpk_context *g_sync = nullptr;

template <class Call> double api_ms(Call call) {
    return bench::median_wall_ms([&](int i) { GK(g_sync, call(i)); }, 30, 3);
}
constexpr size_t N = size_t(W) * H;

__device__ __forceinline__ uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

__global__ void fill_u8(uint8_t *p, size_t n, uint64_t seed) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        p[i] = uint8_t(mix(i ^ (seed << 40)));
}

__global__ void fill_f32(float *p, size_t n, uint64_t seed) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        p[i] = float(mix(i ^ (seed << 40)) >> 40) * 0x1p-24f;
}

NppStreamContext npp_context(cudaStream_t s) {
    NppStreamContext c{};
    c.hStream = s;
    CK(cudaGetDevice(&c.nCudaDeviceId));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, c.nCudaDeviceId));
    c.nMultiProcessorCount = p.multiProcessorCount;
    c.nMaxThreadsPerMultiProcessor = p.maxThreadsPerMultiProcessor;
    c.nMaxThreadsPerBlock = p.maxThreadsPerBlock;
    c.nSharedMemPerBlock = p.sharedMemPerBlock;
    c.nCudaDevAttrComputeCapabilityMajor = p.major;
    c.nCudaDevAttrComputeCapabilityMinor = p.minor;
    CK(cudaStreamGetFlags(s, &c.nStreamFlags));
    return c;
}

void npp_ok(NppStatus st, const char *what) {
    if (st == NPP_SUCCESS) return;
    std::printf("NPP error %d in %s\n", int(st), what);
    std::exit(1);
}

gpk_image image(gpk_dtype t) {
    gpk_image d;
    gpk_image_init(&d, t, W, H, 1);
    return d;
}

gpk_convolve_params params(const gpk_filter *f, gpk_normalize norm, gpk_border border) {
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = f;
    p.border = border;
    p.normalize = norm;
    p.accumulate = GPK_ACCUMULATE_F32;
    return p;
}

template <class T> std::vector<T> to_host(const T *d, size_t n = N) {
    std::vector<T> h(n);
    CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

std::string compare_u8(const std::vector<uint8_t> &g, const std::vector<uint8_t> &peer,
                       const std::vector<uint8_t> &cpu) {
    int worst = 0;
    size_t off = 0;
    for (size_t i = 0; i < g.size(); ++i) {
        int d = std::abs(int(g[i]) - int(peer[i]));
        worst = std::max(worst, d);
        off += d != 0;
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, "NPP max|d| %d (%zu px), CPU %s", worst, off,
                  g == cpu ? "exact" : "DIFFERS");
    return buf;
}

double rel_l2(const std::vector<float> &a, const std::vector<float> &b) {
    double e = 0, r = 0;
    for (size_t i = 0; i < a.size(); ++i) e += double(a[i] - b[i]) * (a[i] - b[i]), r += double(b[i]) * b[i];
    return std::sqrt(e / std::max(r, 1e-300));
}

std::string compare_f32(const std::vector<float> &g, const std::vector<float> &peer,
                        const std::vector<float> &cpu) {
    char buf[96];
    double to_cpu = rel_l2(g, cpu);
    std::snprintf(buf, sizeof buf, "NPP relL2 %.1e, CPU relL2 %.1e%s", rel_l2(g, peer), to_cpu,
                  to_cpu <= 1e-5 ? "" : " DIFFERS");
    return buf;
}

struct Images {
    std::vector<uint8_t *> u8_in;
    uint8_t *u8_out, *u8_peer;
    float *f_in, *f_out, *f_peer, *f_mid;
    uint8_t *c3_in = nullptr, *c3_out = nullptr, *c3_peer = nullptr; // 3 channels (`direct`, `general`)
};

// A u8 K x K filter of integer taps beside NPP FilterBorder (its kernel reversed: NPP convolves), clamp;
// normalised by the sum of the taps (NPP's divisor) or not at all.
Row filter_u8(const std::string &name, int k, const std::vector<double> &taps, gpk_normalize norm, Images &im,
              gpk_context *gpu, gpk_context *cpu, cudaStream_t s, const NppStreamContext &npp,
              const bench::Ceilings &ceil) {
    gpk_filter *f;
    GK(nullptr, gpk_filter_create_2d(&f, k, k, taps.data()));
    gpk_convolve_params p = params(f, norm, GPK_BORDER_CLAMP);
    gpk_image d8 = image(GPK_U8);
    int copies = int(im.u8_in.size());
    float ms = bench::median_ms(
        s, [&](int i) { GK(gpu, gpk_convolve(gpu, &p, &d8, im.u8_in[i % copies], &d8, im.u8_out)); });
    double api =
        api_ms([&](int i) { return gpk_convolve(g_sync, &p, &d8, im.u8_in[i % copies], &d8, im.u8_out); });
    std::vector<Npp32s> ki(taps.size());
    int divisor = 0;
    for (size_t i = 0; i < taps.size(); ++i) {
        ki[taps.size() - 1 - i] = Npp32s(taps[i]);
        divisor += int(taps[i]);
    }
    if (norm != GPK_NORMALIZE_SUM || divisor == 0) divisor = 1;
    Npp32s *dk;
    CK(cudaMalloc(&dk, ki.size() * 4));
    CK(cudaMemcpy(dk, ki.data(), ki.size() * 4, cudaMemcpyHostToDevice));
    auto run_npp = [&](int i) {
        npp_ok(nppiFilterBorder_8u_C1R_Ctx(im.u8_in[i % copies], W, {W, H}, {0, 0}, im.u8_peer, W, {W, H}, dk,
                                           {k, k}, {k / 2, k / 2}, divisor, NPP_BORDER_REPLICATE, npp),
               "nppiFilterBorder_8u_C1R");
    };
    float peer = bench::median_ms(s, run_npp);
    GK(gpu, gpk_convolve(gpu, &p, &d8, im.u8_in[0], &d8, im.u8_out));
    run_npp(0);
    CK(cudaStreamSynchronize(s));
    std::vector<uint8_t> in = to_host(im.u8_in[0]), on_cpu(N);
    GK(cpu, gpk_convolve(cpu, &p, &d8, in.data(), &d8, on_cpu.data()));
    std::string agree = compare_u8(to_host(im.u8_out), to_host(im.u8_peer), on_cpu);
    CK(cudaFree(dk));
    gpk_filter_destroy(f);
    double gpix = N / ms / 1e6;
    return {name, ms,    gpix, "GPix/s", 2.0 * N / ms / 1e6 / ceil.copy_gbs, "NPP FilterBorder 8u",
            peer, agree, api};
}

Row box_u8(int k, Images &im, gpk_context *gpu, gpk_context *cpu, cudaStream_t s, const NppStreamContext &npp,
           const bench::Ceilings &ceil) {
    std::vector<double> taps(size_t(k) * k, 1.0);
    std::string name = "u8 " + std::to_string(k) + "x" + std::to_string(k) + " box, sum, clamp, 8192x8192";
    return filter_u8(name, k, taps, GPK_NORMALIZE_SUM, im, gpu, cpu, s, npp, ceil);
}

Row box_f32(int k, Images &im, gpk_context *gpu, gpk_context *cpu, cudaStream_t s,
            const NppStreamContext &npp, const bench::Ceilings &ceil) {
    std::vector<double> taps(size_t(k) * k, 1.0 / (k * k));
    gpk_filter *f;
    GK(nullptr, gpk_filter_create_2d(&f, k, k, taps.data()));
    gpk_convolve_params p = params(f, GPK_NORMALIZE_NONE, GPK_BORDER_CLAMP);
    gpk_image df = image(GPK_F32);
    float ms = bench::median_ms(s, [&](int) { GK(gpu, gpk_convolve(gpu, &p, &df, im.f_in, &df, im.f_out)); });
    double api = api_ms([&](int) { return gpk_convolve(g_sync, &p, &df, im.f_in, &df, im.f_out); });
    std::vector<Npp32f> kf(size_t(k) * k, 1.0f / (k * k));
    Npp32f *dk;
    CK(cudaMalloc(&dk, kf.size() * 4));
    CK(cudaMemcpy(dk, kf.data(), kf.size() * 4, cudaMemcpyHostToDevice));
    auto run_npp = [&](int) {
        npp_ok(nppiFilterBorder_32f_C1R_Ctx(im.f_in, 4 * W, {W, H}, {0, 0}, im.f_peer, 4 * W, {W, H}, dk,
                                            {k, k}, {k / 2, k / 2}, NPP_BORDER_REPLICATE, npp),
               "nppiFilterBorder_32f_C1R");
    };
    float peer = bench::median_ms(s, run_npp);
    CK(cudaStreamSynchronize(s));
    std::vector<float> in = to_host(im.f_in), on_cpu(N);
    GK(cpu, gpk_convolve(cpu, &p, &df, in.data(), &df, on_cpu.data()));
    std::string agree = compare_f32(to_host(im.f_out), to_host(im.f_peer), on_cpu);
    CK(cudaFree(dk));
    gpk_filter_destroy(f);
    std::string name = "f32 " + std::to_string(k) + "x" + std::to_string(k) + " box, clamp, 8192x8192";
    return {name, ms,    N / ms / 1e6, "GPix/s", 8.0 * N / ms / 1e6 / ceil.copy_gbs, "NPP FilterBorder 32f",
            peer, agree, api};
}

// The fused separable kernels: the default (the streaming kernel) and the ring kernel, which runs where the
// streaming kernel does not fit the device (GPK_TEST_CONV_FUSED_KERNEL=ring).
const char *const kFusedKernels[] = {"", "ring"};

const char *fused_name(const char *kernel) {
    return *kernel ? kernel : "stream";
}

// One call of each fused kernel at radius 8 and 32, nothing else on the GPU beside the inputs' fill: the
// group `sepprofile` (not part of the default run), for Nsight Compute.
void profile_fused(Images &im, gpk_context *gpu, cudaStream_t s) {
    gpk_image df = image(GPK_F32);
    for (int radius : {8, 32}) {
        const int k = 2 * radius + 1;
        std::vector<double> taps(k, 1.0 / k);
        gpk_filter *f;
        GK(nullptr, gpk_filter_create_separable(&f, k, taps.data(), k, taps.data()));
        gpk_convolve_params p = params(f, GPK_NORMALIZE_NONE, GPK_BORDER_CLAMP);
        for (const char *kernel : kFusedKernels) {
            const hooks::Hook kernel_hook("GPK_TEST_CONV_FUSED_KERNEL", *kernel ? kernel : nullptr);
            const hooks::Hook fused_hook("GPK_TEST_CONV_FUSED", "require");
            GK(gpu, gpk_convolve(gpu, &p, &df, im.f_in, &df, im.f_out));
            CK(cudaStreamSynchronize(s));
            std::printf("radius %d, kernel %s: one call\n", radius, fused_name(kernel));
        }
        gpk_filter_destroy(f);
    }
}

// The f32 K x K box of box_f32 on the tile kernels (GPK_TEST_CONV_F32=off: where the sliding-window
// kernel's preconditions fail) and on the library's choice, in one run: median ms of GPK_BENCH_F32_REPS runs
// (default 20; fewer under a profiler), the fraction of the copy ceiling, and whether the bits are the same.
void f32_forms(int k, Images &im, gpk_context *gpu, cudaStream_t s, const bench::Ceilings &ceil) {
    std::vector<double> taps(size_t(k) * k, 1.0 / (k * k));
    gpk_filter *f;
    GK(nullptr, gpk_filter_create_2d(&f, k, k, taps.data()));
    gpk_convolve_params p = params(f, GPK_NORMALIZE_NONE, GPK_BORDER_CLAMP);
    gpk_image df = image(GPK_F32);
    auto run = [&] { GK(gpu, gpk_convolve(gpu, &p, &df, im.f_in, &df, im.f_out)); };
    hooks::Hook hook("GPK_TEST_CONV_F32", "off");
    run();
    CK(cudaStreamSynchronize(s));
    const std::vector<float> tiles = to_host(im.f_out);
    const char *reps_text = std::getenv("GPK_BENCH_F32_REPS");
    const int reps = reps_text && std::atoi(reps_text) > 0 ? std::atoi(reps_text) : 20;
    for (const char *form : {"off", "default"}) {
        hook.set(std::strcmp(form, "default") == 0 ? nullptr : form);
        CK(cudaMemsetAsync(im.f_out, 0, 4 * N, s));
        const float ms = bench::median_ms(
            s, [&](int) { run(); }, reps, reps < 20 ? 1 : 3);
        CK(cudaStreamSynchronize(s));
        const std::vector<float> got = to_host(im.f_out);
        size_t differ = 0;
        for (size_t i = 0; i < N; ++i) differ += std::memcmp(&got[i], &tiles[i], 4) != 0;
        std::printf("f32 %dx%d %-7s %.4f ms  %.0f GB/s  %.1f%% of copy  bits %s (%zu differ)\n", k, k, form,
                    ms, 8.0 * N / ms / 1e6, 100.0 * 8.0 * N / ms / 1e6 / ceil.copy_gbs,
                    differ ? "DIFFER from off" : "= off", differ);
    }
    hook.set(nullptr);
    gpk_filter_destroy(f);
}

// A K-tap box along x and y: taps 1 / K written as they are, or taps 1 divided by their sum (the fused
// kernels' finish for every row; NPP's taps are 1 / K either way).
Row separable_f32(int radius, gpk_normalize norm, Images &im, gpk_context *gpu, gpk_context *cpu,
                  cudaStream_t s, const NppStreamContext &npp, const bench::Ceilings &ceil) {
    int k = 2 * radius + 1;
    const bool sum = norm == GPK_NORMALIZE_SUM;
    const char *form = sum ? ", sum" : "";
    std::vector<double> taps(k, sum ? 1.0 : 1.0 / k);
    gpk_filter *f;
    GK(nullptr, gpk_filter_create_separable(&f, k, taps.data(), k, taps.data()));
    gpk_convolve_params p = params(f, norm, GPK_BORDER_CLAMP);
    gpk_image df = image(GPK_F32);
    float ms = bench::median_ms(s, [&](int) { GK(gpu, gpk_convolve(gpu, &p, &df, im.f_in, &df, im.f_out)); });
    double api = api_ms([&](int) { return gpk_convolve(g_sync, &p, &df, im.f_in, &df, im.f_out); });
    float two_pass;
    {
        const hooks::Hook hook("GPK_TEST_CONV_FUSED", "off"); // the two passes through device memory
        two_pass =
            bench::median_ms(s, [&](int) { GK(gpu, gpk_convolve(gpu, &p, &df, im.f_in, &df, im.f_out)); });
    }
    std::printf("f32 separable radius %d%s: fused kernel %.3f ms, two passes %.3f ms\n", radius, form, ms,
                two_pass);
    // Each fused kernel, its result checked against the default's bit for bit.
    GK(gpu, gpk_convolve(gpu, &p, &df, im.f_in, &df, im.f_out));
    CK(cudaStreamSynchronize(s));
    const std::vector<float> default_out = to_host(im.f_out);
    for (const char *kernel : kFusedKernels) {
        hooks::Hook kernel_hook("GPK_TEST_CONV_FUSED_KERNEL", *kernel ? kernel : nullptr);
        hooks::Hook fused_hook("GPK_TEST_CONV_FUSED", "require");
        const float t =
            bench::median_ms(s, [&](int) { GK(gpu, gpk_convolve(gpu, &p, &df, im.f_in, &df, im.f_out)); });
        CK(cudaStreamSynchronize(s));
        const bool same = to_host(im.f_out) == default_out;
        kernel_hook.set(nullptr);
        fused_hook.set(nullptr);
        std::printf("f32 separable radius %d%s: kernel %-8s %.3f ms (%.0f GB/s)%s\n", radius, form,
                    fused_name(kernel), t, 8.0 * N / t / 1e6,
                    same ? "" : " RESULT DIFFERS from the default kernel");
    }
    std::vector<Npp32f> kf(k, 1.0f / k);
    Npp32f *dk;
    CK(cudaMalloc(&dk, k * 4));
    CK(cudaMemcpy(dk, kf.data(), k * 4, cudaMemcpyHostToDevice));
    auto run_npp = [&](int) {
        npp_ok(nppiFilterRowBorder_32f_C1R_Ctx(im.f_in, 4 * W, {W, H}, {0, 0}, im.f_mid, 4 * W, {W, H}, dk, k,
                                               radius, NPP_BORDER_REPLICATE, npp),
               "nppiFilterRowBorder_32f_C1R");
        npp_ok(nppiFilterColumnBorder_32f_C1R_Ctx(im.f_mid, 4 * W, {W, H}, {0, 0}, im.f_peer, 4 * W, {W, H},
                                                  dk, k, radius, NPP_BORDER_REPLICATE, npp),
               "nppiFilterColumnBorder_32f_C1R");
    };
    float peer = bench::median_ms(s, run_npp);
    CK(cudaStreamSynchronize(s));
    std::vector<float> in = to_host(im.f_in), on_cpu(N);
    GK(cpu, gpk_convolve(cpu, &p, &df, in.data(), &df, on_cpu.data()));
    std::string agree = compare_f32(to_host(im.f_out), to_host(im.f_peer), on_cpu);
    CK(cudaFree(dk));
    gpk_filter_destroy(f);
    std::string name = "f32 separable radius " + std::to_string(radius) + form + ", clamp, 8192x8192";
    return {name,
            ms,
            N / ms / 1e6,
            "GPix/s",
            8.0 * N / ms / 1e6 / ceil.copy_gbs,
            "NPP FilterRow+ColumnBorder 32f",
            peer,
            agree,
            api};
}

// The f32 radius-R box of separable_f32 on a view whose rows start 4 bytes past a 16-byte boundary (8191
// columns, the same pitch), where the fused kernels stage every input row element by element: the default
// kernel beside the two passes on the same view, bits compared.
void separable_f32_offset(int radius, Images &im, gpk_context *gpu, cudaStream_t s) {
    const int k = 2 * radius + 1;
    std::vector<double> taps(k, 1.0 / k);
    gpk_filter *f;
    GK(nullptr, gpk_filter_create_separable(&f, k, taps.data(), k, taps.data()));
    gpk_convolve_params p = params(f, GPK_NORMALIZE_NONE, GPK_BORDER_CLAMP);
    gpk_image d;
    gpk_image_init(&d, GPK_F32, W - 1, H, 1);
    d.stride = 4 * size_t(W);
    const float *in = im.f_in + 1;
    auto run = [&](float *out) { GK(gpu, gpk_convolve(gpu, &p, &d, in, &d, out)); };
    float two_pass;
    {
        const hooks::Hook hook("GPK_TEST_CONV_FUSED", "off");
        two_pass = bench::median_ms(s, [&](int) { run(im.f_peer); });
    }
    const float ms = bench::median_ms(s, [&](int) { run(im.f_out); });
    CK(cudaStreamSynchronize(s));
    const std::vector<float> got = to_host(im.f_out), want = to_host(im.f_peer);
    size_t differ = 0;
    for (size_t y = 0; y < size_t(H); ++y)
        for (size_t x = 0; x + 1 < size_t(W); ++x)
            differ += std::memcmp(&got[y * W + x], &want[y * W + x], 4) != 0;
    std::printf(
        "f32 separable radius %d, rows 4 bytes past 16-byte alignment: fused kernel %.3f ms, two passes "
        "%.3f ms, bits %s (%zu differ)\n",
        radius, ms, two_pass, differ ? "DIFFER" : "the same", differ);
    gpk_filter_destroy(f);
}

// The row of a case that moves `bytes` a pixel (its input read, its output written).
Row make_row(const std::string &name, float ms, double bytes, const std::string &peer_name, float peer_ms,
             const std::string &agree, double api, const bench::Ceilings &ceil) {
    return {name,      ms,      N / ms / 1e6, "GPix/s", bytes * N / ms / 1e6 / ceil.copy_gbs,
            peer_name, peer_ms, agree,        api};
}

// A named filter with min/max normalisation (two passes: fold, then write) against gpk's own plain filter,
// u8 (rotated inputs) or f32 images, u8 or f32 out as in: lp3 on u8 takes the pair kernel's single launch,
// lp5, log9 and the f32 images the direct tile kernels.
Row minmax_named(gpk_dtype t, const char *name, Images &im, gpk_context *gpu, gpk_context *cpu,
                 cudaStream_t s, const bench::Ceilings &ceil) {
    gpk_filter *f;
    GK(nullptr, gpk_filter_create_named(&f, name));
    gpk_convolve_params plain = params(f, GPK_NORMALIZE_NONE, GPK_BORDER_ZERO);
    gpk_convolve_params mm = params(f, GPK_NORMALIZE_MINMAX, GPK_BORDER_ZERO);
    gpk_image d = image(t);
    const bool u8 = t == GPK_U8;
    int copies = u8 ? int(im.u8_in.size()) : 1;
    auto in = [&](int i) -> const void * { return u8 ? (const void *)im.u8_in[i % copies] : im.f_in; };
    void *out = u8 ? (void *)im.u8_out : im.f_out, *peer = u8 ? (void *)im.u8_peer : im.f_peer;
    float ms = bench::median_ms(s, [&](int i) { GK(gpu, gpk_convolve(gpu, &mm, &d, in(i), &d, out)); });
    float base = bench::median_ms(s, [&](int i) { GK(gpu, gpk_convolve(gpu, &plain, &d, in(i), &d, peer)); });
    double api = api_ms([&](int i) { return gpk_convolve(g_sync, &mm, &d, in(i), &d, out); });
    GK(gpu, gpk_convolve(gpu, &mm, &d, in(0), &d, out));
    CK(cudaStreamSynchronize(s));
    std::string agree;
    if (u8) {
        std::vector<uint8_t> host_in = to_host(im.u8_in[0]), on_cpu(N);
        GK(cpu, gpk_convolve(cpu, &mm, &d, host_in.data(), &d, on_cpu.data()));
        agree = to_host(im.u8_out) == on_cpu ? "CPU exact" : "CPU DIFFERS";
    } else {
        std::vector<float> host_in = to_host(im.f_in), on_cpu(N);
        GK(cpu, gpk_convolve(cpu, &mm, &d, host_in.data(), &d, on_cpu.data()));
        char buf[64];
        const double e = rel_l2(to_host(im.f_out), on_cpu);
        std::snprintf(buf, sizeof buf, "CPU relL2 %.1e%s", e, e <= 1e-5 ? "" : " DIFFERS");
        agree = buf;
    }
    gpk_filter_destroy(f);
    const std::string ty = u8 ? "u8" : "f32";
    const double bytes = 2.0 * double(gpk_dtype_size(t));
    return make_row(ty + " " + name + " + min/max, zero, 8192x8192 (peer: gpk plain " + name + ")", ms, bytes,
                    "gpk " + ty + " " + name + ", no normalisation", base, agree, api, ceil);
}

// A u8 K x K filter of integer taps on 3-channel (interleaved RGB) images beside NPP FilterBorder 8u C3R,
// clamp, normalised by the sum of the taps: the direct tile kernels (one channel takes the strip kernels).
Row filter_u8_c3(const std::string &name, int k, const std::vector<double> &taps, Images &im,
                 gpk_context *gpu, gpk_context *cpu, cudaStream_t s, const NppStreamContext &npp,
                 const bench::Ceilings &ceil) {
    gpk_filter *f;
    GK(nullptr, gpk_filter_create_2d(&f, k, k, taps.data()));
    gpk_convolve_params p = params(f, GPK_NORMALIZE_SUM, GPK_BORDER_CLAMP);
    gpk_image d;
    gpk_image_init(&d, GPK_U8, W, H, 3);
    float ms = bench::median_ms(s, [&](int) { GK(gpu, gpk_convolve(gpu, &p, &d, im.c3_in, &d, im.c3_out)); });
    double api = api_ms([&](int) { return gpk_convolve(g_sync, &p, &d, im.c3_in, &d, im.c3_out); });
    std::vector<Npp32s> ki(taps.size());
    int divisor = 0;
    for (size_t i = 0; i < taps.size(); ++i) {
        ki[taps.size() - 1 - i] = Npp32s(taps[i]);
        divisor += int(taps[i]);
    }
    Npp32s *dk;
    CK(cudaMalloc(&dk, ki.size() * 4));
    CK(cudaMemcpy(dk, ki.data(), ki.size() * 4, cudaMemcpyHostToDevice));
    auto run_npp = [&](int) {
        npp_ok(nppiFilterBorder_8u_C3R_Ctx(im.c3_in, 3 * W, {W, H}, {0, 0}, im.c3_peer, 3 * W, {W, H}, dk,
                                           {k, k}, {k / 2, k / 2}, divisor, NPP_BORDER_REPLICATE, npp),
               "nppiFilterBorder_8u_C3R");
    };
    float peer = bench::median_ms(s, run_npp);
    GK(gpu, gpk_convolve(gpu, &p, &d, im.c3_in, &d, im.c3_out));
    run_npp(0);
    CK(cudaStreamSynchronize(s));
    std::vector<uint8_t> in = to_host(im.c3_in, 3 * N), on_cpu(3 * N);
    GK(cpu, gpk_convolve(cpu, &p, &d, in.data(), &d, on_cpu.data()));
    std::string agree = compare_u8(to_host(im.c3_out, 3 * N), to_host(im.c3_peer, 3 * N), on_cpu);
    CK(cudaFree(dk));
    gpk_filter_destroy(f);
    return make_row(name, ms, 6.0, "NPP FilterBorder 8u C3R", peer, agree, api, ceil);
}

// A u8 K x K filter of integer taps written as f32 (exact integer sums, the direct tile kernels) beside NPP
// Convert 8u32f then FilterBorder 32f (its kernel reversed, divided by the sum where normalised), clamp.
Row filter_u8_to_f32(const std::string &name, int k, const std::vector<double> &taps, gpk_normalize norm,
                     Images &im, gpk_context *gpu, gpk_context *cpu, cudaStream_t s,
                     const NppStreamContext &npp, const bench::Ceilings &ceil) {
    gpk_filter *f;
    GK(nullptr, gpk_filter_create_2d(&f, k, k, taps.data()));
    gpk_convolve_params p = params(f, norm, GPK_BORDER_CLAMP);
    gpk_image d8 = image(GPK_U8), df = image(GPK_F32);
    int copies = int(im.u8_in.size());
    float ms = bench::median_ms(
        s, [&](int i) { GK(gpu, gpk_convolve(gpu, &p, &d8, im.u8_in[i % copies], &df, im.f_out)); });
    double api =
        api_ms([&](int i) { return gpk_convolve(g_sync, &p, &d8, im.u8_in[i % copies], &df, im.f_out); });
    double sum = 0;
    for (double t : taps) sum += t;
    const double scale = norm == GPK_NORMALIZE_SUM && sum != 0 ? 1.0 / sum : 1.0;
    std::vector<Npp32f> kf(taps.size());
    for (size_t i = 0; i < taps.size(); ++i) kf[taps.size() - 1 - i] = Npp32f(taps[i] * scale);
    Npp32f *dk;
    CK(cudaMalloc(&dk, kf.size() * 4));
    CK(cudaMemcpy(dk, kf.data(), kf.size() * 4, cudaMemcpyHostToDevice));
    auto run_npp = [&](int i) {
        npp_ok(nppiConvert_8u32f_C1R_Ctx(im.u8_in[i % copies], W, im.f_mid, 4 * W, {W, H}, npp),
               "nppiConvert_8u32f_C1R");
        npp_ok(nppiFilterBorder_32f_C1R_Ctx(im.f_mid, 4 * W, {W, H}, {0, 0}, im.f_peer, 4 * W, {W, H}, dk,
                                            {k, k}, {k / 2, k / 2}, NPP_BORDER_REPLICATE, npp),
               "nppiFilterBorder_32f_C1R");
    };
    float peer = bench::median_ms(s, run_npp);
    GK(gpu, gpk_convolve(gpu, &p, &d8, im.u8_in[0], &df, im.f_out));
    run_npp(0);
    CK(cudaStreamSynchronize(s));
    std::vector<uint8_t> in = to_host(im.u8_in[0]);
    std::vector<float> on_cpu(N);
    GK(cpu, gpk_convolve(cpu, &p, &d8, in.data(), &df, on_cpu.data()));
    std::string agree = compare_f32(to_host(im.f_out), to_host(im.f_peer), on_cpu);
    CK(cudaFree(dk));
    gpk_filter_destroy(f);
    return make_row(name, ms, 5.0, "NPP Convert 8u32f + FilterBorder 32f", peer, agree, api, ceil);
}

// A K_h x K_w filter of real taps (the general 2D kernel's: f32 sums) on a u8 or f32 image, no
// normalisation, clamp, beside NPP FilterBorder32f 8u or FilterBorder 32f (its kernel reversed).
Row filter_real(const std::string &name, gpk_dtype t, int kh, int kw, const std::vector<double> &taps,
                Images &im, gpk_context *gpu, gpk_context *cpu, cudaStream_t s, const NppStreamContext &npp,
                const bench::Ceilings &ceil) {
    gpk_filter *f;
    GK(nullptr, gpk_filter_create_2d(&f, kh, kw, taps.data()));
    gpk_convolve_params p = params(f, GPK_NORMALIZE_NONE, GPK_BORDER_CLAMP);
    gpk_image d = image(t);
    const bool u8 = t == GPK_U8;
    int copies = u8 ? int(im.u8_in.size()) : 1;
    auto in = [&](int i) -> const void * { return u8 ? (const void *)im.u8_in[i % copies] : im.f_in; };
    void *out = u8 ? (void *)im.u8_out : im.f_out;
    float ms = bench::median_ms(s, [&](int i) { GK(gpu, gpk_convolve(gpu, &p, &d, in(i), &d, out)); });
    double api = api_ms([&](int i) { return gpk_convolve(g_sync, &p, &d, in(i), &d, out); });
    std::vector<Npp32f> kf(taps.size());
    for (size_t i = 0; i < taps.size(); ++i) kf[taps.size() - 1 - i] = Npp32f(taps[i]);
    Npp32f *dk;
    CK(cudaMalloc(&dk, kf.size() * 4));
    CK(cudaMemcpy(dk, kf.data(), kf.size() * 4, cudaMemcpyHostToDevice));
    auto run_npp = [&](int i) {
        if (u8)
            npp_ok(nppiFilterBorder32f_8u_C1R_Ctx(im.u8_in[i % copies], W, {W, H}, {0, 0}, im.u8_peer, W,
                                                  {W, H}, dk, {kw, kh}, {kw / 2, kh / 2},
                                                  NPP_BORDER_REPLICATE, npp),
                   "nppiFilterBorder32f_8u_C1R");
        else
            npp_ok(nppiFilterBorder_32f_C1R_Ctx(im.f_in, 4 * W, {W, H}, {0, 0}, im.f_peer, 4 * W, {W, H}, dk,
                                                {kw, kh}, {kw / 2, kh / 2}, NPP_BORDER_REPLICATE, npp),
                   "nppiFilterBorder_32f_C1R");
    };
    float peer = bench::median_ms(s, run_npp);
    GK(gpu, gpk_convolve(gpu, &p, &d, in(0), &d, out));
    run_npp(0);
    CK(cudaStreamSynchronize(s));
    std::string agree;
    if (u8) {
        // Float sums: integer outputs within 1 of the CPU backend's (f32 sums round either way).
        std::vector<uint8_t> host_in = to_host(im.u8_in[0]), on_cpu(N), got = to_host(im.u8_out);
        GK(cpu, gpk_convolve(cpu, &p, &d, host_in.data(), &d, on_cpu.data()));
        int to_cpu = 0;
        for (size_t i = 0; i < N; ++i) to_cpu = std::max(to_cpu, std::abs(int(got[i]) - int(on_cpu[i])));
        agree = compare_u8(got, to_host(im.u8_peer), got);
        agree = agree.substr(0, agree.find(", CPU")) + ", CPU max|d| " + std::to_string(to_cpu) +
                (to_cpu <= 1 ? "" : " DIFFERS");
    } else {
        std::vector<float> host_in = to_host(im.f_in), on_cpu(N);
        GK(cpu, gpk_convolve(cpu, &p, &d, host_in.data(), &d, on_cpu.data()));
        agree = compare_f32(to_host(im.f_out), to_host(im.f_peer), on_cpu);
    }
    CK(cudaFree(dk));
    gpk_filter_destroy(f);
    return make_row(name, ms, 2.0 * double(gpk_dtype_size(t)),
                    u8 ? "NPP FilterBorder32f 8u" : "NPP FilterBorder 32f", peer, agree, api, ceil);
}

// Device images of 3 channels for the `direct` and `general` groups.
void alloc_c3(Images &im, cudaStream_t s) {
    const size_t c3 = 3 * N;
    CK(cudaMalloc(&im.c3_in, c3));
    CK(cudaMalloc(&im.c3_out, c3));
    CK(cudaMalloc(&im.c3_peer, c3));
    fill_u8<<<1024, 256, 0, s>>>(im.c3_in, c3, 7);
    CK(cudaGetLastError());
}

void free_c3(Images &im) {
    CK(cudaFree(im.c3_in));
    CK(cudaFree(im.c3_out));
    CK(cudaFree(im.c3_peer));
    im.c3_in = im.c3_out = im.c3_peer = nullptr;
}

} // namespace

// Arguments, if any, name the groups to run (bench::wanted): u8, small3, rank1, f32 (with f32forms),
// f32forms, separable, minmax, direct, general (default: all); or `sepprofile` alone: one call of each fused
// separable kernel (for ncu).
int main(int argc, char **argv) {
    bench::print_device();
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    bench::Ceilings ceil = bench::measure_ceilings(s);
    NppStreamContext npp = npp_context(s);
    bench::print_call_floor();
    gpk_context *gpu = bench::cuda_context(s), *cpu = bench::cpu_context();
    g_sync = bench::cuda_context(nullptr);
    Images im;
    im.u8_in.resize(3); // 64 MB each: rotated so that no run reads an input the previous one left in L2
    for (size_t i = 0; i < im.u8_in.size(); ++i) {
        CK(cudaMalloc(&im.u8_in[i], N));
        fill_u8<<<1024, 256, 0, s>>>(im.u8_in[i], N, i + 1);
    }
    CK(cudaMalloc(&im.u8_out, N));
    CK(cudaMalloc(&im.u8_peer, N));
    CK(cudaMalloc(&im.f_in, 4 * N));
    CK(cudaMalloc(&im.f_out, 4 * N));
    CK(cudaMalloc(&im.f_peer, 4 * N));
    CK(cudaMalloc(&im.f_mid, 4 * N));
    fill_f32<<<1024, 256, 0, s>>>(im.f_in, N, 9);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    if (argc == 2 && std::strcmp(argv[1], "sepprofile") == 0) {
        profile_fused(im, gpu, s);
        return 0;
    }
    std::vector<Row> rows;
    if (bench::wanted(argc, argv, "u8"))
        for (int k : {3, 5, 7, 9}) rows.push_back(box_u8(k, im, gpu, cpu, s, npp, ceil));
    if (bench::wanted(argc, argv, "small3")) {
        // 3 x 3 filters of small integer taps (the pair kernel's): lp3 and Sobel x, written sums.
        rows.push_back(filter_u8("u8 lp3, none, clamp, 8192x8192", 3, {0, 1, 0, 1, -4, 1, 0, 1, 0},
                                 GPK_NORMALIZE_NONE, im, gpu, cpu, s, npp, ceil));
        rows.push_back(filter_u8("u8 Sobel x, none, clamp, 8192x8192", 3, {-1, 0, 1, -2, 0, 2, -1, 0, 1},
                                 GPK_NORMALIZE_NONE, im, gpu, cpu, s, npp, ceil));
        rows.push_back(filter_u8("u8 3x3 1 2 1 smoothing, sum, clamp, 8192x8192", 3,
                                 {1, 2, 1, 2, 4, 2, 1, 2, 1}, GPK_NORMALIZE_SUM, im, gpu, cpu, s, npp, ceil));
    }
    if (bench::wanted(argc, argv, "rank1")) {
        // K x K integer taps that are a rank-1 product but not a box (the rank-1 strip kernel's): binomial
        // smoothing divided by its sum, and a signed derivative of it written as it is.
        const std::vector<double> b5 = {1, 4, 6, 4, 1}, b7 = {1, 6, 15, 20, 15, 6, 1},
                                  b9 = {1, 8, 28, 56, 70, 56, 28, 8, 1}, d5 = {-1, -2, 0, 2, 1},
                                  d9 = {-1, -6, -14, -14, 0, 14, 14, 6, 1};
        auto outer = [](const std::vector<double> &r, const std::vector<double> &c) {
            std::vector<double> t;
            for (double a : r)
                for (double b : c) t.push_back(a * b);
            return t;
        };
        rows.push_back(filter_u8("u8 5x5 binomial, sum, clamp, 8192x8192", 5, outer(b5, b5),
                                 GPK_NORMALIZE_SUM, im, gpu, cpu, s, npp, ceil));
        rows.push_back(filter_u8("u8 7x7 binomial, sum, clamp, 8192x8192", 7, outer(b7, b7),
                                 GPK_NORMALIZE_SUM, im, gpu, cpu, s, npp, ceil));
        rows.push_back(filter_u8("u8 9x9 binomial, sum, clamp, 8192x8192", 9, outer(b9, b9),
                                 GPK_NORMALIZE_SUM, im, gpu, cpu, s, npp, ceil));
        rows.push_back(filter_u8("u8 5x5 binomial x derivative, none, clamp, 8192x8192", 5, outer(b5, d5),
                                 GPK_NORMALIZE_NONE, im, gpu, cpu, s, npp, ceil));
        rows.push_back(filter_u8("u8 9x9 binomial x derivative, none, clamp, 8192x8192", 9, outer(b9, d9),
                                 GPK_NORMALIZE_NONE, im, gpu, cpu, s, npp, ceil));
    }
    if (bench::wanted(argc, argv, "f32"))
        for (int k : {3, 9}) rows.push_back(box_f32(k, im, gpu, cpu, s, npp, ceil));
    if (bench::wanted(argc, argv, "f32") || bench::wanted(argc, argv, "f32forms"))
        for (int k : {3, 9}) f32_forms(k, im, gpu, s, ceil);
    if (bench::wanted(argc, argv, "separable")) {
        for (int r : {6, 8, 32})
            rows.push_back(separable_f32(r, GPK_NORMALIZE_NONE, im, gpu, cpu, s, npp, ceil));
        for (int r : {8, 32}) rows.push_back(separable_f32(r, GPK_NORMALIZE_SUM, im, gpu, cpu, s, npp, ceil));
        for (int r : {8, 32}) separable_f32_offset(r, im, gpu, s);
    }
    if (bench::wanted(argc, argv, "minmax"))
        rows.push_back(minmax_named(GPK_U8, "lp3", im, gpu, cpu, s, ceil));
    if (bench::wanted(argc, argv, "direct")) {
        // The cases the direct tile kernels (lib/cuda/convolve/direct.cu) serve, where the one-channel
        // kernels do not apply: 3 channels, min/max normalisation beyond 3 x 3 on u8 and on f32, u8 in and
        // f32 out.
        alloc_c3(im, s);
        const std::vector<double> s121 = {1, 2, 1, 2, 4, 2, 1, 2, 1},
                                  smooth5 = {1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 2, 3,
                                             2, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1},
                                  sobel = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
        rows.push_back(filter_u8_c3("u8 3x3 1 2 1 smoothing, 3 channels, sum, clamp, 8192x8192", 3, s121, im,
                                    gpu, cpu, s, npp, ceil));
        rows.push_back(filter_u8_c3("u8 smooth5, 3 channels, sum, clamp, 8192x8192", 5, smooth5, im, gpu, cpu,
                                    s, npp, ceil));
        rows.push_back(minmax_named(GPK_U8, "lp5", im, gpu, cpu, s, ceil));
        rows.push_back(minmax_named(GPK_U8, "log9", im, gpu, cpu, s, ceil));
        rows.push_back(minmax_named(GPK_F32, "lp3", im, gpu, cpu, s, ceil));
        rows.push_back(minmax_named(GPK_F32, "lp5", im, gpu, cpu, s, ceil));
        rows.push_back(filter_u8_to_f32("u8 -> f32 Sobel x, none, clamp, 8192x8192", 3, sobel,
                                        GPK_NORMALIZE_NONE, im, gpu, cpu, s, npp, ceil));
        rows.push_back(filter_u8_to_f32("u8 -> f32 smooth5, sum, clamp, 8192x8192", 5, smooth5,
                                        GPK_NORMALIZE_SUM, im, gpu, cpu, s, npp, ceil));
        free_c3(im);
    }
    if (bench::wanted(argc, argv, "general")) {
        // The cases the general 2D kernel (lib/cuda/convolve/general.cu) serves: sizes without a built
        // kernel on 3 channels, real taps on u8, filters that are not square.
        alloc_c3(im, s);
        rows.push_back(filter_u8_c3("u8 7x7 box, 3 channels, sum, clamp, 8192x8192", 7,
                                    std::vector<double>(49, 1.0), im, gpu, cpu, s, npp, ceil));
        free_c3(im);
        std::vector<double> g5(5), gauss5, d5x3;
        for (int i = 0; i < 5; ++i) g5[size_t(i)] = std::exp(-0.5 * (i - 2) * (i - 2));
        double gs = 0;
        for (double v : g5) gs += v;
        for (double &v : g5) v /= gs;
        for (double a : g5)
            for (double b : g5) gauss5.push_back(a * b);
        for (double a : g5)
            for (double b : {-0.5, 0.0, 0.5}) d5x3.push_back(a * b);
        rows.push_back(filter_real("u8 5x5 Gaussian (real taps, sigma 1), none, clamp, 8192x8192", GPK_U8, 5,
                                   5, gauss5, im, gpu, cpu, s, npp, ceil));
        rows.push_back(filter_real("f32 5x3 smoothed x derivative (5 rows), none, clamp, 8192x8192", GPK_F32,
                                   5, 3, d5x3, im, gpu, cpu, s, npp, ceil));
    }
    bench::print_table(rows);
    gpk_context_destroy(g_sync);
    gpk_context_destroy(gpu);
    gpk_context_destroy(cpu);
    return 0;
}
