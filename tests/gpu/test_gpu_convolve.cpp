// gpk_convolve on the CUDA backend against the CPU backend: bit-identical on the exact integer path
// (normalisations included), within the tolerances on the float path (relative L2 1e-5 for f32 sums,
// 1e-12 for f64, integer outputs within 1), row padding never written; every kernel (fixed 3/5/9 and general
// 2D, both separable passes, min/max folding), every border, filters larger than the image, misaligned
// pointers and images larger than a faked device (bands with halos), for host pageable, host pinned and
// device pointers, with and without a caller stream. GPK_TEST_ONLY=name,... runs the named groups only
// (laplacian, kernels, strip, rank1, fused, fit, misaligned, beyond_device, row_limit, beyond_2_32,
// slide).
#include "convolve_params.hpp"
#include "hooks.hpp"
#include "gpu_common.hpp"
#include "periodic_image.hpp"
#include "samples.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <utility>

namespace {

using gpu::Block;
using gpu::Memory;

struct ConvCase {
    gpk_dtype in, out;
    size_t width, height;
    unsigned channels;
    std::string filter; // a named filter, or int2d/real2d:KH:KW, intsep/realsep:ROW:COL
    gpk_border border;
    gpk_normalize norm;
    gpk_accumulate acc;
    size_t in_offset = 0, out_offset = 0; // misaligned pointers
    size_t in_align = 0;                  // > 0: input rows padded to a multiple of this many bytes

    size_t in_pad() const {
        size_t pad = ((width % 3) + (channels == 3 ? 5 : 0)) * gpk_dtype_size(in);
        if (in_align == 0) return pad;
        size_t row = width * channels * gpk_dtype_size(in);
        return (row + in_align - 1) / in_align * in_align - row;
    }
    size_t out_pad() const { return (height % 4) * gpk_dtype_size(out) + 8; }
    size_t in_stride() const { return width * channels * gpk_dtype_size(in) + in_pad(); }
    size_t out_stride() const { return width * channels * gpk_dtype_size(out) + out_pad(); }
};

std::string describe(const ConvCase &k) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s->%s %zux%zu ch%u %s border %d norm %d acc %d offsets %zu/%zu",
                  gpk_dtype_name(k.in), gpk_dtype_name(k.out), k.width, k.height, k.channels,
                  k.filter.c_str(), int(k.border), int(k.norm), int(k.acc), k.in_offset, k.out_offset);
    return buf;
}

// Random taps for the int2d/real2d/intsep/realsep specs; named filters otherwise.
gpk_filter *make_filter(const std::string &spec, uint64_t seed) {
    std::mt19937_64 rng(seed);
    unsigned a = 0, b = 0;
    char kind[16] = {};
    gpk_filter *f = nullptr;
    int ta = 0, tb = 0;
    if (std::sscanf(spec.c_str(), "box2d:%u:%d", &a, &ta) == 2) {
        // box2d:K:T: K x K taps, every one T.
        std::vector<double> t(size_t(a) * a, double(ta));
        gpk_filter_create_2d(&f, a, a, t.data());
    } else if (std::sscanf(spec.c_str(), "boxpair:%u:%d:%d", &a, &ta, &tb) == 3) {
        // boxpair:K:A:B: a separable pair, K row taps A and K column taps B.
        std::vector<double> r(a, double(ta)), c(a, double(tb));
        gpk_filter_create_separable(&f, a, r.data(), a, c.data());
    } else if (std::sscanf(spec.c_str(), "%15[a-z0-9]:%u:%u", kind, &a, &b) == 3 &&
               std::strncmp(kind, "rank1", 5) == 0) {
        // rank1 / rank1pos / rank1wide:K:K: 2D taps r[i] * c[j] (small signed, non-negative, or column
        // taps over the whole byte range with r in -1..1); rank1sep:K:K the same r, c as a separable pair.
        const bool pos = std::strcmp(kind, "rank1pos") == 0, wide = std::strcmp(kind, "rank1wide") == 0;
        auto draw = [&](int lo, int hi) { return double(lo + int(rng() % unsigned(hi - lo + 1))); };
        std::vector<double> r(a), c(b), t(size_t(a) * b);
        for (double &v : r) v = wide ? draw(-1, 1) : pos ? draw(0, 9) : draw(-9, 9);
        for (double &v : c) v = wide ? draw(-128, 127) : pos ? draw(0, 12) : draw(-12, 12);
        for (unsigned i = 0; i < a; ++i)
            for (unsigned j = 0; j < b; ++j) t[size_t(i) * b + j] = r[i] * c[j];
        if (std::strcmp(kind, "rank1sep") == 0)
            gpk_filter_create_separable(&f, b, c.data(), a, r.data());
        else
            gpk_filter_create_2d(&f, a, b, t.data());
    } else if (std::sscanf(spec.c_str(), "%15[a-z0-9]:%u:%u", kind, &a, &b) == 3) {
        bool integer = std::strncmp(kind, "int", 3) == 0, positive = std::strncmp(kind, "pos", 3) == 0;
        auto tap = [&] {
            if (positive) return double(rng() % 101);
            return integer ? double(int(rng() % 201) - 100)
                           : std::uniform_real_distribution<double>(-1, 1)(rng);
        };
        bool separable = std::strstr(kind, "sep") != nullptr;
        std::vector<double> t(separable ? a + b : a * b);
        for (double &v : t) v = tap();
        if (separable)
            gpk_filter_create_separable(&f, a, t.data(), b, t.data() + a);
        else
            gpk_filter_create_2d(&f, a, b, t.data());
    } else {
        gpk_filter_create_named(&f, spec.c_str());
    }
    if (!f) {
        std::fprintf(stderr, "filter %s: %s\n", spec.c_str(), gpk_context_last_error(nullptr));
        std::exit(1);
    }
    return f;
}

// The exact path of NOTES.md: integer input, integer taps, sum|taps| * max sample < 2^54.
bool exact_path(const ConvCase &k, const gpk_filter *f) {
    if (k.in != GPK_U8 && k.in != GPK_U16) return false;
    gpk_filter_info info;
    info.struct_size = sizeof info;
    gpk_filter_get_info(&info, f);
    if (!info.integer_taps) return false;
    std::vector<double> t(info.kh * info.kw + info.kh + info.kw);
    gpk_filter_get_taps(t.data(), t.size(), f);
    double abs_sum = 0;
    if (info.separable) {
        double r = 0, c = 0;
        for (size_t i = 0; i < info.kw; ++i) r += std::fabs(t[i]);
        for (size_t i = 0; i < info.kh; ++i) c += std::fabs(t[info.kw + i]);
        abs_sum = r * c;
    } else {
        for (size_t i = 0; i < info.kh * info.kw; ++i) abs_sum += std::fabs(t[i]);
    }
    return abs_sum * (k.in == GPK_U8 ? 255.0 : 65535.0) < 18014398509481984.0;
}

// Random samples over the type's range (floats in [-100, 100]); the padding holds garbage.
std::vector<unsigned char> make_image(const ConvCase &k, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<unsigned char> img(k.in_stride() * k.height);
    for (auto &b : img) b = uint8_t(rng());
    size_t size = gpk_dtype_size(k.in);
    double hi = k.in == GPK_U8 ? 256 : 65536;
    for (size_t y = 0; y < k.height; ++y)
        for (size_t i = 0; i < k.width * k.channels; ++i) {
            double v = (k.in == GPK_U8 || k.in == GPK_U16)
                           ? std::floor(std::uniform_real_distribution<double>(0, hi)(rng))
                           : std::uniform_real_distribution<double>(-100, 100)(rng);
            write_sample(k.in, img.data() + y * k.in_stride() + i * size, v);
        }
    return img;
}

gpk_image desc(gpk_dtype t, const ConvCase &k, size_t stride) {
    gpk_image d;
    gpk_image_init(&d, t, k.width, k.height, k.channels);
    d.stride = stride;
    return d;
}

constexpr unsigned char kPoison = 0xA5;

gpk_status convolve(gpk_context *ctx, const ConvCase &k, const gpk_filter *f, const void *in, void *out) {
    const gpk_convolve_params p = convolve_params(f, k.border, k.norm, k.acc);
    gpk_image di = desc(k.in, k, k.in_stride()), dout = desc(k.out, k, k.out_stride());
    return gpk_convolve(ctx, &p, &di, in, &dout, out);
}

