// Launches of the direct 2D kernel: square 3, 5 and 9 tap filters on u8 (exact int) and f32 images get
// compile-time sizes; everything else takes the general kernel.
#include "cuda/convolve_launch.cuh"
#include "cuda/convolve_vector.cuh"

#include <cmath>
#include <string>

namespace gpk::cuda::conv {
namespace {

constexpr int kGeneralPY = 4;

template <class In, class Acc, int K, int PY>
unsigned launch_fixed(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    auto kernel = conv2d_kernel<In, Acc, K, K, PY, K * K>;
    int ch = a.shape.channels;
    size_t smem = size_t(tile_stride_of(kTileX + (K - 1) * ch)) * (kTileThreadRows * PY + K - 1) * sizeof(In);
    allow_shared(kernel, smem, lim, "the 2D convolution");
    long long row_elems = a.shape.width * ch;
    dim3 grid(unsigned((row_elems + kTileX - 1) / kTileX),
              unsigned((a.shape.out_rows + kTileThreadRows * PY - 1) / (kTileThreadRows * PY)));
    kernel<<<grid, dim3(kTileX, kTileThreadRows), smem, s>>>(a.src, a.shape, a.out,
                                                             make_taps<Acc, K * K>(a.filter->taps), K, K);
    check_launch("conv2d_kernel");
    return grid.x * grid.y;
}

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

// One channel, normalisation none or sum, written not folded: the four-outputs-per-thread kernels of
// convolve_vector.cuh apply.
bool vector_case(const PassArgs &a, gpk_dtype out_dtype) {
    const Output &o = a.out;
    if (a.shape.channels != 1 || o.reduce || o.dtype != out_dtype) return false;
    return o.normalize == GPK_NORMALIZE_NONE || o.normalize == GPK_NORMALIZE_SUM;
}

// The multiply-shift divider of U8Divider for the filter's |sum|, exact up to the largest |n| + half
// (n: a sum of the filter over u8 samples); false where none is found.
bool make_u8_divider(const PassArgs &a, U8Divider &dv) {
    dv = U8Divider{a.out.normalize == GPK_NORMALIZE_SUM, a.out.isum < 0, 0, 1, 0};
    if (!dv.sum) return true;
    unsigned long long d = (unsigned long long)(a.out.isum < 0 ? -a.out.isum : a.out.isum);
    if (d == 0 || d >= (1ull << 31)) return false;
    unsigned long long nmax = (unsigned long long)(a.filter->abs_sum * 255) + d / 2;
    int fl = 0;
    while ((2ull << fl) <= d) ++fl; // floor(log2 d)
    for (int shift = 32 + fl; shift >= 31 + fl; --shift) {
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

template <int K, int PY> unsigned launch_u8x4(const PassArgs &a, cudaStream_t s) {
    constexpr int G = (K + 3) / 4;
    ByteTaps<K> taps{};
    bool is_signed = false;
    for (int r = 0; r < K; ++r)
        for (int b = 0; b < K; ++b) {
            int t = int(a.filter->taps[size_t(r) * K + b]);
            is_signed |= t < 0;
            taps.w[r * G + b / 4] |= int(unsigned(t & 0xFF) << (8 * (b % 4)));
        }
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

template <int K, int PY> unsigned launch_f32x4(const PassArgs &a, cudaStream_t s) {
    bool aligned = reinterpret_cast<uintptr_t>(a.src.base) % 16 == 0 && a.src.pitch % 16 == 0;
    dim3 grid(unsigned((a.shape.width + kVecTileX - 1) / kVecTileX),
              unsigned((a.shape.out_rows + kTileThreadRows * PY - 1) / (kTileThreadRows * PY)));
    conv2d_f32x4_kernel<K, PY><<<grid, dim3(kTileX, kTileThreadRows), 0, s>>>(
        a.src, a.shape, a.out, make_taps<float, K * K>(a.filter->taps), aligned);
    check_launch("conv2d_f32x4_kernel");
    return grid.x * grid.y;
}

// Taps that dp4a takes: integers in [-128, 127].
bool byte_taps(const gpk_filter &f) {
    for (double t : f.taps)
        if (!(t >= -128 && t <= 127) || t != std::floor(t)) return false;
    return true;
}

// The four-outputs-per-thread kernels for 3, 5 and 9 taps; 0 where they do not apply.
template <class In, class Acc> unsigned launch_vector(const PassArgs &a, cudaStream_t s) {
    const int k = a.filter->kh;
    if constexpr (std::is_same<In, uint8_t>::value && std::is_same<Acc, int>::value) {
        if (!vector_case(a, GPK_U8) || !byte_taps(*a.filter)) return 0;
        if (k == 3) return launch_u8x4<3, 16>(a, s);
        if (k == 5) return launch_u8x4<5, 16>(a, s);
        if (k == 9) return launch_u8x4<9, 8>(a, s);
    } else if constexpr (std::is_same<In, float>::value && std::is_same<Acc, float>::value) {
        if (!vector_case(a, GPK_F32)) return 0;
        if (k == 3) return launch_f32x4<3, 8>(a, s);
        if (k == 5) return launch_f32x4<5, 8>(a, s);
        if (k == 9) return launch_f32x4<9, 8>(a, s);
    }
    return 0;
}

// u8 with exact int sums and f32 with f32 sums, the cases the benchmarks and most users run; returns the
// blocks launched, 0 when the filter is not one of these.
template <class In, class Acc>
unsigned launch_square(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    constexpr bool fast = (std::is_same<In, uint8_t>::value && std::is_same<Acc, int>::value) ||
                          (std::is_same<In, float>::value && std::is_same<Acc, float>::value);
    if constexpr (fast) {
        if (a.filter->kh != a.filter->kw) return 0;
        if (unsigned blocks = launch_vector<In, Acc>(a, s)) return blocks;
        switch (a.filter->kh) {
        case 3:
            return launch_fixed<In, Acc, 3, 16>(a, lim, s);
        case 5:
            return launch_fixed<In, Acc, 5, 16>(a, lim, s);
        case 9:
            return launch_fixed<In, Acc, 9, 8>(a, lim, s);
        default:
            return 0;
        }
    }
    return 0;
}

template <class In, class Acc>
unsigned launch_typed(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    unsigned blocks = launch_square<In, Acc>(a, lim, s);
    return blocks ? blocks : launch_general<In, Acc>(a, lim, s);
}

template <class In> unsigned launch_for_input(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    switch (a.acc) {
    case AccKind::i32:
        if constexpr (std::is_integral<In>::value) return launch_typed<In, int>(a, lim, s);
        break;
    case AccKind::i64:
        if constexpr (std::is_integral<In>::value) return launch_typed<In, long long>(a, lim, s);
        break;
    case AccKind::f32:
        return launch_typed<In, float>(a, lim, s);
    case AccKind::f64:
        return launch_typed<In, double>(a, lim, s);
    }
    fail(GPK_ERR_INTERNAL, "conv2d: integer sums asked for a float image");
}

} // namespace

unsigned launch_conv2d(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    switch (a.in_dtype) {
    case GPK_U8:
        return launch_for_input<uint8_t>(a, lim, s);
    case GPK_U16:
        return launch_for_input<uint16_t>(a, lim, s);
    case GPK_F32:
        return launch_for_input<float>(a, lim, s);
    case GPK_F64:
        return launch_for_input<double>(a, lim, s);
    default:
        fail(GPK_ERR_INTERNAL, "conv2d: input dtype " + std::to_string(int(a.in_dtype)));
    }
}

} // namespace gpk::cuda::conv
