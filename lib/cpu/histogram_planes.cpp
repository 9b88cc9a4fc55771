// u8 histograms by bit planes. Scalar counting does one read-modify-write of a counter per sample, and
// a core here retires about one of those a cycle whatever the layout of the tables (NOTES.md). This
// counts blocks of 512 samples with vector logic instead: the block's 8 bit planes (bit k of every
// sample in plane k: GFNI transposes the bits of each 8 bytes, VBMI and 64-bit shuffles gather the
// planes), the 16 masks of samples with each low nibble and the 16 with each high nibble (vpternlog
// minterms), then for each of the 256 values the AND of its two masks and a population count. A block
// of one repeated byte (flat or all-equal data) is added as 512 samples of that byte without planes.
#include "cpu/histogram_planes.hpp"

#include "cpu/isa.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GPK_HIST_PLANES 1
#if !defined(                                                                                                \
    __clang__) // GCC 12 reports the intrinsics' own "undefined" operands (__Y = __Y) as maybe uninitialised
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#else
#define GPK_HIST_PLANES 0
#endif

namespace gpk::cpu {

#if GPK_HIST_PLANES

bool u8_planes_available() {
    static const bool cpu = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("gfni") && __builtin_cpu_supports("avx512vbmi") &&
               __builtin_cpu_supports("avx512vpopcntdq");
    }();
    return cpu && active_isa() == Isa::avx512;
}

namespace {

#define GPK_TARGET_PLANES                                                                                    \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512vpopcntdq,gfni,avx2,fma")))

constexpr size_t kBlock = 512; // samples per block: 8 vectors of 64
constexpr size_t kChunk = 16;  // blocks whose masks are built before they are counted (32 KiB, in L1)

// Masks of the samples of one block: lo[i] has the samples whose low nibble is i, hi[j] those whose
// high nibble is j (all in one order, the same for every mask).
struct NibbleMasks {
    __m512i lo[16], hi[16];
};

// The nibble masks of the 512 samples in x[0..7].
GPK_TARGET_PLANES inline void nibble_masks(const __m512i x[8], NibbleMasks &m) {
    // Within each 8 bytes: byte k of the result = bit k of the 8 samples (GF(2) affine with the data as
    // the matrix and single-bit bytes as the operand).
    const __m512i bits = _mm512_set1_epi64(0x8040201008040201ull);
    // Byte k of every 8 to 8-byte word k: word k of q[c] = plane k of the 64 samples of x[c].
    const __m512i gather =
        _mm512_set_epi8(63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22, 14, 6, 61, 53, 45, 37, 29, 21,
                        13, 5, 60, 52, 44, 36, 28, 20, 12, 4, 59, 51, 43, 35, 27, 19, 11, 3, 58, 50, 42, 34,
                        26, 18, 10, 2, 57, 49, 41, 33, 25, 17, 9, 1, 56, 48, 40, 32, 24, 16, 8, 0);
    __m512i q[8], a[8], b[8], r[8];
    for (int c = 0; c < 8; ++c)
        q[c] = _mm512_permutexvar_epi8(gather, _mm512_gf2p8affine_epi64_epi8(bits, x[c], 0));
    // An 8x8 transpose of 64-bit words: word c of r[.] = a word of q[c]. It leaves plane k in
    // r[bit-reversed k] (0, 4, 2, 6, 1, 5, 3, 7).
    for (int i = 0; i < 4; ++i) {
        a[2 * i] = _mm512_unpacklo_epi64(q[2 * i], q[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_epi64(q[2 * i], q[2 * i + 1]);
    }
    const __m512i i0 = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0),
                  i1 = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 2; ++k) {
            b[4 * i + 2 * k] = _mm512_permutex2var_epi64(a[4 * i + k], i0, a[4 * i + k + 2]);
            b[4 * i + 2 * k + 1] = _mm512_permutex2var_epi64(a[4 * i + k], i1, a[4 * i + k + 2]);
        }
    const __m512i j0 = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0),
                  j1 = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    for (int k = 0; k < 4; ++k) {
        r[2 * k] = _mm512_permutex2var_epi64(b[k], j0, b[k + 4]);
        r[2 * k + 1] = _mm512_permutex2var_epi64(b[k], j1, b[k + 4]);
    }
    const __m512i p0 = r[0], p1 = r[4], p2 = r[2], p3 = r[6], p4 = r[1], p5 = r[5], p6 = r[3], p7 = r[7];
    // Minterm i of three planes (a, b, c) = (bit 2, bit 1, bit 0 of i): the truth table with only bit i set.
#define GPK_MINTERMS(out, a, b, c)                                                                           \
    out[0] = _mm512_ternarylogic_epi64(a, b, c, 0x01);                                                       \
    out[1] = _mm512_ternarylogic_epi64(a, b, c, 0x02);                                                       \
    out[2] = _mm512_ternarylogic_epi64(a, b, c, 0x04);                                                       \
    out[3] = _mm512_ternarylogic_epi64(a, b, c, 0x08);                                                       \
    out[4] = _mm512_ternarylogic_epi64(a, b, c, 0x10);                                                       \
    out[5] = _mm512_ternarylogic_epi64(a, b, c, 0x20);                                                       \
    out[6] = _mm512_ternarylogic_epi64(a, b, c, 0x40);                                                       \
    out[7] = _mm512_ternarylogic_epi64(a, b, c, 0x80)
    __m512i low3[8], high3[8];
    GPK_MINTERMS(low3, p2, p1, p0);
    GPK_MINTERMS(high3, p6, p5, p4);
#undef GPK_MINTERMS
    for (int i = 0; i < 8; ++i) {
        m.lo[i] = _mm512_andnot_si512(p3, low3[i]);
        m.lo[i + 8] = _mm512_and_si512(p3, low3[i]);
        m.hi[i] = _mm512_andnot_si512(p7, high3[i]);
        m.hi[i + 8] = _mm512_and_si512(p7, high3[i]);
    }
}