// Bit-identical where the path is exact; else the tolerance of the accumulation. Padding stays poisoned.
void compare(const ConvCase &k, bool exact, const std::vector<unsigned char> &got,
             const std::vector<unsigned char> &want, const std::string &what) {
    if (exact) {
        CHECK_MSG(got == want, what + ": exact path differs");
        return;
    }
    size_t size = gpk_dtype_size(k.out), row = k.width * k.channels * size;
    bool int_out = k.out == GPK_U8 || k.out == GPK_U16;
    bool f64 = k.acc == GPK_ACCUMULATE_F64 ||
               (k.acc == GPK_ACCUMULATE_AUTO && (k.in == GPK_F64 || k.out == GPK_F64));
    double tol = (f64 ? 1e-12 : 1e-5) + (k.out == GPK_F32 ? 2.4e-7 : 0);
    double err2 = 0, ref2 = 0, worst = 0;
    bool padding_kept = true;
    for (size_t y = 0; y < k.height; ++y) {
        const unsigned char *g = got.data() + y * k.out_stride(), *w = want.data() + y * k.out_stride();
        for (size_t i = 0; i < k.width * k.channels; ++i) {
            double a = read_sample(k.out, g + i * size), b = read_sample(k.out, w + i * size);
            if (std::isnan(a) && std::isnan(b)) continue;
            err2 += (a - b) * (a - b);
            ref2 += b * b;
            worst = std::max(worst, std::fabs(a - b));
        }
        for (size_t j = row; j < k.out_stride(); ++j) padding_kept &= g[j] == kPoison;
    }
    CHECK_MSG(padding_kept, what + ": row padding written");
    if (int_out) {
        CHECK_MSG(worst <= 1, what + ": integer output off by " + std::to_string(worst));
    } else {
        double rel = std::sqrt(err2) / std::max(std::sqrt(ref2), 1e-300);
        CHECK_MSG(rel <= tol, what + ": relative L2 " + std::to_string(rel));
    }
}

void run_on(gpk_context *ctx, cudaStream_t stream, Memory in_mem, Memory out_mem, const ConvCase &k,
            const gpk_filter *f, const std::vector<unsigned char> &img,
            const std::vector<unsigned char> &want, bool exact, const std::string &what) {
    size_t out_bytes = k.out_stride() * k.height;
    Block in(in_mem, img.size(), k.in_offset), out(out_mem, out_bytes, k.out_offset);
    in.upload(img.data());
    std::vector<unsigned char> got(out_bytes, kPoison);
    out.upload(got.data());
    CHECK_OK(ctx, convolve(ctx, k, f, in.get(), out.get()));
    if (stream) gpu::cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    out.download(got.data());
    compare(k, exact, got, want, what);
}

void run_case(gpu::Contexts &ctxs, const ConvCase &k, uint64_t seed) {
    gpk_filter *f = make_filter(k.filter, seed);
    std::vector<unsigned char> img = make_image(k, seed + 1);
    std::vector<unsigned char> want(k.out_stride() * k.height, kPoison);
    CHECK_OK(ctxs.cpu, convolve(ctxs.cpu, k, f, img.data(), want.data()));
    bool exact = exact_path(k, f);
    const Memory pairs[][2] = {{Memory::device, Memory::device},
                               {Memory::pageable, Memory::pageable},
                               {Memory::pinned, Memory::pinned},
                               {Memory::device, Memory::pageable},
                               {Memory::pageable, Memory::device}};
    // Sanitizer runs check the kernels: device images and the staged path, not every pointer pairing.
    const size_t npairs = gpu::quick() ? 2 : 5;
    for (size_t pi = 0; pi < npairs; ++pi) {
        const auto &m = pairs[pi];
        std::string what = describe(k) + " " + gpu::memory_name(m[0]) + "->" + gpu::memory_name(m[1]);
        run_on(ctxs.cuda, nullptr, m[0], m[1], k, f, img, want, exact, what);
        run_on(ctxs.cuda_streamed, ctxs.stream, m[0], m[1], k, f, img, want, exact, what + " caller stream");
    }
    gpk_filter_destroy(f);
}

const gpk_border kBorders[] = {GPK_BORDER_ZERO, GPK_BORDER_CLAMP, GPK_BORDER_MIRROR, GPK_BORDER_REFLECT,
                               GPK_BORDER_WRAP};

void test_kernels(gpu::Contexts &ctxs) {
    size_t s = gpu::quick() ? 1 : 3;
    const auto Z = GPK_BORDER_ZERO, C = GPK_BORDER_CLAMP, M = GPK_BORDER_MIRROR, R = GPK_BORDER_REFLECT,
               W = GPK_BORDER_WRAP;
    const auto none = GPK_NORMALIZE_NONE, sum = GPK_NORMALIZE_SUM, mm = GPK_NORMALIZE_MINMAX;
    const auto a_auto = GPK_ACCUMULATE_AUTO, a32 = GPK_ACCUMULATE_F32, a64 = GPK_ACCUMULATE_F64;
    uint64_t seed = 100;
    const ConvCase cases[] = {
        // exact path, compile-time 3/5/9 kernels on u8: the Laplacian and smoothing exercises, saturation
        {GPK_U8, GPK_U8, 100 * s, 70 * s, 1, "lp3", Z, mm, a_auto},
        {GPK_U8, GPK_U8, 90 * s, 50 * s, 3, "smooth5", C, sum, a_auto},
        {GPK_U8, GPK_U8, 77 * s, 61 * s, 2, "int2d:3:3", R, none, a_auto},
        {GPK_U8, GPK_U8, 64 * s, 40 * s, 1, "log9", W, none, a_auto},
        {GPK_U8, GPK_F32, 70 * s, 33 * s, 2, "log9", R, mm, a_auto},
        // four outputs per thread (one channel, none or sum): partial blocks, unaligned rows, tiny images
        {GPK_U8, GPK_U8, 301 * s, 70 * s, 1, "int2d:3:3", C, sum, a_auto},
        {GPK_U8, GPK_U8, 263 * s, 45 * s, 1, "int2d:5:5", M, none, a_auto},
        {GPK_U8, GPK_U8, 400, 37, 1, "int2d:9:9", R, sum, a_auto},
        {GPK_U8, GPK_U8, 6, 5, 1, "int2d:3:3", W, sum, a_auto},
        {GPK_U8, GPK_U8, 288 * s, 70 * s, 1, "pos2d:3:3", C, sum, a_auto},
        {GPK_U8, GPK_U8, 288 * s, 50 * s, 1, "int2d:3:3", Z, sum, a_auto},
        {GPK_U8, GPK_U8, 576, 50, 1, "pos2d:5:5", R, none, a_auto},
        {GPK_U8, GPK_U8, 384, 41, 1, "int2d:9:9", M, sum, a_auto},
        {GPK_U8, GPK_U8, 384, 29, 1, "pos2d:9:9", W, sum, a_auto},
        {GPK_U8, GPK_U8, 200, 40, 1, "smooth5", W, sum, a_auto},
        {GPK_U8, GPK_U8, 17, 6, 1, "pos2d:3:3", M, sum, a_auto},
        {GPK_F32, GPK_F32, 300 * s, 70 * s, 1, "real2d:3:3", C, none, a_auto},
        // f32 3 x 3 on an image that gives the tile kernel a wave of blocks at 8 rows a thread (132 SMs);
        // the smaller ones take 2 rows a thread
        {GPK_F32, GPK_F32, 4100, 2100, 1, "real2d:3:3", M, sum, a32},
        {GPK_F32, GPK_F32, 261 * s, 40 * s, 1, "real2d:5:5", Z, sum, a32},
        {GPK_F32, GPK_F32, 520, 30, 1, "real2d:9:9", R, none, a32},
        {GPK_F32, GPK_F32, 7, 9, 1, "real2d:9:9", W, sum, a32},
        // exact path, general kernel: u16, int32 and int64 sums, filters larger than the image
        {GPK_U16, GPK_U16, 61 * s, 45 * s, 4, "lp5", M, none, a_auto},
        {GPK_U16, GPK_F64, 80, 70, 1, "int2d:63:63", W, sum, a_auto},
        {GPK_U16, GPK_U8, 29, 23, 3, "int2d:7:11", Z, mm, a_auto},
        {GPK_U8, GPK_U16, 1, 1, 1, "int2d:63:63", M, none, a_auto},
        {GPK_U8, GPK_U8, 3, 2, 4, "int2d:63:61", R, mm, a_auto},
        // exact separable: both passes in int32, min/max that keeps the row pass, radius 64
        {GPK_U8, GPK_U8, 90 * s, 64 * s, 1, "box:5", C, sum, a_auto},
        {GPK_U8, GPK_U8, 71 * s, 53 * s, 3, "intsep:7:5", Z, mm, a_auto},
        {GPK_U16, GPK_U16, 200, 150, 3, "box:129", C, sum, a_auto},
        {GPK_U16, GPK_F32, 33, 17, 2, "intsep:129:3", W, mm, a_auto},
        // float path: fixed f32 kernels, general kernels, f64 sums, integer outputs from float sums
        {GPK_F32, GPK_F32, 100 * s, 60 * s, 1, "real2d:9:9", C, none, a_auto},
        {GPK_F32, GPK_U8, 80 * s, 40 * s, 1, "real2d:3:3", M, mm, a32},
        {GPK_F32, GPK_F32, 63, 41, 4, "real2d:5:5", W, sum, a32},
        {GPK_F64, GPK_F64, 70, 50, 2, "real2d:7:5", R, sum, a64},
        {GPK_U8, GPK_U8, 77, 55, 1, "real2d:5:5", C, sum, a32},
        {GPK_F32, GPK_F64, 37, 23, 3, "real2d:63:61", Z, none, a64},
        // float separable
        {GPK_F32, GPK_F32, 120 * s, 80 * s, 1, "gauss:1.5", W, none, a_auto},
        {GPK_F32, GPK_F32, 150, 100, 4, "gauss:21.4", M, none, a32},
        {GPK_F32, GPK_F32, 300, 90, 1, "realsep:17:17", C, none, a32},
        {GPK_F32, GPK_F32, 130, 70, 2, "realsep:3:5", M, sum, a32},
        {GPK_F64, GPK_U16, 66, 44, 4, "realsep:11:3", R, mm, a32},
        {GPK_U16, GPK_F64, 50, 40, 1, "realsep:17:17", Z, sum, a64},
        {GPK_F32, GPK_F32, 1, 7, 1, "gauss:3", C, none, a32},
    };
    for (const ConvCase &k : cases) run_case(ctxs, k, seed++);
    // Every border on one small 2D and one separable case.
    for (gpk_border b : kBorders) {
        run_case(ctxs, {GPK_U8, GPK_U8, 23, 19, 3, "int2d:5:3", b, mm, a_auto}, seed++);
        run_case(ctxs, {GPK_F32, GPK_F32, 19, 23, 2, "realsep:9:7", b, none, a32}, seed++);
    }
}

