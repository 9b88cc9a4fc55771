// Histogram kernels. Every sample goes to a slot: its bin, or the channel's extra slot `bins` when it is
// not counted, so counts and uncounted samples travel together ((bins + 1) slots per channel).
//
// Three places to count in, by the number of slots:
//   SharedTier  - block-private u32 copies in shared memory, one per lane (bank) of the warp, so that
//                 neither equal samples nor any other pattern makes lanes collide;
//   WindowTier  - one window of the slots in a block's shared memory, one launch per window;
//   GlobalTier  - u64 atomics on the result, warp-aggregated so that equal samples cost one atomic.
// u32 counters are flushed into the u64 result before any of them can overflow (kFlushSamples).
#pragma once

#include "common/semantics.hpp"

#include <cstdint>
#include <type_traits>

namespace gpk::cuda::hist {

// A block adds at most this many samples between flushes, so a u32 counter never exceeds 2^31.
constexpr size_t kFlushSamples = size_t(1) << 28;
constexpr int kBlockThreads = 512;

struct BinRule {
    long long bins;
    double lower, upper, scale;
    unsigned channels;
};

// height rows of row_elems samples (interleaved channels, channel 0 first), rows `pitch` bytes apart.
struct Span2D {
    const char *base;
    size_t rows, row_elems, pitch;
};

// How samples map to slots, from the most general to the cheapest:
//   general       - histogram_bin() in double, any channels;
//   direct        - unsigned integer v is bin v when v < bins, any channels (i32 samples come as their u32
//                   bits: a negative one reads past the last bin);
//   direct_single - the same, one channel (no channel arithmetic);
//   byte_all      - u8 with bins >= 256 and one channel: every sample is its own slot.
enum class Mode { general, direct, direct_single, byte_all };

constexpr bool single_channel(Mode m) {
    return m == Mode::direct_single || m == Mode::byte_all;
}

template <class T, Mode M> __device__ __forceinline__ unsigned long long slot_of(T v, const BinRule &r) {
    if constexpr (M == Mode::byte_all) {
        return (unsigned long long)v;
    } else if constexpr (M != Mode::general) {
        static_assert(std::is_unsigned<T>::value, "direct bins take unsigned samples (histogram.cu)");
        unsigned long long u = (unsigned long long)v;
        return u < (unsigned long long)r.bins ? u : (unsigned long long)r.bins;
    } else {
        long long b = histogram_bin((double)v, r.lower, r.upper, r.scale, r.bins);
        return b < 0 ? (unsigned long long)r.bins : (unsigned long long)b;
    }
}

// Copy k of slot i lives at word i * copies + k, and lane l adds to copy l % copies: with 32 copies every
// lane only ever touches its own bank, so no sample pattern causes bank conflicts.
// Blocks flush into one of `spread` copies of the result (block b into copy b % spread), so that hundreds
// of blocks do not queue on the same global counters; finalize_kernel sums the copies.
struct SharedTier {
    unsigned *smem;
    unsigned *mine;
    unsigned copies, slots, spread;

