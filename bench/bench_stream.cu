// Host data beyond the GPU (PERF.md's last rows): what the machine's host side allows, and gpk end to end.
//
// Ceilings, measured here: host memcpy from pageable into pinned memory on 1 to all cores (the staging
// route's CPU side), host-to-device and device-to-host from pinned memory and both at once (PCIe), from
// pageable memory (the driver's own staging), and pinning in place (cudaHostRegister of touched memory, then
// DMA from it: the other route).
//
// gpk, through the public C API with pageable host pointers, wall clock per call on a fresh context: the
// u8 256-bin histogram of N GiB (first call, then the median of the later ones) and the u8 3x3 box
// convolution (sum, clamp) of an image of M GiB into an output of M GiB that is malloc'ed untouched just
// before the first call, as a caller's new output is (then later calls into the same output, then one call
// into another new output on the same context: the fresh pages without the context's first use). GB/s count
// bytes in + bytes out over wall time. Inputs follow tests/common/periodic_image.hpp's pattern: every count
// and every sample of the first call's output are checked exactly. The first call's line says how the
// kernel faulted pages in during it (minor faults, huge pages given at a fault).
//
//   bench_stream [--large] [--hist-gib N] [--conv-gib M] [--half] [--no-ceilings] [--fault-gib F]
//   [--touch-gib T]
// Default N = 8, M = 4; --large: N = 90, M = 44 (PERF.md's rows; run one case at a time on a host of 128
// GiB: --hist-gib 0 or --conv-gib 0 skips one). --fault-gib F measures, after the convolution, what
// faulting fresh memory in costs on this host without gpk (F GiB: huge pages on 1 to 16 threads, 4 KiB
// pages on 16): the ceiling of a first call into fresh memory. --half repeats every case with half the
// cores copying. --touch-gib T first writes T GiB of fresh memory on every core and frees it: a virtual
// machine backs a guest page at the guest's first touch of it, once a boot, which a host that has run for a
// while has long paid; after it a first call pays the kernel's faults alone.
#include "bench_util.cuh"
#include "periodic_image.hpp"

#include <sys/mman.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
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

struct Options {
    size_t hist_gib = 8, conv_gib = 4, fault_gib = 0, touch_gib = 0;
    bool half = false, ceilings = true;
};

// Counters of the kernel's page faults: the process's minor faults, transparent huge pages given at a
// fault and refused (fallen back to 4 KiB pages), and direct compaction stalls (system-wide).
struct Faults {
    long minor = 0;
    long long thp_alloc = 0, thp_fallback = 0, compact_stall = 0;
    static Faults now() {
        Faults f;
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        f.minor = u.ru_minflt;
        if (FILE *vm = std::fopen("/proc/vmstat", "r")) {
            char name[64];
            long long v = 0;
            while (std::fscanf(vm, "%63s %lld", name, &v) == 2) {
                if (!std::strcmp(name, "thp_fault_alloc")) f.thp_alloc = v;
                if (!std::strcmp(name, "thp_fault_fallback")) f.thp_fallback = v;
                if (!std::strcmp(name, "compact_stall")) f.compact_stall = v;
            }
            std::fclose(vm);
        }
        return f;
    }
    std::string since(const Faults &b) const {
        char text[160];
        std::snprintf(text, sizeof text,
                      "%ld minor faults, %lld huge pages at a fault, %lld fallbacks, %lld "
                      "compaction stalls",
                      minor - b.minor, thp_alloc - b.thp_alloc, thp_fallback - b.thp_fallback,
                      compact_stall - b.compact_stall);
        return text;
    }
};

