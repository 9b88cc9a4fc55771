// The CPU convolution: each thread filters a band of rows. A ring holds the rows that the filter's
// window covers, already converted to the accumulation type and widened by the border on both sides,
// so the tap loop (convolve_rows.cpp) runs without a branch. A separable filter keeps row-filtered
// rows in the ring instead. Min/max normalisation filters the whole image into a buffer first.
#include "cpu/convolve_rows.hpp"
#include "cpu/kernels.hpp"

#include "common/semantics.hpp"
#include "engine/error.hpp"
#include "engine/filter.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

namespace gpk::cpu {
namespace {

using conv::padded_length;

// A zero-filled buffer of `count` elements; running out of memory names the bytes asked for.
template <class T> std::unique_ptr<T[]> allocate(size_t count, bool zeroed = true) {
    if (count > std::numeric_limits<size_t>::max() / sizeof(T))
        fail(GPK_ERR_OUT_OF_MEMORY,
             "convolve: a buffer of " + std::to_string(count) + " elements is too large");
    T *p = zeroed ? new (std::nothrow) T[count]() : new (std::nothrow) T[count];
    if (!p)
        fail(GPK_ERR_OUT_OF_MEMORY,
             "convolve: out of host memory allocating " + std::to_string(count * sizeof(T)) + " bytes");
    return std::unique_ptr<T[]>(p);
}

long long positive_mod(long long a, long long m) {
    return ((a % m) + m) % m;
}

// The filter in accumulation type A, and the image geometry.
template <class A> struct Plan {
    const ConvolveJob *job = nullptr;
    size_t width = 0, height = 0, n = 0; // n = samples per row
    unsigned channels = 1;
    int border = 0;
    bool separable = false;
    int kh = 1, rh = 0;         // window rows (2D rows, or column-filter length)
    int kw = 1, rw = 0;         // 2D columns, or row-filter length
    std::vector<A> window_taps; // the taps applied over the ring: 2D kh*kw, separable the column filter
    std::vector<A> row_taps;    // separable: the row filter
    size_t line_length = 0;     // a bordered input line, padded for the tap loop
    size_t ring_row_length = 0; // a ring row: a bordered line (2D) or a row-filtered row (separable)
};

template <class A> std::vector<A> taps_as(const std::vector<double> &taps) {
    std::vector<A> out(taps.size());
    for (size_t i = 0; i < taps.size(); ++i) out[i] = A(taps[i]);
    return out;
}

template <class A> Plan<A> make_plan(const ConvolveJob &job) {
    const gpk_filter &f = *job.filter;
    Plan<A> p;
    p.job = &job;
    p.width = job.in.width;
    p.height = job.in.height;
    p.channels = job.in.channels;
    p.n = p.width * p.channels;
    p.border = int(job.border);
    p.separable = f.separable;
    p.kh = f.kh;
    p.kw = f.kw;
    p.rh = f.kh / 2;
    p.rw = f.kw / 2;
    if (f.separable) {
        p.window_taps = taps_as<A>(f.col);
        p.row_taps = taps_as<A>(f.row);
        // An all-zero column filter makes every output exactly 0, whatever the row pass gives; its
        // (possibly huge) taps are then not needed and need not fit the accumulator.
        bool zero_col = std::all_of(f.col.begin(), f.col.end(), [](double t) { return t == 0; });
        if (zero_col) std::fill(p.row_taps.begin(), p.row_taps.end(), A(0));
    } else {
        p.window_taps = taps_as<A>(f.taps);
    }
    p.line_length = padded_length<A>(p.n) + size_t(2 * p.rw) * p.channels;
    p.ring_row_length = f.separable ? padded_length<A>(p.n) : p.line_length;
    return p;
}

template <class A> void convert_row(gpk_dtype dtype, const void *src, A *dst, size_t n) {
    switch (dtype) {
    case GPK_U8:
        conv::convert_samples(static_cast<const uint8_t *>(src), dst, n);
        return;
    case GPK_U16:
        conv::convert_samples(static_cast<const uint16_t *>(src), dst, n);
        return;
    default:
        if constexpr (std::is_floating_point_v<A>) {
            if (dtype == GPK_F32)
                conv::convert_samples(static_cast<const float *>(src), dst, n);
            else
                conv::convert_samples(static_cast<const double *>(src), dst, n);
            return;
        }
        fail(GPK_ERR_INTERNAL, "convolve: an integer accumulator for a float image");
    }
}

// Converts input row `sy` into `line`, with rw pixels on each side read through the border rule.
template <class A> void load_bordered_line(const Plan<A> &p, size_t sy, A *line) {
    const ConvolveJob &job = *p.job;
    const size_t c = p.channels;
    A *interior = line + size_t(p.rw) * c;
    convert_row(job.in.dtype, static_cast<const char *>(job.in_data) + sy * job.in.stride, interior, p.n);
    auto fill = [&](long long x) {
        A *dst = interior + x * (long long)c;
        long long sx = border_index(x, (long long)p.width, p.border);
        for (size_t k = 0; k < c; ++k) dst[k] = sx < 0 ? A(0) : interior[size_t(sx) * c + k];
    };
    for (long long x = -p.rw; x < 0; ++x) fill(x);
    for (long long x = (long long)p.width; x < (long long)p.width + p.rw; ++x) fill(x);
}

// Filters rows [y0, y1): target(y) gives the padded row that receives output row y's accumulated
// values, then done(y, row) is called.
template <class A, class Target, class Done>
void filter_band(const Plan<A> &p, size_t y0, size_t y1, Target &&target, Done &&done) {
    const size_t slots = size_t(p.kh) + conv::kMaxRowsPerPass - 1; // window positions kept in the ring
    auto ring = allocate<A>(slots * p.ring_row_length);
    auto line = allocate<A>(p.separable ? p.line_length : 0);
    std::vector<const A *> slot_row(slots), window(slots);

    // Fills the ring slot of window position `pos` (an input row index, maybe outside the image).
    auto load = [&](long long pos) {
        const size_t slot = size_t(positive_mod(pos, (long long)slots));
        const long long sy = border_index(pos, (long long)p.height, p.border);
        A *row = ring.get() + slot * p.ring_row_length;
        slot_row[slot] = sy < 0 ? nullptr : row;
        if (sy < 0) return;
        if (!p.separable) {
            load_bordered_line(p, size_t(sy), row);
            return;
        }
        load_bordered_line(p, size_t(sy), line.get());
        const A *src = line.get();
        conv::correlate(&src, p.row_taps.data(), 1, p.kw, p.channels, &row, 1, p.n);
    };

    long long next = (long long)y0 - p.rh; // the next window position to load
    const int window_kw = p.separable ? 1 : p.kw;
    for (size_t y = y0; y < y1;) {
        const int rows = int(std::min<size_t>(conv::kMaxRowsPerPass, y1 - y));
        for (; next <= (long long)y + rows - 1 + p.rh; ++next) load(next);
        for (size_t a = 0; a < size_t(p.kh + rows - 1); ++a)
            window[a] = slot_row[size_t(positive_mod((long long)y - p.rh + (long long)a, (long long)slots))];
        A *out[conv::kMaxRowsPerPass];
        for (int r = 0; r < rows; ++r) out[r] = target(y + size_t(r));
        conv::correlate(window.data(), p.window_taps.data(), p.kh, window_kw, p.channels, out, rows, p.n);
        for (int r = 0; r < rows; ++r) done(y + size_t(r), out[r]);
        y += size_t(rows);
    }
}

template <class A>
void finish_output_row(const ConvolveJob &job, const A *acc, size_t y, const conv::RowFinish &f) {
    void *row = static_cast<char *>(job.out_data) + y * job.out.stride;
    const size_t n = job.out.width * job.out.channels;
    switch (job.out.dtype) {
    case GPK_U8:
        return conv::finish_row(acc, static_cast<uint8_t *>(row), n, f);
    case GPK_U16:
        return conv::finish_row(acc, static_cast<uint16_t *>(row), n, f);
    case GPK_F32:
        return conv::finish_row(acc, static_cast<float *>(row), n, f);
    default:
        return conv::finish_row(acc, static_cast<double *>(row), n, f);
    }
}

// Outputs at least this large are written past the caches: they cannot stay there anyway, and reading
// their lines in before overwriting them would cost as much memory traffic as the writes.
constexpr size_t kStreamingBytes = size_t(32) << 20;

// Bands of at least this many samples per thread, so that small images do not pay for a fork.
constexpr size_t kMinSamplesPerBand = 1 << 14;

size_t band_grain(size_t n) {
    return std::max<size_t>(1, kMinSamplesPerBand / std::max<size_t>(1, n));
}

template <class A> void convolve_direct(ThreadPool &pool, const Plan<A> &p, const conv::RowFinish &f) {
    pool.parallel_for(
        p.height,
        [&](size_t y0, size_t y1) {
            const size_t pitch = padded_length<A>(p.n);
            auto acc = allocate<A>(conv::kMaxRowsPerPass * pitch);
            filter_band(
                p, y0, y1, [&](size_t y) { return acc.get() + y % conv::kMaxRowsPerPass * pitch; },
                [&](size_t y, const A *row) { finish_output_row(*p.job, row, y, f); });
        },
        band_grain(p.n));
}

template <class A> struct ChannelRange {
    A lo[4], hi[4];
    ChannelRange() {
        constexpr A top = std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity()
                                                               : std::numeric_limits<A>::max();
        for (int c = 0; c < 4; ++c) lo[c] = top, hi[c] = -top;
    }
    void widen(const ChannelRange &o, unsigned channels) {
        for (unsigned c = 0; c < channels; ++c) {
            lo[c] = o.lo[c] < lo[c] ? o.lo[c] : lo[c];
            hi[c] = o.hi[c] > hi[c] ? o.hi[c] : hi[c];
        }
    }
};

// Min/max normalisation needs the range of the whole image before any output: filter into a buffer,
// reduce per channel, then normalise.
template <class A> void convolve_minmax(ThreadPool &pool, const Plan<A> &p, conv::RowFinish f) {
    const size_t pitch = padded_length<A>(p.n);
    if (p.height > std::numeric_limits<size_t>::max() / pitch)
        fail(GPK_ERR_OUT_OF_MEMORY, "convolve: the min/max buffer is too large");
    auto filtered = allocate<A>(p.height * pitch, false);
    ChannelRange<A> range;
    std::mutex range_mutex;
    pool.parallel_for(
        p.height,
        [&](size_t y0, size_t y1) {
            ChannelRange<A> band;
            filter_band(
                p, y0, y1, [&](size_t y) { return filtered.get() + y * pitch; },
                [&](size_t, const A *row) { conv::row_min_max(row, p.n, p.channels, band.lo, band.hi); });
            std::lock_guard<std::mutex> lock(range_mutex);
            range.widen(band, p.channels);
        },
        band_grain(p.n));
    for (unsigned c = 0; c < p.channels; ++c) {
        f.min_value[c] = double(range.lo[c]);
        f.max_value[c] = double(range.hi[c]);
        if (f.exact) f.min_int[c] = (long long)range.lo[c], f.max_int[c] = (long long)range.hi[c];
    }
    pool.parallel_for(
        p.height,
        [&](size_t y0, size_t y1) {
            for (size_t y = y0; y < y1; ++y) finish_output_row(*p.job, filtered.get() + y * pitch, y, f);
        },
        band_grain(p.n));
}

template <class A> void convolve_as(ThreadPool &pool, const ConvolveJob &job, const conv::RowFinish &f) {
    const Plan<A> p = make_plan<A>(job);
    if (job.normalize == GPK_NORMALIZE_MINMAX)
        convolve_minmax(pool, p, f);
    else
        convolve_direct(pool, p, f);
}

double sum_of_abs(const std::vector<double> &taps) {
    double s = 0;
    for (double t : taps) s += std::fabs(t);
    return s;
}

// The largest magnitude any partial sum of the exact path can reach: sums of |taps| times the largest
// sample, for the row pass and for the whole. Below 2^53 the doubles here are exact.
double exact_bound(const ConvolveJob &job) {
    const gpk_filter &f = *job.filter;
    const double top = job.in.dtype == GPK_U8 ? 255.0 : 65535.0;
    if (!f.separable) return sum_of_abs(f.taps) * top;
    const double col = sum_of_abs(f.col);
    if (col == 0) return 0; // every output is 0 and the row pass is skipped (make_plan)
    return std::max(sum_of_abs(f.row), sum_of_abs(f.row) * col) * top;
}

} // namespace

void convolve(ThreadPool &pool, const ConvolveJob &job) {
    conv::RowFinish f;
    f.exact = job.exact_integer;
    f.normalize = job.normalize;
    f.channels = job.in.channels;
    f.sum = job.filter->sum;
    f.stream_output = job.out.stride * job.out.height >= kStreamingBytes;
    if (!job.exact_integer) {
        if (job.accumulate_f64)
            convolve_as<double>(pool, job, f);
        else
            convolve_as<float>(pool, job, f);
        return;
    }
    // Exact: the narrowest type that holds every partial sum exactly (integers below 2^24 are exact in
    // float, below 2^53 in double).
    f.exact_bound = exact_bound(job);
    if (f.exact_bound < 0x1p24)
        convolve_as<float>(pool, job, f);
    else if (f.exact_bound < 0x1p31)
        convolve_as<int32_t>(pool, job, f);
    else if (f.exact_bound < 0x1p53)
        convolve_as<double>(pool, job, f);
    else
        convolve_as<int64_t>(pool, job, f);
}

} // namespace gpk::cpu
