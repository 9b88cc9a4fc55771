// Images of any size whose convolution is known in closed form, for the limits tests (images beyond 2^31
// and 2^32 samples, rows wider than 2^31 pixels) on every backend. The image's samples, padding included,
// follow one period of a fixed pseudo-random table of prime length: sample e of row y (e = x * channels + c)
// is table[(y * stride / sample size + e) % kPeriod]. On Linux the input is one block of a few pages mapped
// over and over (the pattern repeats in whole pages), so that a 4 GB input costs 1 MB of memory and no time.
// Away from the left and right edges an output sample depends only on e % kPeriod and on the rows its
// window reads after the border rule: one row of expected outputs costs kPeriod sums, and the row is compared
// with memcmp against those values repeated. The samples near the left and right edges are summed one by
// one, straight from README's "What gpk computes". Every output sample is checked, and the row padding. A
// read from a wrong row or column, or through a 32-bit offset that wrapped, shows: 2^31 and 2^32 are not
// multiples of the period.
//
// Only the exact integer path (u8/u16 input, integer taps) with normalisation none or sum is modelled.
#pragma once

#include "convolve_params.hpp"
#include "gpk.h"
#include "samples.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

// Sanitizer builds run the multi-gigabyte cases several times slower (over a minute): they skip them.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GPK_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define GPK_TEST_SANITIZED 1
#endif
#endif
#ifndef GPK_TEST_SANITIZED
#define GPK_TEST_SANITIZED 0
#endif

namespace periodic {

constexpr size_t kPeriod = 251;
constexpr unsigned char kPad = 0xA5; // row padding, which must stay untouched

// Work is cut into units of at most this many samples of one row, taken by the threads in turn.
constexpr size_t kUnit = size_t(1) << 22;
// Expected outputs are compared in runs of this many samples (a multiple of the period).
constexpr size_t kRun = kPeriod * 64;

struct Layout {
    gpk_dtype dtype;
    size_t width, height;
    unsigned channels;
    size_t stride; // bytes

    size_t row_elems() const { return width * channels; }
    size_t sample() const { return gpk_dtype_size(dtype); }
    size_t row_bytes() const { return row_elems() * sample(); }
    size_t bytes() const { return stride * height; } // the last row's padding included
    gpk_image desc() const {
        gpk_image d;
        gpk_image_init(&d, dtype, width, height, channels);
        d.stride = stride;
        return d;
    }
    std::string describe() const {
        return std::string(gpk_dtype_name(dtype)) + " " + std::to_string(width) + "x" +
               std::to_string(height) + " c" + std::to_string(channels) + " stride " + std::to_string(stride);
    }
};

// A packed layout, or one with `pad` bytes after each row.
inline Layout layout(gpk_dtype dtype, size_t width, size_t height, unsigned channels, size_t pad = 0) {
    return {dtype, width, height, channels, width * channels * gpk_dtype_size(dtype) + pad};
}

// Integer taps: a 2D filter, or a separable pair, whose taps as the test sums them are the outer product
// col[a] * row[b].
struct Filter {
    int kh = 1, kw = 1;
    std::vector<long long> taps; // kh * kw, row-major
    bool separable = false;
    std::vector<long long> row, col;
    long long sum = 0;