// The case on device images, with make_filter's taps for seed (then seed + 2), against the CPU backend:
// the same bits, or the same refusal (random taps that sum to 0 under sum normalisation).
void check_on_device(gpu::Contexts &ctxs, const ConvCase &k, uint64_t &seed, const std::string &what) {
    gpk_filter *f = make_filter(k.filter, seed);
    std::vector<unsigned char> img = make_image(k, seed + 1);
    seed += 2;
    std::vector<unsigned char> want(k.out_stride() * k.height, kPoison);
    const gpk_status st = convolve(ctxs.cpu, k, f, img.data(), want.data());
    if (st == GPK_OK)
        run_on(ctxs.cuda, nullptr, Memory::device, Memory::device, k, f, img, want, true, what);
    else
        CHECK_STATUS(ctxs.cuda, convolve(ctxs.cuda, k, f, img.data(), want.data()), st);
    gpk_filter_destroy(f);
}

// The u8 3x3 strip kernel (lib/cuda/convolve/strip.cuh) on device images against the CPU backend: 3 x 3 byte
// taps of sum |taps| above the pair kernel's 16 (random taps of up to 100); widths around its 8-byte groups,
// its edge block and its 128-thread blocks; heights around its chunks and strips (4 rows where sums are
// written, 8 for min/max); every border; each way of finishing a sum (division through a multiply-high,
// none, signed taps, both passes of min/max); input rows 8-byte aligned, as it needs, and output rows
// aligned or not.
void test_strip_kernel(gpu::Contexts &ctxs) {
    const bool quick = gpu::quick();
    const std::vector<size_t> widths =
        quick ? std::vector<size_t>{1, 9, 17, 26, 1041}
              : std::vector<size_t>{1, 5, 8, 9, 16, 17, 18, 25, 31, 33, 1032, 1033, 1041, 1047, 1049, 2064};
    const std::vector<size_t> heights =
        quick ? std::vector<size_t>{1, 9, 33} : std::vector<size_t>{1, 2, 3, 8, 9, 17, 33, 50};
    const struct {
        const char *filter;
        gpk_normalize norm;
    } finishes[] = {{"pos2d:3:3", GPK_NORMALIZE_SUM},    {"pos2d:3:3", GPK_NORMALIZE_NONE},
                    {"int2d:3:3", GPK_NORMALIZE_SUM},    {"int2d:3:3", GPK_NORMALIZE_NONE},
                    {"pos2d:3:3", GPK_NORMALIZE_MINMAX}, {"int2d:3:3", GPK_NORMALIZE_MINMAX}};
    uint64_t seed = 7000;
    size_t cases = 0;
    for (size_t w : widths)
        for (size_t h : heights)
            for (gpk_border b : kBorders)
                for (const auto &fin : finishes) {
                    ConvCase k{GPK_U8, GPK_U8, w, h, 1, fin.filter, b, fin.norm, GPK_ACCUMULATE_AUTO};
                    k.in_align = 8;
                    check_on_device(ctxs, k, seed, describe(k) + " strip");
                    ++cases;
                }
    std::printf("strip kernel: %zu cases\n", cases);
}

// The rank-1 strip kernel (rank1.cuh) on device images against the CPU backend: K x K filters
// (K = 5, 7, 9, and 3, whose taps take the 3 x 3 pair or strip kernel) whose 2D taps are an exact integer
// product r[a] * c[b] (small signed, non-negative, full byte range), the same as separable pairs; widths
// around its 8-byte groups, the edge block (rows narrower than 20 and the columns from 8 (groups + 1) on)
// and its 128-thread blocks; heights around its chunks (4 rows where sums are written at K = 7 and 9, else
// 8) and strips of 8 rows, and rows shorter than the filter; every border, with the finishes in turn; every
// way of finishing (multiply-high division, none, signed; the passes of min/max, which such taps take through
// the direct kernels). Input rows 8-byte aligned, as it needs; output rows aligned or not. Box taps take the
// box kernel (test_box_kernel).
void test_rank1_kernel(gpu::Contexts &ctxs) {
    const bool quick = gpu::quick();
    const std::vector<size_t> widths =
        quick ? std::vector<size_t>{1, 13, 20, 27, 1045}
              : std::vector<size_t>{1,  4,  8,  9,    12,   19,   20,   21,   27,
                                    28, 29, 36, 1035, 1036, 1037, 1044, 1045, 2068};
    const std::vector<size_t> heights =
        quick ? std::vector<size_t>{1, 4, 17} : std::vector<size_t>{1, 2, 4, 8, 9, 12, 17, 33};
    const struct {
        const char *filter;
        gpk_normalize norm;
    } finishes[] = {{"rank1pos", GPK_NORMALIZE_SUM},  {"rank1pos", GPK_NORMALIZE_NONE},
                    {"rank1", GPK_NORMALIZE_SUM},     {"rank1", GPK_NORMALIZE_NONE},
                    {"rank1wide", GPK_NORMALIZE_SUM}, {"rank1", GPK_NORMALIZE_MINMAX},
                    {"rank1sep", GPK_NORMALIZE_SUM},  {"rank1sep", GPK_NORMALIZE_MINMAX}};
    uint64_t seed = 9000;
    size_t cases = 0, turn = 0;
    for (int kk : {3, 5, 7, 9})
        for (size_t w : widths)
            for (size_t h : heights)
                for (gpk_border b : kBorders) {
                    // The finishes in turn, shifted by one every 5 cases so that each border meets each.
                    const size_t t = turn++;
                    const auto &fin = finishes[(t + t / 5) % (sizeof finishes / sizeof finishes[0])];
                    if (quick && t % 3 != 0) continue; // a third of the quick cases
                    const std::string K = std::to_string(kk);
                    ConvCase k{GPK_U8, GPK_U8,   w,
                               h,      1,        std::string(fin.filter) + ":" + K + ":" + K,
                               b,      fin.norm, GPK_ACCUMULATE_AUTO};
                    k.in_align = 8;
                    check_on_device(ctxs, k, seed, describe(k) + " rank-1");
                    ++cases;
                }
    // Staged (host) images and pointers of any alignment: the kernel where the staged rows allow it, the
    // other kernels otherwise, same bits.
    for (int kk : {5, 9})
        for (gpk_border b : kBorders)
            for (gpk_normalize nm : {GPK_NORMALIZE_SUM, GPK_NORMALIZE_MINMAX}) {
                const std::string K = std::to_string(kk);
                ConvCase k{GPK_U8, GPK_U8, kk == 5 ? 1040u : 1037u, 45, 1, "rank1pos:" + K + ":" + K,
                           b,      nm,     GPK_ACCUMULATE_AUTO};
                k.in_align = 8;
                gpk_filter *f = make_filter(k.filter, seed);
                std::vector<unsigned char> img = make_image(k, seed + 1);
                seed += 2;
                std::vector<unsigned char> want(k.out_stride() * k.height, kPoison);
                if (convolve(ctxs.cpu, k, f, img.data(), want.data()) == GPK_OK)
                    for (Memory m : {Memory::pageable, Memory::pinned, Memory::device})
                        run_on(ctxs.cuda, nullptr, m, Memory::pageable, k, f, img, want, true,
                               describe(k) + " staged");
                gpk_filter_destroy(f);
                ++cases;
            }
    std::printf("rank-1 kernel: %zu cases\n", cases);
}

