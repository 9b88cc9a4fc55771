// Launches of the rank-1 strip kernel (rank1.cuh), instantiated one K a file (rank1_k5.cu, rank1_k7.cu,
// rank1_k9.cu) so that they compile in parallel.
#pragma once

#include "cuda/convolve/strip_launch.cuh"

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

} // namespace gpk::cuda::conv
