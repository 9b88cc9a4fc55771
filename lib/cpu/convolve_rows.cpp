#include "cpu/convolve_rows.hpp"
#include "cpu/convolve_simd.hpp"
#include "cpu/isa.hpp"

#include <cstddef>

namespace gpk::cpu::conv {
namespace {

using simd::load;
using simd::store;
using simd::Vector;

// Image rows need not be aligned to their sample size (a stride is any byte count): samples are read and
// written through memcpy.
template <class In, class A> GPK_INLINE void convert_impl(const In *src, A *dst, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = A(simd::get(src + i));
}

// Adds line `src`'s products to the sums of rows [kFirst, kLast): row r takes filter row l - r, every b.
// The rows are known at compile time, so that the loop over b holds no branch.
template <int kFirst, int kLast, class V, class A, int kRows, int kVectors>
GPK_INLINE void add_line(V (&acc)[kRows][kVectors], const A *src, const A *taps, int l, int kw, size_t step) {
    constexpr size_t L = sizeof(V) / sizeof(A);
    const A *row_taps[kRows];
    for (int r = kFirst; r < kLast; ++r) row_taps[r] = taps + size_t(l - r) * size_t(kw);
    for (int b = 0; b < kw; ++b, src += step) {
        V x[kVectors];
#pragma GCC unroll 8
        for (int v = 0; v < kVectors; ++v) {
            x[v] = load<V>(src + v * L);
            // Several rows use x[v]: keep it in a register. Left to itself, GCC folds the load into each
            // row's multiply-add, loading it (often across two cache lines) once per row. (Clang, used for
            // the sanitizer builds, refuses "x" for vectors wider than 16 bytes, and needs no such hint.)
#if defined(__GNUC__) && !defined(__clang__)
            if constexpr (kLast - kFirst > 1) asm("" : "+x"(x[v]));
#endif
        }
#pragma GCC unroll 4
        for (int r = kFirst; r < kLast; ++r) {
            const V tap = row_taps[r][b] - V{}; // broadcast; x - 0 is x
#pragma GCC unroll 8
            for (int v = 0; v < kVectors; ++v) acc[r][v] += tap * x[v];
        }
    }
}

// The tap loop over `kRows` output rows at once, from kh + kRows - 1 lines: each vector loaded from a line
// feeds every row whose window holds that line, and kRows * kVectors independent sums stay in registers
// across all taps. Each tap is a broadcast and multiply-adds at fixed offsets: no branch on borders. Every
// row is summed in the same order (a, then b) whatever kRows is, so the results do not depend on grouping.
// Vectors are the level's registers (simd::Vector), so that the sums are never spilled.
template <class A, Isa kIsa, int kRows, int kVectors>
GPK_INLINE void correlate_impl(const A *const *lines, const A *taps, int kh, int kw, size_t step,
                               A *const *out, Span span) {
    using V = typename Vector<A, kIsa>::type;
    constexpr size_t L = sizeof(V) / sizeof(A);
    static_assert(kRows == 1 || kRows == 2, "one or two rows a pass");
    static_assert(kBlockBytes % (kVectors * sizeof(V)) == 0, "whole blocks cover a padded row");
    const size_t ahead_bytes = kVectors * L * span.ahead_sample_bytes;
    // The output rows in locals: the stores (memcpy) may alias anything, out[] included, which would
    // otherwise be read again after each.
    A *row[kRows];
    for (int r = 0; r < kRows; ++r) row[r] = out[r];
    for (size_t i = span.begin; i < span.end; i += kVectors * L) {
        for (const char *ahead : span.ahead)
            if (ahead)
                for (size_t b = 0; b < ahead_bytes; b += 64)
                    __builtin_prefetch(ahead + i * span.ahead_sample_bytes + b);
        V acc[kRows][kVectors];
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
            for (int v = 0; v < kVectors; ++v) acc[r][v] = V{};
        for (int l = 0; l < kh + kRows - 1; ++l) {
            const A *src = lines[l];
            if (!src) continue; // a zero row
            src += i - span.origin;
            if constexpr (kRows == 1)
                add_line<0, 1>(acc, src, taps, l, kw, step);
            else if (l == 0) // the first line is in row 0's window alone, the last in row 1's
                add_line<0, 1>(acc, src, taps, l, kw, step);
            else if (l == kh)
                add_line<1, 2>(acc, src, taps, l, kw, step);
            else
                add_line<0, 2>(acc, src, taps, l, kw, step);
        }
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
            for (int v = 0; v < kVectors; ++v) store(row[r] + i + v * L, acc[r][v]);
    }
}

template <class A>
using CorrelateFn = void (*)(const A *const *, const A *, int, int, size_t, A *const *, Span);

// Register budgets (sums + one line's vectors + the broadcast tap): two rows take 2 x 8 + 8 + 1 of the 32
// AVX-512 registers, 2 x 4 + 4 + 1 of the 16 AVX2 or SSE2 ones; one row (the separable row pass) takes 8
// sums, its vectors read straight from memory by the multiply-adds.
template <Isa kIsa, int kRows> constexpr int vectors_per_row() {
    return kIsa == Isa::avx512 || kRows == 1 ? 8 : 4;
}

#define GPK_CORRELATE_VARIANT(name, target, isa)                                                             \
    template <class A, int kRows>                                                                            \
    target void name(const A *const *lines, const A *taps, int kh, int kw, size_t step, A *const *out,       \
                     Span span) {                                                                            \
        correlate_impl<A, isa, kRows, vectors_per_row<isa, kRows>()>(lines, taps, kh, kw, step, out, span);  \
    }
GPK_CORRELATE_VARIANT(correlate_avx512, GPK_TARGET_AVX512, Isa::avx512)
GPK_CORRELATE_VARIANT(correlate_avx2, GPK_TARGET_AVX2, Isa::avx2)
GPK_CORRELATE_VARIANT(correlate_baseline, , Isa::baseline)
#undef GPK_CORRELATE_VARIANT

// The variant for the active instruction set.
template <class A, int kRows> CorrelateFn<A> pick_correlate() {
    switch (active_isa()) {
    case Isa::avx512:
        return correlate_avx512<A, kRows>;
    case Isa::avx2:
        return correlate_avx2<A, kRows>;
    default:
        return correlate_baseline<A, kRows>;
    }
}

#define GPK_CONVERT_VARIANTS(In, A)                                                                          \
    GPK_ISA_VARIANTS(void, convert, (const In *src, A *dst, size_t n), convert_impl(src, dst, n))
GPK_CONVERT_VARIANTS(uint8_t, float)
GPK_CONVERT_VARIANTS(uint16_t, float)
GPK_CONVERT_VARIANTS(float, float)
GPK_CONVERT_VARIANTS(double, float)
GPK_CONVERT_VARIANTS(uint8_t, double)
GPK_CONVERT_VARIANTS(uint16_t, double)
GPK_CONVERT_VARIANTS(float, double)
GPK_CONVERT_VARIANTS(double, double)
GPK_CONVERT_VARIANTS(uint8_t, int32_t)
GPK_CONVERT_VARIANTS(uint16_t, int32_t)
GPK_CONVERT_VARIANTS(uint8_t, int64_t)
GPK_CONVERT_VARIANTS(uint16_t, int64_t)
#undef GPK_CONVERT_VARIANTS

} // namespace

#define GPK_CONVERT(In, A)                                                                                   \
    void convert_samples(const In *src, A *dst, size_t n) {                                                  \
        GPK_ISA_CALL(convert, src, dst, n)                                                                   \
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

#define GPK_CORRELATE(A)                                                                                     \
    void correlate(const A *const *lines, const A *taps, int kh, int kw, size_t step, A *const *out,         \
                   int rows, Span span) {                                                                    \
        (rows == 2 ? pick_correlate<A, 2>() : pick_correlate<A, 1>())(lines, taps, kh, kw, step, out, span); \
    }
GPK_CORRELATE(float)
GPK_CORRELATE(double)
GPK_CORRELATE(int32_t)
GPK_CORRELATE(int64_t)
#undef GPK_CORRELATE

} // namespace gpk::cpu::conv
