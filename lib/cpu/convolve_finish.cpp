// Turning accumulated rows into output samples (normalisation, rounding, saturation) and the per-channel
// min/max reduction, a vector at a time. Channels are interleaved, so a vector that starts at sample i
// holds channel (i + k) % channels in lane k: per-channel constants are kept as one lane pattern per
// phase i % channels.
#include "cpu/convolve_rows.hpp"
#include "cpu/convolve_simd.hpp"
#include "cpu/isa.hpp"

#include "common/semantics.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace gpk::cpu::conv {
namespace {

using simd::load;
using simd::Vector;

template <class T> constexpr bool is_float_v = std::is_floating_point_v<T>;

// The largest value below 1/2: for v >= 0, truncating v + below_half rounds half away from zero
// (adding 1/2 itself would round 0.49999997f up).
template <class A> constexpr A below_half() {
    return std::is_same_v<A, float> ? A(0.5f - 0x1p-25f) : A(0.5 - 0x1p-54);
}

// A float value as an output sample: integer outputs round half away from zero and saturate, NaN gives 0
// (round_saturate of semantics.hpp, in a form that vectorises: clamp first, then round).
template <class Out, class A> GPK_INLINE Out float_to_output(A v) {
    if constexpr (is_float_v<Out>) {
        return Out(v);
    } else {
        constexpr A hi = A(std::numeric_limits<Out>::max());
        v = v > A(0) ? v : A(0);
        v = v < hi ? v : hi;
        return Out(int32_t(v + below_half<A>()));
    }
}

// An exact integer as an integer output sample (saturated) or a float one ((double)v, NOTES.md).
template <class Out> GPK_INLINE Out exact_to_output(long long v) {
    if constexpr (is_float_v<Out>) {
        return Out(double(v));
    } else {
        constexpr long long hi = std::numeric_limits<Out>::max();
        return Out(v < 0 ? 0 : (v > hi ? hi : v));
    }
}

// The lane patterns of a per-channel value, one per phase.
template <class A, Isa kIsa> struct ChannelLanes {
    using V = typename Vector<A, kIsa>::type;
    static constexpr unsigned L = sizeof(V) / sizeof(A);
    V phase[4];
    ChannelLanes(const A *per_channel, unsigned channels) {
        for (unsigned p = 0; p < channels; ++p)
            for (unsigned k = 0; k < L; ++k) phase[p][k] = per_channel[(p + k) % channels];
    }
};

// The lanes of w, each within [0, max(Out)], as Out. For AVX-512, GCC makes the narrowing conversion one
// instruction (vpmovdb, vpmovdw); below it, it would move lane by lane through general registers, so there
// SSE2's saturating packs narrow eight lanes at a time (u16 offset by 2^15 to pack signed).
template <Isa kIsa, class Out, class Whole> GPK_INLINE auto narrow(Whole w) {
    constexpr unsigned L = sizeof(Whole) / sizeof(int32_t);
    typedef Out Narrow __attribute__((vector_size(L * sizeof(Out))));
    if constexpr (kIsa == Isa::avx512) {
        return __builtin_convertvector(w, Narrow);
    } else {
        static_assert(sizeof(Out) <= 2, "integer outputs are u8 or u16");
        Narrow r;
        const __m128i zero = _mm_setzero_si128(), bias = _mm_set1_epi32(0x8000),
                      flip = _mm_set1_epi16(-0x8000);
        for (size_t g = 0; g < sizeof(Whole); g += 32) { // eight int32 lanes a group
            __m128i lo = zero, hi = zero;
            std::memcpy(&lo, reinterpret_cast<const char *>(&w) + g, std::min<size_t>(16, sizeof(Whole) - g));
            if (g + 16 < sizeof(Whole)) std::memcpy(&hi, reinterpret_cast<const char *>(&w) + g + 16, 16);
            __m128i packed;
            if constexpr (sizeof(Out) == 1)
                packed = _mm_packus_epi16(_mm_packs_epi32(lo, hi), zero);
            else
                packed =
                    _mm_xor_si128(_mm_packs_epi32(_mm_sub_epi32(lo, bias), _mm_sub_epi32(hi, bias)), flip);
            const size_t at = g / 4 * sizeof(Out);
            std::memcpy(reinterpret_cast<char *>(&r) + at, &packed,
                        std::min<size_t>(8 * sizeof(Out), sizeof r - at));
        }
        return r;
    }
}

// out[i] = float_to_output<Out>(transform(acc[i], phase)) for i < n, a vector at a time; `transform` takes
// vectors and scalars alike, with the phase (i % channels) of their first sample. With `stream`, whole
// aligned vectors are written with non-temporal stores.
template <Isa kIsa, class A, class Out, class F>
GPK_INLINE void map_to_output(const A *acc, Out *out, size_t n, unsigned channels, bool stream, F transform) {
    using V = typename Vector<A, kIsa>::type;
    constexpr unsigned L = sizeof(V) / sizeof(A);
    typedef int32_t Whole __attribute__((vector_size(L * sizeof(int32_t))));
    typedef Out Narrow __attribute__((vector_size(L * sizeof(Out))));
    const V zero = V{}, hi = A(std::numeric_limits<Out>::max()) - zero, half = below_half<A>() - zero;
    auto convert = [&](V v) GPK_LAMBDA_INLINE {
        if constexpr (is_float_v<Out>) {
            return __builtin_convertvector(v, Narrow);
        } else {
            v = v > zero ? v : zero; // NaN compares false: 0
            v = v < hi ? v : hi;
            return narrow<kIsa, Out>(__builtin_convertvector(v + half, Whole));
        }
    };
    const unsigned step = L % channels;
    size_t i = 0;
    unsigned phase = 0;
    auto scalar = [&] {
        simd::put(out + i, float_to_output<Out>(transform(acc[i], phase)));
        ++i;
        phase = phase + 1 == channels ? 0 : phase + 1;
    };
    auto advance = [&] {
        i += L;
        phase += step;
        if (phase >= channels) phase -= channels;
    };
    if constexpr (sizeof(Narrow) % 16 == 0) {
        if (stream && reinterpret_cast<uintptr_t>(out) % sizeof(Out) == 0) {
            while (i < n && reinterpret_cast<uintptr_t>(out + i) % 16 != 0) scalar();
            for (; i + L <= n; advance())
                simd::stream_store(out + i, convert(transform(load<V>(acc + i), phase)));
            _mm_sfence(); // order the streamed stores before whatever signals that the row is done
        }
    }
    for (; i + L <= n; advance()) {
        const Narrow o = convert(transform(load<V>(acc + i), phase));
        std::memcpy(out + i, &o, sizeof o);
    }
    while (i < n) scalar();
}

// Truncation toward zero of a value known to lie in [0, 2^31): vector or scalar.
template <class A, class T> GPK_INLINE T truncate(T v) {
    if constexpr (std::is_same_v<T, A>) {
        return A(int32_t(v));
    } else {
        typedef int32_t Whole __attribute__((vector_size(sizeof(T) / sizeof(A) * sizeof(int32_t))));
        return __builtin_convertvector(__builtin_convertvector(v, Whole), T);
    }
}

template <Isa kIsa, class A, class Out>
GPK_INLINE void finish_float(const A *acc, Out *out, size_t n, const RowFinish &f) {
    using V = typename Vector<A, kIsa>::type;
    const unsigned channels = f.channels;
    if (f.normalize == GPK_NORMALIZE_NONE) {
        map_to_output<kIsa>(acc, out, n, channels, f.stream_output,
                            [](auto v, unsigned) GPK_LAMBDA_INLINE { return v; });
        return;
    }
    if (f.normalize == GPK_NORMALIZE_SUM) {
        const A sum = A(f.sum);
        map_to_output<kIsa>(acc, out, n, channels, f.stream_output,
                            [sum](auto v, unsigned) GPK_LAMBDA_INLINE { return v / sum; });
        return;
    }
    // (v - min) * 255 / (max - min) in A; 0 where max == min (or every value was NaN).
    A lo[4], range[4];
    for (unsigned c = 0; c < channels; ++c) lo[c] = A(f.min_value[c]), range[c] = A(f.max_value[c]) - lo[c];
    const ChannelLanes<A, kIsa> lo_lanes(lo, channels), range_lanes(range, channels);
    map_to_output<kIsa>(acc, out, n, channels, f.stream_output, [&](auto v, unsigned p) GPK_LAMBDA_INLINE {
        if constexpr (std::is_same_v<decltype(v), A>) {
            return range[p] > A(0) ? (v - lo[p]) * A(255) / range[p] : A(0);
        } else {
            const V r = range_lanes.phase[p];
            return r > V{} ? (v - lo_lanes.phase[p]) * A(255) / r : V{};
        }
    });
}

// Float accumulators hold the integers exactly: rounding is a no-op and (Out)(double)v is (Out)v.
template <Isa kIsa, class A, class Out>
GPK_INLINE void finish_exact_none(const A *acc, Out *out, size_t n, const RowFinish &f) {
    if constexpr (is_float_v<A>) {
        map_to_output<kIsa>(acc, out, n, f.channels, f.stream_output,
                            [](auto v, unsigned) GPK_LAMBDA_INLINE { return v; });
    } else {
        for (size_t i = 0; i < n; ++i) simd::put(out + i, exact_to_output<Out>((long long)acc[i]));
    }
}

// Integers below 2^24 (float) or 2^53 (double) are exact in A; a quotient of such a numerator N by an integer
// D is then within N * 2^-24 (2^-53) / D < 1/D of the true one, so it cannot cross an integer: truncating it
// truncates the exact quotient.
template <class A> constexpr double exact_integer_limit() {
    return std::is_same_v<A, float> ? 0x1p24 : 0x1p53;
}

// div_round(v, sum), saturated: floor((2|v| + |sum|) / (2|sum|)) with the sign of v / sum, in A where the
// numerator stays below exact_integer_limit<A>, with div_round of semantics.hpp otherwise.
template <Isa kIsa, class A, class Out>
GPK_INLINE void finish_exact_sum(const A *acc, Out *out, size_t n, const RowFinish &f) {
    if constexpr (is_float_v<Out>) {
        for (size_t i = 0; i < n; ++i) simd::put(out + i, Out(double((long long)acc[i]) / f.sum));
        return;
    }
    const long long sum = (long long)f.sum;
    if constexpr (is_float_v<A> && !is_float_v<Out>) {
        if (2 * f.exact_bound + std::fabs(f.sum) < exact_integer_limit<A>()) {
            const A d = A(std::fabs(f.sum)), twice_d = 2 * d, top = A(std::numeric_limits<Out>::max());
            const bool flip = sum < 0;
            map_to_output<kIsa>(acc, out, n, f.channels, f.stream_output,
                                [=](auto v, unsigned) GPK_LAMBDA_INLINE {
                                    using T = decltype(v);
                                    const T zero = T{}, s = flip ? -v : v; // s has the sign of the quotient
                                    T q = ((s < zero ? -s : s) * A(2) + d) / twice_d;
                                    q = truncate<A>(q < top + zero ? q : top + zero);
                                    return s < zero ? zero - A(1) : q; // a negative quotient saturates to 0
                                });
            return;
        }
    }
    for (size_t i = 0; i < n; ++i)
        simd::put(out + i, exact_to_output<Out>(div_round((long long)acc[i], sum)));
}

// minmax_int(v, min, max) for integer outputs, (double)(v - min) * 255 / (double)(max - min) for float ones
// (NOTES.md); 0 where max == min. The truncating division runs in A where (max - min) * 255 is exact there.
template <Isa kIsa, class A, class Out>
GPK_INLINE void finish_exact_minmax(const A *acc, Out *out, size_t n, const RowFinish &f) {
    using V = typename Vector<A, kIsa>::type;
    const unsigned channels = f.channels;
    bool in_a = is_float_v<A> && !is_float_v<Out>;
    for (unsigned c = 0; c < channels; ++c)
        in_a = in_a && double(f.max_int[c] - f.min_int[c]) * 255.0 < exact_integer_limit<A>();
    if constexpr (is_float_v<A> && !is_float_v<Out>) {
        if (in_a) {
            A lo[4], range[4];
            for (unsigned c = 0; c < channels; ++c)
                lo[c] = A(f.min_int[c]), range[c] = A(f.max_int[c] - f.min_int[c]);
            const ChannelLanes<A, kIsa> lo_lanes(lo, channels), range_lanes(range, channels);
            map_to_output<kIsa>(
                acc, out, n, channels, f.stream_output, [&](auto v, unsigned p) GPK_LAMBDA_INLINE {
                    if constexpr (std::is_same_v<decltype(v), A>) {
                        return range[p] > A(0) ? truncate<A>((v - lo[p]) * A(255) / range[p]) : A(0);
                    } else {
                        const V r = range_lanes.phase[p];
                        return r > V{} ? truncate<A>((v - lo_lanes.phase[p]) * A(255) / r) : V{};
                    }
                });
            return;
        }
    }
    for (size_t i = 0; i < n; ++i) {
        const unsigned c = unsigned(i % channels);
        const long long v = (long long)acc[i], lo = f.min_int[c], hi = f.max_int[c];
        if constexpr (is_float_v<Out>)
            simd::put(out + i, hi == lo ? Out(0) : Out(double(v - lo) * 255.0 / double(hi - lo)));
        else
            simd::put(out + i, Out(minmax_int(v, lo, hi)));
    }
}

template <Isa kIsa, class A, class Out>
GPK_INLINE void finish_impl(const A *acc, Out *out, size_t n, const RowFinish &f) {
    if (!f.exact) {
        if constexpr (is_float_v<A>) finish_float<kIsa>(acc, out, n, f); // capi.cpp never sends integers here
        return;
    }
    if (f.normalize == GPK_NORMALIZE_NONE)
        finish_exact_none<kIsa>(acc, out, n, f);
    else if (f.normalize == GPK_NORMALIZE_SUM)
        finish_exact_sum<kIsa>(acc, out, n, f);
    else
        finish_exact_minmax<kIsa>(acc, out, n, f);
}

// Per-phase vector minima and maxima over runs of kChannels vectors (vector j of a run starts at phase
// j * L % kChannels, known at compile time, so the sums stay in registers), folded into the channels at the
// end. NaN compares false and is skipped.
template <Isa kIsa, class A, unsigned kChannels>
GPK_INLINE void min_max_channels(const A *acc, size_t n, A *lo, A *hi) {
    using V = typename Vector<A, kIsa>::type;
    constexpr unsigned L = sizeof(V) / sizeof(A);
    const ChannelLanes<A, kIsa> lo_start(lo, kChannels), hi_start(hi, kChannels);
    V lo_v[kChannels], hi_v[kChannels];
    for (unsigned j = 0; j < kChannels; ++j)
        lo_v[j] = lo_start.phase[j * L % kChannels], hi_v[j] = hi_start.phase[j * L % kChannels];
    size_t i = 0;
    for (; i + kChannels * L <= n; i += kChannels * L)
#pragma GCC unroll 4
        for (unsigned j = 0; j < kChannels; ++j) {
            const V v = load<V>(acc + i + j * L);
            lo_v[j] = v < lo_v[j] ? v : lo_v[j];
            hi_v[j] = v > hi_v[j] ? v : hi_v[j];
        }
    for (unsigned j = 0; j < kChannels; ++j)
        for (unsigned k = 0; k < L; ++k) {
            const unsigned c = (j * L + k) % kChannels;
            lo[c] = lo_v[j][k] < lo[c] ? lo_v[j][k] : lo[c];
            hi[c] = hi_v[j][k] > hi[c] ? hi_v[j][k] : hi[c];
        }
    for (; i < n; ++i) { // i is a multiple of kChannels here
        const unsigned c = unsigned(i % kChannels);
        lo[c] = acc[i] < lo[c] ? acc[i] : lo[c];
        hi[c] = acc[i] > hi[c] ? acc[i] : hi[c];
    }
}

template <Isa kIsa, class A>
GPK_INLINE void min_max_impl(const A *acc, size_t n, unsigned channels, A *lo, A *hi) {
    switch (channels) {
    case 1:
        return min_max_channels<kIsa, A, 1>(acc, n, lo, hi);
    case 2:
        return min_max_channels<kIsa, A, 2>(acc, n, lo, hi);
    case 3:
        return min_max_channels<kIsa, A, 3>(acc, n, lo, hi);
    default:
        return min_max_channels<kIsa, A, 4>(acc, n, lo, hi);
    }
}

#define GPK_FINISH_VARIANTS(A)                                                                               \
    GPK_ISA_VARIANTS(void, finish, (const A *acc, uint8_t *out, size_t n, const RowFinish &f),               \
                     finish_impl<kIsa>(acc, out, n, f))                                                      \
    GPK_ISA_VARIANTS(void, finish, (const A *acc, uint16_t *out, size_t n, const RowFinish &f),              \
                     finish_impl<kIsa>(acc, out, n, f))                                                      \
    GPK_ISA_VARIANTS(void, finish, (const A *acc, float *out, size_t n, const RowFinish &f),                 \
                     finish_impl<kIsa>(acc, out, n, f))                                                      \
    GPK_ISA_VARIANTS(void, finish, (const A *acc, double *out, size_t n, const RowFinish &f),                \
                     finish_impl<kIsa>(acc, out, n, f))                                                      \
    GPK_ISA_VARIANTS(void, min_max, (const A *acc, size_t n, unsigned channels, A *lo, A *hi),               \
                     min_max_impl<kIsa>(acc, n, channels, lo, hi))
GPK_FINISH_VARIANTS(float)
GPK_FINISH_VARIANTS(double)
GPK_FINISH_VARIANTS(int32_t)
GPK_FINISH_VARIANTS(int64_t)
#undef GPK_FINISH_VARIANTS

} // namespace

#define GPK_FINISH_OUT(A, Out)                                                                               \
    void finish_row(const A *acc, Out *out, size_t n, const RowFinish &f) {                                  \
        GPK_ISA_CALL(finish, acc, out, n, f)                                                                 \
    }
#define GPK_FINISH(A)                                                                                        \
    GPK_FINISH_OUT(A, uint8_t)                                                                               \
    GPK_FINISH_OUT(A, uint16_t)                                                                              \
    GPK_FINISH_OUT(A, float)                                                                                 \
    GPK_FINISH_OUT(A, double)                                                                                \
    void row_min_max(const A *acc, size_t n, unsigned channels, A *lo, A *hi) {                              \
        GPK_ISA_CALL(min_max, acc, n, channels, lo, hi)                                                      \
    }
GPK_FINISH(float)
GPK_FINISH(double)
GPK_FINISH(int32_t)
GPK_FINISH(int64_t)
#undef GPK_FINISH
#undef GPK_FINISH_OUT

} // namespace gpk::cpu::conv