// The CPU backend's result for the case against the CUDA backend's on device images and, where `staged`, on
// host images too: the same bits.
void check_exact(gpu::Contexts &ctxs, const ConvCase &k, const gpk_filter *f,
                 const std::vector<unsigned char> &img, const std::string &what, bool staged) {
    std::vector<unsigned char> want(k.out_stride() * k.height, kPoison);
    CHECK_OK(ctxs.cpu, convolve(ctxs.cpu, k, f, img.data(), want.data()));
    run_on(ctxs.cuda, nullptr, Memory::device, Memory::device, k, f, img, want, true, what);
    if (staged)
        run_on(ctxs.cuda, nullptr, Memory::pageable, Memory::pageable, k, f, img, want, true,
               what + " staged");
}

// Image sizes around the layout the box and pair kernels share: widths around their 8-byte groups, warps
// of 30 writing lanes (240 columns) and blocks of 120 groups (960 columns), the edge block and rows narrower
// than 20; heights around their chunks of 4 and 8 rows and strips of 16 (a few of each in quick runs).
std::vector<size_t> box_layout_widths(bool quick) {
    if (quick) return {1, 20, 252, 260, 980};
    return {1, 12, 19, 20, 21, 27, 28, 251, 252, 253, 259, 260, 261, 971, 972, 979, 980, 981, 1940, 1949};
}

std::vector<size_t> box_layout_heights(bool quick) {
    if (quick) return {1, 5, 33};
    return {1, 2, 3, 5, 8, 9, 17, 33, 70};
}

// The box kernel (box.cuh) on device images against the CPU backend: K x K box filters (K = 3, 5,
// 7, 9) with every tap 1, 2, 3 or -1 (signed) and separable pairs of equal taps; widths around its 8-byte
// groups, its warps of 30 writing lanes (240 columns) and blocks of 120 groups (960 columns), the edge
// block and rows narrower than 20; heights around the filter, its chunks of 4 rows and its strips of 16;
// every border; every finish (division by the sum as a multiply-high, in the box kernel; none, signed and
// the passes of min/max, which take the rank-1, 3 x 3 or direct kernels); output rows aligned to 8 bytes or
// not; a few staged (host) images. Exact: the same bits.
void test_box_kernel(gpu::Contexts &ctxs) {
    const bool quick = gpu::quick();
    const std::vector<size_t> widths = box_layout_widths(quick), heights = box_layout_heights(quick);
    const struct {
        const char *taps; // box2d:K:<taps>, or boxpair:K:<taps>
        gpk_normalize norm;
    } finishes[] = {{"box2d:1", GPK_NORMALIZE_SUM},        {"box2d:1", GPK_NORMALIZE_NONE},
                    {"box2d:2", GPK_NORMALIZE_SUM},        {"box2d:-1", GPK_NORMALIZE_SUM},
                    {"box2d:-1", GPK_NORMALIZE_NONE},      {"box2d:3", GPK_NORMALIZE_MINMAX},
                    {"boxpair:1:1", GPK_NORMALIZE_SUM},    {"boxpair:2:-1", GPK_NORMALIZE_SUM},
                    {"boxpair:1:1", GPK_NORMALIZE_MINMAX}, {"box2d:1", GPK_NORMALIZE_MINMAX},
                    {"box2d:3", GPK_NORMALIZE_NONE}};
    const size_t nfin = sizeof finishes / sizeof finishes[0];
    uint64_t seed = 12000;
    size_t cases = 0, turn = 0;
    for (int kk : {3, 5, 7, 9})
        for (size_t w : widths)
            for (size_t h : heights) {
                const size_t t = turn++;
                const gpk_border b = kBorders[t % 5];
                const auto &fin = finishes[(t + t / 5) % nfin];
                std::string spec = fin.taps;
                spec.insert(spec.find(':') + 1, std::to_string(kk) + ":");
                ConvCase k{GPK_U8, GPK_U8, w, h, 1, spec, b, fin.norm, GPK_ACCUMULATE_AUTO};
                k.in_align = 8;
                k.out_offset = t % 3 == 1 ? 3 : 0; // output rows not 8-byte aligned
                gpk_filter *f = make_filter(k.filter, seed);
                std::vector<unsigned char> img = make_image(k, seed + 1);
                seed += 2;
                check_exact(ctxs, k, f, img, describe(k) + " box", t % 37 == 0);
                gpk_filter_destroy(f);
                ++cases;
            }
    std::printf("box kernel: %zu cases\n", cases);
}