    // Zeroes the copies in 16-byte stores (the kernel's shared memory is 16-byte aligned).
    __device__ void init(unsigned *s) {
        smem = s;
        mine = s + (threadIdx.x % 32 % copies);
        const unsigned words = copies * slots;
        for (unsigned i = threadIdx.x; i < words / 4; i += blockDim.x)
            reinterpret_cast<uint4 *>(smem)[i] = make_uint4(0, 0, 0, 0);
        for (unsigned i = words / 4 * 4 + threadIdx.x; i < words; i += blockDim.x) smem[i] = 0;
        __syncthreads();
    }
    __device__ __forceinline__ void add(unsigned long long slot) {
        atomicAdd(mine + unsigned(slot) * copies, 1u);
    }
    // A thread takes a slot at a time and sums its copies itself, starting at copy `slot % copies`: the
    // lanes of a warp then read different banks at every step (copies of 32, in 16-byte loads: the 8 lanes
    // of a quarter warp start at 8 different quads; 16 or fewer copies share banks two or more ways). A
    // block's flush so costs about copies / 4 loads a slot, where reducing a slot with shuffles (a warp per
    // slot) costs five shuffle steps a slot on every lane.
    __device__ void flush(unsigned long long *counts) {
        __syncthreads();
        unsigned long long *target = counts + size_t(blockIdx.x % spread) * slots;
        for (unsigned slot = threadIdx.x; slot < slots; slot += blockDim.x) {
            unsigned *word = smem + slot * copies;
            unsigned v = 0;
            if (copies == 32) {
                uint4 *quad = reinterpret_cast<uint4 *>(word);
                uint4 q[8];
#pragma unroll
                for (unsigned k = 0; k < 8; ++k) q[k] = quad[(k + slot) % 8];
#pragma unroll
                for (unsigned k = 0; k < 8; ++k) {
                    v += q[k].x + q[k].y + q[k].z + q[k].w;
                    quad[(k + slot) % 8] = make_uint4(0, 0, 0, 0);
                }
            } else {
                for (unsigned k = 0, c = slot % copies; k < copies; ++k, c = c + 1 == copies ? 0 : c + 1) {
                    v += word[c];
                    word[c] = 0;
                }
            }
            if (v) atomicAdd(target + slot, (unsigned long long)v);
        }
        __syncthreads();
    }
};

// One window of the slots, [lo, lo + size), in one block's shared memory (a u32 counter each); samples of
// other slots are passed over. Slots that do not fit one block are counted window by window, one launch
// each over the same data: every add is a plain shared-memory atomic, at the cost of reading the data once
// per window.
struct WindowTier {
    unsigned *smem;
    unsigned lo, size;

    __device__ void init(unsigned *s) {
        smem = s;
        for (unsigned i = threadIdx.x; i < size; i += blockDim.x) smem[i] = 0;
        __syncthreads();
    }
    __device__ __forceinline__ void add(unsigned long long slot) {
        const unsigned long long at = slot - lo;
        if (at < size) atomicAdd(smem + unsigned(at), 1u);
    }
    __device__ void flush(unsigned long long *counts) {
        __syncthreads();
        for (unsigned i = threadIdx.x; i < size; i += blockDim.x) {
            const unsigned v = smem[i];
            smem[i] = 0;
            if (v) atomicAdd(counts + lo + i, (unsigned long long)v);
        }
        __syncthreads();
    }
};

struct GlobalTier {
    unsigned long long *counts;

