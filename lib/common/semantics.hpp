// The arithmetic that the contract (README, "What gpk computes") fixes exactly, shared by the CPU and CUDA
// backends so that both put every sample in the same bin, read the same border pixel and round the same way.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define GPK_HD __host__ __device__ __forceinline__
#else
#define GPK_HD inline
#endif

namespace gpk {

// Integer images with integer taps take the exact path when sum|taps| * max sample < kExactLimit.
constexpr double kExactLimit = 18014398509481984.0; // 2^54

// Heat stencil weights: 4*cdir + 4*cdiag = 1.
constexpr double kHeatCdir = 0.25 * 1.4142135623730951 / (1.4142135623730951 + 1.0);
constexpr double kHeatCdiag = 0.25 / (1.4142135623730951 + 1.0);

// Histogram bin of a sample converted to double, or -1 when it is not counted (NaN, outside
// [lower, upper)). `scale` is bins / (upper - lower), computed once by the caller.
GPK_HD long long histogram_bin(double v, double lower, double upper, double scale, long long bins) {
    if (!(v >= lower) || !(v < upper)) return -1; // NaN fails both comparisons
    long long b = (long long)std::floor((v - lower) * scale);
    if (b >= bins) b = bins - 1; // rounding just below upper
    if (b < 0) b = 0;
    return b;
}

// Index of the pixel read for position i of a row or column of n pixels, or -1 for a zero border.
// border values follow gpk_border: 0 zero, 1 clamp, 2 mirror (dcb|abcd), 3 reflect (cba|abcd), 4 wrap.
// I: a signed integer type holding i, n and 2 n (int where they fit: no 64-bit division on a GPU).
template <class I> GPK_HD I border_index_of(I i, I n, int border) {
    if (i >= 0 && i < n) return i;
    switch (border) {
    case 0:
        return -1;
    case 1:
        return i < 0 ? 0 : n - 1;
    case 2: {
        if (n == 1) return 0;
        I p = 2 * n - 2;
        I m = ((i % p) + p) % p;
        return m < n ? m : p - m;
    }
    case 3: {
        I p = 2 * n;
        I m = ((i % p) + p) % p;
        return m < n ? m : p - 1 - m;
    }
    default: {
        I m = i % n;
        return m < 0 ? m + n : m;
    }
    }
}

GPK_HD long long border_index(long long i, long long n, int border) {
    return border_index_of<long long>(i, n, border);
}

// Round to nearest, ties away from zero, then saturate to [lo, hi]; NaN gives 0.
GPK_HD double round_saturate(double v, double lo, double hi) {
    if (v != v) return 0;
    double r = std::round(v);
    return r < lo ? lo : (r > hi ? hi : r);
}

// Integer division rounding to nearest, ties away from zero (d != 0).
GPK_HD long long div_round(long long n, long long d) {
    bool neg = (n < 0) != (d < 0);
    unsigned long long un = n < 0 ? 0ull - (unsigned long long)n : (unsigned long long)n;
    unsigned long long ud = d < 0 ? 0ull - (unsigned long long)d : (unsigned long long)d;
    unsigned long long q = un / ud;
    if (2 * (un % ud) >= ud) ++q; // ties away from zero
    return neg ? -(long long)q : (long long)q;
}

// Min/max normalisation of an exact integer value: (v - min) * 255 / (max - min), truncating.
// The exact path keeps |v| < 2^54 (see kExactLimit), so (v - min) * 255 fits in 64 bits.
GPK_HD long long minmax_int(long long v, long long mn, long long mx) {
    if (mx == mn) return 0;
    return (long long)(((unsigned long long)(v - mn) * 255ull) / (unsigned long long)(mx - mn));
}

// minmax_int by a multiply-high, for the ranges den = mx - mn of 2 .. kMinmaxMulhiMax: with magic =
// floor((2^32 - 1) / den) + 1, magic * den = 2^32 + e where 0 <= e < den, so for n = (v - mn) * 255 <= 255
// den, n * magic / 2^32 = n / den + n e / (den 2^32); the second term stays under 1 / den (the most that
// the fraction of n / den leaves below the next integer) while n e < 2^32, which 255 den^2 <= 2^32 ensures:
// floor(n * magic / 2^32) = floor(n / den). tests/unit/test_semantics.cpp checks every den and v.
constexpr long long kMinmaxMulhiMax = 4104; // 255 * 4104^2 < 2^32 <= 255 * 4105^2
GPK_HD uint32_t minmax_mulhi_magic(long long den) {
    return den >= 2 && den <= kMinmaxMulhiMax ? 0xFFFFFFFFu / (uint32_t)den + 1u : 0u;
}
// (v - mn) * 255 / den for 0 <= t = v - mn <= den, magic = minmax_mulhi_magic(den) != 0.
GPK_HD uint32_t minmax_mulhi(uint32_t t, uint32_t magic) {
#if defined(__CUDA_ARCH__)
    return __umulhi(t * 255u, magic);
#else
    return (uint32_t)(((uint64_t)(t * 255u) * magic) >> 32);
#endif
}

} // namespace gpk
