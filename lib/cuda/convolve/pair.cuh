// 3 x 3 filters with small integer taps (sum |taps| <= kPairMaxAbsSum) on one-channel u8 images, in pair
// arithmetic. The box kernel's layout (box.cuh): a thread owns 8 consecutive columns as four
// pairs of 16-bit halves, lanes 0 and 31 of each warp only serve their neighbours, and the thread walks
// down a strip holding the last two padded rows as pairs, so that each padded row is loaded and unpacked
// once. An output pair is bias + sum over the taps of t * (pair of the window's columns), one multiply-add
// on 32 bits for two outputs: the taps may be negative, but arithmetic modulo 2^32 is exact, and every
// half ends in [0, 255 * sum |taps|] (bias = 255 * the sum of the negative taps' sizes), so no half
// borrows from or carries into the other once the sum is complete. Filters whose corner taps are 0 (the
// Laplacian lp3, `Cross`) skip them. What the pairs become:
// - the fold pass (first pass of min/max normalisation): min and max of each half, three pairs an
//   instruction (the vimin3 / vimax3 of 16-bit halves, one instruction each on sm_90);
// - the write pass: (v - min) * 255 / (max - min) as one multiply and one multiply-high an output (the
//   divider worked out once a thread from the image's range: every range of these filters is at most 255
//   * 16 = 4080, where minmax_mulhi is exact), its strips walked bottom first so that the rows the fold
//   pass read last are still in L2 when the write pass reads them again;
// - both passes in one cooperative launch (a whole image on the device): the blocks fold, wait for each
//   other at a grid-wide barrier and write, each its own units last first (no kernel launches between the
//   passes, no per-block partials);
// - written sums (normalisation none or sum): StripFinish, as the 3 x 3 strip kernel finishes them.
// Integer sums are exact in any order: every output is the 2D filter's, bit for bit. The columns whose
// 4-byte neighbour words leave the row are the 3 x 3 strip kernel's edge block's.
#pragma once

#include "cuda/convolve/box.cuh"

#include <cooperative_groups.h>
#include <type_traits>

