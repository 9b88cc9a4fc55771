// The CPU histogram (README, "What gpk computes"). Threads take chunks of contiguous pixels as they come
// free. Each thread counts into several interleaved 32-bit sub-tables ("lanes": consecutive samples go to
// different tables, so runs of equal samples do not wait on one counter), flushed into 64-bit totals
// before any of them could overflow; the totals of all threads are added at the end. u8 and u16
// samples are counted by value and mapped to bins afterwards (256 or 65536 values, each binned once
// with the shared rule), so every bin layout runs at the speed of the direct one. Tables too large
// for this are counted in 64-bit directly.
#include "common/semantics.hpp"
#include "cpu/histogram_planes.hpp"
#include "cpu/host_memory.hpp"
#include "cpu/kernels.hpp"
#include "engine/error.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace gpk::cpu {
namespace {

// Below this many samples, or per table entry, threads cost more than they save.
constexpr size_t kParallelSamples = size_t(1) << 15;
// Samples counted into 32-bit lanes between flushes: below 2^32 and a multiple of every channel count.
constexpr size_t kFlushSamples = size_t(12) << 28;
// Small lane tables of a thread stay in L1 (more lanes than fit there measured slower).
constexpr size_t kLaneBytes = size_t(16) << 10;
// Chunks of pixels per thread, taken dynamically.
constexpr size_t kChunksPerThread = 16;
// Beyond this many entries per thread, count in 64-bit directly (no lanes, no flushes).
constexpr size_t kWideEntries = size_t(1) << 22;
// Thread-private tables of all threads together, before fewer threads are used.
constexpr size_t kTableBudget = size_t(512) << 20;

// The scalar kernels prefetch their samples this far ahead, once per 32 bytes they count: the hardware
// prefetchers alone leave a core's stream of samples far slower than data already in L2, and 4 KiB ahead
// measured faster than 2 or 8 KiB ahead and than bursts of a block's lines ahead of it.
constexpr size_t kPrefetchAhead = 4096;
inline void prefetch_ahead(const unsigned char *p) {
    __builtin_prefetch(p + kPrefetchAhead, 0, 3);
}

template <class T> T load(const unsigned char *p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// How a sample becomes an index into a table of `table_size` entries.
struct ValueIndex { // u8, u16: the value itself, binned after counting
    template <class T> size_t operator()(T v) const { return v; }
};
struct DirectIndex { // integer samples with lower 0, upper == bins: the value; `bins` = not counted
    uint64_t bins;
    template <class T> size_t operator()(T v) const {
        uint64_t x = uint64_t(int64_t(v)); // negative i32 becomes huge
        return x < bins ? size_t(x) : size_t(bins);
    }
};
struct RangeIndex { // the general rule in double; `bins` = not counted
    double lower, upper, scale;
    long long bins;
    template <class T> size_t operator()(T v) const {
        long long b = histogram_bin(double(v), lower, upper, scale, bins);
        return b < 0 ? size_t(bins) : size_t(b);
    }
};

// Entries from one lane table to the next: the table padded by 64 bytes, so that no two lanes lie a
// multiple of 4 KiB apart. Equal values counted into different lanes (runs of equal samples are spread
// over the lanes for that) would otherwise alias: a load whose address matches an earlier store's in the
// low 12 bits waits for it, and with 1 KiB u8 tables lanes 0 and 4 did.
constexpr size_t lane_stride(size_t table_size) {
    return (table_size + 15) / 16 * 16 + 16;
}

struct Plan {
    size_t table_size = 0;  // entries per table
    size_t lane_stride = 0; // entries from one lane to the next
    unsigned lanes = 1;     // tables per thread, a multiple of the channel count
    bool wide = false;      // count into the 64-bit totals directly
    unsigned parts = 1;
};

// One thread's counts: `lanes` 32-bit tables, and 64-bit totals per channel.
struct PartCounts {
    HostArray<uint32_t> lanes;
    HostArray<uint64_t> totals;
    size_t pending = 0; // samples counted into the lanes since the last flush

    void flush(const Plan &plan, unsigned channels) {
        size_t ts = plan.table_size;
        for (unsigned l = 0; l < lanes.size() / plan.lane_stride; ++l) {
            uint32_t *lane = lanes.get() + l * plan.lane_stride;
            uint64_t *total = totals.get() + (l % channels) * ts;
            for (size_t i = 0; i < ts; ++i) total[i] += lane[i];
            std::fill(lane, lane + ts, 0u);
        }
        pending = 0;
    }
};

// Kernels count `samples` consecutive samples from p (a whole number of pixels) into L tables `ts`
// entries apart (the lanes, or the per-channel totals when counting wide): sample g of a group goes to
// table g % L, whose channel is g % C since C divides L.

// Any sample type, any index rule.
template <class T, unsigned L, class Index> struct SampleKernel {
    using Sample = T;
    Index index;
    size_t ts;
    template <class Counter> void operator()(const unsigned char *p, size_t samples, Counter *tables) const {
        const Index index = this->index; // locals: stores to the tables cannot change them
        const size_t ts = this->ts;
        size_t s = 0;
        for (; s + L <= samples; s += L, p += L * sizeof(T)) {
            if ((s * sizeof(T)) % 32 < L * sizeof(T)) prefetch_ahead(p); // a group that starts a 32-byte span
            for (unsigned l = 0; l < L; ++l) ++tables[l * ts + index(load<T>(p + l * sizeof(T)))];
        }
        for (unsigned l = 0; s < samples; ++s, ++l, p += sizeof(T)) ++tables[l * ts + index(load<T>(p))];
    }
};

// u8 and u16 by value, pixels of 1, 2 or 4 bytes, in groups of four 8-byte words: a group that repeats one
// pixel (flat regions, all-equal data) costs one addition per channel; otherwise each sample is shifted out
// of its word (one load a word, not one a sample). Sample g of a word has channel g % C (words hold whole
// pixels), and the words of a group take their channel's L / C lanes in turn. Two lanes of u8, not eight:
// fewer tables and fewer cache lines in flight measured faster on random data.
template <class T, unsigned C, unsigned L> struct ValueRunKernel {
    using Sample = T;
    static_assert(L % C == 0, "lanes a multiple of the channels");
    static constexpr size_t kStride = lane_stride(size_t(1) << (8 * sizeof(T))); // a constant: folds into
                                                                                 // addresses
    static constexpr unsigned kPixelBytes = sizeof(T) * C, kWordSamples = 8 / sizeof(T), kWords = 4,
                              kGroupSamples = kWords * kWordSamples, kBits = 8 * sizeof(T);
    static constexpr uint64_t kSampleMask = (uint64_t(1) << kBits) - 1;
    static constexpr uint64_t kPixelMask =
        kPixelBytes == 4 ? 0xffffffffull : (uint64_t(1) << (8 * kPixelBytes)) - 1;
    static constexpr uint64_t kRepeat = kPixelBytes == 1   ? 0x0101010101010101ull
                                        : kPixelBytes == 2 ? 0x0001000100010001ull
                                                           : 0x0000000100000001ull;
    static constexpr unsigned lane(unsigned word, unsigned g) { return g % C + C * (word % (L / C)); }

    template <class Counter> void operator()(const unsigned char *p, size_t samples, Counter *tables) const {
        size_t s = 0;
        for (; s + kGroupSamples <= samples; s += kGroupSamples, p += 8 * kWords) {
            prefetch_ahead(p);
            uint64_t w[kWords];
            for (unsigned k = 0; k < kWords; ++k) w[k] = load<uint64_t>(p + 8 * k);
            if (w[0] == (w[0] & kPixelMask) * kRepeat && w[1] == w[0] && w[2] == w[0] && w[3] == w[0]) {
                for (unsigned c = 0; c < C; ++c)
                    tables[c * kStride + ((w[0] >> (kBits * c)) & kSampleMask)] += kGroupSamples / C;
                continue;
            }
#pragma GCC unroll 8
            for (unsigned g = 0; g < kWordSamples; ++g)
#pragma GCC unroll 4
                for (unsigned k = 0; k < kWords; ++k)
                    ++tables[lane(k, g) * kStride + ((w[k] >> (kBits * g)) & kSampleMask)];
        }
        for (unsigned g = 0; s < samples; ++s, ++g, p += sizeof(T)) ++tables[(g % C) * kStride + load<T>(p)];
    }
};

// One-channel u8 by bit planes (histogram_planes.cpp), into the first lane.
struct PlaneKernel {
    using Sample = uint8_t;
    template <class Counter> void operator()(const unsigned char *p, size_t samples, Counter *table) const {
        uint64_t counts[256] = {};
        count_u8_planes(p, samples, counts);
        for (size_t v = 0; v < 256; ++v) table[v] += Counter(counts[v]); // at most `samples`
    }
};

// u32 and i32 with direct bins, in groups of 8 samples read as four 64-bit words (24 samples for three
// channels). When the OR of a group is below a power of two no larger than bins (nor 2^31, so that
// negative i32 fail), every sample is its own bin unchecked. (Counting a group that repeats one pixel
// with one addition, as for u8, measured slower on random data; it is left out.)
template <class T, unsigned C, unsigned L> struct DirectKernel {
    using Sample = T;
    static_assert(sizeof(T) == 4 && L % C == 0, "32-bit samples, lanes a multiple of the channels");
    static constexpr unsigned G = C == 3 ? 24 : 8, kWords = G / 2;
    DirectIndex index;
    uint64_t fast_below;
    size_t ts;

    template <class Counter> void operator()(const unsigned char *p, size_t samples, Counter *tables) const {
        const DirectIndex index = this->index; // locals: stores to the tables cannot change them
        const uint64_t fast_below = this->fast_below;
        const size_t ts = this->ts;
        size_t s = 0;
        for (; s + G <= samples; s += G, p += G * sizeof(T)) {
            prefetch_ahead(p);
            if (G > 8) prefetch_ahead(p + 64); // three channels: 96 bytes a group
            uint64_t any = 0;
            for (unsigned k = 0; k < kWords; ++k) any |= load<uint64_t>(p + 8 * k);
            if (uint32_t(any | any >> 32) >= fast_below) {
                for (unsigned g = 0; g < G; ++g) ++tables[(g % L) * ts + index(load<T>(p + g * sizeof(T)))];
            } else {
                for (unsigned g = 0; g < G; ++g)
                    ++tables[(g % L) * ts + uint32_t(load<T>(p + g * sizeof(T)))];
            }
        }
        for (unsigned g = 0; s < samples; ++s, ++g, p += sizeof(T))
            ++tables[(g % L) * ts + index(load<T>(p))];
    }
};

// Counts pixels [begin, end) of the image (row-major over height x width) into `part`.
template <bool Wide, class Kernel>
void count_pixels(const HistogramJob &job, const Plan &plan, PartCounts &part, size_t begin, size_t end,
                  const Kernel &kernel) {
    constexpr size_t size = sizeof(typename Kernel::Sample);
    const auto *base = static_cast<const unsigned char *>(job.data);
    size_t row = begin / job.width, col = begin % job.width;
    const bool dense = job.stride == job.width * job.channels * size; // rows without padding: one run
    for (size_t k = begin; k < end; ++row, col = 0) {
        size_t pixels = dense ? end - k : std::min(job.width - col, end - k);
        const unsigned char *p = base + row * job.stride + col * job.channels * size;
        size_t samples = pixels * job.channels;
        k += pixels;
        if (Wide) {
            kernel(p, samples, part.totals.get());
            continue;
        }
        while (samples > 0) { // every quantity here is a whole number of pixels
            if (part.pending == kFlushSamples) part.flush(plan, job.channels);
            size_t take = std::min(samples, kFlushSamples - part.pending);
            kernel(p, take, part.lanes.get());
            part.pending += take;
            p += take * size;
            samples -= take;
        }
    }
}

// Threads take chunks of pixels as they come free (a thread slowed by other work holds up no one); each
// thread counts into its own tables, so the counts do not depend on who took which chunk.
template <class Kernel>
void count_all(ThreadPool &pool, const HistogramJob &job, const Plan &plan, std::vector<PartCounts> &parts,
               const Kernel &kernel) {
    size_t pixels = job.width * job.height;
    size_t chunks =
        std::max<size_t>(plan.parts, std::min<size_t>(plan.parts * kChunksPerThread, pixels / 4096));
    std::atomic<size_t> next{0};
    pool.run(
        [&](unsigned part, unsigned) {
            for (size_t k; (k = next.fetch_add(1)) < chunks;) {
                size_t begin = pixels * k / chunks, end = pixels * (k + 1) / chunks;
                if (plan.wide)
                    count_pixels<true>(job, plan, parts[part], begin, end, kernel);
                else
                    count_pixels<false>(job, plan, parts[part], begin, end, kernel);
            }
            if (!plan.wide) parts[part].flush(plan, job.channels);
        },
        plan.parts);
}

template <class T, class Index>
void count_generic(ThreadPool &pool, const HistogramJob &job, const Plan &plan,
                   std::vector<PartCounts> &parts, const Index &index) {
    size_t ts = plan.wide ? plan.table_size : plan.lane_stride;
    switch (plan.lanes) {
    case 1:
        return count_all(pool, job, plan, parts, SampleKernel<T, 1, Index>{index, ts});
    case 2:
        return count_all(pool, job, plan, parts, SampleKernel<T, 2, Index>{index, ts});
    case 3:
        return count_all(pool, job, plan, parts, SampleKernel<T, 3, Index>{index, ts});
    case 4:
        return count_all(pool, job, plan, parts, SampleKernel<T, 4, Index>{index, ts});
    case 6:
        return count_all(pool, job, plan, parts, SampleKernel<T, 6, Index>{index, ts});
    default:
        return count_all(pool, job, plan, parts, SampleKernel<T, 8, Index>{index, ts});
    }
}

// u8 in 8 tables or u16 in 2, with pixels of 1, 2 or 4 bytes: the run kernel; otherwise the general one.
template <class T>
void count_values(ThreadPool &pool, const HistogramJob &job, const Plan &plan,
                  std::vector<PartCounts> &parts) {
    unsigned c = job.channels;
    if constexpr (sizeof(T) == 1) {
        if (!plan.wide && plan.lanes == std::max(2u, c)) {
            if (c == 1 && u8_planes_available()) return count_all(pool, job, plan, parts, PlaneKernel{});
            if (c == 1) return count_all(pool, job, plan, parts, ValueRunKernel<T, 1, 2>{});
            if (c == 2) return count_all(pool, job, plan, parts, ValueRunKernel<T, 2, 2>{});
            if (c == 4) return count_all(pool, job, plan, parts, ValueRunKernel<T, 4, 4>{});
        }
    } else if (!plan.wide && plan.lanes == 2) {
        if (c == 1) return count_all(pool, job, plan, parts, ValueRunKernel<T, 1, 2>{});
        if (c == 2) return count_all(pool, job, plan, parts, ValueRunKernel<T, 2, 2>{});
    }
    count_generic<T>(pool, job, plan, parts, ValueIndex{});
}

// The direct kernel for C channels and the plan's lanes (C * U, U a power of two).
template <class T, unsigned C, unsigned U = 1>
void count_direct(ThreadPool &pool, const HistogramJob &job, const Plan &plan, std::vector<PartCounts> &parts,
                  uint64_t fast_below) {
    if constexpr (C * U * 2 <= 8)
        if (plan.lanes > C * U) return count_direct<T, C, U * 2>(pool, job, plan, parts, fast_below);
    count_all(pool, job, plan, parts,
              DirectKernel<T, C, C * U>{DirectIndex{job.bins}, fast_below,
                                        plan.wide ? plan.table_size : plan.lane_stride});
}

template <class T>
void count_direct(ThreadPool &pool, const HistogramJob &job, const Plan &plan,
                  std::vector<PartCounts> &parts) {
    uint64_t fast_below = 1;
    while (fast_below * 2 <= std::min<uint64_t>(job.bins, uint64_t(1) << 31)) fast_below *= 2;
    switch (job.channels) {
    case 1:
        return count_direct<T, 1>(pool, job, plan, parts, fast_below);
    case 2:
        return count_direct<T, 2>(pool, job, plan, parts, fast_below);
    case 3:
        return count_direct<T, 3>(pool, job, plan, parts, fast_below);
    default:
        return count_direct<T, 4>(pool, job, plan, parts, fast_below);
    }
}

size_t part_bytes(const Plan &plan, unsigned channels) {
    size_t lanes = plan.wide ? 0 : plan.lanes * plan.lane_stride * sizeof(uint32_t);
    return lanes + channels * plan.table_size * sizeof(uint64_t);
}

// `most_lanes` caps the lanes (8: the kernels' widest).
Plan make_plan(const ThreadPool &pool, const HistogramJob &job, size_t table_size, unsigned most_lanes = 8) {
    Plan plan;
    unsigned c = job.channels;
    plan.table_size = table_size;
    plan.lane_stride = lane_stride(table_size);
    plan.wide = c * table_size > kWideEntries;
    unsigned per_channel = 1, most = std::max(1u, (c == 3 ? 6 : std::min(8u, most_lanes)) / c);
    while (!plan.wide && per_channel * 2 <= most && per_channel * 2 * c * table_size * 4 <= kLaneBytes)
        per_channel *= 2;
    if (!plan.wide && c == 1 && per_channel == 1 && table_size <= 65536)
        per_channel = 2; // breaks equal-value chains
    plan.lanes = c * per_channel;
    size_t samples = job.width * job.height * c;
    size_t useful = samples / std::max(kParallelSamples, c * table_size);
    size_t affordable = kTableBudget / std::max<size_t>(1, part_bytes(plan, c));
    plan.parts = unsigned(std::clamp<size_t>(std::min(useful, affordable), 1, pool.size()));
    return plan;
}

// Every table, before counting starts: a failure leaves hist and uncounted untouched.
std::vector<PartCounts> allocate_parts(const Plan &plan, unsigned channels) {
    std::vector<PartCounts> parts(plan.parts);
    for (PartCounts &p : parts)
        if (!p.lanes.allocate(plan.wide ? 0 : plan.lanes * plan.lane_stride) ||
            !p.totals.allocate(channels * plan.table_size))
            out_of_host_memory("histogram", plan.parts * part_bytes(plan, channels),
                               "per-thread counting tables");
    return parts;
}

// Sums of all threads' totals into hist (and uncounted), for tables indexed by bin with the not-counted
// samples in entry `bins`.
void combine_bins(ThreadPool &pool, const HistogramJob &job, const Plan &plan,
                  const std::vector<PartCounts> &parts, uint64_t *uncounted) {
    size_t ts = plan.table_size;
    for (unsigned c = 0; c < job.channels; ++c) {
        auto add = [&](size_t begin, size_t end) {
            for (size_t b = begin; b < end; ++b) {
                uint64_t sum = 0;
                for (const PartCounts &p : parts) sum += p.totals[c * ts + b];
                job.hist[c * job.bins + b] = sum;
            }
        };
        if (job.bins >= (size_t(1) << 16))
            pool.parallel_for(job.bins, add, size_t(1) << 14);
        else
            add(0, job.bins);
        for (const PartCounts &p : parts) uncounted[c] += p.totals[c * ts + job.bins];
    }
}

// For tables indexed by sample value (u8, u16): each value goes to its bin, or to uncounted.
void combine_values(const HistogramJob &job, const Plan &plan, const std::vector<PartCounts> &parts,
                    uint64_t *uncounted) {
    size_t ts = plan.table_size;
    double scale = double(job.bins) / (job.upper - job.lower);
    std::fill(job.hist, job.hist + job.channels * job.bins, uint64_t(0));
    for (size_t v = 0; v < ts; ++v) {
        long long bin = job.direct_bins
                            ? (v < job.bins ? (long long)v : -1)
                            : histogram_bin(double(v), job.lower, job.upper, scale, (long long)job.bins);
        for (unsigned c = 0; c < job.channels; ++c) {
            uint64_t sum = 0;
            for (const PartCounts &p : parts) sum += p.totals[c * ts + v];
            (bin < 0 ? uncounted[c] : job.hist[c * job.bins + size_t(bin)]) += sum;
        }
    }
}

template <class T> void histogram_by_value(ThreadPool &pool, const HistogramJob &job, uint64_t *uncounted) {
    // u8 pixels of 1, 2 or 4 bytes: the run kernel's lanes (2, or one per channel).
    const unsigned c = job.channels;
    const unsigned most = sizeof(T) == 1 && c != 3 ? std::max(2u, c) : 8;
    Plan plan = make_plan(pool, job, size_t(1) << (8 * sizeof(T)), most);
    std::vector<PartCounts> parts = allocate_parts(plan, job.channels);
    count_values<T>(pool, job, plan, parts);
    combine_values(job, plan, parts, uncounted);
}

template <class T> void histogram_by_bin(ThreadPool &pool, const HistogramJob &job, uint64_t *uncounted) {
    Plan plan = make_plan(pool, job, job.bins + 1);
    std::vector<PartCounts> parts = allocate_parts(plan, job.channels);
    double scale = double(job.bins) / (job.upper - job.lower);
    RangeIndex range{job.lower, job.upper, scale, (long long)job.bins};
    if constexpr (std::is_integral_v<T>) {
        if (job.direct_bins)
            count_direct<T>(pool, job, plan, parts);
        else
            count_generic<T>(pool, job, plan, parts, range);
    } else {
        count_generic<T>(pool, job, plan, parts, range);
    }
    combine_bins(pool, job, plan, parts, uncounted);
}

} // namespace

void histogram(ThreadPool &pool, const HistogramJob &job) {
    uint64_t uncounted[4] = {0, 0, 0, 0};
    switch (job.dtype) {
    case GPK_U8:
        histogram_by_value<uint8_t>(pool, job, uncounted);
        break;
    case GPK_U16:
        histogram_by_value<uint16_t>(pool, job, uncounted);
        break;
    case GPK_U32:
        histogram_by_bin<uint32_t>(pool, job, uncounted);
        break;
    case GPK_I32:
        histogram_by_bin<int32_t>(pool, job, uncounted);
        break;
    case GPK_F32:
        histogram_by_bin<float>(pool, job, uncounted);
        break;
    case GPK_F64:
        histogram_by_bin<double>(pool, job, uncounted);
        break;
    default:
        fail(GPK_ERR_INTERNAL, "histogram: unexpected dtype " + std::to_string(int(job.dtype)));
    }
    if (job.saturate > 0)
        for (size_t k = 0; k < job.channels * job.bins; ++k)
            job.hist[k] = std::min(job.hist[k], job.saturate);
    if (job.uncounted) std::copy(uncounted, uncounted + job.channels, job.uncounted);
}

} // namespace gpk::cpu