    // A new gpk_filter with these taps (null, after printing why, if the library refuses it).
    gpk_filter *make() const {
        gpk_filter *f = nullptr;
        std::vector<double> r(row.begin(), row.end()), c(col.begin(), col.end()), t(taps.begin(), taps.end());
        gpk_status s = separable ? gpk_filter_create_separable(&f, r.size(), r.data(), c.size(), c.data())
                                 : gpk_filter_create_2d(&f, size_t(kh), size_t(kw), t.data());
        if (s != GPK_OK) std::fprintf(stderr, "filter: %s\n", gpk_context_last_error(nullptr));
        return f;
    }
    std::string describe() const {
        return std::to_string(kh) + "x" + std::to_string(kw) + (separable ? " separable" : "");
    }
};

inline Filter filter_2d(int kh, int kw, std::vector<long long> taps) {
    Filter f;
    f.kh = kh;
    f.kw = kw;
    f.taps = std::move(taps);
    for (long long t : f.taps) f.sum += t;
    return f;
}

inline Filter filter_separable(std::vector<long long> row, std::vector<long long> col) {
    Filter f;
    f.separable = true;
    f.kh = int(col.size());
    f.kw = int(row.size());
    for (long long c : col)
        for (long long r : row) f.taps.push_back(c * r);
    for (long long t : f.taps) f.sum += t;
    f.row = std::move(row);
    f.col = std::move(col);
    return f;
}

struct Conv {
    Filter filter;
    gpk_border border;
    gpk_normalize normalize; // none or sum
};

struct Case {
    Layout in, out;
    Conv conv;
};

// The cases of every backend, about 4.3 GB of output each: a u8 image of more than 2^32 pixels with padded
// rows (clamp, 3x3 with taps 1..9, sum); a two-channel u16 image of more than 2^31 samples through a
// separable filter (reflect, sum); one u8 row of more than 2^32 pixels (wrap: the edges read pixels 2^32
// bytes away; a sharpening 3x3 whose outputs saturate).
inline std::vector<Case> beyond_2_32_cases() {
    const size_t wide = (size_t(1) << 32) + (size_t(1) << 20) + 1;
    return {
        {layout(GPK_U8, 65553, 65537, 1, 13),
         layout(GPK_U8, 65553, 65537, 1, 7),
         {filter_2d(3, 3, {1, 2, 3, 4, 5, 6, 7, 8, 9}), GPK_BORDER_CLAMP, GPK_NORMALIZE_SUM}},
        {layout(GPK_U16, 32771, 32771, 2),
         layout(GPK_U16, 32771, 32771, 2),
         {filter_separable({1, 3, 5, 2, 1}, {2, 3, 1}), GPK_BORDER_REFLECT, GPK_NORMALIZE_SUM}},
        {layout(GPK_U8, wide, 1, 1),
         layout(GPK_U8, wide, 1, 1),
         {filter_2d(3, 3, {0, -1, 0, -2, 7, -1, 0, -2, 0}), GPK_BORDER_WRAP, GPK_NORMALIZE_NONE}},
    };
}

inline std::string describe(const Layout &in, const Layout &out, const Conv &c) {
    return in.describe() + " -> " + out.describe() + ", " + c.filter.describe() + " border " +
           std::to_string(c.border);
}

// gpk_convolve of `c` from in_data (laid out as `in`) to out_data; a filter the library refuses gives
// GPK_ERR_INVALID_ARGUMENT.
inline gpk_status run(gpk_context *ctx, const Conv &c, const Layout &in, const void *in_data,
                      const Layout &out, void *out_data) {
    gpk_filter *f = c.filter.make();
    if (!f) return GPK_ERR_INVALID_ARGUMENT;
    const gpk_convolve_params p = convolve_params(f, c.border, c.normalize);
    const gpk_image di = in.desc(), dout = out.desc();
    const gpk_status s = gpk_convolve(ctx, &p, &di, in_data, &dout, out_data);
    gpk_filter_destroy(f);
    return s;
}

// The border rules (README, "What gpk computes"), by repeated reflection (the library uses modular
// arithmetic): -1 for a zero pixel.
inline long long map_index(long long i, long long n, gpk_border border) {
    if (i >= 0 && i < n) return i;
    switch (border) {
    case GPK_BORDER_ZERO:
        return -1;
    case GPK_BORDER_CLAMP:
        return i < 0 ? 0 : n - 1;
    case GPK_BORDER_WRAP:
        return ((i % n) + n) % n;
    case GPK_BORDER_MIRROR:
        if (n == 1) return 0;
        while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
        return i;
    default:
        while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - 1 - i;
        return i;
    }
}

// The fixed table: 8- or 16-bit values from a 64-bit mix of the index.
struct Table {
    long long u8[kPeriod], u16[kPeriod];
    Table() {
        for (size_t k = 0; k < kPeriod; ++k) {
            uint64_t z = (k + 1) * 0x9E3779B97F4A7C15ull;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            z ^= z >> 31;
            u8[k] = (long long)(z & 0xFF);
            u16[k] = (long long)(z & 0xFFFF);
        }
    }
};
inline long long table_value(size_t k, gpk_dtype t) {
    static const Table table;
    return t == GPK_U8 ? table.u8[k] : table.u16[k];
}

inline size_t phase(long long v) {
    long long m = v % (long long)kPeriod;
    return size_t(m < 0 ? m + (long long)kPeriod : m);
}

// Runs body(y, e0, e1) over every row, cut into units of at most kUnit samples, on `threads` threads.
template <class Body> void for_units(const Layout &l, unsigned threads, Body body) {
    const size_t per_row = (l.row_elems() + kUnit - 1) / kUnit, total = per_row * l.height;
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t u = next++; u < total; u = next++) {
            const size_t y = u / per_row, e0 = (u % per_row) * kUnit;
            body(y, e0, std::min(l.row_elems(), e0 + kUnit));
        }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < std::max(1u, threads); ++t) pool.emplace_back(work);
    work();
    for (auto &t : pool) t.join();
}

// The threads the tests use: every core.
inline unsigned cores() {
    return std::max(1u, std::thread::hardware_concurrency());
}

