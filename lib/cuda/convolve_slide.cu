// Launch of the sliding-window f32 kernel (convolve_slide.cuh) where it applies: one-channel f32 images with
// f32 sums and 16-byte aligned rows, square 2D filters of 1 to 9 taps, f32 outputs written with normalisation
// none or sum. Elsewhere (and with GPK_TEST_CONV_F32=off) the kernels of convolve_2d.cu run, with the same
// bits.
#include "cuda/convolve_launch.cuh"
#include "cuda/convolve_slide.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gpk::cuda::conv {
namespace {

// A built form of the kernel: D rows loaded ahead, halo by shuffle or by loads, blocks per SM its registers
// are capped for (1: no cap).
struct SlideForm {
    int depth;
    bool load_halo;
    int min_blocks;
    bool operator==(const SlideForm &o) const {
        return depth == o.depth && load_halo == o.load_halo && min_blocks == o.min_blocks;
    }
};

// GPK_TEST_CONV_F32 (NOTES.md, internal knobs): "off", or a form "<D><s|l>[b<N>][p]" (rows ahead; shuffled
// or loaded halo; registers capped for N blocks an SM; 'p' plain stores instead of evict-first ones);
// GPK_TEST_CONV_F32_ROWS: output rows a warp walks down (default: one wave of warps over the image).
struct SlideKnob {
    bool off = false;
    bool given = false; // a form was named
    SlideForm form{0, false, 1};
    bool stream_out = true;
    int rows = 0; // 0: one wave
};

SlideKnob slide_knob() {
    SlideKnob k;
    const char *text = std::getenv("GPK_TEST_CONV_F32");
    if (text && *text) {
        if (std::strcmp(text, "off") == 0) {
            k.off = true;
            return k;
        }
        const char *c = text;
        auto number = [&c] {
            int n = 0;
            while (*c >= '0' && *c <= '9' && n < 1000) n = 10 * n + (*c++ - '0');
            return n;
        };
        k.form.depth = number();
        bool ok = (k.form.depth == 1 || k.form.depth == 2 || k.form.depth == 4) && (*c == 's' || *c == 'l');
        if (ok) k.form.load_halo = *c++ == 'l';
        if (ok && *c == 'b') {
            ++c;
            k.form.min_blocks = number();
            ok = k.form.min_blocks >= 1 && k.form.min_blocks <= 16;
        }
        if (ok && *c == 'p') {
            ++c;
            k.stream_out = false;
        }
        if (!ok || *c)
            invalid(std::string("GPK_TEST_CONV_F32 is \"") + text +
                    "\"; expected off or a form such as 2s, 1lb8 or 4sp (rows ahead 1, 2 or 4; s shuffled or "
                    "l loaded halo; b<N> registers for N blocks an SM; p plain stores)");
        k.given = true;
    }
    const char *rows = std::getenv("GPK_TEST_CONV_F32_ROWS");
    if (rows && *rows) {
        char extra = 0;
        if (std::sscanf(rows, "%d%c", &k.rows, &extra) != 1 || k.rows < 1 || k.rows > (1 << 20))
            invalid(std::string("GPK_TEST_CONV_F32_ROWS is \"") + rows +
                    "\"; expected a row count (1 to 2^20)");
    }
    return k;
}

// Each K's default form. 3 x 3 and 9 x 9 (the benchmarked sizes) have a few more built for comparison
// (SlideForms); a form not built for K runs K's default.
template <int K> constexpr SlideForm default_form() {
    // Registers capped so that 12 (K <= 3) or 8 blocks share an SM without spilling (ptxas sm_90: 40 and 64
    // registers; K = 5 spilled 48 bytes at 10 blocks).
    // 9 x 9 loads its halo (1lb6: 0.286 ms against 0.303 for 1sb8 on the H100, tools/gpu/f2d.sh).
    return K == 9   ? SlideForm{1, true, 6}
           : K >= 7 ? SlideForm{1, false, 8}
                    : SlideForm{2, false, K == 5 ? 8 : 12};
}

template <int K, int D, bool L, int B>
unsigned launch_form(DeviceContext &ctx, const PassArgs &a, const SlideKnob &knob, cudaStream_t s) {
    const auto kernel = conv2d_f32_slide_kernel<K, D, L, B>;
    const int per_sm = ctx.resident_blocks(reinterpret_cast<const void *>(kernel), kSlideThreads, 0);
    if (per_sm < 1) return 0;
    const long long bands = (a.shape.width + kSlideBand - 1) / kSlideBand;
    const long long bx = (bands + kSlideWarps - 1) / kSlideWarps;
    // One wave of blocks (kSlideWarps warps each) where the image allows; strips of at least K rows (a
    // strip reads K - 1 rows beyond its own; 4 K before made images under about 3000^2 launch a fraction of
    // a wave whose warps each walked 5 K - 1 rows: f32 9 x 9 at 512^2 took 0.024 ms, 15 blocks).
    long long rows = knob.rows ? knob.rows
                               : rows_per_run(a.shape.out_rows,
                                              (long long)per_sm * ctx.limits().multiprocessors, bx, K, 1);
    rows = std::max<long long>(rows, (a.shape.out_rows + 65534) / 65535); // grid y
    const dim3 grid(unsigned(bx), unsigned((a.shape.out_rows + rows - 1) / rows));
    const bool out_aligned = reinterpret_cast<uintptr_t>(a.out.base) % 16 == 0 && a.out.pitch % 16 == 0;
    kernel<<<grid, dim3(32, kSlideWarps), 0, s>>>(a.src, a.shape, a.out,
                                                  make_taps<float, K * K>(a.filter->taps), int(rows),
                                                  out_aligned, knob.stream_out);
    check_launch("conv2d_f32_slide_kernel");
    return grid.x * grid.y;
}

// The forms built beside the defaults, as <D, load halo, min blocks>.
template <int D, bool L, int B> struct Form { static constexpr SlideForm value{D, L, B}; };
template <int K, class... Forms>
unsigned launch_forms(DeviceContext &ctx, const PassArgs &a, const SlideKnob &knob, const SlideForm &f,
                      cudaStream_t s) {
    unsigned blocks = 0;
    bool found = false;
    [[maybe_unused]] auto one = [&](auto form) {
        using F = decltype(form);
        if (!found && f == F::value) {
            found = true;
            blocks = launch_form<K, F::value.depth, F::value.load_halo, F::value.min_blocks>(ctx, a, knob, s);
        }
    };
    (one(Forms{}), ...);
    if (found) return blocks;
    constexpr SlideForm def = default_form<K>();
    return launch_form<K, def.depth, def.load_halo, def.min_blocks>(ctx, a, knob, s);
}

template <int K>
unsigned launch_k(DeviceContext &ctx, const PassArgs &a, const SlideKnob &knob, cudaStream_t s) {
    const SlideForm f = knob.given ? knob.form : default_form<K>();
    if constexpr (K == 3)
        return launch_forms<K, Form<1, false, 12>, Form<2, false, 1>, Form<4, false, 8>, Form<2, true, 12>>(
            ctx, a, knob, f, s);
    if constexpr (K == 9)
        return launch_forms<K, Form<1, false, 1>, Form<2, false, 6>, Form<1, false, 8>>(ctx, a, knob, f, s);
    return launch_forms<K>(ctx, a, knob, f, s);
}

} // namespace

