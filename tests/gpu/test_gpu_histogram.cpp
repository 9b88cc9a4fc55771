// gpk_histogram on the CUDA backend against the CPU backend: bit-identical counts and uncounted samples for
// every dtype, channel count, padded stride, bin layout (shared, window and global counting tiers),
// saturation, all-equal data, one long row, misaligned pointers, data larger than a faked device, for
// host pageable, host pinned and device pointers, with and without a caller stream.
#include "gpu_common.hpp"
#include "samples.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace {

using gpu::Block;
using gpu::Memory;

struct Case {
    gpk_dtype dtype;
    size_t width, height;
    unsigned channels;
    size_t pad; // bytes after each row
    size_t bins;
    double lower, upper;
    uint64_t saturate;
    enum Fill { random, all_equal, lab } fill;
    size_t offset = 0; // misaligns the pointer by this many bytes (device and pinned)

    size_t row_bytes() const { return width * channels * gpk_dtype_size(dtype); }
    size_t stride() const { return row_bytes() + pad; }
    size_t bytes() const { return stride() * height; }
};

std::string describe(const Case &c) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s %zux%zu ch%u pad %zu bins %zu [%g, %g) sat %llu fill %d offset %zu",
                  gpk_dtype_name(c.dtype), c.width, c.height, c.channels, c.pad, c.bins, c.lower, c.upper,
                  (unsigned long long)c.saturate, int(c.fill), c.offset);
    return buf;
}

// A sample value for the case: random over a little more than [lower, upper] with the edges, values
// just below upper, NaN and infinities (floats) mixed in; clamped to what the type can hold.
double sample(const Case &c, std::mt19937_64 &rng) {
    std::uniform_real_distribution<double> u(0, 1);
    double span = c.upper - c.lower;
    double v = c.lower - 0.05 * span + u(rng) * 1.1 * span;
    bool is_float = c.dtype == GPK_F32 || c.dtype == GPK_F64;
    switch (rng() % 16) {
    case 0:
        v = c.lower;
        break;
    case 1:
        v = c.upper;
        break;
    case 2:
        v = is_float ? std::nextafter(c.upper, c.lower) : c.upper - 1;
        break;
    case 3:
        if (is_float) v = std::numeric_limits<double>::quiet_NaN();
        break;
    case 4:
        if (is_float) v = (rng() & 1) ? HUGE_VAL : -HUGE_VAL;
        break;
    default:
        break;
    }
    if (!is_float) {
        double lo = c.dtype == GPK_I32 ? -2147483648.0 : 0.0;
        double hi = c.dtype == GPK_U8    ? 255
                    : c.dtype == GPK_U16 ? 65535
                    : c.dtype == GPK_U32 ? 4294967295.0
                                         : 2147483647.0;
        v = std::floor(std::min(std::max(v, lo), hi));
    }
    return v;
}

std::vector<unsigned char> make_data(const Case &c, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<unsigned char> data(c.bytes());
    size_t size = gpk_dtype_size(c.dtype);
    double equal = c.lower + 0.5 * (c.upper - c.lower) / double(c.bins); // bin 0 (or the middle of it)
    for (size_t y = 0; y < c.height; ++y) {
        unsigned char *row = data.data() + y * c.stride();
        for (size_t i = 0; i < c.width * c.channels; ++i) {
            double v = c.fill == Case::all_equal ? std::floor(equal)
                       : c.fill == Case::lab ? std::floor(c.bins * std::sqrt(double(rng() % 1000000) / 1e6))
                                             : sample(c, rng);
            write_sample(c.dtype, row + i * size, v);
        }
        // Padding holds a counted value: reading it would change the counts.
        for (size_t b = c.row_bytes(); b + size <= c.stride(); b += size)
            write_sample(c.dtype, row + b, c.lower);
    }
    return data;
}

struct Counts {
    std::vector<uint64_t> hist, uncounted;
};

gpk_histogram_params params_of(const Case &c) {
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.dtype = c.dtype;
    p.width = c.width;
    p.height = c.height;
    p.channels = c.channels;
    p.stride = c.stride();
    p.bins = c.bins;
    p.lower = c.lower;
    p.upper = c.upper;
    p.saturate = c.saturate;
    return p;
}

