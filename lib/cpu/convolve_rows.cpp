#include "cpu/convolve_rows.hpp"

#include "common/semantics.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

// Each entry point is cloned per instruction set and chosen once at load time (an ifunc); the bodies are
// always-inline templates so that every clone vectorises them with its own vector width.
#define GPK_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define GPK_INLINE inline __attribute__((always_inline))

// The vector helpers below are always inlined, so no 64-byte vector crosses a call boundary and the
// ABI note GCC gives for them does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace gpk::cpu::conv {
namespace {

template <class A> struct Vector { typedef A type __attribute__((vector_size(64))); };

template <class V, class A> GPK_INLINE V load(const A *p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class V, class A> GPK_INLINE void store(A *p, V v) {
    std::memcpy(p, &v, sizeof v);
}

template <class In, class A> GPK_INLINE void convert_impl(const In *src, A *dst, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = A(src[i]);
}

// Four vectors of outputs stay in registers across all taps; each tap is one broadcast and four
// multiply-adds on lines that are read at a fixed offset, so the loop has no branches on borders.
template <class A>
GPK_INLINE void correlate_impl(const A *const *lines, const A *taps, int kh, int kw, size_t step, A *out,
                               size_t n) {
    using V = typename Vector<A>::type;
    constexpr size_t L = sizeof(V) / sizeof(A);
    static_assert(4 * sizeof(V) == kBlockBytes, "a block is four vectors");
    for (size_t i = 0; i < n; i += 4 * L) {
        V acc0 = {}, acc1 = {}, acc2 = {}, acc3 = {};
        for (int a = 0; a < kh; ++a) {
            const A *src = lines[a];
            if (!src) continue;
            src += i;
            const A *t = taps + size_t(a) * size_t(kw);
            for (int b = 0; b < kw; ++b, src += step) {
                const V tap = V{} + t[b];
                acc0 += tap * load<V>(src);
                acc1 += tap * load<V>(src + L);
                acc2 += tap * load<V>(src + 2 * L);
                acc3 += tap * load<V>(src + 3 * L);
            }
        }
        store(out + i, acc0);
        store(out + i + L, acc1);
        store(out + i + 2 * L, acc2);
        store(out + i + 3 * L, acc3);
    }
}

// The largest value below 1/2: for v >= 0, truncating v + below_half rounds half away from zero
// (adding 1/2 itself would round 0.49999997f up).
template <class A> constexpr A below_half() {
    return std::is_same_v<A, float> ? A(0.5f - 0x1p-25f) : A(0.5 - 0x1p-54);
}

template <class Out> constexpr bool is_float_v = std::is_floating_point_v<Out>;

// A float-path value as an output sample: integer outputs round half away from zero and saturate,
// NaN gives 0 (round_saturate of semantics.hpp, in a form that vectorises: clamp first, then round).
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

template <class A, class Out>
GPK_INLINE void finish_float(const A *acc, Out *out, size_t n, const RowFinish &f) {
    if (f.normalize == GPK_NORMALIZE_NONE) {
        for (size_t i = 0; i < n; ++i) out[i] = float_to_output<Out>(acc[i]);
    } else if (f.normalize == GPK_NORMALIZE_SUM) {
        const A sum = A(f.sum);
        for (size_t i = 0; i < n; ++i) out[i] = float_to_output<Out>(acc[i] / sum);
    } else {
        const unsigned channels = f.channels;
        for (unsigned c = 0; c < channels; ++c) {
            const A lo = A(f.min_value[c]), range = A(f.max_value[c]) - lo;
            if (!(range > A(0))) { // max == min (or no value that is not NaN)
                for (size_t i = c; i < n; i += channels) out[i] = float_to_output<Out>(A(0));
                continue;
            }
            for (size_t i = c; i < n; i += channels)
                out[i] = float_to_output<Out>((acc[i] - lo) * A(255) / range);
        }
    }
}

template <class A, class Out> GPK_INLINE void finish_exact_none(const A *acc, Out *out, size_t n) {
    if constexpr (is_float_v<A> && !is_float_v<Out>) {
        for (size_t i = 0; i < n; ++i) out[i] = float_to_output<Out>(acc[i]); // integers: rounding is a no-op
    } else {
        for (size_t i = 0; i < n; ++i) out[i] = exact_to_output<Out>((long long)acc[i]);
    }
}

// div_round(v, sum), saturated. Where 2|v| + |sum| < 2^53 it is floor((2|v| + |sum|) / (2|sum|)) with the
// sign of v/sum, and that double quotient floors exactly (an error under 1/(2|sum|) cannot cross an integer).
template <class A, class Out>
GPK_INLINE void finish_exact_sum(const A *acc, Out *out, size_t n, const RowFinish &f) {
    if constexpr (is_float_v<Out>) {
        for (size_t i = 0; i < n; ++i) out[i] = Out(double((long long)acc[i]) / f.sum);
    } else {
        const long long sum = (long long)f.sum;
        const double d = std::fabs(f.sum);
        if (2 * f.exact_bound + d >= 0x1p53) {
            for (size_t i = 0; i < n; ++i) out[i] = exact_to_output<Out>(div_round((long long)acc[i], sum));
            return;
        }
        constexpr double hi = std::numeric_limits<Out>::max();
        const double twice_d = 2 * d;
        const bool negative_sum = sum < 0;
        for (size_t i = 0; i < n; ++i) {
            const double v = double(acc[i]);
            double q = (2 * std::fabs(v) + d) / twice_d; // >= 0; its floor is the rounded |quotient|
            q = q < hi ? q : hi;
            out[i] = (v < 0) != negative_sum ? Out(0) : Out(int32_t(q));
        }
    }
}

// minmax_int(v, min, max) for integer outputs, (double)(v - min) * 255 / (double)(max - min) for float
// ones (NOTES.md); 0 where max == min.
template <class A, class Out>
GPK_INLINE void finish_exact_minmax(const A *acc, Out *out, size_t n, const RowFinish &f) {
    const unsigned channels = f.channels;
    for (unsigned c = 0; c < channels; ++c) {
        const long long lo = f.min_int[c], hi = f.max_int[c];
        if (hi == lo) {
            for (size_t i = c; i < n; i += channels) out[i] = Out(0);
            continue;
        }
        const double range = double(hi - lo);
        if constexpr (is_float_v<Out>) {
            for (size_t i = c; i < n; i += channels)
                out[i] = Out(double((long long)acc[i] - lo) * 255.0 / range);
        } else if (range * 255.0 < 0x1p53) { // numerators exact in double, so the quotient truncates exactly
            for (size_t i = c; i < n; i += channels)
                out[i] = Out(int32_t(double((long long)acc[i] - lo) * 255.0 / range));
        } else {
            for (size_t i = c; i < n; i += channels) out[i] = Out(minmax_int((long long)acc[i], lo, hi));
        }
    }
}

template <class A, class Out>
GPK_INLINE void finish_impl(const A *acc, Out *out, size_t n, const RowFinish &f) {
    if (!f.exact) {
        if constexpr (is_float_v<A>) finish_float(acc, out, n, f);
        return;
    }
    if (f.normalize == GPK_NORMALIZE_NONE)
        finish_exact_none(acc, out, n);
    else if (f.normalize == GPK_NORMALIZE_SUM)
        finish_exact_sum(acc, out, n, f);
    else
        finish_exact_minmax(acc, out, n, f);
}

template <class A> GPK_INLINE void min_max_impl(const A *acc, size_t n, unsigned channels, A *lo, A *hi) {
    for (unsigned c = 0; c < channels; ++c) {
        A l = lo[c], h = hi[c];
        for (size_t i = c; i < n; i += channels) {
            const A v = acc[i];
            l = v < l ? v : l; // NaN compares false and is skipped
            h = v > h ? v : h;
        }
        lo[c] = l;
        hi[c] = h;
    }
}

} // namespace

#define GPK_CONVERT(In, A)                                                                                   \
    GPK_CLONES void convert_samples(const In *src, A *dst, size_t n) {                                       \
        convert_impl(src, dst, n);                                                                           \
    }
GPK_CONVERT(uint8_t, float)
GPK_CONVERT(uint16_t, float)
GPK_CONVERT(float, float)
GPK_CONVERT(double, float)
GPK_CONVERT(uint8_t, double)
GPK_CONVERT(uint16_t, double)
GPK_CONVERT(float, double)
GPK_CONVERT(double, double)
GPK_CONVERT(uint8_t, int32_t)
GPK_CONVERT(uint16_t, int32_t)
GPK_CONVERT(uint8_t, int64_t)
GPK_CONVERT(uint16_t, int64_t)
#undef GPK_CONVERT

#define GPK_PER_ACCUMULATOR(A)                                                                               \
    GPK_CLONES void correlate(const A *const *lines, const A *taps, int kh, int kw, size_t step, A *out,     \
                              size_t n) {                                                                    \
        correlate_impl(lines, taps, kh, kw, step, out, n);                                                   \
    }                                                                                                        \
    GPK_CLONES void finish_row(const A *acc, uint8_t *out, size_t n, const RowFinish &f) {                   \
        finish_impl(acc, out, n, f);                                                                         \
    }                                                                                                        \
    GPK_CLONES void finish_row(const A *acc, uint16_t *out, size_t n, const RowFinish &f) {                  \
        finish_impl(acc, out, n, f);                                                                         \
    }                                                                                                        \
    GPK_CLONES void finish_row(const A *acc, float *out, size_t n, const RowFinish &f) {                     \
        finish_impl(acc, out, n, f);                                                                         \
    }                                                                                                        \
    GPK_CLONES void finish_row(const A *acc, double *out, size_t n, const RowFinish &f) {                    \
        finish_impl(acc, out, n, f);                                                                         \
    }                                                                                                        \
    void row_min_max(const A *acc, size_t n, unsigned channels, A *lo, A *hi) {                              \
        min_max_impl(acc, n, channels, lo, hi);                                                              \
    }
GPK_PER_ACCUMULATOR(float)
GPK_PER_ACCUMULATOR(double)
GPK_PER_ACCUMULATOR(int32_t)
GPK_PER_ACCUMULATOR(int64_t)
#undef GPK_PER_ACCUMULATOR

} // namespace gpk::cpu::conv
