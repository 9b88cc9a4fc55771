// Launches of the direct 2D kernel: square 3, 5 and 9 tap filters on u8 (exact int) and f32 images get
// compile-time sizes; everything else takes the general kernel.
#include "cuda/convolve/box.cuh"
#include "cuda/convolve/launch.cuh"
#include "cuda/convolve/pair.cuh"
#include "cuda/convolve/rank1.cuh"
#include "cuda/convolve/strip.cuh"
#include "cuda/convolve/vector.cuh"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <type_traits>
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
// vector.cuh apply.
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
    // A shift of 32 first: the multiply-high is then the whole division.
    const int shifts[3] = {32, 32 + fl, 31 + fl};
    for (int shift : shifts) {
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

// The K x K taps as signed bytes, four to a word (ByteTaps); returns whether any is negative.
template <int K> bool pack_byte_taps(const gpk_filter &f, ByteTaps<K> &taps) {
    constexpr int G = (K + 3) / 4;
    taps = ByteTaps<K>{};
    bool is_signed = false;
    for (int r = 0; r < K; ++r)
        for (int b = 0; b < K; ++b) {
            int t = int(f.taps[size_t(r) * K + b]);
            is_signed |= t < 0;
            taps.w[r * G + b / 4] |= int(unsigned(t & 0xFF) << (8 * (b % 4)));
        }
    return is_signed;
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

// Taps that dp4a takes: integers in [-128, 127].
bool byte_taps(const gpk_filter &f) {
    for (double t : f.taps)
        if (!(t >= -128 && t <= 127) || t != std::floor(t)) return false;
    return true;
}

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

// The grid of a strip kernel: x covers `groups` interior thread groups in blocks of `per_block` groups
// (kStripThreads, one a thread, unless said), then the edge block; y the band's output rows in strips of
// `rows`. Empty (0 x 0) for a fold pass whose blocks would outnumber the partials that blocks_bound makes
// room for.
dim3 strip_grid(const PassArgs &a, long long groups, int rows, StripMode m,
                long long per_block = kStripThreads) {
    dim3 grid(unsigned((groups + per_block - 1) / per_block + 1),
              unsigned((a.shape.out_rows + rows - 1) / rows));
    if (m == StripMode::fold &&
        size_t(grid.x) * grid.y > blocks_bound(a.shape.width, size_t(a.shape.out_rows)))
        return dim3(0, 0);
    return grid;
}

bool out_aligned_for_strip(const PassArgs &a) {
    return reinterpret_cast<uintptr_t>(a.out.base) % kStripCols == 0 && a.out.pitch % kStripCols == 0;
}

// The border rule where a 3 x 3 strip or pair kernel meets it (StripBorder); false where an output would
// need a padded row outside [-1, rows]. Whole images (row0 = first output row - 1) and staged bands (their
// halo rows in place) never do.
bool strip_border(const PassArgs &a, StripBorder &bd) {
    const long long rows_in = a.src.rows, width = a.shape.width;
    if (a.src.row0 < -1 || a.src.row0 + a.shape.out_rows + 1 > rows_in) return false;
    const int b = a.shape.border;
    bd = StripBorder{border_index(-1, rows_in, b), border_index(rows_in, rows_in, b),
                     border_index(-1, width, b), border_index(width, width, b)};
    return true;
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

// Output rows a chunk of the rank-1 kernel: 4 where sums are written at K = 7 and 9 (fewer registers: 6
// blocks an SM instead of 4), else 8 (at K = 5 chunks of 4 spill under their 64-register cap). Its strips
// are one chunk of 8 rows (two of 4).
template <int K, StripMode M> constexpr int rank1_chunk() {
    return M == StripMode::divide && K >= 7 ? 4 : kStripChunk;
}

template <int K, StripMode M, bool Signed, StripDiv D>
unsigned launch_rank1_kernel(const PassArgs &a, const Rank1Taps<K> &taps, const U8Divider &dv, int rows,
                             cudaStream_t s) {
    const long long groups = rank1_groups(a.shape.width);
    const dim3 grid = strip_grid(a, groups, rows, M);
    if (grid.x == 0) return 0;
    conv_rank1_u8_strip_kernel<K, M, Signed, D, rank1_chunk<K, M>()><<<grid, kStripThreads, 0, s>>>(
        a.src, a.shape, a.out, taps, dv, rows, groups, out_aligned_for_strip(a));
    check_launch("conv_rank1_u8_strip_kernel");
    return grid.x * grid.y;
}

template <StripMode M> using ModeTag = std::integral_constant<StripMode, M>;
template <StripDiv D> using DivTag = std::integral_constant<StripDiv, D>;

// Launches a strip kernel in the way the pass finishes its sums: launch(mode, signed, divider form, dv,
// rows), the first three as std::integral_constant tags, returning the blocks launched or 0. The fold pass
// takes `rows` a block (0: the kernel's default) where its partials have room, else kMinBlockRows (which
// blocks_bound counts). Sums of taps that are all >= 0 and are divided take a multiply-high where the
// divider's shift is 32 (StripDiv says why every 3 x 3 byte filter has one); other dividers are the other
// kernels'.
template <class Launch>
unsigned launch_strip_modes(const PassArgs &a, bool is_signed, int rows, const Launch &launch) {
    using B0 = std::false_type;
    using B1 = std::true_type;
    const Output &o = a.out;
    U8Divider dv{};
    if (o.reduce) {
        const ModeTag<StripMode::fold> fold;
        if (unsigned blocks = launch(fold, B0{}, DivTag<StripDiv::none>{}, dv, rows)) return blocks;
        return rows < kMinBlockRows ? launch(fold, B0{}, DivTag<StripDiv::none>{}, dv, kMinBlockRows) : 0;
    }
    if (o.normalize == GPK_NORMALIZE_MINMAX)
        return launch(ModeTag<StripMode::minmax>{}, B0{}, DivTag<StripDiv::none>{}, dv, rows);
    if (!make_u8_divider(a, dv)) return 0;
    const ModeTag<StripMode::divide> divide;
    if (is_signed) return launch(divide, B1{}, DivTag<StripDiv::none>{}, dv, rows);
    if (!dv.sum || o.isum == 1) return launch(divide, B0{}, DivTag<StripDiv::none>{}, dv, rows);
    if (dv.shift != 32) return 0;
    return launch(divide, B0{}, DivTag<StripDiv::mulhi>{}, dv, rows);
}

// Whether a pass suits the strip kernels: a one-channel u8 source aligned to their 8-byte loads, exact int
// sums, K x K taps (2D: bytes; a separable pair's are checked by rank1_of_pair), u8 out (or the fold pass),
// and for min/max normalisation (x - min) * 255 < 2^31 (minmax_u8; x - min is at most 2 * 255 * sum |taps|).
bool strip_case(const PassArgs &a) {
    if (a.filter->kh != a.filter->kw || a.shape.channels != 1 || a.in_dtype != GPK_U8 ||
        a.acc != AccKind::i32 || (!a.filter->separable && !byte_taps(*a.filter)))
        return false;
    const Output &o = a.out;
    if (!o.reduce) {
        if (o.dtype != GPK_U8) return false;
        if (o.normalize == GPK_NORMALIZE_MINMAX && !(a.filter->abs_sum * 2 * 255 * 255 < 2147483648.0))
            return false;
    }
    return reinterpret_cast<uintptr_t>(a.src.base) % kStripCols == 0 && a.src.pitch % kStripCols == 0;
}

// The 3 x 3 strip kernel (strip.cuh), for 3 x 3 byte taps that the box and pair kernels leave;
// 0 where it does not apply.
unsigned launch_strip(const PassArgs &a, cudaStream_t s) {
    if (a.filter->separable || a.filter->kh != 3 || !strip_case(a)) return 0;
    ByteTaps<3> taps;
    const bool is_signed = pack_byte_taps(*a.filter, taps);
    return launch_strip_modes(a, is_signed, 0, [&](auto m, auto sg, auto d, const U8Divider &dv, int r) {
        return launch_strip_kernel<decltype(m)::value, decltype(sg)::value, decltype(d)::value>(a, taps, dv,
                                                                                                r, s);
    });
}

// The test hook GPK_TEST_CONV_PAIR=twopass (NOTES.md): min/max of a whole device image in two launches of
// the pair kernel, as on a device without cooperative launches; false where unset.
bool pair_twopass_hook() {
    const char *text = std::getenv("GPK_TEST_CONV_PAIR");
    if (!text || !*text) return false;
    if (std::strcmp(text, "twopass") == 0) return true;
    invalid(std::string("GPK_TEST_CONV_PAIR is \"") + text + "\"; expected twopass");
}

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

// 3 x 3 byte taps with sum |taps| <= kPairMaxAbsSum: the pair kernel for both passes of min/max
// normalisation and for written sums; 0 where it does not apply.
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

// Factors K x K integer taps as taps[a][b] = r[a] * c[b] with c in [-128, 127] (c: the first non-zero row
// divided by the gcd of its entries); false where no such exact product exists or every tap is 0.
template <int K> bool rank1_factor(const gpk_filter &f, Rank1Taps<K> &out) {
    out = Rank1Taps<K>{};
    auto tap = [&](int a, int b) { return (long long)f.taps[size_t(a) * K + b]; };
    int first = -1;
    for (int a = 0; a < K && first < 0; ++a)
        for (int b = 0; b < K; ++b)
            if (tap(a, b) != 0) first = a;
    if (first < 0) return false;
    long long g = 0;
    for (int b = 0; b < K; ++b) g = std::gcd(g, std::llabs(tap(first, b)));
    long long c[K];
    int lead = -1; // the first column where c is not 0
    for (int b = 0; b < K; ++b) {
        c[b] = tap(first, b) / g;
        if (c[b] < -128 || c[b] > 127) return false;
        if (lead < 0 && c[b] != 0) lead = b;
    }
    for (int a = 0; a < K; ++a) {
        if (tap(a, lead) % c[lead] != 0) return false;
        const long long r = tap(a, lead) / c[lead];
        for (int b = 0; b < K; ++b)
            if (tap(a, b) != r * c[b]) return false;
        out.r[a] = int(r);
    }
    for (int b = 0; b < K; ++b) out.c[b / 4] |= int(unsigned(c[b] & 0xFF) << (8 * (b % 4)));
    return true;
}

// A separable pair of K integer taps each way as rank-1 taps: c = the row filter (signed bytes), r = the
// column filter (exact int sums bound each r[a] h); false where a row tap is not a byte.
template <int K> bool rank1_of_pair(const gpk_filter &f, Rank1Taps<K> &out) {
    out = Rank1Taps<K>{};
    for (int b = 0; b < K; ++b) {
        const double t = f.row[size_t(b)];
        if (!(t >= -128 && t <= 127) || t != std::floor(t)) return false;
        out.c[b / 4] |= int(unsigned(int(t) & 0xFF) << (8 * (b % 4)));
    }
    for (int a = 0; a < K; ++a) out.r[a] = int(f.col[size_t(a)]);
    return true;
}

// Output rows a strip of the box kernel: each strip first reads the K - 1 rows above its first output, and
// longer strips launch fewer blocks than the SMs hold.
constexpr int kBoxStripRows = 16;

// Whether rank-1 taps are a box: every r[a] the same and every c[b] the same; t = r[0] c[0], every tap.
template <int K> bool box_tap(const Rank1Taps<K> &taps, int &t) {
    const int c0 = rank1_col(taps, 0);
    for (int a = 0; a < K; ++a)
        if (taps.r[a] != taps.r[0]) return false;
    for (int b = 0; b < K; ++b)
        if (rank1_col(taps, b) != c0) return false;
    t = taps.r[0] * c0;
    return t != 0;
}

// Rows a chunk of the box kernel: 4. Chunks of 8 hold more loads in flight but cost registers that the
// kernel lacks at K = 7 and 9 (which read their leaving rows again) and in the min/max passes (whose extra
// state spills). Sums written at K <= 5 walk their strips in prefetched chunks (the next chunk's loads
// issued before the current chunk's steps: walk_chunks), which keeps a chunk of loads always in flight.
constexpr int kBoxChunk = 4;
template <int K, StripMode M> constexpr bool box_prefetch() {
    return M == StripMode::divide && K <= 5;
}

template <int K, StripMode M, bool Signed, StripDiv D>
unsigned launch_box_kernel(const PassArgs &a, const Rank1Taps<K> &taps, int t, const U8Divider &dv, int rows,
                           cudaStream_t s) {
    const long long groups = rank1_groups(a.shape.width);
    const dim3 grid = strip_grid(a, groups, rows, M, kBoxBlockGroups);
    if (grid.x == 0) return 0;
    conv_box_u8_kernel<K, M, Signed, D, kBoxChunk, box_prefetch<K, M>()><<<grid, kStripThreads, 0, s>>>(
        a.src, a.shape, a.out, taps, t, dv, rows, groups, out_aligned_for_strip(a));
    check_launch("conv_box_u8_kernel");
    return grid.x * grid.y;
}

// Box filters take the box kernel (box.cuh), at K = 3 too (ahead of the 3 x 3 strip and pair
// kernels); other rank-1 taps the rank-1 strip kernel at K >= 5 (at K = 3 it does no more work per output
// than the 3 x 3 strip kernel); 0 where neither applies.
template <int K> unsigned launch_rank1_k(const PassArgs &a, cudaStream_t s) {
    const gpk_filter &f = *a.filter;
    Rank1Taps<K> taps;
    if (!(f.separable ? rank1_of_pair(f, taps) : rank1_factor(f, taps))) return 0;
    bool is_signed = false;
    for (const std::vector<double> *v : {&f.taps, &f.row, &f.col})
        for (double t : *v) is_signed |= t < 0;
    int t = 0;
    if (box_tap(taps, t))
        return launch_strip_modes(
            a, is_signed, kBoxStripRows, [&](auto m, auto sg, auto d, const U8Divider &dv, int r) {
                return launch_box_kernel<K, decltype(m)::value, decltype(sg)::value, decltype(d)::value>(
                    a, taps, t, dv, r, s);
            });
    if constexpr (K >= 5)
        return launch_strip_modes(
            a, is_signed, kStripChunk, [&](auto m, auto sg, auto d, const U8Divider &dv, int r) {
                return launch_rank1_kernel<K, decltype(m)::value, decltype(sg)::value, decltype(d)::value>(
                    a, taps, dv, r, s);
            });
    return 0;
}

} // namespace

// Both passes of min/max normalisation of a whole device image in one cooperative launch of the pair
// kernel (its min and max already set to the identity); 0 where it does not apply (or the device cannot
// launch cooperatively, or GPK_TEST_CONV_PAIR=twopass): the caller runs the two passes.
unsigned launch_pair_minmax(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    if (a.out.reduce || a.out.normalize != GPK_NORMALIZE_MINMAX) return 0;
    ByteTaps<3> taps;
    PairTaps pt;
    bool is_signed = false, cross = false;
    if (!pair_case(a, taps, is_signed, pt, cross)) return 0;
    if (!ctx.limits().cooperative_launch || pair_twopass_hook()) return 0;
    return cross ? launch_pair_fused<true>(ctx, a, taps, pt, kPairStripRows, s)
                 : launch_pair_fused<false>(ctx, a, taps, pt, kPairStripRows, s);
}

// The box kernel (box.cuh) or the rank-1 strip kernel (rank1.cuh); 0 where neither
// applies.
unsigned launch_rank1(const PassArgs &a, cudaStream_t s) {
    if (!strip_case(a)) return 0;
    switch (a.filter->kh) {
    case 3:
        return launch_rank1_k<3>(a, s);
    case 5:
        return launch_rank1_k<5>(a, s);
    case 7:
        return launch_rank1_k<7>(a, s);
    case 9:
        return launch_rank1_k<9>(a, s);
    default:
        return 0;
    }
}

namespace {

// The f32 kernel with 8 rows a thread, or 2 where 8 would launch less than a wave of blocks (8 of 256
// threads an SM): on a small image the few blocks would walk their rows while most SMs idle. The same sums
// either way.
template <int K> unsigned launch_f32x4_sized(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    const dim3 grid = f32x4_grid<8>(a);
    if ((long long)grid.x * grid.y < 8LL * lim.multiprocessors) return launch_f32x4<K, 2>(a, s);
    return launch_f32x4<K, 8>(a, s);
}

// The four-outputs-per-thread kernels for 3, 5 and 9 taps; 0 where they do not apply.
template <class In, class Acc>
unsigned launch_vector(const PassArgs &a, const DeviceLimits &lim, cudaStream_t s) {
    const int k = a.filter->kh;
    if constexpr (std::is_same<In, uint8_t>::value && std::is_same<Acc, int>::value) {
        if (!vector_case(a, GPK_U8) || !byte_taps(*a.filter)) return 0;
        if (k == 3) return launch_u8x4<3, 16>(a, s);
        if (k == 5) return launch_u8x4<5, 16>(a, s);
        if (k == 9) return launch_u8x4<9, 8>(a, s);
    } else if constexpr (std::is_same<In, float>::value && std::is_same<Acc, float>::value) {
        if (!vector_case(a, GPK_F32)) return 0;
        if (k == 3) return launch_f32x4_sized<3>(a, lim, s);
        if (k == 5) return launch_f32x4_sized<5>(a, lim, s);
        if (k == 9) return launch_f32x4_sized<9>(a, lim, s);
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
        if constexpr (std::is_same<In, uint8_t>::value) {
            if (unsigned blocks = launch_rank1(a, s)) return blocks;
            if (unsigned blocks = launch_pair(a, s)) return blocks;
            if (unsigned blocks = launch_strip(a, s)) return blocks;
        }
        if (unsigned blocks = launch_vector<In, Acc>(a, lim, s)) return blocks;
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

unsigned launch_conv2d(DeviceContext &ctx, const PassArgs &a, cudaStream_t s) {
    if (unsigned blocks = launch_slide_f32(ctx, a, s)) return blocks;
    const DeviceLimits &lim = ctx.limits();
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
