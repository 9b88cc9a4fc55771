// Vector helpers shared by the convolution's row kernels (GCC vector extensions). Included only by
// convolve_rows.cpp, convolve_finish.cpp and heat_band.cpp (the heat report's row statistics).
#pragma once

#include <cstddef>
#include <cstring>
#include <emmintrin.h>

#include "cpu/isa.hpp"

// Each entry point is compiled per instruction set (GPK_ISA_VARIANTS, cpu/isa.hpp) and chosen at every
// call; the bodies are always-inline templates so that every variant vectorises them with its own width.
#define GPK_INLINE inline __attribute__((always_inline))
// Lambdas that take or return vectors are inlined too: out of line (at -O0) they would be compiled for the
// baseline ISA and pass 64-byte vectors differently from the variant that calls them.
#define GPK_LAMBDA_INLINE __attribute__((always_inline))

// The vector helpers are always inlined, so no 64-byte vector crosses a call boundary and the ABI note
// GCC gives for them does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace gpk::cpu::conv::simd {

// One register of the level: 64 bytes (AVX-512), 32 (AVX2) or 16 (SSE2). Code compiled for a level uses
// its own width: a wider vector type would be split by the compiler into register-sized halves, which
// GCC builds and reads back through the stack (scalar stores, then a wide load that cannot be forwarded)
// instead of keeping them in registers.
constexpr size_t vector_bytes(Isa isa) {
    return isa == Isa::avx512 ? 64 : isa == Isa::avx2 ? 32 : 16;
}
template <class A, Isa kIsa> struct Vector {
    typedef A type __attribute__((vector_size(vector_bytes(kIsa))));
};

template <class V, class A> GPK_INLINE V load(const A *p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class V, class A> GPK_INLINE void store(A *p, V v) {
    std::memcpy(p, &v, sizeof v);
}

// One sample at an address that may not be aligned to its size.
template <class T> GPK_INLINE T get(const T *p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class T> GPK_INLINE void put(T *p, T v) {
    std::memcpy(p, &v, sizeof v);
}

// Writes the bytes of v to 16-byte aligned dst with non-temporal stores (SSE2, so in every variant): an
// image far larger than the caches then goes to memory without first being read into them. The writer
// ends with _mm_sfence() before anything says that the data is there.
template <class T> GPK_INLINE void stream_store(void *dst, const T &v) {
    static_assert(sizeof(T) % 16 == 0, "whole 16-byte stores");
    for (size_t k = 0; k < sizeof(T); k += 16) {
        __m128i part;
        std::memcpy(&part, reinterpret_cast<const char *>(&v) + k, 16);
        _mm_stream_si128(reinterpret_cast<__m128i *>(static_cast<char *>(dst) + k), part);
    }
}

} // namespace gpk::cpu::conv::simd