unsigned launch_slide_f32(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    const gpk_filter &f = *a.filter;
    const Output &o = a.out;
    if (a.in_dtype != GPK_F32 || a.acc != AccKind::f32 || a.shape.channels != 1 || f.separable ||
        f.kh != f.kw || f.kh > kSlideMaxK || o.reduce || o.dtype != GPK_F32 ||
        (o.normalize != GPK_NORMALIZE_NONE && o.normalize != GPK_NORMALIZE_SUM))
        return 0;
    if (reinterpret_cast<uintptr_t>(a.src.base) % 16 != 0 || a.src.pitch % 16 != 0) return 0;
    // Indices in int: columns within a band's reach of the row, padded rows, the rows there are.
    if (a.shape.width >= kSlideMaxIndex || a.src.rows >= kSlideMaxIndex || a.src.row0 <= -kSlideMaxIndex ||
        a.src.row0 >= kSlideMaxIndex)
        return 0;
    const SlideKnob knob = slide_knob();
    if (knob.off) return 0;
    // By default K >= 5 only: at 3 x 3 the tile kernel before it was faster on the H100 (tools/gpu/f2d.sh,
    // 8192^2: 0.202 ms against 0.209 for this kernel's default form); a form named by the knob runs at any K.
    if (!knob.given && f.kh < 5) return 0;
    switch (f.kh) {
    case 1:
        return launch_k<1>(ctx, a, knob, s);
    case 3:
        return launch_k<3>(ctx, a, knob, s);
    case 5:
        return launch_k<5>(ctx, a, knob, s);
    case 7:
        return launch_k<7>(ctx, a, knob, s);
    case 9:
        return launch_k<9>(ctx, a, knob, s);
    default:
        return 0;
    }
}

} // namespace gpk::cuda::conv
