// Launches of the general 2D kernel (kernels.cuh: any size up to 63 x 63, any input and accumulation
// type), for the filters and images that no specialised kernel takes.
#include "cuda/convolve/launch.cuh"

#include <string>
#include <type_traits>

namespace gpk::cuda::conv {
namespace {

constexpr int kGeneralPY = 4;

template <class In, class Acc>
unsigned launch_general(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    auto kernel = conv2d_kernel<In, Acc, 0, 0, kGeneralPY, kMaxTaps2D>;
    static_assert(sizeof(Taps<Acc, kMaxTaps2D>) + sizeof(SourceRows) + sizeof(Shape) + sizeof(Output) + 8 <=
                      32764,
                  "kernel parameters beyond the 32 KB limit");
    int kh = a.filter->kh, kw = a.filter->kw, ch = a.shape.channels;
    size_t smem =
        size_t(tile_stride_of(kTileX + (kw - 1) * ch)) * (kTileThreadRows * kGeneralPY + kh - 1) * sizeof(In);
    allow_shared(kernel, smem, lim, "the 2D convolution");
    long long row_elems = a.shape.width * ch;
    dim3 grid(
        unsigned((row_elems + kTileX - 1) / kTileX),
        unsigned((a.shape.out_rows + kTileThreadRows * kGeneralPY - 1) / (kTileThreadRows * kGeneralPY)));
    kernel<<<grid, dim3(kTileX, kTileThreadRows), smem, s>>>(
        a.src, a.shape, a.out, make_taps<Acc, kMaxTaps2D>(a.filter->taps), kh, kw);
    check_launch("conv2d_kernel (general)");
    return grid.x * grid.y;
}

template <class In> unsigned launch_general_for(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    switch (a.acc) {
    case AccKind::i32:
        if constexpr (std::is_integral<In>::value) return launch_general<In, int>(a, lim, s);
        break;
    case AccKind::i64:
        if constexpr (std::is_integral<In>::value) return launch_general<In, long long>(a, lim, s);
        break;
    case AccKind::f32:
        return launch_general<In, float>(a, lim, s);
    case AccKind::f64:
        return launch_general<In, double>(a, lim, s);
    }
    fail(GPK_ERR_INTERNAL, "conv2d: integer sums asked for a float image");
}

} // namespace

unsigned launch_general(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    switch (a.in_dtype) {
    case GPK_U8:
        return launch_general_for<uint8_t>(a, lim, s);
    case GPK_U16:
        return launch_general_for<uint16_t>(a, lim, s);
    case GPK_F32:
        return launch_general_for<float>(a, lim, s);
    case GPK_F64:
        return launch_general_for<double>(a, lim, s);
    default:
        fail(GPK_ERR_INTERNAL, "conv2d: input dtype " + std::to_string(int(a.in_dtype)));
    }
}

} // namespace gpk::cuda::conv