// The pair kernel (pair.cuh) on device images against the CPU backend: 3 x 3 byte taps with sum
// |taps| up to 16 (its limit) and beyond (the strip kernel's then): lp3, random cross-shaped taps (corners
// 0), random signed and non-negative taps, a lone centre tap; images of random bytes, of values 0..1, 0..9
// and 0..40 (ranges of 0, 1 and under 256, which take the write pass's other dividers), and constant ones;
// every border; min/max in one cooperative launch (device images) and in two (GPK_TEST_CONV_PAIR=twopass, as
// on a device without cooperative launches), and the written sums (by the sum, none, signed); widths around
// its 8-byte groups, its warps of 30 writing lanes (240 columns) and blocks of 120 groups (960 columns), the
// edge block and rows narrower than 20; heights around its chunks of 4 and 8 rows and its strips of 16;
// output rows aligned to 8 bytes or not; a few staged (host) images; and images of more units than the
// device holds blocks, for the cooperative launch's blocks to take several. Exact: the same bits.
void test_pair_kernel(gpu::Contexts &ctxs) {
    const bool quick = gpu::quick();
    const std::vector<size_t> widths = box_layout_widths(quick), heights = box_layout_heights(quick);
    // GPK_TEST_CONV_PAIR: "" takes both min/max passes in one cooperative launch on device images, twopass
    // in two launches.
    const char *modes[] = {"", "twopass"};
    const gpk_normalize norms[] = {GPK_NORMALIZE_MINMAX, GPK_NORMALIZE_MINMAX, GPK_NORMALIZE_SUM,
                                   GPK_NORMALIZE_NONE};
    const unsigned value_tops[] = {255, 1, 9, 40, 255, 0}; // 0: a constant image
    uint64_t seed = 15000;
    size_t cases = 0, turn = 0;
    for (const char *mode : modes) {
        const hooks::Hook hook("GPK_TEST_CONV_PAIR", *mode ? mode : nullptr);
        for (size_t w : widths)
            for (size_t h : heights) {
                const size_t t = turn++;
                const int form = int((t + t / 7) % 5);
                {
                    std::mt19937_64 rng(seed++);
                    auto draw = [&](int lo, int hi) {
                        return double(lo + int(rng() % unsigned(hi - lo + 1)));
                    };
                    // form 0: lp3; 1: cross, signed; 2: any, signed; 3: any, >= 0; 4: a lone centre tap or a
                    // sum |taps| of 17 (the strip kernel's).
                    std::vector<double> taps(9, 0.0);
                    std::string name;
                    do {
                        for (int i = 0; i < 9; ++i) {
                            const bool corner = i != 4 && i % 2 == 0;
                            taps[i] = form == 0   ? (i == 4   ? -4.0
                                                     : corner ? 0.0
                                                              : 1.0)
                                      : form == 1 ? (corner ? 0.0 : draw(-4, 4))
                                      : form == 2 ? draw(-3, 3)
                                      : form == 3 ? draw(0, 3)
                                                  : (t % 2 ? (i == 4 ? draw(1, 3) : 0.0) : draw(-2, 2));
                        }
                        if (form == 4 && t % 2 == 0)
                            taps[4] = 17 - (std::fabs(taps[0]) + std::fabs(taps[1]) + std::fabs(taps[2]) +
                                            std::fabs(taps[3]) + std::fabs(taps[5]) + std::fabs(taps[6]) +
                                            std::fabs(taps[7]) + std::fabs(taps[8]));
                        double abs_sum = 0;
                        for (double v : taps) abs_sum += std::fabs(v);
                        const bool fits = abs_sum <= 16 || (form == 4 && abs_sum == 17);
                        if (fits && abs_sum > 0) break; // a sum of 0 with GPK_NORMALIZE_SUM: none, below
                    } while (true);
                    for (double v : taps) name += std::to_string(int(v)) + ",";
                    gpk_normalize nm = norms[t % 4];
                    double sum = 0;
                    for (double v : taps) sum += v;
                    if (nm == GPK_NORMALIZE_SUM && sum == 0) nm = GPK_NORMALIZE_NONE;
                    ConvCase k{GPK_U8,
                               GPK_U8,
                               w,
                               h,
                               1,
                               "taps3:" + name,
                               kBorders[(t + t / 5) % 5],
                               nm,
                               GPK_ACCUMULATE_AUTO};
                    k.in_align = 8;
                    k.out_offset = t % 3 == 1 ? 3 : 0; // output rows not 8-byte aligned
                    gpk_filter *f = nullptr;
                    CHECK_OK(nullptr, gpk_filter_create_2d(&f, 3, 3, taps.data()));
                    std::vector<unsigned char> img = make_image(k, seed++);
                    const unsigned top = value_tops[(t / 3) % 6];
                    for (auto &b : img) b = top == 0 ? 77 : top == 255 ? b : (unsigned char)(b % (top + 1));
                    check_exact(ctxs, k, f, img,
                                describe(k) + " values 0.." + std::to_string(top) + " pair '" + mode + "'",
                                t % 37 == 0);
                    gpk_filter_destroy(f);
                    ++cases;
                }
            }
    }
    // Images of more units (strips x blocks of 120 groups) than the device holds blocks at once, so that the
    // cooperative launch's blocks take several each: wide ones, and a narrow one of 2400 units (one block
    // and the edge block a strip) small enough for sanitizer runs.
    const struct {
        size_t w, h;
        const char *name;
        double taps[9];
    } big[] = {{8192, 2100, "lp3", {0, 1, 0, 1, -4, 1, 0, 1, 0}},
               {100, 19200, "lp3", {0, 1, 0, 1, -4, 1, 0, 1, 0}},
               {8190, 1500, "taps3:1,2,0,-1,-3,2,1,0,-1", {1, 2, 0, -1, -3, 2, 1, 0, -1}}};
    for (const auto &b : big) {
        if (quick && b.w > 4096) continue; // sanitizer runs: the narrow image alone
        ConvCase k{GPK_U8,
                   GPK_U8,
                   b.w,
                   b.h,
                   1,
                   b.name,
                   kBorders[cases % 5],
                   GPK_NORMALIZE_MINMAX,
                   GPK_ACCUMULATE_AUTO};
        k.in_align = 8;
        gpk_filter *f = nullptr;
        CHECK_OK(nullptr, gpk_filter_create_2d(&f, 3, 3, b.taps));
        std::vector<unsigned char> img = make_image(k, seed++);
        check_exact(ctxs, k, f, img, describe(k) + " pair (several units a block)", false);
        gpk_filter_destroy(f);
        ++cases;
    }
    std::printf("pair kernel: %zu cases\n", cases);
}

// The fused separable kernels, single-channel f32 sums, square filters of their built sizes: the streaming
// kernel (stream.cuh) and the ring kernel (fused.cuh), which runs where the streaming
// kernel does not fit the device and here by GPK_TEST_CONV_FUSED_KERNEL=ring ("" is the default choice).
const char *const kFusedKernels[] = {"", "ring"};

std::string kernel_name(const char *kernel) {
    return *kernel ? kernel : "default";
}

// Device images, widths around the strips (128 and 256 elements) and heights around the batches (8 and 16
// rows) and runs of rows (at least K - 1, split over the device's SMs), radii 1..8, 12, 16, 32, every
// border, plain or normalised f32 outputs and u8 outputs. The default kernel against the CPU backend within
// README's tolerance (device and pageable images), and every kernel bit-identical to the two passes
// (GPK_TEST_CONV_FUSED=off), which add in the same order.
void test_fused_separable(gpu::Contexts &ctxs) {
    const bool quick = gpu::quick();
    const std::vector<size_t> widths =
        quick ? std::vector<size_t>{1, 257}
              : std::vector<size_t>{1, 5, 127, 128, 129, 255, 256, 257, 300, 520};
    const std::vector<size_t> heights =
        quick ? std::vector<size_t>{17} : std::vector<size_t>{1, 7, 8, 9, 16, 17, 67, 263, 600};
    const char *filters[] = {"realsep:3:3", "realsep:17:17", "realsep:65:65", "realsep:5:5",
                             "realsep:7:7", "realsep:9:9",   "realsep:33:33", "realsep:25:25"};
    uint64_t seed = 9000;
    size_t cases = 0, kernel_runs = 0;
    for (const char *filter : filters) {
        if (quick && filter != filters[0] && filter != filters[2]) continue;
        for (size_t w : widths)
            for (size_t h : heights)
                for (gpk_border b : kBorders) {
                    // Beyond the first three filters, one border a shape.
                    if (filter != filters[0] && filter != filters[1] && filter != filters[2] &&
                        size_t(b) != (w + h) % 5)
                        continue;
                    // u8 outputs of plain sums (rounded, saturated); f32 outputs plain or divided by the sum
                    // (a relative error the division keeps).
                    const bool to_u8 = (w + h + size_t(b)) % 3 == 0, by_sum = !to_u8 && (w + h) % 2 == 0;
                    ConvCase k{GPK_F32,
                               to_u8 ? GPK_U8 : GPK_F32,
                               w,
                               h,
                               1,
                               filter,
                               b,
                               by_sum ? GPK_NORMALIZE_SUM : GPK_NORMALIZE_NONE,
                               GPK_ACCUMULATE_F32};
                    gpk_filter *f = make_filter(k.filter, seed);
                    std::vector<unsigned char> img = make_image(k, seed + 1);
                    seed += 2;
                    std::vector<unsigned char> want(k.out_stride() * k.height, kPoison);
                    const gpk_status st = convolve(ctxs.cpu, k, f, img.data(), want.data());
                    if (st != GPK_OK) { // random taps that sum to 0 under sum normalisation
                        gpk_filter_destroy(f);
                        continue;
                    }
                    const std::string what = describe(k) + " fused";
                    const Memory mem = (cases % 7 == 3) ? Memory::pageable : Memory::device;
                    run_on(ctxs.cuda, nullptr, mem, mem, k, f, img, want, false, what);
                    // The same call on device images, two passes and each fused kernel: the same bits.
                    Block in(Memory::device, img.size()), out(Memory::device, want.size());
                    in.upload(img.data());
                    auto device_call = [&](const char *fused, const char *kernel) {
                        const hooks::Hook fused_hook("GPK_TEST_CONV_FUSED", fused);
                        const hooks::Hook kernel_hook("GPK_TEST_CONV_FUSED_KERNEL", kernel);
                        std::vector<unsigned char> got(want.size(), kPoison);
                        out.upload(got.data());
                        CHECK_OK(ctxs.cuda, convolve(ctxs.cuda, k, f, in.get(), out.get()));
                        out.download(got.data());
                        return got;
                    };
                    const std::vector<unsigned char> two_pass = device_call("off", nullptr);
                    for (const char *kernel : kFusedKernels) {
                        // require: the kernel asked for runs (every built shape fits a device of 7.5+).
                        CHECK_MSG(device_call("require", kernel) == two_pass,
                                  what + " kernel " + kernel_name(kernel) +
                                      ": fused and two-pass results differ");
                        ++kernel_runs;
                    }
                    gpk_filter_destroy(f);
                    ++cases;
                }
    }
    std::printf("fused separable kernels: %zu cases, %zu kernel runs\n", cases, kernel_runs);
}