namespace gpk::cuda::conv {

// The largest sum |taps| the pair kernel takes: 255 * 16 = 4080 <= kMinmaxMulhiMax (semantics.hpp), so
// that the write pass of min/max has a multiply-high for every range; sums stay far inside 16 bits.
constexpr int kPairMaxAbsSum = 16;
constexpr int kPairStripRows = 16; // output rows a strip, as the box kernel's

// t[a][b] as multipliers of pairs (two's complement: exact modulo 2^32), and the bias in both halves.
struct PairTaps {
    unsigned t[3][3];
    unsigned bias2; // 255 * sum of the negative taps' sizes, times 0x10001
    int bias;
};

// The min/max write pass's divider: out = umulhi((v - min) * m1, m2) = floor((v - min) * 255 / range)
// for every range of the pair kernel's filters (0 .. 4080): m1 = 0 where the range is 0 (every output 0,
// README), 510 and 2^31 where it is 1, and where minmax_mulhi_magic gives a magic (2 .. 4104): 255 and the
// magic, or 1 and 255 * magic where that fits 32 bits (the same product, so the same bits).
struct PairDivider {
    unsigned m1, m2;
};

__device__ __forceinline__ PairDivider pair_divider(long long den) {
    if (den <= 0) return {0u, 0u};
    if (den == 1) return {510u, 0x80000000u};
    const unsigned magic = minmax_mulhi_magic(den);
    if (255ull * magic < (1ull << 32)) return {1u, 255u * magic};
    return {255u, magic};
}

template <bool Cross, int N, bool P, class F>
__device__ __forceinline__ void pair_interior(F &f, const SourceRows &src, const Output &out,
                                              const PairTaps &pt, const StripBorder &bd, int y0, int y_end,
                                              long long groups, bool out_aligned, long long bx) {
    const BoxLane bl(src, bx, groups);
    const bool active = bl.active;
    const long long g = bl.g;
    auto load = [&](int y) { return bl.load(bd.row(src.row0 + y, src.rows), src.pitch); };
    // A padded row as pairs: e (columns 0..7 in pairs from 0) and, where its column taps at -1 and +1 are
    // used, o (pairs from -1: o[k] = columns (2 k - 1, 2 k)), the outer columns from the neighbouring lanes.
    struct Row {
        unsigned e[4], o[5];
    };
    auto odd = [&](Row &r) {
        unsigned q[8];
        q[0] = q[7] = 0u;
        q[1] = __shfl_up_sync(0xFFFFFFFFu, r.e[3], 1);
#pragma unroll
        for (int j = 0; j < 4; ++j) q[2 + j] = r.e[j];
        q[6] = __shfl_down_sync(0xFFFFFFFFu, r.e[0], 1);
        r.o[0] = box_pair<-1>(q);
        r.o[1] = box_pair<1>(q);
        r.o[2] = box_pair<3>(q);
        r.o[3] = box_pair<5>(q);
        r.o[4] = box_pair<7>(q);
    };
    auto arrive = [&](const uint2 &w) {
        Row r;
        box_unpack(w, r.e);
        if constexpr (!Cross) odd(r);
        return r;
    };
    // The fold pass's min and max of every half folded (active lanes only).
    unsigned mn2 = 0xFFFFFFFFu, mx2 = 0u;
    PairDivider div{};
    unsigned mnb2 = 0u; // (min + bias) in both halves
    if constexpr (F::mode == StripMode::minmax) {
        const long long mn = out.imm[0];
        div = pair_divider(out.imm[4] - mn);
        mnb2 = unsigned(mn + pt.bias) * 0x10001u;
    }
    // Output row y from padded rows y, y + 1, y + 2 (top, centre, bottom).
    auto step = [&](const Row &top, Row &ctr, const Row &bot, int y) {
        if constexpr (Cross) odd(ctr);
        unsigned s[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            unsigned v = pt.bias2 + pt.t[0][1] * top.e[j];
            v += pt.t[1][0] * ctr.o[j];
            v += pt.t[1][1] * ctr.e[j];
            v += pt.t[1][2] * ctr.o[j + 1];
            v += pt.t[2][1] * bot.e[j];
            if constexpr (!Cross) {
                v += pt.t[0][0] * top.o[j] + pt.t[0][2] * top.o[j + 1];
                v += pt.t[2][0] * bot.o[j] + pt.t[2][2] * bot.o[j + 1];
            }
            s[j] = v;
        }
        if constexpr (F::mode == StripMode::fold) {
            if (active) {
                mn2 = __vimin3_u16x2(mn2, s[0], s[1]);
                mn2 = __vimin3_u16x2(mn2, s[2], s[3]);
                mx2 = __vimax3_u16x2(mx2, s[0], s[1]);
                mx2 = __vimax3_u16x2(mx2, s[2], s[3]);
            }
        } else if constexpr (F::mode == StripMode::minmax) {
            int b[kStripCols];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const unsigned d = s[j] - mnb2;
                b[2 * j] = int(__umulhi((d & 0xFFFFu) * div.m1, div.m2));
                b[2 * j + 1] = int(__umulhi((d >> 16) * div.m1, div.m2));
            }
            if (active) store_strip(b, out.base + size_t(y) * out.pitch, kStripCols * g, out_aligned);
        } else {
            int sums[kStripCols];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                sums[2 * j] = f.init() + int(s[j] & 0xFFFFu) - pt.bias;
                sums[2 * j + 1] = f.init() + int(s[j] >> 16) - pt.bias;
            }
            finish_strip_row(f, sums, active, out, y, kStripCols * g, out_aligned);
        }
    };
    // The two padded rows above the first output.
    const uint2 w0 = load(y0), w1 = load(y0 + 1);
    Row top, ctr;
    auto load_in = [&](uint2(&in)[N], int yc) { // the chunk's N incoming rows (padded rows yc + 2 ..)
        bl.load_rows(in, src, yc + 2, load);
    };
    int y = walk_chunks<N, P>(
        y0, y_end, load_in,
        [&](const uint2(&in)[N], int yc) {
#pragma unroll
            for (int a = 0; a < N; ++a) {
                Row bot = arrive(in[a]);
                step(top, ctr, bot, yc + a);
                top = ctr;
                ctr = bot;
            }
        },
        [&]() {
            top = arrive(w0);
            ctr = arrive(w1);
        });
    // The strip's last rows, fewer than N, one at a time.
#pragma unroll 1
    for (; y < y_end; ++y) {
        Row bot = arrive(load(y + 2));
        step(top, ctr, bot, y);
        top = ctr;
        ctr = bot;
    }
    if constexpr (F::mode == StripMode::fold) {
        if (active && y0 < y_end) {
            f.fold(int(min(mn2 & 0xFFFFu, mn2 >> 16)) - pt.bias);
            f.fold(int(max(mx2 & 0xFFFFu, mx2 >> 16)) - pt.bias);
        }
    }
}

