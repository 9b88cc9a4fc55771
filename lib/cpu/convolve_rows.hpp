// Row kernels of the CPU convolution: converting samples to the accumulation type, the tap loop, and
// turning accumulated rows into output samples. Each is compiled for AVX-512, AVX2 and baseline x86-64
// and picked at every call (cpu/isa.hpp), so the library runs on any x86-64, uses the widest vectors it
// finds, and tests can run every variant (GPK_TEST_CPU_ISA).
#pragma once

#include "gpk.h"

#include <cstddef>
#include <cstdint>

namespace gpk::cpu::conv {

// The tap loop works on blocks of up to this many bytes of outputs (eight 64-byte vectors).
constexpr size_t kBlockBytes = 512;

// Elements of type A per block: the tap loop computes whole blocks, so its output rows are padded to a
// multiple of this, and its input lines readable that far.
template <class A> constexpr size_t block_elems() {
    return kBlockBytes / sizeof(A);
}
template <class A> constexpr size_t padded_length(size_t n) {
    return (n + block_elems<A>() - 1) / block_elems<A>() * block_elems<A>();
}

// dst[i] = A(src[i]) for i in [0, n).
void convert_samples(const uint8_t *src, float *dst, size_t n);
void convert_samples(const uint16_t *src, float *dst, size_t n);
void convert_samples(const float *src, float *dst, size_t n);
void convert_samples(const double *src, float *dst, size_t n);
void convert_samples(const uint8_t *src, double *dst, size_t n);
void convert_samples(const uint16_t *src, double *dst, size_t n);
void convert_samples(const float *src, double *dst, size_t n);
void convert_samples(const double *src, double *dst, size_t n);
void convert_samples(const uint8_t *src, int32_t *dst, size_t n);
void convert_samples(const uint16_t *src, int32_t *dst, size_t n);
void convert_samples(const uint8_t *src, int64_t *dst, size_t n);
void convert_samples(const uint16_t *src, int64_t *dst, size_t n);

// Rows the tap loop computes in one pass at most (sharing the lines their windows have in common).
constexpr int kMaxRowsPerPass = 2;

// The outputs a tap pass computes and where its lines start: samples [begin, end) of each output row (block
// multiples: end may be padded_length(n)), reading lines[l][i - origin + b * step] for output i.
// `ahead` names up to two input rows that a later pass will read (null: none), with the bytes of one
// sample: the block of them at output i's sample is prefetched while block i is computed, so that they are
// in the caches when their turn comes (the hardware's prefetchers fell behind here).
struct Span {
    size_t begin = 0, end = 0, origin = 0;
    const char *ahead[2] = {nullptr, nullptr};
    size_t ahead_sample_bytes = 0;
};

// For each r < rows (1 or 2) and i in span: out[r][i] = sum over a < kh, b < kw of
// lines[r + a][i - origin + b*step] * taps[a*kw + b], summed in that order. `lines` holds kh + rows - 1
// lines; a null line is a row of zeros (a zero border) and is skipped.
void correlate(const float *const *lines, const float *taps, int kh, int kw, size_t step, float *const *out,
               int rows, Span span);
void correlate(const double *const *lines, const double *taps, int kh, int kw, size_t step,
               double *const *out, int rows, Span span);
void correlate(const int32_t *const *lines, const int32_t *taps, int kh, int kw, size_t step,
               int32_t *const *out, int rows, Span span);
void correlate(const int64_t *const *lines, const int64_t *taps, int kh, int kw, size_t step,
               int64_t *const *out, int rows, Span span);

// How accumulated values become output samples (NOTES.md, "Convolution").
struct RowFinish {
    bool exact = false; // accumulated values are exact integers (held in any accumulation type)
    gpk_normalize normalize = GPK_NORMALIZE_NONE;
    unsigned channels = 1;
    double sum = 0; // the filter's tap sum (an integer on the exact path)
    // Per-channel minimum and maximum of the filtered values (minmax only). Float path: values of the
    // accumulation type, held exactly in double. Exact path: the integers.
    double min_value[4] = {}, max_value[4] = {};
    long long min_int[4] = {}, max_int[4] = {};
    // Exact path: every value v satisfies |v| <= exact_bound. Rounded integer quotients are then computed
    // in double where that is provably exact (numerators below 2^53).
    double exact_bound = 0;
    // Write output rows with non-temporal stores (for images far larger than the caches).
    bool stream_output = false;
};

// out[i] = the output sample of acc[i], for i in [0, n) (n = width * channels of one row).
#define GPK_DECLARE_FINISH(A)                                                                                \
    void finish_row(const A *acc, uint8_t *out, size_t n, const RowFinish &f);                               \
    void finish_row(const A *acc, uint16_t *out, size_t n, const RowFinish &f);                              \
    void finish_row(const A *acc, float *out, size_t n, const RowFinish &f);                                 \
    void finish_row(const A *acc, double *out, size_t n, const RowFinish &f);
GPK_DECLARE_FINISH(float)
GPK_DECLARE_FINISH(double)
GPK_DECLARE_FINISH(int32_t)
GPK_DECLARE_FINISH(int64_t)
#undef GPK_DECLARE_FINISH

// Widens lo[c] / hi[c] to the per-channel minimum and maximum of acc[0..n) (channels interleaved).
// NaN values are ignored.
void row_min_max(const float *acc, size_t n, unsigned channels, float *lo, float *hi);
void row_min_max(const double *acc, size_t n, unsigned channels, double *lo, double *hi);
void row_min_max(const int32_t *acc, size_t n, unsigned channels, int32_t *lo, int32_t *hi);
void row_min_max(const int64_t *acc, size_t n, unsigned channels, int64_t *lo, int64_t *hi);

} // namespace gpk::cpu::conv
