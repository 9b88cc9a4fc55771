// gpk_histogram beside CUB DeviceHistogram::HistogramEven on the histogram cases of PERF.md, in one run on
// the same device data: median of CUDA-event timings after a warm-up, inputs rotated where several copies
// fit, every result compared with CUB's and with gpk's CPU backend. End-to-end cases from pageable and
// pinned host memory are timed on the wall clock against cudaMemcpy + CUB.
#include "bench_util.cuh"

#include <cub/cub.cuh>

#include <cstdint>
#include <cstring>

namespace {

using bench::Row;

__device__ __forceinline__ uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Random samples in [0, bins), or `bins` itself where every sample is to be the same (never zeros).
template <class T> __global__ void fill(T *p, size_t n, uint64_t bins, uint64_t seed, bool all_equal) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        p[i] = all_equal ? T(7) : T(mix(i ^ (seed << 40)) % bins);
}

struct Case {
    const char *name;
    bool u32;           // u32 samples, else u8
    size_t width, rows; // samples per row and rows
    size_t pitch_elems; // row pitch in samples
    size_t bins;
    bool all_equal;
    uint64_t saturate;
    size_t range; // samples in [0, range) and the bins' upper edge (0: bins, direct bins)
};

size_t range_of(const Case &c) {
    return c.range ? c.range : c.bins;
}

template <class T> using Level = typename std::conditional<sizeof(T) == 1, int, T>::type;

// CUB's histogram of one buffer (2D through its row-pitch overload), counts in u32.
template <class T> struct CubHistogram {
    void *tmp = nullptr;
    size_t tmp_bytes = 0;
    const Case &c;
    explicit CubHistogram(const Case &k) : c(k) {}
    cudaError_t run(const T *d, unsigned *out, cudaStream_t s) {
        if (c.rows == 1)
            return cub::DeviceHistogram::HistogramEven(tmp, tmp_bytes, d, out, int(c.bins + 1), Level<T>(0),
                                                       Level<T>(range_of(c)), (long long)c.width, s);
        return cub::DeviceHistogram::HistogramEven(tmp, tmp_bytes, d, out, int(c.bins + 1), Level<T>(0),
                                                   Level<T>(range_of(c)), (long long)c.width,
                                                   (long long)c.rows, c.pitch_elems * sizeof(T), s);
    }
    void prepare(const T *d, unsigned *out, cudaStream_t s) {
        CK(run(d, out, s)); // sizes the temporary storage
        CK(cudaMalloc(&tmp, tmp_bytes));
    }
    ~CubHistogram() { cudaFree(tmp); }
};

gpk_histogram_params params_for(const Case &c) {
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.dtype = c.u32 ? GPK_U32 : GPK_U8;
    p.width = c.width;
    p.height = c.rows;
    p.stride = c.pitch_elems * (c.u32 ? 4 : 1);
    p.bins = c.bins;
    p.upper = double(range_of(c));
    p.saturate = c.saturate;
    return p;
}

