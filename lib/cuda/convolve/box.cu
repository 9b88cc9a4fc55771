// Launches of the box kernel (box.cuh) for 3, 5, 7 and 9 taps a side.
#include "cuda/convolve/box.cuh"
#include "cuda/convolve/strip_launch.cuh"

namespace gpk::cuda::conv {

// Output rows a strip of the box kernel: each strip first reads the K - 1 rows above its first output, and
// longer strips launch fewer blocks than the SMs hold.
constexpr int kBoxStripRows = 16;

// Rows a chunk of the box kernel: 4. Chunks of 8 hold more loads in flight but cost registers that the
// kernel lacks at K = 7 and 9 (which read their leaving rows again). Sums written at K <= 5 walk their strips
// in prefetched chunks (the next chunk's loads issued before the current chunk's steps: walk_chunks), which
// keeps a chunk of loads always in flight.
constexpr int kBoxChunk = 4;

// Box filters as users write them (box:K, sum normalisation) take the box kernel; the rarer forms (signed
// taps, no normalisation, min/max) take the rank-1 or the direct kernels, which compute the same sums.
template <int K> unsigned launch_box(const PassArgs &a, const Rank1Taps<K> &taps, int t, cudaStream_t s) {
    U8Divider dv{};
    if (t < 0 || minmax_pass(a) || !make_u8_divider(a, dv) || !dv.sum || a.out.isum == 1 || dv.shift != 32)
        return 0;
    constexpr StripMode kMode = StripMode::divide;
    const long long groups = rank1_groups(a.shape.width);
    const dim3 grid = strip_grid(a, groups, kBoxStripRows, kMode, kBoxBlockGroups);
    if (grid.x == 0) return 0;
    conv_box_u8_kernel<K, kMode, false, StripDiv::mulhi, kBoxChunk, (K <= 5)><<<grid, kStripThreads, 0, s>>>(
        a.src, a.shape, a.out, taps, t, dv, kBoxStripRows, groups, out_aligned_for_strip(a));
    check_launch("conv_box_u8_kernel");
    return grid.x * grid.y;
}

template unsigned launch_box<3>(const PassArgs &, const Rank1Taps<3> &, int, cudaStream_t);
template unsigned launch_box<5>(const PassArgs &, const Rank1Taps<5> &, int, cudaStream_t);
template unsigned launch_box<7>(const PassArgs &, const Rank1Taps<7> &, int, cudaStream_t);
template unsigned launch_box<9>(const PassArgs &, const Rank1Taps<9> &, int, cudaStream_t);

} // namespace gpk::cuda::conv
