// The CPU convolution: threads take chunks of rows and filter them (convolve_band.hpp) with the row kernels
// of convolve_rows.cpp and convolve_finish.cpp. Min/max normalisation filters the whole image into a
// buffer first, reduces it per channel, then normalises.
#include "cpu/convolve_band.hpp"
#include "cpu/kernels.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

namespace gpk::cpu {
namespace {

using conv::BandScratch;
using conv::Plan;

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
template <class A> size_t chunk_rows(const Plan<A> &p) {
    const size_t by_halo = std::max<size_t>(32, 8 * size_t(p.kh - 1));
    return std::max(by_halo, size_t(1 << 16) / std::max<size_t>(1, p.n));
}

template <class A> void convolve_direct(ThreadPool &pool, const Plan<A> &p, const conv::RowFinish &f) {
    const size_t pitch = p.padded;
    struct State {
        BandScratch<A> scratch;
        HostArray<A> acc;
    };
    for_each_chunk(
        pool, p.height, chunk_rows(p),
        [&] {
            return State{BandScratch<A>(p),
                         host_array<A>(conv::kMaxRowsPerPass * pitch, "convolve", "a thread's output rows")};
        },
        [&](State &s, size_t y0, size_t y1) {
            conv::filter_band(
                p, s.scratch, y0, y1,
                [&](size_t y) { return s.acc.get() + y % conv::kMaxRowsPerPass * pitch; },
                [&](size_t y, const A *row) { finish_output_row(*p.job, row, y, f); });
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
    const size_t pitch = p.padded;
    if (p.height > std::numeric_limits<size_t>::max() / pitch)
        fail(GPK_ERR_OUT_OF_MEMORY, "convolve: the min/max buffer is too large");
    const LargeBuffer<A> filtered(p.height * pitch, "convolve", "the filtered image (min/max normalisation)");
    ChannelRange<A> range;
    std::mutex range_mutex;
    for_each_chunk(
        pool, p.height, chunk_rows(p), [&] { return BandScratch<A>(p); },
        [&](BandScratch<A> &s, size_t y0, size_t y1) {
            ChannelRange<A> band;
            conv::filter_band(
                p, s, y0, y1, [&](size_t y) { return filtered.get() + y * pitch; },
                [&](size_t, const A *row) { conv::row_min_max(row, p.n, p.channels, band.lo, band.hi); });
            std::lock_guard<std::mutex> lock(range_mutex);
            range.widen(band, p.channels);
        });
    for (unsigned c = 0; c < p.channels; ++c) {
        f.min_value[c] = double(range.lo[c]);
        f.max_value[c] = double(range.hi[c]);
        if (f.exact) f.min_int[c] = (long long)range.lo[c], f.max_int[c] = (long long)range.hi[c];
    }
    for_each_chunk(
        pool, p.height, chunk_rows(p), [] { return 0; },
        [&](int, size_t y0, size_t y1) {
            for (size_t y = y0; y < y1; ++y) finish_output_row(*p.job, filtered.get() + y * pitch, y, f);
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