template <class T>
Row run_device_case(const Case &c, gpk_context *gpu, gpk_context *sync, gpk_context *cpu, cudaStream_t s,
                    const bench::Ceilings &ceil) {
    size_t elems = c.pitch_elems * (c.rows - 1) + c.width, bytes = elems * sizeof(T);
    int copies = int(std::min<size_t>(4, std::max<size_t>(1, (size_t(256) << 20) / bytes)));
    std::vector<T *> bufs(copies);
    for (int i = 0; i < copies; ++i) {
        CK(cudaMalloc(&bufs[i], bytes));
        fill<T><<<1024, 256, 0, s>>>(bufs[i], elems, range_of(c), 17 + i, c.all_equal);
        CK(cudaGetLastError());
    }
    uint64_t *hist64;
    unsigned *hist32;
    CK(cudaMalloc(&hist64, c.bins * 8));
    CK(cudaMalloc(&hist32, c.bins * 4));
    gpk_histogram_params p = params_for(c);
    float ms = bench::median_ms(
        s, [&](int i) { GK(gpu, gpk_histogram(gpu, &p, bufs[i % copies], hist64, nullptr)); });
    // Image cases: also 20 calls between one pair of events, whose launches overlap the work before them, so
    // that the figure a call is its device work alone (beside `ms`, which includes the call's host time).
    if (c.rows > 1) {
        const int calls = 20;
        float b2b =
            bench::median_ms(
                s,
                [&](int i) {
                    for (int k = 0; k < calls; ++k)
                        GK(gpu, gpk_histogram(gpu, &p, bufs[(i * calls + k) % copies], hist64, nullptr));
                },
                9, 1) /
            calls;
        // The floor of a call: a bare read of the same bytes (bench::read_all), timed the same way.
        int sms = 0;
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        unsigned long long *sink;
        CK(cudaMalloc(&sink, 8));
        float read = bench::median_ms(s, [&](int i) {
            bench::read_all<<<sms * 8, 512, 0, s>>>(reinterpret_cast<const uint4 *>(bufs[i % copies]),
                                                    bytes / 16, sink);
        });
        CK(cudaFree(sink));
        std::printf(
            "%s: %.4f ms a call alone, %.4f ms a call back to back (%d calls between two events); a bare "
            "read of the same %zu bytes %.4f ms\n",
            c.name, ms, b2b, calls, bytes, read);
    }
    // The same call through the API as a user makes it: synchronous (no caller stream), wall clock.
    double api = bench::median_wall_ms(
        [&](int i) { GK(sync, gpk_histogram(sync, &p, bufs[i % copies], hist64, nullptr)); }, 30, 3);
    CubHistogram<T> cub_hist(c);
    cub_hist.prepare(bufs[0], hist32, s);
    float peer = bench::median_ms(s, [&](int i) { CK(cub_hist.run(bufs[i % copies], hist32, s)); });

    // The last run of each used buffer (20 + 3 - 1) % copies; recompute both on buffer 0 to compare.
    GK(gpu, gpk_histogram(gpu, &p, bufs[0], hist64, nullptr));
    CK(cub_hist.run(bufs[0], hist32, s));
    CK(cudaStreamSynchronize(s));
    std::vector<uint64_t> got(c.bins), on_cpu(c.bins);
    std::vector<unsigned> peer_counts(c.bins);
    CK(cudaMemcpy(got.data(), hist64, c.bins * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(peer_counts.data(), hist32, c.bins * 4, cudaMemcpyDeviceToHost));
    std::vector<T> host(elems);
    CK(cudaMemcpy(host.data(), bufs[0], bytes, cudaMemcpyDeviceToHost));
    GK(cpu, gpk_histogram(cpu, &p, host.data(), on_cpu.data(), nullptr));
    bool same_cub = true;
    for (size_t b = 0; b < c.bins; ++b) {
        uint64_t want = c.saturate ? std::min<uint64_t>(peer_counts[b], c.saturate) : peer_counts[b];
        same_cub &= got[b] == want;
    }
    std::string agreement =
        same_cub && got == on_cpu ? "= CUB, = CPU" : (same_cub ? "CPU DIFFERS" : "CUB DIFFERS");
    for (T *b : bufs) CK(cudaFree(b));
    CK(cudaFree(hist64));
    CK(cudaFree(hist32));
    double data_bytes = double(c.width) * c.rows * sizeof(T);
    double gbs = data_bytes / ms / 1e6;
    return {c.name, ms, gbs, "GB/s", gbs / ceil.read_gbs, "CUB HistogramEven", peer, agreement, api};
}

// 1 GiB of u8 in host memory: gpk end to end against cudaMemcpy + CUB + copy back (wall clock).
void run_host_cases(gpk_context *cpu, cudaStream_t s, const bench::Ceilings &ceil, std::vector<Row> &rows) {
    const size_t n = size_t(1) << 30;
    Case c{"u8 256 bins, 1 GiB", false, n, 1, n, 256, false, 0, 0};
    uint8_t *dev;
    unsigned *hist32;
    CK(cudaMalloc(&dev, n));
    CK(cudaMalloc(&hist32, 256 * 4));
    fill<uint8_t><<<1024, 256, 0, s>>>(dev, n, 256, 99, false);
    CK(cudaStreamSynchronize(s));
    CubHistogram<uint8_t> cub_hist(c);
    cub_hist.prepare(dev, hist32, s);
    gpk_context *gpu = bench::cuda_context(nullptr); // no caller stream: calls finish before returning
    gpk_histogram_params p = params_for(c);
    for (bool pinned : {false, true}) {
        uint8_t *host = nullptr;
        std::vector<uint8_t> pageable;
        if (pinned) {
            CK(cudaMallocHost(&host, n));
        } else {
            pageable.resize(n);
            host = pageable.data();
        }
        CK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost));
        std::vector<uint64_t> got(256), want(256);
        double ms =
            bench::median_wall_ms([&](int) { GK(gpu, gpk_histogram(gpu, &p, host, got.data(), nullptr)); });
        unsigned counts[256];
        double peer = bench::median_wall_ms([&](int) {
            CK(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, s));
            CK(cub_hist.run(dev, hist32, s));
            CK(cudaMemcpyAsync(counts, hist32, sizeof counts, cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
        });
        GK(cpu, gpk_histogram(cpu, &p, host, want.data(), nullptr));
        bool same = got == want;
        for (int b = 0; b < 256; ++b) same &= got[b] == counts[b];
        double gbs = n / ms / 1e6;
        double ceiling = pinned ? ceil.h2d_pinned_gbs : ceil.h2d_pageable_gbs;
        rows.push_back(
            {std::string("u8 256 bins, 1 GiB ") + (pinned ? "pinned" : "pageable") + " host, end to end", ms,
             gbs, "GB/s", gbs / ceiling, "cudaMemcpy + CUB", peer, same ? "= CUB, = CPU" : "DIFFER"});
        if (pinned) CK(cudaFreeHost(host));
    }
    gpk_context_destroy(gpu);
    CK(cudaFree(dev));
    CK(cudaFree(hist32));
}

} // namespace