// Grid: x covers the interior groups in blocks of 120 (4 warps of 30 writing lanes), then one edge block
// (the 3 x 3 strip kernel's, every tap through the border rule); y the band's output rows in strips of
// `strip_rows`, taken from the last strip up where `reverse`. The source base and pitch are multiples of 8;
// `out_aligned`: so are the output's.
template <bool Cross, StripMode M, bool Signed, StripDiv D, int N, bool P = false>
__global__ void __launch_bounds__(kStripThreads, strip_blocks_cap(8))
    conv3x3_u8_pair_kernel(SourceRows src, Shape sh, Output out, ByteTaps<3> taps, PairTaps pt, U8Divider dv,
                           StripBorder bd, int strip_rows, long long groups, bool out_aligned, bool reverse) {
    StripFinish<M, Signed, D> f = make_strip_finish<M, Signed, D>(dv, out);
    const int strip = reverse ? int(gridDim.y - 1 - blockIdx.y) : int(blockIdx.y);
    const int y0 = strip * strip_rows;
    const int y_end = min(y0 + strip_rows, sh.out_rows);
    if (blockIdx.x == gridDim.x - 1)
        strip_edges(f, src, sh, out, taps, bd, y0, y_end, groups);
    else
        pair_interior<Cross, N, P>(f, src, out, pt, bd, y0, y_end, groups, out_aligned, blockIdx.x);
    if constexpr (M == StripMode::fold)
        fold_minmax<int>(f.fold_mn <= f.fold_mx, f.fold_mn, f.fold_mx, 0, out);
}

// Both passes of min/max normalisation in one cooperative launch, for a whole image on the device: the
// blocks (as many as the device holds at once) take the units (strip, block of 120 groups or the edge block)
// u = blockIdx.x, + gridDim.x, ... and fold min and max into out.imm (atomics; init_minmax_kernel set them),
// wait for each other (a grid-wide barrier: no launch in between, no partials), then write their units
// last first, so that the rows a block read last, still in L2, are the first it reads again. `units_x`:
// units along x (the last the edge block). NF, NW: rows a chunk of each pass.
template <bool Cross, int NF, int NW>
__global__ void __launch_bounds__(kStripThreads, strip_blocks_cap(8))
    conv3x3_u8_pair_minmax_kernel(SourceRows src, Shape sh, Output out, ByteTaps<3> taps, PairTaps pt,
                                  StripBorder bd, int strip_rows, long long groups, bool out_aligned,
                                  unsigned units_x, unsigned units) {
    auto unit = [&](auto &f, unsigned u, auto chunk) {
        const unsigned bx = u % units_x;
        const int y0 = int(u / units_x) * strip_rows;
        const int y_end = min(y0 + strip_rows, sh.out_rows);
        if (bx == units_x - 1)
            strip_edges(f, src, sh, out, taps, bd, y0, y_end, groups);
        else
            pair_interior<Cross, decltype(chunk)::value, false>(f, src, out, pt, bd, y0, y_end, groups,
                                                                out_aligned, bx);
    };
    {
        StripFinish<StripMode::fold, false, StripDiv::none> f =
            make_strip_finish<StripMode::fold, false, StripDiv::none>(U8Divider{}, out);
        for (unsigned u = blockIdx.x; u < units; u += gridDim.x)
            unit(f, u, std::integral_constant<int, NF>{});
        __shared__ int s_mm[2];
        if (threadIdx.x == 0) s_mm[0] = INT_MAX, s_mm[1] = INT_MIN;
        __syncthreads();
        if (f.fold_mn <= f.fold_mx) {
            atomicMin(s_mm, f.fold_mn);
            atomicMax(s_mm + 1, f.fold_mx);
        }
        __syncthreads();
        if (threadIdx.x == 0 && s_mm[0] <= s_mm[1]) {
            atomicMin(out.imm, (long long)s_mm[0]);
            atomicMax(out.imm + 4, (long long)s_mm[1]);
        }
    }
    cooperative_groups::this_grid().sync();
    StripFinish<StripMode::minmax, false, StripDiv::none> f =
        make_strip_finish<StripMode::minmax, false, StripDiv::none>(U8Divider{}, out);
    if (blockIdx.x >= units) return;
    for (unsigned u = blockIdx.x + (units - 1 - blockIdx.x) / gridDim.x * gridDim.x;; u -= gridDim.x) {
        unit(f, u, std::integral_constant<int, NW>{});
        if (u < gridDim.x) break;
    }
}

} // namespace gpk::cuda::conv
