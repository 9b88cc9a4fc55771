// Launches of the two passes of a separable filter.
#include "cuda/convolve/launch.cuh"

#include <string>

namespace gpk::cuda::conv {
namespace {

// f32 filters of up to 17 taps (radius 8) get kernels with the tap count known at compile time; K is the
// odd count, or 0 for the general kernel.
constexpr int kMaxFixedTaps = 17;

template <class In, class Acc>
using RowKernel = void (*)(SourceRows, Shape, int, Acc *, Taps<Acc, kMaxTaps1D>, int);
template <class Acc> using ColumnKernel = void (*)(const Acc *, Shape, Output, Taps<Acc, kMaxTaps1D>, int);

template <class In, class Acc, int K = 3> RowKernel<In, Acc> row_kernel_for(int kw) {
    if constexpr (K > kMaxFixedTaps)
        return &row_pass_kernel<In, Acc, 0>;
    else
        return kw == K ? &row_pass_kernel<In, Acc, K> : row_kernel_for<In, Acc, K + 2>(kw);
}

template <class Acc, int K = 3> ColumnKernel<Acc> column_kernel_for(int kh) {
    if constexpr (K > kMaxFixedTaps)
        return &column_pass_kernel<Acc, 0>;
    else
        return kh == K ? &column_pass_kernel<Acc, K> : column_kernel_for<Acc, K + 2>(kh);
}

template <class In, class Acc>
void row_pass_typed(const PassArgs &a, int mid_rows, void *mid, const DeviceLimits &lim, cudaStream_t s) {
    int kw = a.filter->kw, ch = a.shape.channels;
    RowKernel<In, Acc> kernel = &row_pass_kernel<In, Acc, 0>;
    if constexpr (std::is_same<In, float>::value && std::is_same<Acc, float>::value)
        kernel = row_kernel_for<In, Acc>(kw);
    size_t smem = size_t(tile_stride_of(kRowTileX + (kw - 1) * ch)) * kRowTileRows * sizeof(In);
    allow_shared(kernel, smem, lim, "the row pass");
    long long row_elems = a.shape.width * ch;
    dim3 grid(unsigned((row_elems + kRowTileX - 1) / kRowTileX),
              unsigned((mid_rows + kRowTileRows - 1) / kRowTileRows));
    kernel<<<grid, dim3(kRowTileX, kRowTileRows), smem, s>>>(
        a.src, a.shape, mid_rows, static_cast<Acc *>(mid), make_taps<Acc, kMaxTaps1D>(a.filter->row), kw);
    check_launch("row_pass_kernel");
}

template <class In>
void row_pass_for_input(const PassArgs &a, int mid_rows, void *mid, const DeviceLimits &lim, cudaStream_t s) {
    switch (a.acc) {
    case AccKind::i32:
        if constexpr (std::is_integral<In>::value) return row_pass_typed<In, int>(a, mid_rows, mid, lim, s);
        break;
    case AccKind::i64:
        if constexpr (std::is_integral<In>::value)
            return row_pass_typed<In, long long>(a, mid_rows, mid, lim, s);
        break;
    case AccKind::f32:
        return row_pass_typed<In, float>(a, mid_rows, mid, lim, s);
    case AccKind::f64:
        return row_pass_typed<In, double>(a, mid_rows, mid, lim, s);
    }
    fail(GPK_ERR_INTERNAL, "row pass: integer sums asked for a float image");
}

template <class Acc>
unsigned column_pass_typed(const PassArgs &a, const void *mid, const DeviceLimits &lim, cudaStream_t s) {
    int kh = a.filter->kh;
    ColumnKernel<Acc> kernel = &column_pass_kernel<Acc, 0>;
    if constexpr (std::is_same<Acc, float>::value) kernel = column_kernel_for<Acc>(kh);
    size_t smem = size_t(kTileThreadRows * kColumnPY + kh - 1) * kTileX * sizeof(Acc);
    allow_shared(kernel, smem, lim, "the column pass");
    long long row_elems = a.shape.width * a.shape.channels;
    dim3 grid(unsigned((row_elems + kTileX - 1) / kTileX),
              unsigned((a.shape.out_rows + kTileThreadRows * kColumnPY - 1) / (kTileThreadRows * kColumnPY)));
    kernel<<<grid, dim3(kTileX, kTileThreadRows), smem, s>>>(static_cast<const Acc *>(mid), a.shape, a.out,
                                                             make_taps<Acc, kMaxTaps1D>(a.filter->col), kh);
    check_launch("column_pass_kernel");
    return grid.x * grid.y;
}

} // namespace

void launch_row_pass(const PassArgs &a, int mid_rows, void *mid, const DeviceLimits &lim, cudaStream_t s) {
    switch (a.in_dtype) {
    case GPK_U8:
        return row_pass_for_input<uint8_t>(a, mid_rows, mid, lim, s);
    case GPK_U16:
        return row_pass_for_input<uint16_t>(a, mid_rows, mid, lim, s);
    case GPK_F32:
        return row_pass_for_input<float>(a, mid_rows, mid, lim, s);
    case GPK_F64:
        return row_pass_for_input<double>(a, mid_rows, mid, lim, s);
    default:
        fail(GPK_ERR_INTERNAL, "row pass: input dtype " + std::to_string(int(a.in_dtype)));
    }
}

unsigned launch_column_pass(const PassArgs &a, const void *mid, const DeviceLimits &lim, cudaStream_t s) {
    switch (a.acc) {
    case AccKind::i32:
        return column_pass_typed<int>(a, mid, lim, s);
    case AccKind::i64:
        return column_pass_typed<long long>(a, mid, lim, s);
    case AccKind::f32:
        return column_pass_typed<float>(a, mid, lim, s);
    case AccKind::f64:
        return column_pass_typed<double>(a, mid, lim, s);
    }
    return 0;
}

} // namespace gpk::cuda::conv
