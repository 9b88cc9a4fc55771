// Fault injection on the CPU backend (GPK_TEST_FAULT=host:N, NOTES.md internal knobs): every host
// allocation of each operation's working buffers fails in turn, and every worker thread start of a context
// creation. Each failure must return GPK_ERR_OUT_OF_MEMORY with a message naming the bytes, leave the
// outputs untouched (padding included) and the context usable: the next call gives the reference result.
// Under AddressSanitizer + LeakSanitizer (.ci/run step 2) this is the leak check of those paths. ASan builds
// also make one real allocation of each operation fail (ASan's max_allocation_size_mb), in a child process
// since ASan reads its options at start only.
#include "capped_memory.hpp"
#include "hooks.hpp"
#include "check.hpp"
#include "convolve_params.hpp"
#include "gpk.h"
#include "process_threads.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define GPK_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPK_TEST_ASAN 1
#endif
#endif
#ifndef GPK_TEST_ASAN
#define GPK_TEST_ASAN 0
#endif

namespace {

// A call's outputs, all in one buffer of 8-byte words so that any sample type is aligned in it; it starts
// filled with a pattern, so that "untouched" means "still the pattern".
struct Outputs {
    std::vector<uint64_t> words;
    explicit Outputs(size_t bytes) : words((bytes + 7) / 8, 0xA5C3A5C3A5C3A5C3ull) {}
    unsigned char *bytes() { return reinterpret_cast<unsigned char *>(words.data()); }
    bool untouched() const {
        for (uint64_t w : words)
            if (w != 0xA5C3A5C3A5C3A5C3ull) return false;
        return true;
    }
};

struct Case {
    std::string name;
    size_t out_bytes;
    // Runs the operation into `out`; after a success, clears what may differ between equal runs (the
    // heat report's time).
    std::function<gpk_status(gpk_context *, unsigned char *out)> run;
    const char *prefix;       // the operation's name that starts its messages
    unsigned long long least; // an out-of-memory message names at least this many bytes
    bool per_thread;          // each working thread allocates: at least one fault per thread
    // For an operation whose buffers the context keeps (heat): a smaller call that leaves them too small,
    // made on a fresh context before each fault, so that every fault hits the growth of kept buffers.
    std::function<void(gpk_context *)> warm_up;
};

gpk_context *create(unsigned threads, gpk_status *status) {
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = GPK_BACKEND_CPU;
    o.threads = threads;
    int sentinel = 0;
    gpk_context *ctx = reinterpret_cast<gpk_context *>(&sentinel); // must become NULL on failure
    *status = gpk_context_create(&ctx, &o);
    if (*status != GPK_OK) {
        CHECK_MSG(ctx == nullptr, "*out is not NULL after a failed creation");
        return nullptr;
    }
    return ctx;
}

// ---------------------------------------------------------------------------------------------------
// The operations. Sizes are chosen so that every thread of a 3-thread context gets work and tables of
// its own, and so that the min/max buffer of one convolution is large enough to be mapped pages.

Case heat_case() {
    struct Data {
        size_t rows = 300, cols = 257; // over 2^16 cells: one band per thread, with row rings
        std::vector<double> tinit, cond;
    };
    auto d = std::make_shared<Data>();
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(0, 1);
    for (size_t i = 0; i < d->rows * d->cols; ++i) {
        d->tinit.push_back(u(rng) * 100 - 30);
        d->cond.push_back(u(rng));
    }
    const size_t grid_bytes = d->rows * d->cols * sizeof(double);
    return {"heat 300x257, 20 iterations",
            grid_bytes + sizeof(gpk_heat_report),
            [d, grid_bytes](gpk_context *ctx, unsigned char *out) {
                gpk_heat_params p;
                gpk_heat_params_init(&p);
                p.rows = d->rows;
                p.cols = d->cols;
                p.maxiter = 20;
                auto *report = reinterpret_cast<gpk_heat_report *>(out + grid_bytes);
                gpk_status s = gpk_heat_run(ctx, &p, d->tinit.data(), d->cond.data(),
                                            reinterpret_cast<double *>(out), report);
                if (s == GPK_OK) report->time = 0;
                return s;
            },
            "heat: ",
            2 * (d->rows + 2) * (d->cols + 2) * sizeof(double),
            false,
            [d](gpk_context *ctx) {
                gpk_heat_params p;
                gpk_heat_params_init(&p);
                p.rows = d->rows / 2;
                p.cols = d->cols;
                p.maxiter = 3;
                CHECK_OK(ctx, gpk_heat_run(ctx, &p, d->tinit.data(), d->cond.data(), nullptr, nullptr));
            }};
}

struct HistogramShape {
    const char *name;
    gpk_dtype dtype;
    size_t width, height, stride_samples; // stride in samples of the row (0: packed)
    unsigned channels;
    size_t bins;
    double lower, upper;
    uint64_t saturate;
};

// Samples that spread over [lower, upper) and a little outside it (some are not counted).
std::vector<uint64_t> histogram_data(const HistogramShape &h) {
    const size_t row = h.stride_samples ? h.stride_samples : h.width * h.channels;
    const size_t samples = row * h.height, size = gpk_dtype_size(h.dtype);
    std::vector<uint64_t> words((samples * size + 7) / 8);
    auto *bytes = reinterpret_cast<unsigned char *>(words.data());
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u(h.lower - 0.05 * (h.upper - h.lower),
                                             h.upper + 0.05 * (h.upper - h.lower));
    for (size_t i = 0; i < samples; ++i) {
        double v = u(rng);
        unsigned char *p = bytes + i * size;
        switch (h.dtype) {
        case GPK_U8: {
            uint8_t x = uint8_t(rng());
            std::memcpy(p, &x, 1);
            break;
        }
        case GPK_U16: {
            uint16_t x = uint16_t(v < 0 ? 0 : v > 65535 ? 65535 : v);
            std::memcpy(p, &x, 2);
            break;
        }
        case GPK_U32: {
            uint32_t x = uint32_t(v < 0 ? 0 : v);
            std::memcpy(p, &x, 4);
            break;
        }
        case GPK_F32: {
            float x = float(v);
            std::memcpy(p, &x, 4);
            break;
        }
        default:
            std::memcpy(p, &v, 8);
        }
    }
    return words;
}

// hist, then uncounted, into `out`.
gpk_status run_histogram(gpk_context *ctx, const HistogramShape &h, const void *data, unsigned char *out) {
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.dtype = h.dtype;
    p.width = h.width;
    p.height = h.height;
    p.channels = h.channels;
    p.stride = h.stride_samples * gpk_dtype_size(h.dtype);
    p.bins = h.bins;
    p.lower = h.lower;
    p.upper = h.upper;
    p.saturate = h.saturate;
    return gpk_histogram(ctx, &p, data, reinterpret_cast<uint64_t *>(out),
                         reinterpret_cast<uint64_t *>(out) + h.channels * h.bins);
}

std::vector<Case> histogram_cases() {
    const HistogramShape shapes[] = {
        {"u8, 256 bins", GPK_U8, 400, 300, 0, 1, 256, 0, 256, 0},
        {"u32 bin IDs, 1024 bins saturating at 255, padded rows", GPK_U32, 1000, 120, 1024, 1, 1024, 0, 1024,
         255},
        {"u32, 2^20 bins", GPK_U32, 2048, 1600, 0, 1, size_t(1) << 20, 0, double(size_t(1) << 20), 0},
        {"u32 x 4 channels, 1.1M bins (64-bit tables)", GPK_U32, 2048, 1620, 0, 4, 1100000, 0, 1100000, 0},
        {"f32 x 3 channels, 1000 bins over [-1, 2)", GPK_F32, 400, 300, 0, 3, 1000, -1, 2, 0},
        {"u16 x 4 channels, 300 bins over [100, 60000)", GPK_U16, 512, 400, 0, 4, 300, 100, 60000, 0},
    };
    std::vector<Case> cases;
    for (const HistogramShape &h : shapes) {
        auto data = std::make_shared<std::vector<uint64_t>>(histogram_data(h));
        const size_t hist_bytes = h.channels * h.bins * sizeof(uint64_t);
        cases.push_back({std::string("histogram ") + h.name, hist_bytes + h.channels * sizeof(uint64_t),
                         [h, data](gpk_context *ctx, unsigned char *out) {
                             return run_histogram(ctx, h, data->data(), out);
                         },
                         "histogram: ", hist_bytes, true, nullptr});
    }
    return cases;
}

struct ConvolveShape {
    const char *name;
    gpk_dtype in, out;
    size_t width, height;
    unsigned channels;
    const char *filter; // a named filter, or "float5": 5x5 random float taps
    gpk_border border;
    gpk_normalize normalize;
    gpk_accumulate accumulate;
};

// Output rows are padded by one pixel, which must stay untouched.
size_t output_stride(const ConvolveShape &k) {
    return (k.width + 1) * k.channels * gpk_dtype_size(k.out);
}

gpk_status run_convolve(gpk_context *ctx, const ConvolveShape &k, const void *input,
                        const std::vector<double> &taps, unsigned char *out) {
    gpk_filter *f = nullptr;
    gpk_status s = std::strcmp(k.filter, "float5") == 0 ? gpk_filter_create_2d(&f, 5, 5, taps.data())
                                                        : gpk_filter_create_named(&f, k.filter);
    if (s != GPK_OK) return s;
    gpk_image ii, oi;
    gpk_image_init(&ii, k.in, k.width, k.height, k.channels);
    gpk_image_init(&oi, k.out, k.width, k.height, k.channels);
    oi.stride = output_stride(k);
    const gpk_convolve_params p = convolve_params(f, k.border, k.normalize, k.accumulate);
    s = gpk_convolve(ctx, &p, &ii, input, &oi, out);
    gpk_filter_destroy(f);
    return s;
}

std::vector<Case> convolve_cases() {
    const ConvolveShape shapes[] = {
        {"u8 lp3 (exact, 2D)", GPK_U8, GPK_U8, 400, 600, 1, "lp3", GPK_BORDER_ZERO, GPK_NORMALIZE_NONE,
         GPK_ACCUMULATE_AUTO},
        {"u8 x 3 smooth5 sum (exact, 2D)", GPK_U8, GPK_U8, 300, 400, 3, "smooth5", GPK_BORDER_CLAMP,
         GPK_NORMALIZE_SUM, GPK_ACCUMULATE_AUTO},
        {"u8 x 3 log9 min/max (exact, 2D, mapped buffer)", GPK_U8, GPK_U8, 1024, 600, 3, "log9",
         GPK_BORDER_MIRROR, GPK_NORMALIZE_MINMAX, GPK_ACCUMULATE_AUTO},
        {"u16 x 4 box:5 min/max to f32 (exact, separable)", GPK_U16, GPK_F32, 200, 500, 4, "box:5",
         GPK_BORDER_REFLECT, GPK_NORMALIZE_MINMAX, GPK_ACCUMULATE_AUTO},
        {"f32 x 2 gauss:1.5 (float, separable, in place)", GPK_F32, GPK_F32, 300, 500, 2, "gauss:1.5",
         GPK_BORDER_REFLECT, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_F32},
        {"f64 float 5x5 to u16 (float, 2D)", GPK_F64, GPK_U16, 350, 400, 1, "float5", GPK_BORDER_WRAP,
         GPK_NORMALIZE_NONE, GPK_ACCUMULATE_F64},
        {"f32 float 5x5 min/max to u8 (float, 2D, in place)", GPK_F32, GPK_U8, 500, 300, 1, "float5",
         GPK_BORDER_ZERO, GPK_NORMALIZE_MINMAX, GPK_ACCUMULATE_F32},
    };
    std::vector<Case> cases;
    std::mt19937 rng(23);
    std::uniform_real_distribution<double> u(0, 1);
    for (const ConvolveShape &k : shapes) {
        const size_t in_samples = k.width * k.height * k.channels;
        auto input = std::make_shared<std::vector<uint64_t>>((in_samples * gpk_dtype_size(k.in) + 7) / 8);
        auto *p = reinterpret_cast<unsigned char *>(input->data());
        for (size_t i = 0; i < in_samples; ++i) {
            const double v = u(rng);
            if (k.in == GPK_U8) p[i] = uint8_t(v * 256);
            if (k.in == GPK_U16) {
                uint16_t x = uint16_t(v * 65536);
                std::memcpy(p + 2 * i, &x, 2);
            }
            if (k.in == GPK_F32) {
                float x = float(v * 200 - 50);
                std::memcpy(p + 4 * i, &x, 4);
            }
            if (k.in == GPK_F64) {
                double x = v * 200 - 50;
                std::memcpy(p + 8 * i, &x, 8);
            }
        }
        auto taps = std::make_shared<std::vector<double>>();
        for (int i = 0; i < 25; ++i) taps->push_back(u(rng) * 0.3 - 0.05);
        cases.push_back({std::string("convolve ") + k.name, output_stride(k) * k.height,
                         [k, input, taps](gpk_context *ctx, unsigned char *out) {
                             return run_convolve(ctx, k, input->data(), *taps, out);
                         },
                         "convolve: ", 1, true, nullptr});
    }
    return cases;
}

// ---------------------------------------------------------------------------------------------------

// Fails the 1st, 2nd, ... host allocation of `c` on `ctx` until the call no longer reaches that many;
// returns the number of faults injected.
int inject_each(gpk_context *ctx, unsigned threads, const Case &c) {
    Outputs want(c.out_bytes);
    CHECK_OK(ctx, c.run(ctx, want.bytes()));
    int injected = 0;
    for (int n = 1;; ++n) {
        const std::string where =
            c.name + ", " + std::to_string(threads) + " thread(s), host:" + std::to_string(n);
        if (n > 100) {
            CHECK_MSG(false, where + ": still failing");
            break;
        }
        gpk_status created = GPK_OK;
        gpk_context *on = c.warm_up ? create(threads, &created) : ctx;
        CHECK_MSG(on, where + ": no fresh context");
        if (!on) break;
        if (c.warm_up) c.warm_up(on);
        Outputs got(c.out_bytes);
        hooks::Hook fault("GPK_TEST_FAULT", "host:" + std::to_string(n));
        const gpk_status s = c.run(on, got.bytes());
        const std::string message = gpk_context_last_error(on);
        fault.set(nullptr);
        if (s == GPK_OK) { // fewer than n allocations: the run is complete and must be right
            CHECK_MSG(got.words == want.words,
                      where + " (not reached): the result differs from the reference");
            if (c.warm_up) { // the buffers are kept now: a repeated call allocates nothing
                fault.set("host:1");
                Outputs repeat(c.out_bytes);
                CHECK_MSG(c.run(on, repeat.bytes()) == GPK_OK && repeat.words == want.words,
                          where + ": a repeated call allocated or gave another result: " +
                              gpk_context_last_error(on));
                fault.set(nullptr);
                gpk_context_destroy(on);
            }
            break;
        }
        ++injected;
        CHECK_MSG(s == GPK_ERR_OUT_OF_MEMORY, where + ": " + gpk_status_string(s) + ": " + message);
        CHECK_MSG(message.compare(0, std::strlen(c.prefix), c.prefix) == 0 &&
                      message.find("out of host memory allocating ") != std::string::npos &&
                      bytes_named(message) >= c.least,
                  where + ": the message does not name the bytes (at least " + std::to_string(c.least) +
                      "): " + message);
        CHECK_MSG(got.untouched(), where + ": the outputs were written by a failed call");
        Outputs again(c.out_bytes);
        const gpk_status s2 = c.run(on, again.bytes());
        CHECK_MSG(s2 == GPK_OK, where + ": the next call failed: " + gpk_context_last_error(on));
        CHECK_MSG(again.words == want.words, where + ": the next call's result differs from the reference");
        if (c.warm_up) gpk_context_destroy(on);
    }
    if (c.per_thread)
        CHECK_MSG(injected >= int(threads), c.name + ": " + std::to_string(injected) + " faults for " +
                                                std::to_string(threads) +
                                                " threads; each thread should allocate its own buffers");
    else
        CHECK_MSG(injected > 0, c.name + ": no allocation was failed");
    return injected;
}

// Fails the 1st, 2nd, ... worker thread start of a CPU context creation; returns the faults injected.
int inject_creation(unsigned threads, const Case &check_case) {
    const size_t threads_before = thread_count();
    int injected = 0;
    for (int n = 1;; ++n) {
        const std::string where =
            "context of " + std::to_string(threads) + " threads, host:" + std::to_string(n);
        if (n > 100) {
            CHECK_MSG(false, where + ": still failing");
            break;
        }
        hooks::Hook fault("GPK_TEST_FAULT", "host:" + std::to_string(n));
        gpk_status s;
        gpk_context *ctx = create(threads, &s);
        const std::string message = gpk_context_last_error(nullptr);
        fault.set(nullptr);
        if (s == GPK_OK) { // every worker started: the context must work
            Outputs want(check_case.out_bytes), got(check_case.out_bytes);
            gpk_context *plain = create(threads, &s);
            CHECK_OK(plain, check_case.run(plain, want.bytes()));
            CHECK_OK(ctx, check_case.run(ctx, got.bytes()));
            CHECK_MSG(got.words == want.words, where + ": the created context gives another result");
            gpk_context_destroy(plain);
            gpk_context_destroy(ctx);
            break;
        }
        ++injected;
        CHECK_MSG(s == GPK_ERR_OUT_OF_MEMORY, where + ": " + gpk_status_string(s) + ": " + message);
        CHECK_MSG(message.find("cannot start CPU worker thread " + std::to_string(n)) == 0 &&
                      bytes_named(message) > 0,
                  where + ": the message does not name the thread and the bytes: " + message);
        const size_t threads_now = thread_count_settled(threads_before);
        CHECK_MSG(threads_now <= threads_before,
                  where + ": " + std::to_string(threads_now - threads_before) + " thread(s) left behind");
    }
    CHECK_MSG(injected == int(threads) - 1, "context of " + std::to_string(threads) + " threads: " +
                                                std::to_string(injected) + " worker starts failed");
    return injected;
}

// ---------------------------------------------------------------------------------------------------
// Real failures under ASan: allocations above max_allocation_size_mb return null (with
// allocator_may_return_null=1) in the child started by real_failures(). The test's own large buffers are
// mapped pages, which that limit does not cover.

constexpr size_t kRealLimitMb = 8;

struct Mapped {
    void *p;
    size_t bytes;
    explicit Mapped(size_t n) : bytes(n) {
        p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) p = nullptr;
        if (p) std::memset(p, 0x5A, n);
    }
    ~Mapped() {
        if (p) munmap(p, bytes);
    }
    bool untouched() const {
        const auto *b = static_cast<const unsigned char *>(p);
        for (size_t i = 0; i < bytes; ++i)
            if (b[i] != 0x5A) return false;
        return true;
    }
};

