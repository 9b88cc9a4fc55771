// Host data beyond the GPU (PERF.md's last rows): what the machine's host side allows, and gpk end to end.
//
// Ceilings, measured here: host memcpy from pageable into pinned memory on 1 to all cores (the staging
// route's CPU side), host-to-device and device-to-host from pinned memory and both at once (PCIe), from
// pageable memory (the driver's own staging), and pinning in place (cudaHostRegister of touched memory, then
// DMA from it: the other route).
//
// gpk, through the public C API with pageable host pointers, wall clock per call (first call, then the
// median of the next ones): the u8 256-bin histogram of N GiB and the u8 3x3 box convolution (sum, clamp)
// of an image of M GiB into another of M GiB. Inputs follow tests/common/periodic_image.hpp's pattern, so
// every count and every output sample is checked exactly. Default N = 8, M = 4; --large runs the PERF.md
// rows: N = 90, M = 44 (about 90 GiB of host memory each; the machine needs more).
#include "bench_util.cuh"
#include "periodic_image.hpp"

#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <thread>

namespace {

using bench::median_wall_ms;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Anonymous pageable memory, touched by `threads` threads (as a caller's data would be: resident).
struct HostBuffer {
    unsigned char *p = nullptr;
    size_t bytes = 0;
    explicit HostBuffer(size_t n) : bytes(n) {
        void *m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            std::printf("mmap of %zu bytes failed\n", n);
            std::exit(1);
        }
        p = static_cast<unsigned char *>(m);
    }
    ~HostBuffer() { munmap(p, bytes); }
    HostBuffer(const HostBuffer &) = delete;
    HostBuffer &operator=(const HostBuffer &) = delete;
};

// Runs body(begin, end) over [0, n) cut into `threads` contiguous parts.
template <class Body> void split(size_t n, unsigned threads, Body body) {
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t)
        ts.emplace_back([&, t] { body(n * t / threads, n * (t + 1) / threads); });
    for (auto &t : ts) t.join();
}

// ---- Ceilings ----

void host_ceilings(unsigned cores) {
    const size_t n = size_t(2) << 30;
    HostBuffer src(n);
    split(n, cores, [&](size_t b, size_t e) { std::memset(src.p + b, 1, e - b); });
    unsigned char *pinned = nullptr, *dev = nullptr, *dev2 = nullptr, *pinned2 = nullptr;
    CK(cudaMallocHost(&pinned, n));
    CK(cudaMallocHost(&pinned2, n));
    CK(cudaMalloc(&dev, n));
    CK(cudaMalloc(&dev2, n));
    std::printf("host side, %zu GiB buffers, %u cores:\n", n >> 30, cores);
    for (unsigned t = 1; t <= cores; t *= 2) {
        const double ms = median_wall_ms(
            [&](int) { split(n, t, [&](size_t b, size_t e) { std::memcpy(pinned + b, src.p + b, e - b); }); },
            5);
        std::printf("  memcpy pageable -> pinned, %2u threads: %6.1f GB/s\n", t, n / ms / 1e6);
    }
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    auto timed = [&](auto enqueue) {
        return median_wall_ms(
            [&](int) {
                enqueue();
                CK(cudaStreamSynchronize(s1));
                CK(cudaStreamSynchronize(s2));
            },
            5);
    };
    double ms = timed([&] { CK(cudaMemcpyAsync(dev, pinned, n, cudaMemcpyHostToDevice, s1)); });
    std::printf("  H2D pinned:                %6.1f GB/s\n", n / ms / 1e6);
    ms = timed([&] { CK(cudaMemcpyAsync(pinned, dev, n, cudaMemcpyDeviceToHost, s1)); });
    std::printf("  D2H pinned:                %6.1f GB/s\n", n / ms / 1e6);
    ms = timed([&] {
        CK(cudaMemcpyAsync(dev, pinned, n, cudaMemcpyHostToDevice, s1));
        CK(cudaMemcpyAsync(pinned2, dev2, n, cudaMemcpyDeviceToHost, s2));
    });
    std::printf("  H2D + D2H pinned at once:  %6.1f GB/s moved\n", 2 * n / ms / 1e6);
    ms = median_wall_ms([&](int) { CK(cudaMemcpy(dev, src.p, n, cudaMemcpyHostToDevice)); }, 3);
    std::printf("  H2D pageable (cudaMemcpy): %6.1f GB/s\n", n / ms / 1e6);
    // Pinning in place: register, DMA, unregister, on memory already touched.
    for (size_t chunk : {size_t(64) << 20, size_t(256) << 20, size_t(1) << 30}) {
        double reg = 0, dma = 0, unreg = 0;
        for (size_t off = 0; off < n; off += chunk) {
            auto t0 = Clock::now();
            CK(cudaHostRegister(src.p + off, chunk, cudaHostRegisterDefault));
            auto t1 = Clock::now();
            CK(cudaMemcpyAsync(dev + off, src.p + off, chunk, cudaMemcpyHostToDevice, s1));
            CK(cudaStreamSynchronize(s1));
            auto t2 = Clock::now();
            CK(cudaHostUnregister(src.p + off));
            reg += std::chrono::duration<double>(t1 - t0).count();
            dma += std::chrono::duration<double>(t2 - t1).count();
            unreg += std::chrono::duration<double>(Clock::now() - t2).count();
        }
        std::printf("  cudaHostRegister in %4zu MiB chunks: register %6.1f GB/s, DMA %5.1f GB/s, unregister "
                    "%6.1f GB/s, all three in turn %5.1f GB/s\n",
                    chunk >> 20, n / reg / 1e9, n / dma / 1e9, n / unreg / 1e9,
                    n / (reg + dma + unreg) / 1e9);
    }
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    CK(cudaFreeHost(pinned));
    CK(cudaFreeHost(pinned2));
    CK(cudaFree(dev));
    CK(cudaFree(dev2));
}

