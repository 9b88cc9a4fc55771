// Launchers of the convolution kernels, one per pass kind; convolve.cu plans bands and calls them.
#pragma once

#include "cuda/convolve/kernels.cuh"
#include "cuda/device_context.cuh"
#include "engine/filter.hpp"

#include <algorithm>

namespace gpk::cuda::conv {

// The type sums accumulate in: exact integers (int where sum|taps| * max sample < 2^31) or floats.
enum class AccKind { i32, i64, f32, f64 };

inline size_t acc_size(AccKind a) {
    return (a == AccKind::i32 || a == AccKind::f32) ? 4 : 8;
}

// Rows of a run, for kernels whose blocks each walk down a run of output rows: one wave of `slots` resident
// blocks over the image's `across` blocks a row of runs where the image allows, at least `min_rows` rows (so
// that the rows a run reads beyond its own stay a small share), a multiple of `multiple`.
inline long long rows_per_run(long long out_rows, long long slots, long long across, long long min_rows,
                              long long multiple) {
    const long long runs = std::max<long long>(1, slots / across);
    const long long rows = std::max<long long>((out_rows + runs - 1) / runs, min_rows);
    return (rows + multiple - 1) / multiple * multiple;
}

// Longest band a launch takes (grid height limits).
constexpr int kMaxBandRows = 1 << 17;

// Longest row a launch takes, in samples (width * channels): the kernels put blocks of kTileX or more
// samples side by side in grid x, which holds at most 2^31 - 1 blocks.
constexpr long long kMaxRowElems = (long long)kTileX * 0x7FFFFFFF;

struct PassArgs {
    SourceRows src; // padded rows of the band (2D and row pass)
    Shape shape;
    Output out;
    gpk_dtype in_dtype;
    AccKind acc;
    const gpk_filter *filter;
};

// Output rows a block of the 2D kernel or the column pass covers at least; a band of R rows and E elements
// per row therefore launches at most blocks_bound(E, R) blocks (the min/max pass keeps one partial each).
constexpr int kMinBlockRows = kTileThreadRows * kColumnPY;
inline size_t blocks_bound(long long row_elems, size_t rows) {
    return size_t((row_elems + kTileX - 1) / kTileX) * ((rows + kMinBlockRows - 1) / kMinBlockRows);
}

// Direct 2D filter over one band (direct.cu); returns the blocks launched.
unsigned launch_conv2d(DeviceContext &ctx, const PassArgs &a, cudaStream_t s);
// The general 2D kernel (general.cu) over one band, any filter and types; returns the blocks launched.
unsigned launch_general(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s);
// A K x K filter (K = 5, 7, 9) on a one-channel f32 image with f32 sums, written with normalisation none or
// sum, through the sliding-window kernel (slide.cu): the blocks launched, 0 where it does not apply.
unsigned launch_slide_f32(DeviceContext &ctx, const PassArgs &a, cudaStream_t s);
// A K x K filter (K = 3 .. 9 odd; 2D taps that factor exactly as r[a] * c[b], or a separable pair) on a
// one-channel u8 image with exact int sums, through the box kernel where every tap is the same
// (box.cu) or, at K >= 5, the rank-1 strip kernel (rank1.cu): the blocks launched, 0 where neither
// applies (a separable pair then takes its two passes).
unsigned launch_rank1(const PassArgs &a, cudaStream_t s);
// Both passes of min/max normalisation of a whole device image (PassArgs of the write pass; out.imm set to
// the identity) in one cooperative launch of the pair kernel (pair.cu): 3 x 3 byte taps with sum
// |taps| <= 16 on a one-channel u8 image. The units made, 0 where it does not apply.
unsigned launch_pair_minmax(DeviceContext &ctx, const PassArgs &a, cudaStream_t s);
// Row pass of a separable filter (separable.cu): mid_rows rows of Acc sums into `mid`.
void launch_row_pass(const PassArgs &a, int mid_rows, void *mid, const DeviceLimits &lim, cudaStream_t s);
// Column pass over `mid` (out_rows + kh - 1 rows), written or folded through a.out; returns the blocks.
unsigned launch_column_pass(const PassArgs &a, const void *mid, const DeviceLimits &lim, cudaStream_t s);
// Both passes of a separable filter in one kernel (fused.cu) where it applies (single-channel
// f32 with f32 sums, a square filter of a built size, outputs written); false where it does not.
bool launch_fused_separable(DeviceContext &ctx, const PassArgs &a, cudaStream_t s);

// Raises a kernel's dynamic shared memory limit where `bytes` needs it; GPK_ERR_UNSUPPORTED beyond the
// device.
template <class Kernel>
void allow_shared(Kernel kernel, size_t bytes, const DeviceLimits &lim, const char *what) {
    if (bytes > lim.smem_per_block_optin)
        fail(GPK_ERR_UNSUPPORTED, std::string(what) + " needs " + std::to_string(bytes) +
                                      " bytes of shared memory per block; this device has " +
                                      std::to_string(lim.smem_per_block_optin));
    if (bytes > 48 * 1024)
        check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
              "cudaFuncSetAttribute (convolution shared memory)");
}

template <class Acc, int N> Taps<Acc, N> make_taps(const std::vector<double> &t) {
    Taps<Acc, N> out{};
    for (size_t i = 0; i < t.size() && i < size_t(N); ++i) out.t[i] = Acc(t[i]);
    return out;
}

} // namespace gpk::cuda::conv