    __device__ void init(unsigned *) {}
    __device__ __forceinline__ void add(unsigned long long slot) {
        unsigned mask = __activemask();
        unsigned peers = __match_any_sync(mask, slot);
        if ((threadIdx.x & 31) == unsigned(__ffs(peers) - 1))
            atomicAdd(counts + slot, (unsigned long long)__popc(peers));
    }
    __device__ void flush(unsigned long long *) {}
};

template <class T, Mode M, class Tier>
__device__ __forceinline__ void add_sample(Tier &tier, T v, unsigned channel, const BinRule &r) {
    if constexpr (single_channel(M))
        tier.add(slot_of<T, M>(v, r));
    else
        tier.add((unsigned long long)channel * (unsigned long long)(r.bins + 1) + slot_of<T, M>(v, r));
}

template <class T> union Vec16 {
    uint4 raw;
    T v[16 / sizeof(T)];
};

template <class T, Mode M, class Tier>
__device__ __forceinline__ void add_vector(Tier &tier, const Vec16<T> &w, unsigned channel,
                                           const BinRule &r) {
    constexpr int V = 16 / sizeof(T);
#pragma unroll
    for (int k = 0; k < V; ++k) {
        add_sample<T, M>(tier, w.v[k], channel, r);
        if constexpr (!single_channel(M)) channel = channel + 1 == r.channels ? 0 : channel + 1;
    }
}

// Counts p[0..n) whose first sample is of channel c0, with thread `tid` of `nthreads`: a scalar head up to
// 16-byte alignment, 16-byte loads two at a time, a scalar tail. Single-channel modes load the next two
// vectors before counting the current two, so that a thread's loads are in flight while it adds; the other
// modes' registers have no room for them (they spill).
template <class T, Mode M, class Tier>
__device__ void count_span(Tier &tier, const T *p, size_t n, unsigned c0, const BinRule &r, size_t tid,
                           size_t nthreads) {
    constexpr size_t V = 16 / sizeof(T);
    constexpr bool prefetch = single_channel(M);
    auto channel_at = [&](size_t i) { return r.channels == 1 ? 0u : unsigned((c0 + i) % r.channels); };
    size_t misaligned = (reinterpret_cast<uintptr_t>(p) % 16) / sizeof(T);
    size_t head = misaligned ? (V - misaligned < n ? V - misaligned : n) : 0;
    for (size_t i = tid; i < head; i += nthreads) add_sample<T, M>(tier, p[i], channel_at(i), r);
    const uint4 *body = reinterpret_cast<const uint4 *>(p + head);
    size_t nvec = (n - head) / V;
    size_t j = tid;
    Vec16<T> a, b; // vectors j and j + nthreads
    auto load = [&](size_t at, Vec16<T> &v) {
        if (at < nvec) v.raw = __ldg(body + at);
    };
    if constexpr (prefetch) {
        load(j, a);
        load(j + nthreads, b);
    }
    for (; j + nthreads < nvec; j += 2 * nthreads) {
        if constexpr (!prefetch) {
            load(j, a);
            load(j + nthreads, b);
        }
        const Vec16<T> ca = a, cb = b;
        if constexpr (prefetch) {
            load(j + 2 * nthreads, a);
            load(j + 3 * nthreads, b);
        }
        add_vector<T, M>(tier, ca, channel_at(head + j * V), r);
        add_vector<T, M>(tier, cb, channel_at(head + (j + nthreads) * V), r);
    }
    if (j < nvec) {
        if constexpr (!prefetch) load(j, a);
        add_vector<T, M>(tier, a, channel_at(head + j * V), r);
    }
    for (size_t i = head + nvec * V + tid; i < n; i += nthreads)
        add_sample<T, M>(tier, p[i], channel_at(i), r);
}

// With v = the sum of the `spread` copies of slot c*(bins+1) + b: hist[c*bins + b] = min(v, saturate) and
// uncounted[c] = v of slot c*(bins+1) + bins, for slots first, first + stride, ... The counters are left at
// zero for the next call. Loads bypass L1: the counts were added by other blocks' atomics.
__device__ inline void finalize_slots(unsigned long long *counts, unsigned spread, unsigned long long bins,
                                      unsigned channels, unsigned long long saturate,
                                      unsigned long long *hist, unsigned long long *uncounted,
                                      unsigned long long first, unsigned long long stride) {
    unsigned long long slots = (bins + 1) * channels;
    for (unsigned long long i = first; i < slots; i += stride) {
        unsigned long long c = i / (bins + 1), b = i % (bins + 1), v = 0;
        // Every copy's load before any store: the loads are then in flight together (a store between them
        // kept each waiting for the one before, spread L2 round trips in the launch's last block).
        for (unsigned g = 0; g < spread; ++g) v += __ldcg(counts + g * slots + i);
        for (unsigned g = 0; g < spread; ++g) counts[g * slots + i] = 0;
        if (b < bins)
            hist[c * bins + b] = (saturate && v > saturate) ? saturate : v;
        else if (uncounted)
            uncounted[c] = v;
    }
}

__global__ void finalize_kernel(unsigned long long *counts, unsigned spread, unsigned long long bins,
                                unsigned channels, unsigned long long saturate, unsigned long long *hist,
                                unsigned long long *uncounted) {
    finalize_slots(counts, spread, bins, channels, saturate, hist, uncounted,
                   blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x,
                   (unsigned long long)gridDim.x * blockDim.x);
}

// A count made in one launch finalises in it: the block that flushes last (a ticket counter, zero between
// calls and reset by that block) does finalize_kernel's work, which saves a launch on small histograms.
// hist null: finalize_kernel runs after the launch instead.
struct Finish {
    unsigned long long *hist = nullptr, *uncounted = nullptr;
    unsigned long long bins = 0, saturate = 0;
    unsigned channels = 1, spread = 1;
    unsigned *done = nullptr;
};

__device__ inline void finish_in_last_block(const Finish &f, unsigned long long *counts) {
    __shared__ bool last;
    __threadfence(); // this thread's flushes are visible before its block takes a ticket
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(f.done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    finalize_slots(counts, f.spread, f.bins, f.channels, f.saturate, f.hist, f.uncounted, threadIdx.x,
                   blockDim.x);
    if (threadIdx.x == 0) *f.done = 0;
}

// One span (rows == 1): the whole grid shares it, in rounds of kFlushSamples per block. Several rows: each
// block takes rows in turn.
// Blocks per SM the kernel is compiled for: the shared tier's single-channel kernels keep to 40 registers, so
// that three blocks of 512 threads (the shared memory of 256 bins allows three) fit an SM's registers with
// the loads of count_span in flight; the others to 64 (two blocks).
template <Mode M, class Tier>
constexpr int kMinBlocks = single_channel(M) && std::is_same<Tier, SharedTier>::value ? 3 : 2;

template <class T, Mode M, class Tier>
__global__ void __launch_bounds__(kBlockThreads, kMinBlocks<M, Tier>)
    histogram_kernel(Span2D span, BinRule rule, Tier tier, unsigned long long *counts, Finish finish) {
    extern __shared__ __align__(16) unsigned smem[];
    tier.init(smem);
    if (span.rows == 1) {
        const T *p = reinterpret_cast<const T *>(span.base);
        size_t n = span.row_elems;
        size_t round = size_t(gridDim.x) * kFlushSamples;
        size_t tid = size_t(blockIdx.x) * blockDim.x + threadIdx.x, nthreads = size_t(gridDim.x) * blockDim.x;
        for (size_t base = 0; base < n; base += round) {
            if (base > 0) tier.flush(counts);
            size_t len = n - base < round ? n - base : round;
            count_span<T, M>(tier, p + base, len, unsigned(base % rule.channels), rule, tid, nthreads);
        }
    } else {
        size_t per_row_rounds = (span.row_elems + kFlushSamples - 1) / kFlushSamples;
        size_t rows_per_flush = span.row_elems >= kFlushSamples ? 1 : kFlushSamples / span.row_elems;
        size_t iterations = (span.rows + gridDim.x - 1) / gridDim.x;
        for (size_t it = 0; it < iterations; ++it) {
            size_t row = it * gridDim.x + blockIdx.x;
            const T *p = reinterpret_cast<const T *>(span.base + row * span.pitch);
            for (size_t part = 0; part < per_row_rounds; ++part) {
                if (part > 0 || (it > 0 && it % rows_per_flush == 0)) tier.flush(counts);
                if (row >= span.rows) continue;
                size_t base = part * kFlushSamples;
                size_t len = span.row_elems - base < kFlushSamples ? span.row_elems - base : kFlushSamples;
                count_span<T, M>(tier, p + base, len, unsigned(base % rule.channels), rule, threadIdx.x,
                                 blockDim.x);
            }
        }
    }
    tier.flush(counts);
    if (finish.hist) finish_in_last_block(finish, counts);
}

} // namespace gpk::cuda::hist