void check_real_failure(gpk_context *ctx, const char *what, gpk_status s, const Mapped &out) {
    const std::string message = gpk_context_last_error(ctx);
    CHECK_MSG(s == GPK_ERR_OUT_OF_MEMORY, std::string(what) + ": " + gpk_status_string(s) + ": " + message);
    CHECK_MSG(bytes_named(message) > (kRealLimitMb << 20), std::string(what) + ": " + message);
    CHECK_MSG(out.untouched(), std::string(what) + ": the outputs were written by a failed call");
    std::printf("real failure, %s: %s\n", what, message.c_str());
}

int real_failures_child() {
    gpk_status s;
    gpk_context *ctx = create(3, &s);
    if (!ctx) return 1;
    { // heat: a 1100 x 1100 grid is 9.7 MB, but heat's working memory is the context's workspace, one
        // mapping (cpu/host_memory.hpp) that the allocator's limit does not reach: the call must make no
        // allocation that large and succeed. Its out-of-memory path is the injected faults' (host:N) above.
        const size_t n = 1100, bytes = n * n * sizeof(double);
        Mapped t(bytes), c(bytes), out(bytes);
        std::memset(t.p, 0, bytes);
        std::memset(c.p, 0, bytes);
        gpk_heat_params p;
        gpk_heat_params_init(&p);
        p.rows = p.cols = n;
        p.maxiter = 1;
        s = gpk_heat_run(ctx, &p, static_cast<double *>(t.p), static_cast<double *>(c.p),
                         static_cast<double *>(out.p), nullptr);
        CHECK_MSG(s == GPK_OK, std::string("heat 1100x1100 with allocations capped at ") +
                                   std::to_string(kRealLimitMb) + " MB: " + gpk_context_last_error(ctx));
        CHECK_MSG(!out.untouched(), "heat 1100x1100: tfinal not written");
    }
    { // histogram: 2^21 bins are 16 MB of 64-bit totals
        std::vector<uint32_t> data(1000, 7);
        Mapped hist((size_t(1) << 21) * sizeof(uint64_t));
        gpk_histogram_params p;
        gpk_histogram_params_init(&p);
        p.dtype = GPK_U32;
        p.width = data.size();
        p.bins = size_t(1) << 21;
        p.upper = double(p.bins);
        s = gpk_histogram(ctx, &p, data.data(), static_cast<uint64_t *>(hist.p), nullptr);
        check_real_failure(ctx, "histogram of 2^21 bins", s, hist);
    }
    { // convolution: a row of 2^20 u8 pixels needs a 16 MB ring of float rows for lp3
        const size_t w = size_t(1) << 20;
        std::vector<uint8_t> in(w * 2, 9);
        Mapped out(w * 2);
        gpk_filter *f = nullptr;
        gpk_filter_create_named(&f, "lp3");
        gpk_image ii, oi;
        gpk_image_init(&ii, GPK_U8, w, 2, 1);
        gpk_image_init(&oi, GPK_U8, w, 2, 1);
        gpk_convolve_params p;
        gpk_convolve_params_init(&p);
        p.filter = f;
        s = gpk_convolve(ctx, &p, &ii, in.data(), &oi, out.p);
        gpk_filter_destroy(f);
        check_real_failure(ctx, "convolve lp3 of 2^20 x 2 u8", s, out);
    }
    // The context still works.
    const Case heat = heat_case();
    Outputs out(heat.out_bytes);
    CHECK_OK(ctx, heat.run(ctx, out.bytes()));
    gpk_context_destroy(ctx);
    return check::finish("test_cpu_faults (real failures under ASan)");
}