// Where a fused kernel's block does not fit the device (its static and dynamic shared memory over the limit
// per block), the next kernel runs (the default: the streaming kernel, then the ring kernel), then the two
// passes: never an error. The limit is faked lower with GPK_TEST_SHARED_LIMIT; GPK_TEST_CONV_FUSED=require
// turns the fallback to the two passes into GPK_ERR_UNSUPPORTED, which shows the boundary: the smallest
// limit L at which a fused kernel runs. At L and at L - 1 a plain call gives the two passes' bits. 65 taps:
// the ring kernel needs more than the 48 KiB of dynamic shared memory a kernel may have without raising its
// limit.
void test_fused_fit_boundary(gpu::Contexts &ctxs) {
    for (const char *kernel : {"ring", ""})
        for (const char *filter : {"realsep:3:3", "realsep:65:65"}) {
            ConvCase k{GPK_F32,           GPK_F32, 133, 21, 1, filter, GPK_BORDER_REFLECT, GPK_NORMALIZE_NONE,
                       GPK_ACCUMULATE_F32};
            gpk_filter *f = make_filter(k.filter, 77);
            const std::vector<unsigned char> img = make_image(k, 78);
            Block in(Memory::device, img.size()), out(Memory::device, k.out_stride() * k.height);
            in.upload(img.data());
            auto call = [&](const char *fused, size_t limit, std::vector<unsigned char> *got) {
                hooks::Hook fused_hook("GPK_TEST_CONV_FUSED", fused);
                hooks::Hook kernel_hook("GPK_TEST_CONV_FUSED_KERNEL", *kernel ? kernel : nullptr);
                hooks::Hook limit_hook("GPK_TEST_SHARED_LIMIT",
                                       limit ? std::to_string(limit).c_str() : nullptr);
                std::vector<unsigned char> poison(k.out_stride() * k.height, kPoison);
                out.upload(poison.data());
                const gpk_status st = convolve(ctxs.cuda, k, f, in.get(), out.get());
                fused_hook.set(nullptr);
                kernel_hook.set(nullptr);
                limit_hook.set(nullptr);
                if (got) {
                    got->resize(poison.size());
                    out.download(got->data());
                }
                return st;
            };
            const std::string what = describe(k) + " kernel " + kernel_name(kernel);
            std::vector<unsigned char> two_pass, got;
            CHECK_OK(ctxs.cuda, call("off", 0, &two_pass));
            CHECK_OK(ctxs.cuda, call("require", 0, &got)); // every built size fits a device of compute 7.5+
            CHECK_MSG(got == two_pass, what + ": fused and two-pass results differ");
            size_t lo = 0, hi = 1 << 20; // require fails at lo (0: no limit is not a limit), succeeds at hi
            while (hi - lo > 1) {
                const size_t mid = (lo + hi) / 2;
                (call("require", mid, nullptr) == GPK_OK ? hi : lo) = mid;
            }
            std::printf(
                "%s, kernel %s: a fused kernel runs from a shared-memory limit of %zu bytes a block\n",
                filter, kernel_name(kernel).c_str(), hi);
            CHECK_MSG(hi > 1024, what + ": boundary " + std::to_string(hi));
            // The 65-tap ring block takes the whole default 48 KiB a block, the edge where the launcher must
            // count the kernel's static shared memory and raise its dynamic limit beyond that.
            if (std::string(filter) == "realsep:65:65" && *kernel)
                CHECK_MSG(hi >= 48 * 1024, what + ": boundary " + std::to_string(hi) + " below 48 KiB");
            CHECK_STATUS(ctxs.cuda, call("require", hi - 1, nullptr), GPK_ERR_UNSUPPORTED);
            for (size_t limit : {hi - 1, hi}) {
                CHECK_OK(ctxs.cuda, call(nullptr, limit, &got));
                CHECK_MSG(got == two_pass, what + ": limit " + std::to_string(limit) + ": result differs");
            }
            gpk_filter_destroy(f);
        }
    // A kernel the hook does not know is refused, naming the hook.
    ConvCase k{GPK_F32,           GPK_F32, 40, 12, 1, "realsep:5:5", GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE,
               GPK_ACCUMULATE_F32};
    gpk_filter *f = make_filter(k.filter, 79);
    const std::vector<unsigned char> img = make_image(k, 80);
    Block in(Memory::device, img.size()), out(Memory::device, k.out_stride() * k.height);
    in.upload(img.data());
    {
        const hooks::Hook hook("GPK_TEST_CONV_FUSED_KERNEL", "64x3");
        CHECK_STATUS(ctxs.cuda, convolve(ctxs.cuda, k, f, in.get(), out.get()), GPK_ERR_INVALID_ARGUMENT);
    }
    CHECK_MSG(std::string(gpk_context_last_error(ctxs.cuda)).find("GPK_TEST_CONV_FUSED_KERNEL") !=
                  std::string::npos,
              gpk_context_last_error(ctxs.cuda));
    gpk_filter_destroy(f);
}

// Pointers not aligned to their sample type: the CUDA backend answers as the CPU backend does.
void test_misaligned(gpu::Contexts &ctxs) {
    ConvCase k{GPK_U16, GPK_F32, 57, 31, 1, "lp5", GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_AUTO};
    ConvCase s{GPK_F32,           GPK_U16, 41, 29, 2, "gauss:2", GPK_BORDER_REFLECT, GPK_NORMALIZE_NONE,
               GPK_ACCUMULATE_F32};
    k.in_offset = 1;
    k.out_offset = 2;
    s.out_offset = 1;
    for (const ConvCase &c : {k, s}) {
        gpk_filter *f = make_filter(c.filter, 1);
        std::vector<unsigned char> img = make_image(c, 2), shifted(img.size() + c.in_offset);
        std::memcpy(shifted.data() + c.in_offset, img.data(), img.size());
        std::vector<unsigned char> host_out(c.out_stride() * c.height + c.out_offset);
        gpk_status want =
            convolve(ctxs.cpu, c, f, shifted.data() + c.in_offset, host_out.data() + c.out_offset);
        for (Memory mem : gpu::kAllMemory) {
            Block in(mem, img.size(), c.in_offset), out(mem, c.out_stride() * c.height, c.out_offset);
            in.upload(img.data());
            CHECK_STATUS(ctxs.cuda, convolve(ctxs.cuda, c, f, in.get(), out.get()), want);
        }
        gpk_filter_destroy(f);
    }
    // u8 images of a few MiB at odd addresses, in every kind of memory: the staging copies of pageable
    // images split among the copy threads, their parts starting and ending off 16-byte boundaries (input
    // rows contiguous at width 1530, pitched at 1531; output rows always pitched).
    for (size_t width : {1530, 1531}) {
        ConvCase big{
            GPK_U8, GPK_U8, 0, 1203, 1, "smooth5", GPK_BORDER_CLAMP, GPK_NORMALIZE_SUM, GPK_ACCUMULATE_AUTO};
        big.width = width;
        big.in_offset = 3;
        big.out_offset = 7;
        run_case(ctxs, big, 31 + width);
    }
}

// Images larger than the (faked) device: bands of rows with their halos, two passes for min/max, halos
// from the far end of the image (wrap), bands of a device image whose row-pass sums do not fit.
void test_beyond_device_memory(gpu::Contexts &ctxs) {
    gpu::FakeDeviceMemory fake(200000);
    const auto none = GPK_NORMALIZE_NONE, mm = GPK_NORMALIZE_MINMAX;
    run_case(ctxs, {GPK_U8, GPK_U8, 600, 500, 1, "lp3", GPK_BORDER_ZERO, mm, GPK_ACCUMULATE_AUTO}, 600);
    run_case(ctxs, {GPK_F32, GPK_F32, 400, 300, 1, "box:7", GPK_BORDER_WRAP, none, GPK_ACCUMULATE_AUTO}, 601);
    run_case(ctxs, {GPK_U8, GPK_U8, 300, 400, 1, "intsep:5:9", GPK_BORDER_MIRROR, mm, GPK_ACCUMULATE_AUTO},
             602);
    run_case(ctxs, {GPK_U16, GPK_U16, 250, 300, 3, "int2d:5:5", GPK_BORDER_WRAP, none, GPK_ACCUMULATE_AUTO},
             603);
    // A filter whose halo alone does not fit is refused with the bytes it needs.
    ConvCase k{GPK_F64, GPK_F64, 20000, 4, 4, "gauss:21.4", GPK_BORDER_CLAMP, none, GPK_ACCUMULATE_F64};
    gpk_filter *f = make_filter(k.filter, 1);
    std::vector<unsigned char> in(k.in_stride() * k.height), out(k.out_stride() * k.height);
    CHECK_STATUS(ctxs.cuda, convolve(ctxs.cuda, k, f, in.data(), out.data()), GPK_ERR_OUT_OF_MEMORY);
    CHECK(std::string(gpk_context_last_error(ctxs.cuda)).find("device bytes needed") != std::string::npos);
    gpk_filter_destroy(f);
}

