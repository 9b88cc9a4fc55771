// The host side shared by the u8 strip kernels (3 x 3 strip, rank-1, box and pair kernels; one-channel u8
// images, exact int sums): which passes they take, their dividers, grids and border rule, and the launch of
// a kernel in the form that finishes the pass's sums. Each family launches its kernels in its own file
// (strip.cu, rank1.cu, box.cu, pair.cu), so that they compile in parallel.
#pragma once

#include "cuda/convolve/launch.cuh"
#include "cuda/convolve/rank1.cuh"

#include <cmath>
#include <type_traits>

namespace gpk::cuda::conv {

// The multiply-shift divider of U8Divider for the filter's |sum|, exact up to the largest |n| + half
// (n: a sum of the filter over u8 samples); false where none is found.
inline bool make_u8_divider(const PassArgs &a, U8Divider &dv) {
    dv = U8Divider{a.out.normalize == GPK_NORMALIZE_SUM, a.out.isum < 0, 0, 1, 0};
    if (!dv.sum) return true;
    unsigned long long d = (unsigned long long)(a.out.isum < 0 ? -a.out.isum : a.out.isum);
    if (d == 0 || d >= (1ull << 31)) return false;
    unsigned long long nmax = (unsigned long long)(a.filter->abs_sum * 255) + d / 2;
    int fl = 0;
    while ((2ull << fl) <= d) ++fl; // floor(log2 d)
    // A shift of 32 first: the multiply-high is then the whole division.
    const int shifts[3] = {32, 32 + fl, 31 + fl};
    for (int shift : shifts) {
        unsigned long long p = 1ull << shift, magic = (p + d - 1) / d;
        // floor(m * magic / 2^shift) == floor(m / d) where m * (magic * d - 2^shift) < 2^shift.
        if (magic < (1ull << 32) && (magic * d - p) * nmax < p) {
            dv.half = unsigned(d / 2);
            dv.magic = unsigned(magic);
            dv.shift = shift;
            return true;
        }
    }
    return false;
}

// The K x K taps as signed bytes, four to a word (ByteTaps); returns whether any is negative.
template <int K> bool pack_byte_taps(const gpk_filter &f, ByteTaps<K> &taps) {
    constexpr int G = (K + 3) / 4;
    taps = ByteTaps<K>{};
    bool is_signed = false;
    for (int r = 0; r < K; ++r)
        for (int b = 0; b < K; ++b) {
            int t = int(f.taps[size_t(r) * K + b]);
            is_signed |= t < 0;
            taps.w[r * G + b / 4] |= int(unsigned(t & 0xFF) << (8 * (b % 4)));
        }
    return is_signed;
}

// Taps that dp4a takes: integers in [-128, 127].
inline bool byte_taps(const gpk_filter &f) {
    for (double t : f.taps)
        if (!(t >= -128 && t <= 127) || t != std::floor(t)) return false;
    return true;
}

// The grid of a strip kernel: x covers `groups` interior thread groups in blocks of `per_block` groups
// (kStripThreads, one a thread, unless said), then the edge block; y the band's output rows in strips of
// `rows`. Empty (0 x 0) for a fold pass whose blocks would outnumber the partials that blocks_bound makes
// room for.
inline dim3 strip_grid(const PassArgs &a, long long groups, int rows, StripMode m,
                       long long per_block = kStripThreads) {
    dim3 grid(unsigned((groups + per_block - 1) / per_block + 1),
              unsigned((a.shape.out_rows + rows - 1) / rows));
    if (m == StripMode::fold &&
        size_t(grid.x) * grid.y > blocks_bound(a.shape.width, size_t(a.shape.out_rows)))
        return dim3(0, 0);
    return grid;
}

inline bool out_aligned_for_strip(const PassArgs &a) {
    return reinterpret_cast<uintptr_t>(a.out.base) % kStripCols == 0 && a.out.pitch % kStripCols == 0;
}

// The border rule where a 3 x 3 strip or pair kernel meets it (StripBorder); false where an output would
// need a padded row outside [-1, rows]. Whole images (row0 = first output row - 1) and staged bands (their
// halo rows in place) never do.
inline bool strip_border(const PassArgs &a, StripBorder &bd) {
    const long long rows_in = a.src.rows, width = a.shape.width;
    if (a.src.row0 < -1 || a.src.row0 + a.shape.out_rows + 1 > rows_in) return false;
    const int b = a.shape.border;
    bd = StripBorder{border_index(-1, rows_in, b), border_index(rows_in, rows_in, b),
                     border_index(-1, width, b), border_index(width, width, b)};
    return true;
}

template <StripMode M> using ModeTag = std::integral_constant<StripMode, M>;
template <StripDiv D> using DivTag = std::integral_constant<StripDiv, D>;

// Whether the pass is one of min/max normalisation's: the fold or the write pass.
inline bool minmax_pass(const PassArgs &a) {
    return a.out.reduce || a.out.normalize == GPK_NORMALIZE_MINMAX;
}

// Launches a strip kernel in the way the pass finishes its sums: launch(mode, signed, divider form, dv,
// rows), the first three as std::integral_constant tags, returning the blocks launched or 0; the passes of
// min/max (launch_minmax_modes) apart from written sums (launch_sum_modes), so that a family's large
// kernels may compile in two files. The fold pass takes `rows` a block (0: the kernel's default) where its
// partials have room, else kMinBlockRows (which blocks_bound counts). Sums of taps that are all >= 0 and
// are divided take a multiply-high where the divider's shift is 32 (StripDiv says why every 3 x 3 byte
// filter has one); other dividers are the other kernels'.
template <class Launch> unsigned launch_minmax_modes(const PassArgs &a, int rows, const Launch &launch) {
    using B0 = std::false_type;
    U8Divider dv{};
    if (a.out.reduce) {
        const ModeTag<StripMode::fold> fold;
        if (unsigned blocks = launch(fold, B0{}, DivTag<StripDiv::none>{}, dv, rows)) return blocks;
        return rows < kMinBlockRows ? launch(fold, B0{}, DivTag<StripDiv::none>{}, dv, kMinBlockRows) : 0;
    }
    return launch(ModeTag<StripMode::minmax>{}, B0{}, DivTag<StripDiv::none>{}, dv, rows);
}

template <class Launch>
unsigned launch_sum_modes(const PassArgs &a, bool is_signed, int rows, const Launch &launch) {
    using B0 = std::false_type;
    using B1 = std::true_type;
    U8Divider dv{};
    if (!make_u8_divider(a, dv)) return 0;
    const ModeTag<StripMode::divide> divide;
    if (is_signed) return launch(divide, B1{}, DivTag<StripDiv::none>{}, dv, rows);
    if (!dv.sum || a.out.isum == 1) return launch(divide, B0{}, DivTag<StripDiv::none>{}, dv, rows);
    if (dv.shift != 32) return 0;
    return launch(divide, B0{}, DivTag<StripDiv::mulhi>{}, dv, rows);
}

template <class Launch>
unsigned launch_strip_modes(const PassArgs &a, bool is_signed, int rows, const Launch &launch) {
    return minmax_pass(a) ? launch_minmax_modes(a, rows, launch)
                          : launch_sum_modes(a, is_signed, rows, launch);
}

// Whether a pass suits the strip kernels: a one-channel u8 source aligned to their 8-byte loads, exact int
// sums, K x K taps (2D: bytes; a separable pair's are checked by rank1_of_pair), u8 out (or the fold pass),
// and for min/max normalisation (x - min) * 255 < 2^31 (minmax_u8; x - min is at most 2 * 255 * sum |taps|).
inline bool strip_case(const PassArgs &a) {
    if (a.filter->kh != a.filter->kw || a.shape.channels != 1 || a.in_dtype != GPK_U8 ||
        a.acc != AccKind::i32 || (!a.filter->separable && !byte_taps(*a.filter)))
        return false;
    const Output &o = a.out;
    if (!o.reduce) {
        if (o.dtype != GPK_U8) return false;
        if (o.normalize == GPK_NORMALIZE_MINMAX && !(a.filter->abs_sum * 2 * 255 * 255 < 2147483648.0))
            return false;
    }
    return reinterpret_cast<uintptr_t>(a.src.base) % kStripCols == 0 && a.src.pitch % kStripCols == 0;
}

// The four-outputs-per-thread kernels (vector.cu) for square 3, 5 and 9 tap filters on one-channel u8
// images with byte taps and exact int sums, or f32 images with f32 sums, written with normalisation none or
// sum; 0 where they do not apply.
unsigned launch_vector_u8(const PassArgs &a, cudaStream_t s);
unsigned launch_vector_f32(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s);
// The 3 x 3 strip kernel (strip.cu), for 3 x 3 byte taps that the box and pair kernels leave; 0 where it
// does not apply.
unsigned launch_strip(const PassArgs &a, cudaStream_t s);
// The pair kernel (pair.cu) for 3 x 3 byte taps with sum |taps| <= kPairMaxAbsSum: both passes of min/max
// normalisation and written sums; 0 where it does not apply.
unsigned launch_pair(const PassArgs &a, cudaStream_t s);
// The rank-1 strip kernel (rank1.cu) for K x K rank-1 taps (K = 5, 7, 9), written sums; and the
// box kernel (box.cu) for K x K taps that are all t > 0 (as rank-1 taps), written sums divided by a
// divider whose shift is 32 (the sum normalisation of box filters); 0 where they do not apply. The passes
// of min/max normalisation take the 3 x 3 kernels or the direct ones (launch_conv2d).
template <int K>
unsigned launch_rank1_strip(const PassArgs &a, const Rank1Taps<K> &taps, bool is_signed, cudaStream_t s);
template <int K> unsigned launch_box(const PassArgs &a, const Rank1Taps<K> &taps, int t, cudaStream_t s);
extern template unsigned launch_rank1_strip<5>(const PassArgs &, const Rank1Taps<5> &, bool, cudaStream_t);
extern template unsigned launch_rank1_strip<7>(const PassArgs &, const Rank1Taps<7> &, bool, cudaStream_t);
extern template unsigned launch_rank1_strip<9>(const PassArgs &, const Rank1Taps<9> &, bool, cudaStream_t);
extern template unsigned launch_box<3>(const PassArgs &, const Rank1Taps<3> &, int, cudaStream_t);
extern template unsigned launch_box<5>(const PassArgs &, const Rank1Taps<5> &, int, cudaStream_t);
extern template unsigned launch_box<7>(const PassArgs &, const Rank1Taps<7> &, int, cudaStream_t);
extern template unsigned launch_box<9>(const PassArgs &, const Rank1Taps<9> &, int, cudaStream_t);

} // namespace gpk::cuda::conv