// ---- gpk end to end ----

// Wall-clock seconds of `calls` calls of f: the first, and the median of the others.
template <class F> void time_calls(const char *what, double bytes_moved, int calls, F f) {
    std::vector<double> t;
    for (int i = 0; i < calls; ++i) {
        auto t0 = Clock::now();
        f();
        t.push_back(seconds_since(t0));
    }
    std::vector<double> rest(t.begin() + 1, t.end());
    std::sort(rest.begin(), rest.end());
    const double median = rest.empty() ? t[0] : rest[rest.size() / 2];
    std::printf("  %s: first call %.2f s (%.1f GB/s), then median %.2f s (%.1f GB/s) of %d\n", what, t[0],
                bytes_moved / t[0] / 1e9, median, bytes_moved / median / 1e9, calls - 1);
}

void histogram_case(gpk_context *ctx, size_t gib, unsigned cores) {
    const size_t n = gib << 30;
    auto t0 = Clock::now();
    HostBuffer data(n);
    const periodic::Layout flat = periodic::layout(GPK_U8, n, 1, 1);
    periodic::fill(flat, data.p, cores);
    std::printf("histogram u8 256 bins of %zu GiB pageable (filled in %.1f s):\n", gib, seconds_since(t0));
    // Expected counts: whole periods of the table, then the first n % kPeriod entries.
    std::vector<uint64_t> want(256, 0), got(256, 0);
    for (size_t k = 0; k < periodic::kPeriod; ++k) {
        const size_t times = n / periodic::kPeriod + (k < n % periodic::kPeriod ? 1 : 0);
        want[size_t(periodic::table_value(k, GPK_U8))] += times;
    }
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.width = n;
    p.height = 1;
    bool exact = true;
    time_calls("gpk_histogram", double(n), 3, [&] {
        std::fill(got.begin(), got.end(), 0);
        GK(ctx, gpk_histogram(ctx, &p, data.p, got.data(), nullptr));
        exact = exact && got == want;
    });
    std::printf("  counts %s\n", exact ? "exact (every call)" : "WRONG");
}

void convolve_case(gpk_context *ctx, size_t gib, unsigned cores) {
    const size_t width = 65536, height = (gib << 30) / width;
    const periodic::Layout in = periodic::layout(GPK_U8, width, height, 1), out = in;
    const periodic::Conv conv{periodic::filter_2d(3, 3, {1, 1, 1, 1, 1, 1, 1, 1, 1}), GPK_BORDER_CLAMP,
                              GPK_NORMALIZE_SUM};
    auto t0 = Clock::now();
    HostBuffer src(in.bytes()), dst(out.bytes());
    periodic::fill(in, src.p, cores);
    split(dst.bytes, cores, [&](size_t b, size_t e) { std::memset(dst.p + b, 0, e - b); });
    std::printf(
        "convolve u8 3x3 box (sum, clamp), %zux%zu: %zu GiB in + %zu GiB out pageable (filled in %.1f s):\n",
        width, height, in.bytes() >> 30, out.bytes() >> 30, seconds_since(t0));
    time_calls("gpk_convolve", double(in.bytes() + out.bytes()), 3,
               [&] { GK(ctx, periodic::run(ctx, conv, in, src.p, out, dst.p)); });
    const periodic::Result r = periodic::check(in, out, conv, dst.p, cores);
    std::printf("  outputs %s\n", r.mismatches == 0 ? "exact (every sample)" : ("WRONG: " + r.first).c_str());
}

gpk_context *cuda_context(unsigned threads) {
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = GPK_BACKEND_CUDA;
    o.threads = threads;
    gpk_context *ctx = nullptr;
    GK(nullptr, gpk_context_create(&ctx, &o));
    return ctx;
}

} // namespace

// Each case runs on fresh contexts with all cores copying and with half of them (memcpy peaks below all
// cores on some machines): a context's first call, then its later ones.
int main(int argc, char **argv) {
    bool large = false;
    for (int i = 1; i < argc; ++i) large |= std::strcmp(argv[i], "--large") == 0;
    bench::print_device();
    const unsigned cores = periodic::cores();
    host_ceilings(cores);
    for (unsigned threads : {0u, std::max(1u, cores / 2)}) {
        std::printf("-- contexts with %u copy threads\n", threads ? threads : cores);
        gpk_context *ctx = cuda_context(threads);
        histogram_case(ctx, large ? 90 : 8, cores);
        gpk_context_destroy(ctx);
        ctx = cuda_context(threads);
        convolve_case(ctx, large ? 44 : 4, cores);
        gpk_context_destroy(ctx);
    }
    return 0;
}