// The Laplacian exercise against sums written here (not the CPU backend): lp3, zero border, min/max to u8
// with truncating division, on a random image with several rows of blocks.
void test_laplacian_by_hand(gpu::Contexts &ctxs) {
    const size_t w = 300, h = 210;
    ConvCase k{GPK_U8, GPK_U8, w, h, 1, "lp3", GPK_BORDER_ZERO, GPK_NORMALIZE_MINMAX, GPK_ACCUMULATE_AUTO};
    std::vector<unsigned char> img = make_image(k, 77);
    std::vector<long long> sums(w * h);
    auto at = [&](long long x, long long y) -> long long {
        return (x < 0 || y < 0 || x >= (long long)w || y >= (long long)h) ? 0 : img[y * k.in_stride() + x];
    };
    for (long long y = 0; y < (long long)h; ++y)
        for (long long x = 0; x < (long long)w; ++x)
            sums[y * w + x] = at(x - 1, y) + at(x + 1, y) + at(x, y - 1) + at(x, y + 1) - 4 * at(x, y);
    long long mn = *std::min_element(sums.begin(), sums.end()),
              mx = *std::max_element(sums.begin(), sums.end());
    gpk_filter *f = make_filter("lp3", 0);
    std::vector<unsigned char> got(k.out_stride() * h, kPoison);
    Block in(Memory::device, img.size()), out(Memory::device, got.size());
    in.upload(img.data());
    out.upload(got.data());
    CHECK_OK(ctxs.cuda, convolve(ctxs.cuda, k, f, in.get(), out.get()));
    out.download(got.data());
    size_t bad = 0;
    for (size_t y = 0; y < h; ++y)
        for (size_t x = 0; x < w; ++x)
            bad += got[y * k.out_stride() + x] != (sums[y * w + x] - mn) * 255 / (mx - mn);
    CHECK_MSG(bad == 0, "lp3 min/max by hand: " + std::to_string(bad) + " pixels differ");
    gpk_filter_destroy(f);
}

// A buffer of one memory kind that may fail to allocate (get() null then).
class MaybeBuffer {
public:
    MaybeBuffer(Memory kind, size_t bytes) : kind_(kind) {
        if (gpu::allocate(kind, bytes, &p_) != cudaSuccess) cudaGetLastError(); // not sticky: clear it
    }
    ~MaybeBuffer() {
        if (p_) gpu::release(kind_, p_);
    }
    MaybeBuffer(const MaybeBuffer &) = delete;
    MaybeBuffer &operator=(const MaybeBuffer &) = delete;
    unsigned char *get() const { return static_cast<unsigned char *>(p_); }

private:
    Memory kind_;
    void *p_ = nullptr;
};

// Images beyond 2^31 and 2^32 samples on the CUDA backend, every output sample and the row padding checked
// against the closed form of periodic_image.hpp (as the CPU unit test does): a u8 image of more than 2^32
// pixels with padded rows (the four-outputs kernel), one u8 row of more than 2^32 pixels (wrap: the edges
// read 2^32 bytes away), both device-resident and in pageable host memory (bands through pinned staging); a
// two-channel u16 image of more than 2^31 samples through a separable filter on the device; two u8 rows of
// more than 2^31 pixels, rows more than 2^31 bytes apart, in pinned memory (the general kernel and row copies
// beyond the largest cudaMemcpy2D pitch). Skipped under GPK_TEST_QUICK; a case is noted, not failed, where
// its buffers cannot be allocated.
void test_beyond_2_32() {
    if (gpu::quick()) {
        std::printf("note: GPK_TEST_QUICK: the > 2^32 checks did not run\n");
        return;
    }
    struct Big {
        periodic::Case c;
        std::vector<Memory> memory;
    };
    const std::vector<periodic::Case> common = periodic::beyond_2_32_cases();
    const size_t half = (size_t(1) << 31) + 12345;
    const std::vector<Big> cases = {
        {common[0], {Memory::device, Memory::pageable}},
        {common[1], {Memory::device}},
        {common[2], {Memory::device, Memory::pageable}},
        {{periodic::layout(GPK_U8, half, 2, 1, 4099),
          periodic::layout(GPK_U16, half, 2, 1, 6),
          {periodic::filter_2d(3, 5, {1, -2, 3, 0, 4, 5, 6, -7, 8, 9, 2, 0, 1, 3, -1}), GPK_BORDER_MIRROR,
           GPK_NORMALIZE_NONE}},
         {Memory::pinned}},
    };
    gpk_context *ctx = gpu::make_context(GPK_BACKEND_CUDA);
    const unsigned threads = periodic::cores();
    using Clock = std::chrono::steady_clock;
    auto seconds = [](Clock::time_point a, Clock::time_point b) {
        return std::chrono::duration<double>(b - a).count();
    };
    for (const Big &big : cases) {
        const periodic::Case &b = big.c;
        const periodic::Input host_in(b.in, threads);
        for (Memory mem : big.memory) {
            const std::string what = periodic::describe(b.in, b.out, b.conv) + ", " + gpu::memory_name(mem);
            const auto t0 = Clock::now();
            MaybeBuffer in(mem, mem == Memory::pageable ? 0 : b.in.bytes()), out(mem, b.out.bytes());
            MaybeBuffer host_out(Memory::pageable, mem == Memory::device ? b.out.bytes() : 0);
            if (!host_in.data() || (mem != Memory::pageable && !in.get()) || !out.get() ||
                (mem == Memory::device && !host_out.get())) {
                std::printf("note: no %s memory for %zu + %zu bytes; %s did not run\n", gpu::memory_name(mem),
                            b.in.bytes(), b.out.bytes(), what.c_str());
                continue;
            }
            const unsigned char *in_data = mem == Memory::pageable ? host_in.data() : in.get();
            if (mem != Memory::pageable)
                gpu::cuda_ok(cudaMemcpy(in.get(), host_in.data(), b.in.bytes(), cudaMemcpyDefault),
                             "cudaMemcpy (in)");
            if (mem == Memory::device)
                gpu::cuda_ok(cudaMemset(out.get(), periodic::kPad, b.out.bytes()), "cudaMemset");
            else
                periodic::clear(b.out, out.get(), threads);
            gpu::cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
            const auto t1 = Clock::now();
            const gpk_status s = periodic::run(ctx, b.conv, b.in, in_data, b.out, out.get());
            CHECK_MSG(s == GPK_OK, what + ": " + gpk_context_last_error(ctx));
            CHECK_OK(ctx, gpk_context_synchronize(ctx));
            const auto t2 = Clock::now();
            const unsigned char *result = out.get();
            if (mem == Memory::device) {
                gpu::cuda_ok(cudaMemcpy(host_out.get(), out.get(), b.out.bytes(), cudaMemcpyDefault),
                             "cudaMemcpy (out)");
                result = host_out.get();
            }
            if (s == GPK_OK) {
                const periodic::Result r = periodic::check(b.in, b.out, b.conv, result, threads);
                CHECK_MSG(r.mismatches == 0,
                          what + ": " + std::to_string(r.mismatches) + " wrong, first " + r.first);
            }
            std::printf("beyond 2^32: %s: set-up %.1f s, gpk_convolve %.2f s, download and check %.1f s\n",
                        what.c_str(), seconds(t0, t1), seconds(t1, t2), seconds(t2, Clock::now()));
        }
    }
    gpk_context_destroy(ctx);
}

// A row longer than the kernels' grids can cover is refused before any sample is read, naming the limit.
void test_row_limit() {
    gpk_context *ctx = gpu::make_context(GPK_BACKEND_CUDA);
    gpk_filter *f = make_filter("lp3", 0);
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = f;
    gpk_image di, dout;
    const size_t width = size_t(32) * 0x7FFFFFFF + 1; // samples of one row: one more than the limit
    gpk_image_init(&di, GPK_U8, width, 1, 1);
    gpk_image_init(&dout, GPK_U8, width, 1, 1);
    // Nothing is read or written: two addresses 16 TiB apart, so that the two 68 GB spans do not overlap.
    const void *in = reinterpret_cast<const void *>(uintptr_t(1) << 44);
    void *out = reinterpret_cast<void *>(uintptr_t(2) << 44);
    CHECK_STATUS(ctx, gpk_convolve(ctx, &p, &di, in, &dout, out), GPK_ERR_UNSUPPORTED);
    const std::string message = gpk_context_last_error(ctx);
    CHECK_MSG(message.find(std::to_string(width)) != std::string::npos &&
                  message.find(std::to_string(width - 1)) != std::string::npos,
              message);
    gpk_filter_destroy(f);
    gpk_context_destroy(ctx);
}