// What faulting fresh memory in costs here, without gpk: MADV_POPULATE_WRITE of a new mapping of `gib` GiB
// in 16 MiB pieces taken by `threads` threads, with and without huge-page advice.
void fault_ceilings(size_t gib) {
    const size_t n = gib << 30, piece = size_t(16) << 20;
    std::printf("fault-in of fresh memory, %zu GiB, MADV_POPULATE_WRITE in 16 MiB pieces (no gpk):\n", gib);
    for (bool huge : {true, false}) {
        for (unsigned threads : {1u, 4u, 8u, 16u}) {
            if (!huge && threads != 16) continue;
            HostBuffer b(n);
            madvise(b.p, n, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
            std::atomic<size_t> next{0};
            const Faults f0 = Faults::now();
            auto t0 = Clock::now();
            split(threads, threads, [&](size_t, size_t) {
                for (size_t at; (at = next.fetch_add(piece)) < n;)
                    madvise(b.p + at, std::min(piece, n - at), 23 /* MADV_POPULATE_WRITE */);
            });
            const double s = seconds_since(t0);
            std::printf("  %s pages, %2u threads: %6.1f GB/s (%.2f s; %s)\n", huge ? "huge" : "4 KiB",
                        threads, n / s / 1e9, s, Faults::now().since(f0).c_str());
        }
    }
}

// Writes `gib` GiB of fresh memory once on every core, then frees it (--touch-gib).
void touch_host(size_t gib, unsigned cores) {
    const size_t n = gib << 30;
    auto t0 = Clock::now();
    {
        HostBuffer b(n);
        split(n, cores, [&](size_t lo, size_t hi) { std::memset(b.p + lo, 0, hi - lo); });
    }
    const double s = seconds_since(t0);
    std::printf("host memory touched once: %zu GiB in %.1f s (%.1f GB/s), freed\n", gib, s, n / s / 1e9);
}

double median_of(std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return t.empty() ? 0 : t[t.size() / 2];
}

template <class F> double timed(F f) {
    auto t0 = Clock::now();
    f();
    return seconds_since(t0);
}

void histogram_case(size_t gib, unsigned threads, unsigned cores) {
    const size_t n = gib << 30;
    auto t0 = Clock::now();
    HostBuffer data(n);
    const periodic::Layout flat = periodic::layout(GPK_U8, n, 1, 1);
    periodic::fill(flat, data.p, cores);
    std::printf("histogram u8 256 bins of %zu GiB pageable, %u copy threads (filled in %.1f s):\n", gib,
                threads, seconds_since(t0));
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
    gpk_context *ctx = bench::cuda_context(nullptr, threads);
    bool exact = true;
    std::vector<double> t;
    for (int call = 0; call < 3; ++call) {
        std::fill(got.begin(), got.end(), 0);
        t.push_back(timed([&] { GK(ctx, gpk_histogram(ctx, &p, data.p, got.data(), nullptr)); }));
        exact = exact && got == want;
    }
    gpk_context_destroy(ctx);
    std::printf("  C histogram %zu GiB: first %5.1f GB/s %.2f s | later %5.1f GB/s | counts %s\n", gib,
                n / t[0] / 1e9, t[0], n / median_of({t.begin() + 1, t.end()}) / 1e9,
                exact ? "exact" : "WRONG");
}

void convolve_case(size_t gib, unsigned threads, unsigned cores) {
    const size_t width = 65536, height = (gib << 30) / width;
    const periodic::Layout in = periodic::layout(GPK_U8, width, height, 1), out = in;
    const periodic::Conv conv{periodic::filter_2d(3, 3, {1, 1, 1, 1, 1, 1, 1, 1, 1}), GPK_BORDER_CLAMP,
                              GPK_NORMALIZE_SUM};
    auto t0 = Clock::now();
    HostBuffer src(in.bytes());
    periodic::fill(in, src.p, cores);
    std::printf(
        "convolve u8 3x3 box (sum, clamp), %zux%zu: %zu GiB in + %zu GiB out pageable, %u copy threads "
        "(filled in %.1f s):\n",
        width, height, in.bytes() >> 30, out.bytes() >> 30, threads, seconds_since(t0));
    const double moved = double(in.bytes() + out.bytes());
    gpk_context *ctx = bench::cuda_context(nullptr, threads);
    auto run = [&](unsigned char *dst) { GK(ctx, periodic::run(ctx, conv, in, src.p, out, dst)); };
    // A call into a new output, as a caller makes one right before it: malloc'ed, never touched. Its wall
    // time, the page faults during it and the output's check; the output stays for later calls.
    struct Fresh {
        unsigned char *dst;
        double seconds;
        std::string faults, verdict;
    };
    auto fresh_call = [&]() {
        Fresh f{static_cast<unsigned char *>(std::malloc(out.bytes())), 0, "", ""};
        if (!f.dst) {
            std::printf("malloc of %zu bytes failed\n", out.bytes());
            std::exit(1);
        }
        const Faults f0 = Faults::now();
        f.seconds = timed([&] { run(f.dst); });
        f.faults = Faults::now().since(f0);
        const periodic::Result r = periodic::check(in, out, conv, f.dst, cores);
        f.verdict = r.mismatches ? "WRONG: " + r.first : "exact (every sample)";
        return f;
    };
    const Fresh first = fresh_call();
    std::vector<double> later;
    for (int call = 0; call < 2; ++call) later.push_back(timed([&] { run(first.dst); }));
    std::free(first.dst);
    // A new output again, now on the context that has run: the fresh pages alone, without the context's
    // first-use costs (its pinned and device buffers, module loads).
    const Fresh again = fresh_call();
    std::free(again.dst);
    gpk_context_destroy(ctx);
    std::printf("  C convolve %zu+%zu GiB: first (fresh malloc out) %5.1f GB/s %.2f s | later %5.1f GB/s | "
                "out %s | first call: %s\n",
                gib, gib, moved / first.seconds / 1e9, first.seconds, moved / median_of(later) / 1e9,
                first.verdict.c_str(), first.faults.c_str());
    std::printf(
        "  C convolve %zu+%zu GiB: fresh malloc out, context used before %5.1f GB/s %.2f s | out %s | "
        "call: %s\n",
        gib, gib, moved / again.seconds / 1e9, again.seconds, again.verdict.c_str(), again.faults.c_str());
}

Options parse(int argc, char **argv) {
    Options o;
    auto size_arg = [&](int &i) {
        if (i + 1 >= argc) {
            std::printf("%s needs a value\n", argv[i]);
            std::exit(2);
        }
        return size_t(std::strtoull(argv[++i], nullptr, 10));
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--large") {
            o.hist_gib = 90;
            o.conv_gib = 44;
        } else if (a == "--hist-gib") {
            o.hist_gib = size_arg(i);
        } else if (a == "--conv-gib") {
            o.conv_gib = size_arg(i);
        } else if (a == "--fault-gib") {
            o.fault_gib = size_arg(i);
        } else if (a == "--touch-gib") {
            o.touch_gib = size_arg(i);
        } else if (a == "--half") {
            o.half = true;
        } else if (a == "--no-ceilings") {
            o.ceilings = false;
        } else {
            std::printf("unknown argument %s (see the comment at the top of bench/bench_stream.cu)\n",
                        a.c_str());
            std::exit(2);
        }
    }
    return o;
}

} // namespace

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // each row as it is measured (bench.sh keeps the log)
    const Options opt = parse(argc, argv);
    bench::print_device();
    const unsigned cores = periodic::cores();
    if (opt.touch_gib > 0) touch_host(opt.touch_gib, cores);
    if (opt.ceilings) host_ceilings(cores);
    std::vector<unsigned> thread_counts{cores};
    if (opt.half) thread_counts.push_back(std::max(1u, cores / 2));
    for (unsigned threads : thread_counts) {
        if (opt.conv_gib > 0) convolve_case(opt.conv_gib, threads, cores);
        if (opt.fault_gib > 0 && threads == cores) fault_ceilings(opt.fault_gib);
        if (opt.hist_gib > 0) histogram_case(opt.hist_gib, threads, cores);
    }
    return 0;
}