// Samples [0, kPeriod + n) of the table repeated, as bytes of dtype t.
inline std::vector<unsigned char> repeated_table(gpk_dtype t, size_t n) {
    std::vector<unsigned char> run((kPeriod + n) * gpk_dtype_size(t));
    for (size_t i = 0; i < kPeriod + n; ++i)
        write_sample(t, run.data() + i * gpk_dtype_size(t), double(table_value(i % kPeriod, t)));
    return run;
}

// Writes the image (u8 or u16, padding included) into `data` (l.bytes() bytes).
inline void fill(const Layout &l, unsigned char *data, unsigned threads) {
    const size_t size = l.sample(), samples = l.bytes() / size;
    const std::vector<unsigned char> run = repeated_table(l.dtype, kUnit);
    const Layout flat{l.dtype, samples, 1, 1, l.bytes()};
    for_units(flat, threads, [&](size_t, size_t e0, size_t e1) {
        std::memcpy(data + e0 * size, run.data() + (e0 % kPeriod) * size, (e1 - e0) * size);
    });
}

// The input image, read-only: on Linux one block of kPeriod pages (a whole number of periods) mapped over
// and over, elsewhere (or where mapping fails) a filled buffer. data() is null when there is no memory.
class Input {
public:
    Input(const Layout &l, unsigned threads) : bytes_(l.bytes()) {
#if defined(__linux__)
        const size_t block = kPeriod * size_t(sysconf(_SC_PAGESIZE));
        const size_t blocks = (bytes_ + block - 1) / block;
        std::vector<unsigned char> one(block);
        fill(Layout{l.dtype, block / l.sample(), 1, 1, block}, one.data(), 1);
        char name[] = "/tmp/gpk-periodic-XXXXXX";
        int fd = mkstemp(name);
        if (fd >= 0) {
            unlink(name);
            void *base = MAP_FAILED;
            if (write(fd, one.data(), block) == ssize_t(block))
                base = mmap(nullptr, blocks * block, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                            -1, 0);
            bool ok = base != MAP_FAILED;
            for (size_t i = 0; ok && i < blocks; ++i)
                ok = mmap(static_cast<char *>(base) + i * block, block, PROT_READ, MAP_SHARED | MAP_FIXED, fd,
                          0) != MAP_FAILED;
            close(fd);
            if (ok) {
                data_ = static_cast<unsigned char *>(base);
                mapped_ = blocks * block;
                return;
            }
            if (base != MAP_FAILED) munmap(base, blocks * block);
        }
#endif
        owned_ = static_cast<unsigned char *>(std::malloc(bytes_));
        if (owned_) fill(l, owned_, threads);
        data_ = owned_;
    }
    ~Input() {
#if defined(__linux__)
        if (mapped_) munmap(data_, mapped_);
#endif
        std::free(owned_);
    }
    Input(const Input &) = delete;
    Input &operator=(const Input &) = delete;
    const unsigned char *data() const {
        return data_;
    }
    size_t bytes() const {
        return bytes_;
    }

private:
    size_t bytes_, mapped_ = 0;
    unsigned char *data_ = nullptr, *owned_ = nullptr;
};

// Sets every byte of the image (samples and padding) to kPad, so that an output never written shows.
inline void clear(const Layout &l, unsigned char *data, unsigned threads) {
    for_units(l, threads, [&](size_t y, size_t e0, size_t e1) {
        unsigned char *row = data + y * l.stride;
        const size_t end = e1 == l.row_elems() ? l.stride : e1 * l.sample();
        std::memset(row + e0 * l.sample(), kPad, end - e0 * l.sample());
    });
}

// The input sample at element e of row y.
inline long long input_at(const Layout &in, size_t e, size_t y) {
    return table_value((y * (in.stride / in.sample()) + e) % kPeriod, in.dtype);
}

// Integer division rounding half away from zero (README, "What gpk computes": sum normalisation on the exact
// path).
inline long long divide_rounded(long long n, long long d) {
    long long q = n / d, r = n % d;
    if (2 * (r < 0 ? -r : r) >= (d < 0 ? -d : d)) q += ((n < 0) != (d < 0)) ? -1 : 1;
    return q;
}

// The output sample of the exact sum v, as the bytes of out's dtype (u8, u16 or f32).
inline void finish(long long v, const Conv &c, gpk_dtype out, unsigned char *dst) {
    const bool sum = c.normalize == GPK_NORMALIZE_SUM;
    if (out == GPK_F32 || out == GPK_F64) {
        write_sample(out, dst, sum ? double(v) / double(c.filter.sum) : double(v));
        return;
    }
    long long r = sum ? divide_rounded(v, c.filter.sum) : v;
    const long long top = out == GPK_U8 ? 255 : 65535;
    write_sample(out, dst, double(std::min(std::max(r, 0ll), top)));
}

struct Result {
    size_t mismatches = 0;
    size_t first_y = 0, first_e = 0; // the first mismatch in memory order
    std::string first;
};

