// Launches of the four-outputs-per-thread kernels (vector.cuh).
#include "cuda/convolve/strip_launch.cuh"
#include "cuda/convolve/vector.cuh"

namespace gpk::cuda::conv {
namespace {

// One channel, normalisation none or sum, written not folded: the four-outputs-per-thread kernels of
// vector.cuh apply.
bool vector_case(const PassArgs &a, gpk_dtype out_dtype) {
    const Output &o = a.out;
    if (a.shape.channels != 1 || o.reduce || o.dtype != out_dtype) return false;
    return o.normalize == GPK_NORMALIZE_NONE || o.normalize == GPK_NORMALIZE_SUM;
}

template <int K, int PY> unsigned launch_u8x4(const PassArgs &a, cudaStream_t s) {
    ByteTaps<K> taps;
    const bool is_signed = pack_byte_taps(*a.filter, taps);
    U8Divider dv;
    if (!make_u8_divider(a, dv)) return 0;
    bool aligned = reinterpret_cast<uintptr_t>(a.src.base) % 16 == 0 && a.src.pitch % 16 == 0;
    dim3 grid(unsigned((a.shape.width + kVecTileX - 1) / kVecTileX),
              unsigned((a.shape.out_rows + kTileThreadRows * PY - 1) / (kTileThreadRows * PY)));
    dim3 block(kTileX, kTileThreadRows);
    if (is_signed)
        conv2d_u8x4_kernel<K, PY, true><<<grid, block, 0, s>>>(a.src, a.shape, a.out, taps, dv, aligned);
    else
        conv2d_u8x4_kernel<K, PY, false><<<grid, block, 0, s>>>(a.src, a.shape, a.out, taps, dv, aligned);
    check_launch("conv2d_u8x4_kernel");
    return grid.x * grid.y;
}

// The f32 tile kernel's grid with PY output rows a thread.
template <int PY> dim3 f32x4_grid(const PassArgs &a) {
    return dim3(unsigned((a.shape.width + kVecTileX - 1) / kVecTileX),
                unsigned((a.shape.out_rows + kTileThreadRows * PY - 1) / (kTileThreadRows * PY)));
}

template <int K, int PY> unsigned launch_f32x4(const PassArgs &a, cudaStream_t s) {
    bool aligned = reinterpret_cast<uintptr_t>(a.src.base) % 16 == 0 && a.src.pitch % 16 == 0;
    const dim3 grid = f32x4_grid<PY>(a);
    conv2d_f32x4_kernel<K, PY><<<grid, dim3(kTileX, kTileThreadRows), 0, s>>>(
        a.src, a.shape, a.out, make_taps<float, K * K>(a.filter->taps), aligned);
    check_launch("conv2d_f32x4_kernel");
    return grid.x * grid.y;
}

// The f32 kernel with 8 rows a thread, or 2 where 8 would launch less than a wave of blocks (8 of 256
// threads an SM): on a small image the few blocks would walk their rows while most SMs idle. The same sums
// either way.
template <int K> unsigned launch_f32x4_sized(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    const dim3 grid = f32x4_grid<8>(a);
    if ((long long)grid.x * grid.y < 8LL * lim.multiprocessors) return launch_f32x4<K, 2>(a, s);
    return launch_f32x4<K, 8>(a, s);
}

} // namespace

unsigned launch_vector_u8(const PassArgs &a, cudaStream_t s) {
    if (!vector_case(a, GPK_U8) || !byte_taps(*a.filter)) return 0;
    switch (a.filter->kh) {
    case 3:
        return launch_u8x4<3, 16>(a, s);
    case 5:
        return launch_u8x4<5, 16>(a, s);
    case 9:
        return launch_u8x4<9, 8>(a, s);
    default:
        return 0;
    }
}

unsigned launch_vector_f32(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    if (!vector_case(a, GPK_F32)) return 0;
    switch (a.filter->kh) {
    case 3:
        return launch_f32x4_sized<3>(a, lim, s);
    case 5:
        return launch_f32x4_sized<5>(a, lim, s);
    case 9:
        return launch_f32x4_sized<9>(a, lim, s);
    default:
        return 0;
    }
}

} // namespace gpk::cuda::conv