Counts cpu_reference(gpk_context *cpu, const Case &c, const std::vector<unsigned char> &data) {
    Counts r{std::vector<uint64_t>(c.bins * c.channels), std::vector<uint64_t>(c.channels)};
    gpk_histogram_params p = params_of(c);
    CHECK_OK(cpu, gpk_histogram(cpu, &p, data.data(), r.hist.data(), r.uncounted.data()));
    return r;
}

// Runs the case on `ctx` with data and results in `mem`; results poisoned first so that every counter
// must be written.
void run_on(gpk_context *ctx, cudaStream_t stream, Memory mem, const Case &c,
            const std::vector<unsigned char> &data, const Counts &want, const std::string &what) {
    Block in(mem, c.bytes(), c.offset);
    in.upload(data.data());
    size_t hb = c.bins * c.channels * sizeof(uint64_t), ub = c.channels * sizeof(uint64_t);
    Block hist(mem, hb), unc(mem, ub);
    std::vector<uint64_t> poison_h(c.bins * c.channels, 0xdeadbeefull), poison_u(c.channels, 0xdeadbeefull);
    hist.upload(poison_h.data());
    unc.upload(poison_u.data());
    gpk_histogram_params p = params_of(c);
    CHECK_OK(ctx, gpk_histogram(ctx, &p, in.get(), static_cast<uint64_t *>(hist.get()),
                                static_cast<uint64_t *>(unc.get())));
    if (stream) gpu::cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    Counts got{std::vector<uint64_t>(c.bins * c.channels), std::vector<uint64_t>(c.channels)};
    hist.download(got.hist.data());
    unc.download(got.uncounted.data());
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < got.hist.size(); ++i)
        if (got.hist[i] != want.hist[i] && bad++ == 0) first = i;
    CHECK_MSG(bad == 0,
              what + ": " + std::to_string(bad) + " bins differ, first " + std::to_string(first) + ": " +
                  (bad ? std::to_string(got.hist[first]) + " vs " + std::to_string(want.hist[first]) : ""));
    CHECK_MSG(got.uncounted == want.uncounted, what + ": uncounted differs");
}

void run_case(gpu::Contexts &ctxs, const Case &c, uint64_t seed, bool all_memory = true) {
    std::vector<unsigned char> data = make_data(c, seed);
    Counts want = cpu_reference(ctxs.cpu, c, data);
    for (Memory mem : gpu::kAllMemory) {
        if (!all_memory && mem == Memory::pinned) continue;
        std::string what = describe(c) + " " + gpu::memory_name(mem);
        run_on(ctxs.cuda, nullptr, mem, c, data, want, what);
        run_on(ctxs.cuda_streamed, ctxs.stream, mem, c, data, want, what + " caller stream");
    }
}

void test_wide_bins(gpu::Contexts &ctxs) {
    // u16: direct 65536 bins need more than a block's shared memory (two windows of it, one launch each); on
    // 4 channels more than two windows (global atomics).
    run_case(ctxs, {GPK_U16, 1031, 37, 1, 6, 65536, 0, 65536, 0, Case::random}, 6);
    run_case(ctxs, {GPK_U16, 211, 37, 4, 6, 65536, 0, 65536, 0, Case::random}, 60);
    run_case(ctxs, {GPK_U16, 1000, 30, 1, 2, 1000, 0, 65536, 0, Case::random}, 7);
    // Slots over one block's shared memory, within two blocks' worth: the window tier (one launch per window
    // of the slots): u32 direct bins with samples past the last bin, general f32 bins with NaN, infinities
    // and samples outside the range, two channels of u16.
    run_case(ctxs, {GPK_U32, 1503, 41, 1, 4, 65536, 0, 65536, 0, Case::random}, 70);
    run_case(ctxs, {GPK_F32, 997, 23, 1, 0, 70000, 0, 1, 0, Case::random}, 71);
    run_case(ctxs, {GPK_U16, 40000, 1, 2, 0, 40000, 0, 40000, 0, Case::random}, 72);
    // i32 direct bins with negatives, on the window tier and, three channels, on global atomics.
    run_case(ctxs, {GPK_I32, 1503, 41, 1, 4, 65536, 0, 65536, 0, Case::random}, 73);
    run_case(ctxs, {GPK_I32, 301, 19, 3, 0, 70000, 0, 70000, 0, Case::random}, 74);
    // u32: 2^20 bins (the global tier).
    run_case(ctxs, {GPK_U32, 4096, 64, 1, 0, size_t(1) << 20, 0, double(1 << 20), 0, Case::random}, 9);
    run_case(ctxs, {GPK_U32, 4096, 64, 2, 8, size_t(1) << 20, 0, double(1 << 20), 0, Case::all_equal}, 10);
}