void real_failures() {
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(len > 0);
    if (len <= 0) return;
    self[len] = '\0';
    std::string options = std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "";
    const std::string saved = options;
    options += (options.empty() ? "" : ":") +
               std::string("allocator_may_return_null=1:max_allocation_size_mb=") +
               std::to_string(kRealLimitMb);
    setenv("ASAN_OPTIONS", options.c_str(), 1);
    std::fflush(stdout); // the child's lines after this process's
    const std::string command = std::string("'") + self + "' --real-failures";
    const int rc = std::system(command.c_str());
    if (saved.empty())
        unsetenv("ASAN_OPTIONS");
    else
        setenv("ASAN_OPTIONS", saved.c_str(), 1);
    CHECK_MSG(rc == 0, "the real-failure child failed (" + command + ", status " + std::to_string(rc) + ")");
}

} // namespace

int main(int argc, char **argv) {
    if (argc > 1 && std::strcmp(argv[1], "--real-failures") == 0) return real_failures_child();
    hooks::require("test_cpu_faults");
    hooks::Hook no_fault("GPK_TEST_FAULT", nullptr);
    std::vector<Case> cases = {heat_case()};
    for (Case &c : histogram_cases()) cases.push_back(c);
    for (Case &c : convolve_cases()) cases.push_back(c);
    int total = 0;
    for (unsigned threads : {1u, 3u}) {
        gpk_status s;
        gpk_context *ctx = create(threads, &s);
        if (!ctx) {
            CHECK_MSG(false, std::string("no CPU context: ") + gpk_context_last_error(nullptr));
            break;
        }
        for (const Case &c : cases) {
            const int injected = inject_each(ctx, threads, c);
            std::printf("%u thread(s), %s: %d host allocation faults injected and survived\n", threads,
                        c.name.c_str(), injected);
            total += injected;
        }
        gpk_context_destroy(ctx);
        const int starts = inject_creation(threads, cases[0]);
        std::printf("%u thread(s), context creation: %d worker start faults injected and survived\n", threads,
                    starts);
        total += starts;
    }
    std::printf("%d faults in all\n", total);
    if (GPK_TEST_ASAN)
        real_failures();
    else
        std::printf(
            "note: not an ASan build; real failures are test_heat's and test_histogram's RLIMIT_AS checks\n");
    return check::finish("test_cpu_faults");
}