// The output of one call on the CUDA backend, images in `mem` (outputs start poisoned).
std::vector<unsigned char> cuda_output(gpk_context *ctx, const ConvCase &k, const gpk_filter *f,
                                       const std::vector<unsigned char> &img, Memory mem) {
    Block in(mem, img.size(), k.in_offset), out(mem, k.out_stride() * k.height, k.out_offset);
    in.upload(img.data());
    std::vector<unsigned char> got(k.out_stride() * k.height, kPoison);
    out.upload(got.data());
    CHECK_OK(ctx, convolve(ctx, k, f, in.get(), out.get()));
    out.download(got.data());
    return got;
}

// The sliding-window f32 kernel (slide.cuh: one-channel f32, f32 sums, K x K for K = 5, 7, 9,
// normalisation none or sum, 16-byte aligned input rows): bit-identical to the tile kernels that run where
// its preconditions fail (GPK_TEST_CONV_F32=off: the four-outputs tile kernel for 3, 5, 9, the general
// kernel for 1, 7) and within README's tolerance of the CPU backend. Widths around its 128-element warp
// bands, its 512-element blocks and the 4 elements either side a band's edge lanes load (every band inside,
// the first and last bands taking the border rule, rows narrower than a lane's four); heights around K and
// the strips of rows a warp walks; every border; input rows padded to 16 or 64 bytes or not aligned at all
// (the tile kernels); output rows aligned or not; device images and staged bands. K = 1 and 3 take the tile
// kernels.
void test_slide_kernel(gpu::Contexts &ctxs) {
    const bool quick = gpu::quick();
    const std::vector<size_t> widths =
        quick ? std::vector<size_t>{1, 5, 131, 133, 516}
              : std::vector<size_t>{1,   2,   3,   4,   5,   7,   8,   12,  127, 128, 129,  131,  132, 133,
                                    136, 255, 256, 257, 260, 261, 511, 512, 513, 516, 1023, 1028, 2052};
    const std::vector<size_t> heights =
        quick ? std::vector<size_t>{1, 10, 17} : std::vector<size_t>{1, 2, 3, 4, 8, 9, 10, 11, 17, 33, 67};
    uint64_t seed = 11000;
    size_t cases = 0, turn = 0;
    for (int kk : {1, 3, 5, 7, 9}) {
        const std::string K = std::to_string(kk);
        for (size_t w : widths)
            for (size_t h : heights) {
                const size_t t = turn++;
                const gpk_border b = kBorders[(t + t / 5) % 5];
                const bool by_sum = t % 3 == 1, box = t % 7 == 3;
                ConvCase k{GPK_F32,
                           GPK_F32,
                           w,
                           h,
                           1,
                           box ? "box" : "real2d:" + K + ":" + K,
                           b,
                           by_sum ? GPK_NORMALIZE_SUM : GPK_NORMALIZE_NONE,
                           t % 2 ? GPK_ACCUMULATE_F32 : GPK_ACCUMULATE_AUTO};
                k.in_align = t % 11 == 5 ? 0 : t % 4 == 2 ? 64 : 16; // 0: the tile kernels
                if (t % 13 == 6) k.out_offset = 4;                   // output rows not 16-byte aligned
                gpk_filter *f = nullptr;
                if (box) {
                    std::vector<double> taps(size_t(kk) * kk, 1.0 / double(kk * kk));
                    gpk_filter_create_2d(&f, size_t(kk), size_t(kk), taps.data());
                } else {
                    f = make_filter(k.filter, seed);
                }
                std::vector<unsigned char> img = make_image(k, seed + 1);
                seed += 2;
                std::vector<unsigned char> want(k.out_stride() * k.height, kPoison);
                CHECK_OK(ctxs.cpu, convolve(ctxs.cpu, k, f, img.data(), want.data()));
                hooks::Hook hook("GPK_TEST_CONV_F32", "off");
                const std::vector<unsigned char> tiles = cuda_output(ctxs.cuda, k, f, img, Memory::device);
                hook.set(nullptr);
                const std::string what = describe(k) + " in_align " + std::to_string(k.in_align);
                compare(k, false, tiles, want, what + " (tile kernels)");
                const std::vector<unsigned char> got = cuda_output(ctxs.cuda, k, f, img, Memory::device);
                CHECK_MSG(got == tiles, what + ": differs from the tile kernels");
                compare(k, false, got, want, what);
                gpk_filter_destroy(f);
                ++cases;
            }
    }
    // Host images through staged bands of a few rows (a faked small device), with their halos in place.
    {
        gpu::FakeDeviceMemory fake(300000);
        for (int kk : {3, 9})
            for (gpk_border b : kBorders) {
                ConvCase k{GPK_F32,
                           GPK_F32,
                           1028,
                           97,
                           1,
                           "real2d:" + std::to_string(kk) + ":" + std::to_string(kk),
                           b,
                           GPK_NORMALIZE_NONE,
                           GPK_ACCUMULATE_F32};
                k.in_align = 16;
                gpk_filter *f = make_filter(k.filter, seed);
                std::vector<unsigned char> img = make_image(k, seed + 1);
                seed += 2;
                hooks::Hook hook("GPK_TEST_CONV_F32", "off");
                const std::vector<unsigned char> tiles = cuda_output(ctxs.cuda, k, f, img, Memory::pageable);
                hook.set(nullptr);
                const std::vector<unsigned char> got = cuda_output(ctxs.cuda, k, f, img, Memory::pageable);
                CHECK_MSG(got == tiles, describe(k) + " staged: differs from the tile kernels");
                gpk_filter_destroy(f);
                ++cases;
            }
    }
    // A value that is not "off" is refused, naming the hook.
    {
        ConvCase k{GPK_F32,           GPK_F32, 8, 4, 1, "real2d:3:3", GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE,
                   GPK_ACCUMULATE_F32};
        k.in_align = 16;
        gpk_filter *f = make_filter(k.filter, seed);
        std::vector<unsigned char> img = make_image(k, seed + 1), out(k.out_stride() * k.height);
        Block in(Memory::device, img.size()), dout(Memory::device, out.size());
        in.upload(img.data());
        hooks::Hook hook("GPK_TEST_CONV_F32", nullptr);
        for (const char *bad : {"on", "2s", "1lb6"}) {
            hook.set(bad);
            CHECK_STATUS(ctxs.cuda, convolve(ctxs.cuda, k, f, in.get(), dout.get()),
                         GPK_ERR_INVALID_ARGUMENT);
            CHECK_MSG(std::strstr(gpk_context_last_error(ctxs.cuda), "GPK_TEST_CONV_F32") != nullptr,
                      std::string("hook ") + bad + ": " + gpk_context_last_error(ctxs.cuda));
        }
        hook.set(nullptr);
        gpk_filter_destroy(f);
    }
    std::printf("sliding-window f32 kernel: %zu cases\n", cases);
}

} // namespace

int main() {
    gpu::require_device();
    hooks::require("test_gpu_convolve");
    gpu::Contexts ctxs;
    // GPK_TEST_ONLY=name,name runs only the named groups (sanitizer runs pick the kernels they look at).
    using gpu::wanted;
    if (wanted("laplacian")) test_laplacian_by_hand(ctxs);
    if (wanted("kernels")) test_kernels(ctxs);
    if (wanted("strip")) test_strip_kernel(ctxs);
    if (wanted("rank1")) test_rank1_kernel(ctxs);
    if (wanted("box")) test_box_kernel(ctxs);
    if (wanted("pair")) test_pair_kernel(ctxs);
    if (wanted("fused")) test_fused_separable(ctxs);
    if (wanted("fit")) test_fused_fit_boundary(ctxs);
    if (wanted("misaligned")) test_misaligned(ctxs);
    if (wanted("beyond_device")) test_beyond_device_memory(ctxs);
    if (wanted("row_limit")) test_row_limit();
    if (wanted("slide")) test_slide_kernel(ctxs);
    if (wanted("beyond_2_32")) test_beyond_2_32();
    return check::finish("test_gpu_convolve");
}