// The shared tier's cases (wide_bins has those with more slots than a block's shared memory).
void test_layouts(gpu::Contexts &ctxs) {
    size_t s = gpu::quick() ? 1 : 4;
    // u8 images: the common 256 bins (random and all-black), fewer bins, more bins, general bins.
    run_case(ctxs, {GPK_U8, 250 * s, 170 * s, 1, 0, 256, 0, 256, 0, Case::random}, 1);
    run_case(ctxs, {GPK_U8, 512 * s, 256 * s, 1, 0, 256, 0, 256, 0, Case::all_equal}, 2);
    run_case(ctxs, {GPK_U8, 301, 77, 3, 5, 100, 0, 100, 0, Case::random}, 3);
    run_case(ctxs, {GPK_U8, 129, 65, 2, 0, 300, 0, 300, 0, Case::random}, 4);
    run_case(ctxs, {GPK_U8, 333, 41, 4, 3, 7, 3.5, 200.25, 0, Case::random}, 5);
    // u32: the lab (1024 bins saturating at 255, 3984 of 4096 values per row).
    run_case(ctxs, {GPK_U32, 3984, 100 * s, 1, 112 * 4, 1024, 0, 1024, 255, Case::lab}, 8);
    // i32 with negatives (uncounted in direct bins), general bins with a negative lower edge.
    run_case(ctxs, {GPK_I32, 517, 33, 1, 4, 100, 0, 100, 0, Case::random}, 11);
    run_case(ctxs, {GPK_I32, 211, 37, 2, 4, 300, 0, 300, 0, Case::random}, 20);
    run_case(ctxs, {GPK_I32, 517, 33, 3, 0, 10, -50, 50, 7, Case::random}, 12);
    // floats: NaN and infinities, edges, inexact ranges.
    run_case(ctxs, {GPK_F32, 777, 21, 2, 12, 7, 3.5, 200.25, 0, Case::random}, 13);
    run_case(ctxs, {GPK_F64, 129, 77, 1, 8, 3, 0.1, 0.4, 0, Case::random}, 14);
    run_case(ctxs, {GPK_F64, 300, 10, 4, 0, 5, -1e6, 1e6, 0, Case::random}, 15);
    // u8, one channel, bins >= 256 (every sample its own slot): padded rows of an odd width (each row a
    // scalar head and tail) on the 32-copy path of 256 to 383 bins, and 1000 bins (8 copies).
    run_case(ctxs, {GPK_U8, 1001, 37, 1, 7, 256, 0, 256, 0, Case::random}, 18);
    run_case(ctxs, {GPK_U8, 517, 29, 1, 3, 1000, 0, 1000, 0, Case::random}, 19);
    // One long row, and a single sample.
    run_case(ctxs, {GPK_U8, 3000001 / s, 1, 1, 0, 256, 0, 256, 0, Case::random}, 16);
    run_case(ctxs, {GPK_F32, 1, 1, 1, 0, 1, 0, 1, 0, Case::random}, 17);
}

// Data or a stride not aligned to the sample size: the CUDA backend answers as the CPU backend does.
void test_misaligned(gpu::Contexts &ctxs) {
    Case c{GPK_U16, 301, 53, 3, 0, 512, 0, 65536, 0, Case::random};
    Case d{GPK_F64, 97, 13, 1, 4, 9, -0.5, 0.5, 0, Case::random};
    c.offset = 1;
    for (const Case &k : {c, d}) {
        std::vector<unsigned char> data = make_data(k, 21);
        std::vector<unsigned char> shifted(data.size() + k.offset);
        std::memcpy(shifted.data() + k.offset, data.data(), data.size());
        std::vector<uint64_t> hist(k.bins * k.channels);
        gpk_histogram_params p = params_of(k);
        gpk_status want = gpk_histogram(ctxs.cpu, &p, shifted.data() + k.offset, hist.data(), nullptr);
        for (Memory mem : gpu::kAllMemory) {
            Block in(mem, k.bytes(), k.offset);
            in.upload(data.data());
            CHECK_STATUS(ctxs.cuda, gpk_histogram(ctxs.cuda, &p, in.get(), hist.data(), nullptr), want);
        }
    }
}