// Word i of the result = the sum of the 8 words of a[i].
GPK_TARGET_PLANES inline __m512i sum_each(const __m512i a[8]) {
    __m512i t[4];
    for (int k = 0; k < 4; ++k)
        t[k] = _mm512_add_epi64(_mm512_unpacklo_epi64(a[2 * k], a[2 * k + 1]),
                                _mm512_unpackhi_epi64(a[2 * k], a[2 * k + 1]));
    __m512i u0 =
        _mm512_add_epi64(_mm512_shuffle_i64x2(t[0], t[1], 0x88), _mm512_shuffle_i64x2(t[0], t[1], 0xdd));
    __m512i u1 =
        _mm512_add_epi64(_mm512_shuffle_i64x2(t[2], t[3], 0x88), _mm512_shuffle_i64x2(t[2], t[3], 0xdd));
    return _mm512_add_epi64(_mm512_shuffle_i64x2(u0, u1, 0x88), _mm512_shuffle_i64x2(u0, u1, 0xdd));
}

// Counts `blocks` blocks of 512 samples from p into counts.
GPK_TARGET_PLANES void count_blocks(const unsigned char *p, size_t blocks, uint64_t *counts) {
    alignas(64) NibbleMasks chunk[kChunk];
    for (size_t first = 0; first < blocks; first += kChunk) {
        size_t n = 0; // blocks of this chunk with masks
        for (size_t k = first; k < blocks && k < first + kChunk; ++k) {
            const unsigned char *b = p + k * kBlock;
            const __m512i same = _mm512_set1_epi8(char(b[0]));
            __m512i x[8], differ = _mm512_setzero_si512();
            for (int c = 0; c < 8; ++c) {
                x[c] = _mm512_loadu_si512(b + 64 * c);
                differ = _mm512_ternarylogic_epi64(differ, x[c], same, 0xf6); // differ | (x ^ same)
            }
            if (_mm512_test_epi64_mask(differ, differ) == 0)
                counts[b[0]] += kBlock;
            else
                nibble_masks(x, chunk[n++]);
        }
        if (n == 0) continue;
        // The next chunk's samples are fetched while this one is counted (4 lines an iteration): the
        // counting reads no input, and without this the next chunk's loads wait on memory.
        const unsigned char *next = p + (first + kChunk) * kBlock;
        const size_t ahead = first + 2 * kChunk <= blocks ? kChunk * kBlock : 0;
        // Value 16 j + i: the samples in hi[j] and lo[i]; eight values at a time, over the chunk.
        for (int j = 0; j < 16; ++j)
            for (int half = 0; half < 2; ++half) {
                const size_t line = (2 * j + half) * 256;
                if (line < ahead)
                    for (int k = 0; k < 4; ++k) _mm_prefetch((const char *)next + line + 64 * k, _MM_HINT_T0);
                __m512i sum[8];
                for (int i = 0; i < 8; ++i) sum[i] = _mm512_setzero_si512();
                for (size_t k = 0; k < n; ++k) {
                    const __m512i high = chunk[k].hi[j];
                    for (int i = 0; i < 8; ++i)
                        sum[i] = _mm512_add_epi64(
                            sum[i], _mm512_popcnt_epi64(_mm512_and_si512(high, chunk[k].lo[8 * half + i])));
                }
                uint64_t *dst = counts + 16 * j + 8 * half;
                _mm512_storeu_si512(dst, _mm512_add_epi64(_mm512_loadu_si512(dst), sum_each(sum)));
            }
    }
}

} // namespace

void count_u8_planes(const unsigned char *p, size_t samples, uint64_t *counts) {
    size_t blocks = samples / kBlock;
    count_blocks(p, blocks, counts);
    for (size_t k = blocks * kBlock; k < samples; ++k) ++counts[p[k]];
}

#else

bool u8_planes_available() {
    return false;
}

void count_u8_planes(const unsigned char *p, size_t samples, uint64_t *counts) {
    for (size_t k = 0; k < samples; ++k) ++counts[p[k]];
}

#endif

} // namespace gpk::cpu
