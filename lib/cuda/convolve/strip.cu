// Launches of the 3 x 3 strip kernel (strip.cuh).
#include "cuda/convolve/strip_launch.cuh"

namespace gpk::cuda::conv {
namespace {

// `rows` (0: one chunk) in whole chunks of `chunk` rows.
int chunk_rows(int rows, int chunk) {
    return rows > 0 ? (rows + chunk - 1) / chunk * chunk : chunk;
}

// Output rows a chunk of the 3 x 3 strip kernel: 4 where sums are written (12 blocks an SM at 40
// registers; chunks of 2 spill under 32 registers), 8 for both passes of min/max (whose extra state would
// cost the chunks of 4 their occupancy).
template <StripMode M> constexpr int strip_chunk() {
    return M == StripMode::divide ? 4 : 8;
}

// `rows`: output rows a strip (0: one chunk).
template <StripMode M, bool Signed, StripDiv D>
unsigned launch_strip_kernel(const PassArgs &a, const ByteTaps<3> &taps, const U8Divider &dv, int rows,
                             cudaStream_t s) {
    constexpr int C = strip_chunk<M>();
    const long long groups = strip_groups(a.shape.width);
    StripBorder bd;
    if (!strip_border(a, bd)) return 0;
    const dim3 grid = strip_grid(a, groups, chunk_rows(rows, C), M);
    if (grid.x == 0) return 0;
    conv3x3_u8_strip_kernel<M, Signed, D, C><<<grid, kStripThreads, 0, s>>>(
        a.src, a.shape, a.out, taps, dv, bd, chunk_rows(rows, C), groups, out_aligned_for_strip(a));
    check_launch("conv3x3_u8_strip_kernel");
    return grid.x * grid.y;
}

} // namespace

unsigned launch_strip(const PassArgs &a, cudaStream_t s) {
    if (a.filter->separable || a.filter->kh != 3 || !strip_case(a)) return 0;
    ByteTaps<3> taps;
    const bool is_signed = pack_byte_taps(*a.filter, taps);
    return launch_strip_modes(a, is_signed, 0, [&](auto m, auto sg, auto d, const U8Divider &dv, int r) {
        return launch_strip_kernel<decltype(m)::value, decltype(sg)::value, decltype(d)::value>(a, taps, dv,
                                                                                                r, s);
    });
}

} // namespace gpk::cuda::conv