// Checks every output sample and the row padding of `out_data` against the closed form.
inline Result check(const Layout &in, const Layout &out, const Conv &c, const unsigned char *out_data,
                    unsigned threads) {
    const Filter &f = c.filter;
    const int rh = f.kh / 2, rw = f.kw / 2;
    const size_t ch = in.channels, n = in.row_elems(), osize = out.sample();
    const size_t pitch = in.stride / in.sample() % kPeriod; // input rows apart, in samples, mod the period
    // Samples [lo, hi) of a row read no pixel outside it.
    const size_t lo = std::min(n, size_t(rw) * ch), hi = std::max(lo, n - std::min(n, size_t(rw) * ch));
    Result result;
    std::mutex mutex;
    // Counts a mismatch; what() describes it, called only for the first one in memory order so far.
    auto record = [&](size_t y, size_t e, auto what) {
        std::lock_guard<std::mutex> lock(mutex);
        if (result.mismatches == 0 || y < result.first_y || (y == result.first_y && e < result.first_e))
            result.first_y = y, result.first_e = e, result.first = what();
        ++result.mismatches;
    };
    for_units(in, threads, [&](size_t y, size_t e0, size_t e1) {
        std::vector<long long> rows(size_t(f.kh));
        for (int a = 0; a < f.kh; ++a)
            rows[size_t(a)] = map_index((long long)y + a - rh, (long long)in.height, c.border);
        auto sum_at = [&](size_t e) { // one output sample, pixel by pixel
            const long long x = (long long)(e / ch);
            long long v = 0;
            for (int a = 0; a < f.kh; ++a)
                for (int b = 0; b < f.kw; ++b) {
                    const long long sx = map_index(x + b - rw, (long long)in.width, c.border);
                    if (rows[size_t(a)] >= 0 && sx >= 0)
                        v += f.taps[size_t(a * f.kw + b)] *
                             input_at(in, size_t(sx) * ch + e % ch, size_t(rows[size_t(a)]));
                }
            return v;
        };
        // Interior outputs by phase, then repeated.
        std::vector<unsigned char> want((kPeriod + kRun) * osize);
        for (size_t k = 0; k < kPeriod; ++k) {
            long long v = 0;
            for (int a = 0; a < f.kh; ++a)
                for (int b = 0; b < f.kw; ++b)
                    if (rows[size_t(a)] >= 0)
                        v += f.taps[size_t(a * f.kw + b)] *
                             table_value(phase((long long)k + (long long)(b - rw) * (long long)ch +
                                               (long long)pitch * rows[size_t(a)]),
                                         in.dtype);
            finish(v, c, out.dtype, want.data() + k * osize);
        }
        for (size_t k = kPeriod; k < kPeriod + kRun; k += kPeriod)
            std::memcpy(want.data() + k * osize, want.data(), std::min(kPeriod, kPeriod + kRun - k) * osize);
        const unsigned char *row = out_data + y * out.stride;
        unsigned char expect[8];
        auto compare_one = [&](size_t e, const unsigned char *w) {
            if (std::memcmp(row + e * osize, w, osize) == 0) return true;
            record(y, e, [&] {
                return "x " + std::to_string(e / ch) + " y " + std::to_string(y) + " channel " +
                       std::to_string(e % ch) + " (byte " + std::to_string(y * out.stride + e * osize) +
                       ") is " + std::to_string(read_sample(out.dtype, row + e * osize)) + ", expected " +
                       std::to_string(read_sample(out.dtype, w));
            });
            return false;
        };
        for (size_t e = e0; e < e1;) {
            if (e < lo || e >= hi) {
                finish(sum_at(e), c, out.dtype, expect);
                compare_one(e, expect);
                ++e;
                continue;
            }
            const size_t len = std::min({kRun, e1 - e, hi - e});
            const unsigned char *w = want.data() + (e % kPeriod) * osize;
            if (std::memcmp(row + e * osize, w, len * osize) != 0)
                for (size_t i = 0; i < len; ++i) compare_one(e + i, w + i * osize);
            e += len;
        }
        if (e1 == n)
            for (size_t b = out.row_bytes(); b < out.stride; ++b)
                if (row[b] != kPad) {
                    record(y, n, [&] {
                        return "padding byte " + std::to_string(b) + " of row " + std::to_string(y) +
                               " written";
                    });
                    break;
                }
    });
    return result;
}

// Bytes of memory the system can still give (MemAvailable), or 0 where unknown.
inline size_t available_memory() {
#if defined(__linux__)
    if (FILE *f = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        unsigned long long kb = 0;
        while (std::fgets(line, sizeof line, f))
            if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
        std::fclose(f);
        return size_t(kb) * 1024;
    }
#endif
    return 0;
}

} // namespace periodic
