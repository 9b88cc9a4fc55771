// Launches of the pair kernel (pair.cuh): both passes of min/max normalisation, in one cooperative launch
// or two, and written sums.
#include "cuda/convolve/pair.cuh"
#include "engine/test_hooks.hpp"
#include "cuda/convolve/strip_launch.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gpk::cuda::conv {
namespace {

// Rows a chunk of the pair kernel: 8 for the fold pass, 4 for written sums (prefetched: walk_chunks) and
// for the min/max write pass (its divider and range held besides).
template <StripMode M> constexpr int pair_chunk() {
    return M == StripMode::fold ? 8 : 4;
}

template <bool Cross, StripMode M, bool Signed, StripDiv D>
unsigned launch_pair_kernel(const PassArgs &a, const ByteTaps<3> &taps, const PairTaps &pt,
                            const U8Divider &dv, int rows, cudaStream_t s) {
    const long long groups = rank1_groups(a.shape.width);
    StripBorder bd;
    if (!strip_border(a, bd)) return 0;
    const dim3 grid = strip_grid(a, groups, rows, M, kBoxBlockGroups);
    if (grid.x == 0) return 0;
    // The write pass of min/max walks its strips bottom first: the fold pass read those rows last.
    conv3x3_u8_pair_kernel<Cross, M, Signed, D, pair_chunk<M>(), M == StripMode::divide>
        <<<grid, kStripThreads, 0, s>>>(a.src, a.shape, a.out, taps, pt, dv, bd, rows, groups,
                                        out_aligned_for_strip(a), M == StripMode::minmax);
    check_launch("conv3x3_u8_pair_kernel");
    return grid.x * grid.y;
}

// Whether the pair kernel takes the filter (3 x 3 byte taps, sum |taps| <= kPairMaxAbsSum, the strip
// kernels' image cases): its taps, and whether the corner taps are all 0.
bool pair_case(const PassArgs &a, ByteTaps<3> &taps, bool &is_signed, PairTaps &pt, bool &cross) {
    const gpk_filter &f = *a.filter;
    if (f.separable || f.kh != 3 || !strip_case(a) || !(f.abs_sum <= kPairMaxAbsSum)) return false;
    is_signed = pack_byte_taps(f, taps);
    pt = PairTaps{};
    int negative = 0;
    cross = true;
    for (int r = 0; r < 3; ++r)
        for (int b = 0; b < 3; ++b) {
            const int t = int(f.taps[size_t(r) * 3 + b]);
            pt.t[r][b] = unsigned(t);
            negative += t < 0 ? -t : 0;
            cross &= r == 1 || b == 1 || t == 0;
        }
    pt.bias = 255 * negative;
    pt.bias2 = unsigned(pt.bias) * 0x10001u;
    return true;
}

template <bool Cross>
unsigned launch_pair_fused(DeviceContext &ctx, const PassArgs &a, const ByteTaps<3> &taps, const PairTaps &pt,
                           int rows, cudaStream_t s) {
    auto kernel =
        conv3x3_u8_pair_minmax_kernel<Cross, pair_chunk<StripMode::fold>(), pair_chunk<StripMode::minmax>()>;
    const long long groups = rank1_groups(a.shape.width);
    StripBorder bd;
    if (!strip_border(a, bd)) return 0;
    const dim3 grid = strip_grid(a, groups, rows, StripMode::minmax, kBoxBlockGroups);
    const unsigned units = grid.x * grid.y;
    const int per_sm = ctx.resident_blocks(reinterpret_cast<const void *>(kernel), kStripThreads, 0);
    if (per_sm < 1 || units == 0) return 0;
    const unsigned blocks = unsigned(std::min<size_t>(units, size_t(per_sm) * ctx.limits().multiprocessors));
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(kStripThreads);
    config.stream = s;
    config.attrs = attr;
    config.numAttrs = 1;
    check(cudaLaunchKernelEx(&config, kernel, a.src, a.shape, a.out, taps, pt, bd, rows, groups,
                             out_aligned_for_strip(a), grid.x, units),
          "conv3x3_u8_pair_minmax_kernel (cooperative launch)");
    check_launch("conv3x3_u8_pair_minmax_kernel");
    return units;
}

} // namespace

unsigned launch_pair(const PassArgs &a, cudaStream_t s) {
    ByteTaps<3> taps;
    PairTaps pt;
    bool is_signed = false, cross = false;
    if (!pair_case(a, taps, is_signed, pt, cross)) return 0;
    return launch_strip_modes(a, is_signed, kPairStripRows,
                              [&](auto m, auto sg, auto d, const U8Divider &dv, int r) {
                                  constexpr StripMode M = decltype(m)::value;
                                  constexpr bool Sg = decltype(sg)::value;
                                  constexpr StripDiv D = decltype(d)::value;
                                  return cross ? launch_pair_kernel<true, M, Sg, D>(a, taps, pt, dv, r, s)
                                               : launch_pair_kernel<false, M, Sg, D>(a, taps, pt, dv, r, s);
                              });
}

// Both passes of min/max normalisation of a whole device image in one cooperative launch of the pair
// kernel (its min and max already set to the identity); 0 where it does not apply (or the device cannot
// launch cooperatively, or GPK_TEST_CONV_PAIR=twopass): the caller runs the two passes.
unsigned launch_pair_minmax(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    if (a.out.reduce || a.out.normalize != GPK_NORMALIZE_MINMAX) return 0;
    ByteTaps<3> taps;
    PairTaps pt;
    bool is_signed = false, cross = false;
    if (!pair_case(a, taps, is_signed, pt, cross)) return 0;
    // Without cooperative launches (or with the test hook GPK_TEST_CONV_PAIR=twopass): two launches.
    if (!ctx.limits().cooperative_launch || test_hooks().conv_pair_twopass) return 0;
    return cross ? launch_pair_fused<true>(ctx, a, taps, pt, kPairStripRows, s)
                 : launch_pair_fused<false>(ctx, a, taps, pt, kPairStripRows, s);
}

} // namespace gpk::cuda::conv