// Data larger than the (faked) device: host data streams in chunks through the lanes, rows wider than a
// chunk are split.
void test_beyond_device_memory(gpu::Contexts &ctxs) {
    gpu::FakeDeviceMemory fake(300000);
    run_case(ctxs, {GPK_U8, 1500, 1300, 1, 3, 256, 0, 256, 0, Case::random}, 31);
    run_case(ctxs, {GPK_U32, 100000, 5, 3, 4, 1024, 0, 1024, 255, Case::lab}, 32);
    run_case(ctxs, {GPK_U16, 2000, 200, 1, 2, 4096, 0, 4096, 0, Case::random}, 33);
    // Counters that cannot fit the faked device are refused with the bytes they need.
    std::vector<uint8_t> data(1000, 1);
    std::vector<uint64_t> hist(size_t(1) << 20);
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.width = data.size();
    p.bins = hist.size();
    p.upper = double(hist.size());
    CHECK_STATUS(ctxs.cuda, gpk_histogram(ctxs.cuda, &p, data.data(), hist.data(), nullptr),
                 GPK_ERR_OUT_OF_MEMORY);
    CHECK(std::string(gpk_context_last_error(ctxs.cuda)).find("8388616") != std::string::npos);
}

// Switching the caller stream on and off between calls on one context.
void test_stream_switch(gpu::Contexts &ctxs) {
    Case c{GPK_U8, 640, 480, 1, 0, 256, 0, 256, 0, Case::random};
    std::vector<unsigned char> data = make_data(c, 41);
    Counts want = cpu_reference(ctxs.cpu, c, data);
    gpk_context *ctx = gpu::make_context(GPK_BACKEND_CUDA);
    for (int round = 0; round < 3; ++round) {
        cudaStream_t s = round == 1 ? ctxs.stream : nullptr;
        CHECK_OK(ctx, gpk_context_set_stream(ctx, s));
        run_on(ctx, s, Memory::device, c, data, want, "stream switch round " + std::to_string(round));
    }
    CHECK_OK(ctx, gpk_context_synchronize(ctx));
    gpk_context_destroy(ctx);
}

// More than 2^32 samples of one value on the device and in pageable memory: exact 64-bit counts.
void test_beyond_2_32(gpu::Contexts &ctxs) {
    const size_t width = (size_t(1) << 20) + 3, height = 4097, total = width * height, tail = 1000003;
    for (Memory mem : {Memory::device, Memory::pageable}) {
        Block data(mem, total);
        if (mem == Memory::device) {
            gpu::cuda_ok(cudaMemset(data.get(), 9, total - tail), "cudaMemset");
            gpu::cuda_ok(cudaMemset(static_cast<char *>(data.get()) + total - tail, 200, tail), "cudaMemset");
            gpu::cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        } else {
            std::memset(data.get(), 9, total - tail);
            std::memset(static_cast<char *>(data.get()) + total - tail, 200, tail);
        }
        for (size_t h : {height, size_t(1)}) {
            gpk_histogram_params p;
            gpk_histogram_params_init(&p);
            p.width = total / h;
            p.height = h;
            std::vector<uint64_t> hist(256, 1);
            CHECK_OK(ctxs.cuda, gpk_histogram(ctxs.cuda, &p, data.get(), hist.data(), nullptr));
            CHECK_EQ(hist[9], uint64_t(total - tail));
            CHECK_EQ(hist[200], uint64_t(tail));
            CHECK_EQ(hist[0] + hist[255], uint64_t(0));
        }
    }
}

} // namespace

int main() {
    gpu::require_device();
    hooks::require("test_gpu_histogram"); // streamed histograms on a device made small
    gpu::Contexts ctxs;
    // Groups (GPK_TEST_ONLY), one function each.
    if (gpu::wanted("wide_bins")) test_wide_bins(ctxs);
    if (gpu::wanted("layouts")) test_layouts(ctxs);
    if (gpu::wanted("misaligned")) test_misaligned(ctxs);
    if (gpu::wanted("beyond_device")) test_beyond_device_memory(ctxs);
    if (gpu::wanted("stream_switch")) test_stream_switch(ctxs);
    if (gpu::large() && gpu::wanted("beyond_2_32")) test_beyond_2_32(ctxs);
    return check::finish("test_gpu_histogram");
}
