// The CPU convolution: threads take chunks of rows and filter them (convolve_band.hpp) with the row kernels
// of convolve_rows.cpp and convolve_finish.cpp; rows too long for a thread's scratch are cut into column
// strips, so that chunks are strips of rows. Min/max normalisation filters the whole image into a buffer
// first, reduces it per channel, then normalises.
#include "engine/test_hooks.hpp"
#include "cpu/convolve_band.hpp"
#include "cpu/kernels.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace gpk::cpu {
namespace {

using conv::BandScratch;
using conv::Plan;

// Writes output samples [x0, x0 + n) of row y from their accumulated values.
template <class A>
void finish_output_samples(const ConvolveJob &job, const A *acc, size_t y, size_t x0, size_t n,
                           const conv::RowFinish &f) {
    void *at = static_cast<char *>(job.out_data) + y * job.out.stride + x0 * gpk_dtype_size(job.out.dtype);
    switch (job.out.dtype) {
    case GPK_U8:
        return conv::finish_row(acc, static_cast<uint8_t *>(at), n, f);
    case GPK_U16:
        return conv::finish_row(acc, static_cast<uint16_t *>(at), n, f);
    case GPK_F32:
        return conv::finish_row(acc, static_cast<float *>(at), n, f);
    default:
        return conv::finish_row(acc, static_cast<double *>(at), n, f);
    }
}

// Outputs at least this large are written past the caches where rows are finished (converted or normalised)
// from accumulated rows, a row at a time: they cannot stay there anyway, and reading their lines in before
// overwriting them would cost as much memory traffic as the writes. Rows the tap loop writes directly take
// plain stores (convolve_band.hpp, RowTarget).
constexpr size_t kStreamingBytes = size_t(32) << 20;

// Runs body(state, begin, end) over [0, total) in chunks that the pool's threads take in turn, so that a
// thread slowed by other load does not hold the others up. Each thread makes its state (its buffers) once,
// and all states exist before any chunk runs: a thread that cannot have its memory then fails the call
// before any output is written, instead of after the other threads have written theirs.
template <class MakeState, class Body>
void for_each_chunk(ThreadPool &pool, size_t total, size_t chunk, MakeState &&make_state, Body &&body) {
    const size_t chunks = (total + chunk - 1) / chunk;
    const unsigned parts = unsigned(std::min<size_t>(chunks, pool.size()));
    std::vector<std::optional<decltype(make_state())>> states(parts);
    pool.run([&](unsigned part, unsigned) { states[part].emplace(make_state()); }, parts);
    std::atomic<size_t> next{0};
    pool.run(
        [&](unsigned part, unsigned) {
            auto &state = *states[part];
            for (size_t c = next++; c < chunks; c = next++)
                body(state, c * chunk, std::min(total, (c + 1) * chunk));
        },
        parts);
}

// Rows per chunk: each chunk loads the filter's halo again (kh - 1 rows, row-filtered when separable), so a
// chunk is several halos tall; and at least 64k samples, so that small images do not pay for a fork.
size_t chunk_rows(int kh, size_t samples) {
    const size_t by_halo = std::max<size_t>(32, 8 * size_t(kh - 1));
    return std::max(by_halo, size_t(1 << 16) / std::max<size_t>(1, samples));
}

// Rows whose whole-row scratch (one thread's ring, row-pass line and accumulator rows) would pass this are
// cut into column strips. A 16384-pixel row of 4 channels (65,536 samples) needs at most about 70 MB (a
// 129-tap column filter with 8-byte sums: 130 ring rows), so ordinary images never take strips and keep
// the whole-row path as it was; a u8 image with a 3x3 filter (float sums, 24 bytes a sample) takes them
// from about 5.6 million samples a row.
constexpr double kWholeRowScratchBytes = double(size_t(128) << 20);

// Samples per column strip (rounded up to whole blocks of the tap loop and whole pixels): tens of
// thousands, so that the halo read again on each side costs little, while a thread's scratch stays at
// (kh + 3) strip rows: 0.8 MB for a 3x3 filter with float sums, about 35 MB for the largest filter.
constexpr size_t kStripSamples = size_t(1) << 15;

// How the image is cut into units of work that the threads take in turn: chunks of `rows` rows, each of
// them whole rows (strips == 1) or cut into `strips` column strips of `strip` samples (the last one
// narrower). `padded` and `source_length` bound the Columns of every unit (the scratch's sizes).
struct Tiling {
    size_t height = 0, n = 0;
    size_t rows = 0, chunks = 0;
    size_t strip = 0, strips = 0;
    size_t padded = 0, source_length = 0;
};

template <class A> Tiling tiling(const Plan<A> &p) {
    Tiling t;
    t.height = p.height;
    t.n = p.n;
    const conv::Columns whole = conv::columns(p, 0, p.n);
    const double slots = double(p.kh + conv::kMaxRowsPerPass - 1);
    const double whole_bytes =
        (slots * double(whole.ring_row_length) + double(p.separable ? whole.source_length : 0) +
         double(conv::kMaxRowsPerPass) * double(whole.padded)) *
        sizeof(A);
    const size_t forced = test_hooks().conv_cpu_strip; // GPK_TEST_CONV_CPU_STRIP
    if (!forced && whole_bytes <= kWholeRowScratchBytes) {
        t.strip = p.n;
        t.strips = 1;
        t.padded = whole.padded;
        t.source_length = whole.source_length;
    } else {
        const size_t unit = std::lcm(conv::block_elems<A>(), size_t(p.channels));
        t.strip = ((forced ? forced : kStripSamples) + unit - 1) / unit * unit;
        t.strips = (p.n + t.strip - 1) / t.strip;
        t.padded = conv::padded_length<A>(t.strip);
        // A strip's lines: a bordered line of padded + 2 * halo, or two edge lines that leave out at least a
        // block of it but each carry both halos (conv::set_columns).
        t.source_length = t.padded + 4 * p.halo;
    }
    t.rows = chunk_rows(p.kh, std::min(t.strip, p.n));
    t.chunks = (p.height + t.rows - 1) / t.rows;
    return t;
}

// Runs body(state, y0, y1, x0, n) for every unit of t (rows [y0, y1), samples [x0, x0 + n) of each); for
// whole rows these are for_each_chunk's chunks of rows.
template <class MakeState, class Body>
void for_each_unit(ThreadPool &pool, const Tiling &t, MakeState &&make_state, Body &&body) {
    for_each_chunk(pool, t.chunks * t.strips, 1, make_state, [&](auto &state, size_t u, size_t) {
        const size_t y0 = u / t.strips * t.rows, x0 = u % t.strips * t.strip;
        body(state, y0, std::min(t.height, y0 + t.rows), x0, std::min(t.strip, t.n - x0));
    });
}

// True when output samples are the accumulated values themselves: the output has type A and no
// normalisation (integer values held in a float A are stored as they are too). The tap loop then writes
// the output rows directly.
template <class A> bool output_is_accumulator(const ConvolveJob &job) {
    const bool same = (std::is_same_v<A, float> && job.out.dtype == GPK_F32) ||
                      (std::is_same_v<A, double> && job.out.dtype == GPK_F64);
    return same && job.normalize == GPK_NORMALIZE_NONE;
}

template <class A> void convolve_direct(ThreadPool &pool, const Plan<A> &p, const conv::RowFinish &f) {
    const Tiling t = tiling(p);
    const ConvolveJob &job = *p.job;
    const bool direct = output_is_accumulator<A>(job);
    struct State {
        BandScratch<A> scratch;
        HostArray<A> acc;
    };
    for_each_unit(
        pool, t,
        [&] {
            return State{
                BandScratch<A>(p, t.padded, t.source_length),
                host_array<A>(conv::kMaxRowsPerPass * t.padded, "convolve", "a thread's output rows")};
        },
        [&](State &s, size_t y0, size_t y1, size_t x0, size_t n) {
            s.scratch.set(p, x0, n);
            // Whole blocks of the row go straight to the output; a last, partial one is finished from the
            // scratch row.
            const size_t direct_end = direct ? n / conv::block_elems<A>() * conv::block_elems<A>() : 0;
            conv::filter_band(
                p, s.scratch, y0, y1,
                [&](size_t y) {
                    conv::RowTarget<A> target;
                    target.scratch = s.acc.get() + y % conv::kMaxRowsPerPass * t.padded;
                    if (direct_end > 0) {
                        target.direct =
                            reinterpret_cast<A *>(static_cast<char *>(job.out_data) + y * job.out.stride) +
                            x0;
                        target.direct_end = direct_end;
                    }
                    return target;
                },
                [&](size_t y, const conv::RowTarget<A> &target) {
                    const size_t done = target.direct_end;
                    if (done < n)
                        finish_output_samples(job, target.scratch + done, y, x0 + done, n - done, f);
                });
        });
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
    const size_t pitch = conv::padded_length<A>(p.n);
    if (p.height > std::numeric_limits<size_t>::max() / pitch)
        fail(GPK_ERR_OUT_OF_MEMORY, "convolve: the min/max buffer is too large");
    const Tiling t = tiling(p);
    const LargeBuffer<A> filtered(p.height * pitch, "convolve", "the filtered image (min/max normalisation)");
    ChannelRange<A> range;
    std::mutex range_mutex;
    for_each_unit(
        pool, t, [&] { return BandScratch<A>(p, t.padded, t.source_length); },
        [&](BandScratch<A> &s, size_t y0, size_t y1, size_t x0, size_t n) {
            s.set(p, x0, n);
            ChannelRange<A> band;
            const ConvolveJob &job = *p.job;
            conv::filter_band(
                p, s, y0, y1,
                [&](size_t y) {
                    conv::RowTarget<A> target;
                    target.scratch = filtered.get() + y * pitch + x0;
                    return target;
                },
                [&](size_t y, const conv::RowTarget<A> &target) {
                    if (y >= job.range_begin && y < job.range_end)
                        conv::row_min_max(target.scratch, n, p.channels, band.lo, band.hi);
                });
            std::lock_guard<std::mutex> lock(range_mutex);
            range.widen(band, p.channels);
        });
    for (unsigned c = 0; c < p.channels; ++c) {
        f.min_value[c] = double(range.lo[c]);
        f.max_value[c] = double(range.hi[c]);
        if (f.exact) f.min_int[c] = (long long)range.lo[c], f.max_int[c] = (long long)range.hi[c];
    }
    if (p.job->range_fn && p.job->range_fn(p.job->range_user, p.channels, f.exact, f.min_value, f.max_value,
                                           f.min_int, f.max_int))
        fail(GPK_ERR_CANCELLED, "convolve: stopped by the range callback before the output was written");
    for_each_unit(
        pool, t, [] { return 0; },
        [&](int, size_t y0, size_t y1, size_t x0, size_t n) {
            for (size_t y = y0; y < y1; ++y)
                finish_output_samples(*p.job, filtered.get() + y * pitch + x0, y, x0, n, f);
        });
}

template <class A> void convolve_as(ThreadPool &pool, const ConvolveJob &job, const conv::RowFinish &f) {
    const Plan<A> p = conv::make_plan<A>(job);
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
    if (col == 0) return 0; // every output is 0: make_plan zeroes the row taps
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
