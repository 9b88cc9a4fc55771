// The choice between the box kernel (box.cu) and the rank-1 strip kernel (rank1.cuh) for u8 K x K taps that
// are an exact integer product, and the launches of the rank-1 strip kernel for 5, 7 and 9 taps a side.
#include "cuda/convolve/strip_launch.cuh"

#include <cmath>
#include <cstdlib>
#include <numeric>

namespace gpk::cuda::conv {

// Output rows a chunk of the rank-1 kernel: 4 where sums are written at K = 7 and 9 (fewer registers: 6
// blocks an SM instead of 4), else 8 (at K = 5 chunks of 4 spill under their 64-register cap). Its strips
// are one chunk of 8 rows (two of 4).
template <int K> constexpr int rank1_chunk() {
    return K >= 7 ? 4 : kStripChunk;
}

template <int K, bool Mulhi>
unsigned launch_rank1_kernel(const PassArgs &a, const Rank1Taps<K> &taps, const Rank1Finisher<Mulhi> &f,
                             int rows, cudaStream_t s) {
    const long long groups = rank1_groups(a.shape.width);
    const dim3 grid = strip_grid(a, groups, rows, StripMode::divide);
    if (grid.x == 0) return 0;
    conv_rank1_u8_strip_kernel<K, rank1_chunk<K>(), Mulhi><<<grid, kStripThreads, 0, s>>>(
        a.src, a.shape, a.out, taps, f, rows, groups, out_aligned_for_strip(a));
    check_launch("conv_rank1_u8_strip_kernel");
    return grid.x * grid.y;
}

template <int K>
unsigned launch_rank1_strip(const PassArgs &a, const Rank1Taps<K> &taps, bool is_signed, cudaStream_t s) {
    if (minmax_pass(a)) return 0;
    return launch_sum_modes(
        a, is_signed, kStripChunk, [&](auto, auto sg, auto d, const U8Divider &dv, int r) {
            if constexpr (decltype(d)::value == StripDiv::mulhi)
                return launch_rank1_kernel<K>(a, taps, Rank1Finisher<true>{dv, false}, r, s);
            else
                return launch_rank1_kernel<K>(a, taps, Rank1Finisher<false>{dv, decltype(sg)::value}, r, s);
        });
}

template unsigned launch_rank1_strip<5>(const PassArgs &, const Rank1Taps<5> &, bool, cudaStream_t);
template unsigned launch_rank1_strip<7>(const PassArgs &, const Rank1Taps<7> &, bool, cudaStream_t);
template unsigned launch_rank1_strip<9>(const PassArgs &, const Rank1Taps<9> &, bool, cudaStream_t);

namespace {

// Factors K x K integer taps as taps[a][b] = r[a] * c[b] with c in [-128, 127] (c: the first non-zero row
// divided by the gcd of its entries); false where no such exact product exists or every tap is 0.
template <int K> bool rank1_factor(const gpk_filter &f, Rank1Taps<K> &out) {
    out = Rank1Taps<K>{};
    auto tap = [&](int a, int b) { return (long long)f.taps[size_t(a) * K + b]; };
    int first = -1;
    for (int a = 0; a < K && first < 0; ++a)
        for (int b = 0; b < K; ++b)
            if (tap(a, b) != 0) first = a;
    if (first < 0) return false;
    long long g = 0;
    for (int b = 0; b < K; ++b) g = std::gcd(g, std::llabs(tap(first, b)));
    long long c[K];
    int lead = -1; // the first column where c is not 0
    for (int b = 0; b < K; ++b) {
        c[b] = tap(first, b) / g;
        if (c[b] < -128 || c[b] > 127) return false;
        if (lead < 0 && c[b] != 0) lead = b;
    }
    for (int a = 0; a < K; ++a) {
        if (tap(a, lead) % c[lead] != 0) return false;
        const long long r = tap(a, lead) / c[lead];
        for (int b = 0; b < K; ++b)
            if (tap(a, b) != r * c[b]) return false;
        out.r[a] = int(r);
    }
    for (int b = 0; b < K; ++b) out.c[b / 4] |= int(unsigned(c[b] & 0xFF) << (8 * (b % 4)));
    return true;
}

// A separable pair of K integer taps each way as rank-1 taps: c = the row filter (signed bytes), r = the
// column filter (exact int sums bound each r[a] h); false where a row tap is not a byte.
template <int K> bool rank1_of_pair(const gpk_filter &f, Rank1Taps<K> &out) {
    out = Rank1Taps<K>{};
    for (int b = 0; b < K; ++b) {
        const double t = f.row[size_t(b)];
        if (!(t >= -128 && t <= 127) || t != std::floor(t)) return false;
        out.c[b / 4] |= int(unsigned(int(t) & 0xFF) << (8 * (b % 4)));
    }
    for (int a = 0; a < K; ++a) out.r[a] = int(f.col[size_t(a)]);
    return true;
}

// Whether rank-1 taps are a box: every r[a] the same and every c[b] the same; t = r[0] c[0], every tap.
template <int K> bool box_tap(const Rank1Taps<K> &taps, int &t) {
    const int c0 = rank1_col(taps, 0);
    for (int a = 0; a < K; ++a)
        if (taps.r[a] != taps.r[0]) return false;
    for (int b = 0; b < K; ++b)
        if (rank1_col(taps, b) != c0) return false;
    t = taps.r[0] * c0;
    return t != 0;
}

// Box filters take the box kernel (box.cu) where it applies, at K = 3 too (ahead of the 3 x 3 strip
// and pair kernels); other rank-1 taps the rank-1 strip kernel at K >= 5 (at K = 3 it does no more work per
// output than the 3 x 3 strip kernel); 0 where neither applies.
template <int K> unsigned launch_rank1_k(const PassArgs &a, cudaStream_t s) {
    const gpk_filter &f = *a.filter;
    Rank1Taps<K> taps;
    if (!(f.separable ? rank1_of_pair(f, taps) : rank1_factor(f, taps))) return 0;
    bool is_signed = false;
    for (const std::vector<double> *v : {&f.taps, &f.row, &f.col})
        for (double t : *v) is_signed |= t < 0;
    int t = 0;
    if (box_tap(taps, t) && !is_signed)
        if (unsigned blocks = launch_box<K>(a, taps, t, s)) return blocks;
    if constexpr (K >= 5) return launch_rank1_strip<K>(a, taps, is_signed, s);
    return 0;
}

} // namespace

// The box kernel (box.cu) or the rank-1 strip kernel; 0 where neither applies.
unsigned launch_rank1(const PassArgs &a, cudaStream_t s) {
    if (!strip_case(a)) return 0;
    switch (a.filter->kh) {
    case 3:
        return launch_rank1_k<3>(a, s);
    case 5:
        return launch_rank1_k<5>(a, s);
    case 7:
        return launch_rank1_k<7>(a, s);
    case 9:
        return launch_rank1_k<9>(a, s);
    default:
        return 0;
    }
}

} // namespace gpk::cuda::conv