// Arguments, if any, name the groups to run (bench::wanted): u8 (u8image: the 8192x8192 case alone), u32,
// host (default: all).
int main(int argc, char **argv) {
    bench::print_device();
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    bench::Ceilings ceil = bench::measure_ceilings(s);
    bench::print_call_floor();
    gpk_context *gpu = bench::cuda_context(s), *cpu = bench::cpu_context(),
                *sync = bench::cuda_context(nullptr);
    const size_t gib = size_t(1) << 30, e9 = 1000000000;
    const Case u8_cases[] = {
        {"u8 256 bins, 1 GiB random", false, gib, 1, gib, 256, false, 0, 0},
        {"u8 256 bins, 1 GiB all equal", false, gib, 1, gib, 256, true, 0, 0},
        {"u8 256 bins, 8192x8192 random", false, 8192, 8192, 8192, 256, false, 0, 0},
    };
    const Case u32_cases[] = {
        {"u32 1024 bins, 3984x4096 lab (pitch 4096, sat 255)", true, 3984, 4096, 4096, 1024, false, 255, 0},
        {"u32 1024 bins, 1e9 random", true, e9, 1, e9, 1024, false, 0, 0},
        // General bins (two samples a bin) in a block's shared memory.
        {"u32 1024 bins of [0, 2048), 1e9 random", true, e9, 1, e9, 1024, false, 0, 2048},
        {"u32 65536 bins, 1e9 random", true, e9, 1, e9, 65536, false, 0, 0},
        // General bins (two samples a bin) past a block's shared memory: counted window by window.
        {"u32 65536 bins of [0, 131072), 1e9 random", true, e9, 1, e9, 65536, false, 0, 131072},
        // Direct bins past two windows: global atomics.
        {"u32 1048576 bins, 1e9 random", true, e9, 1, e9, 1048576, false, 0, 0},
    };
    std::vector<Row> rows;
    for (const Case &c : u8_cases)
        if (bench::wanted(argc, argv, "u8") || (c.rows > 1 && bench::wanted(argc, argv, "u8image")))
            rows.push_back(run_device_case<uint8_t>(c, gpu, sync, cpu, s, ceil));
    if (bench::wanted(argc, argv, "u32"))
        for (const Case &c : u32_cases) rows.push_back(run_device_case<uint32_t>(c, gpu, sync, cpu, s, ceil));
    if (bench::wanted(argc, argv, "host")) run_host_cases(cpu, s, ceil, rows);
    bench::print_table(rows);
    gpk_context_destroy(gpu);
    gpk_context_destroy(sync);
    gpk_context_destroy(cpu);
    CK(cudaStreamDestroy(s));
    return 0;
}
