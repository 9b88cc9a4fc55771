// How the blocks of a heat pass launch share its rows (blocked.cuh), in plain C++ so that a unit test
// checks it on the host. The launch's rows [row_begin, row_end) of every strip of W columns, strip after
// strip, make one sequence of strips x rows units (a strip's row); block b of G takes units
// [b n / G, (b + 1) n / G): a share of a strip's rows, running on into the start of the next strip where it
// crosses one. G is at least the number of strips, so a share is at most one strip's rows and has one or
// two segments. G a multiple of the strips gives every strip the same bands and no block crosses; G the
// resident slots of whole waves gives every slot the same work whatever the strips and rows number, at the
// cost of a second pipeline fill in the blocks that cross. plan_pass_blocks picks G.
#pragma once

#include "common/semantics.hpp" // GPK_HD

namespace gpk::cuda::heat {

// Rows [r0, r1) of the launch's rows (0-based) in strip `strip`.
struct Segment {
    long long strip, r0, r1;
};

// Segment `seg` (0 or 1) of block `b` of `blocks` over `strips` strips of `rows` rows; false where the block
// has no such segment. Needs strips <= blocks <= strips * rows.
GPK_HD bool pass_segment(long long strips, long long rows, long long blocks, long long b, int seg,
                         Segment &out) {
    const long long n = strips * rows, u0 = b * n / blocks, u1 = (b + 1) * n / blocks;
    long long strip = u0 / rows, r0 = u0 - strip * rows;
    if (seg == 1) {
        ++strip;
        r0 = 0;
        if (strip * rows >= u1) return false;
    }
    const long long end = u1 - strip * rows;
    out = Segment{strip, r0, end < rows ? end : rows};
    return out.r1 > out.r0;
}

// Waves of blocks planned at most where whole waves cross strips; more only where the strips outnumber them.
constexpr long long kMaxPassWaves = 64;
// A block's units at most (its rows are counted in int).
constexpr long long kMaxBlockUnits = 1ll << 30;

// The most blocks plan_pass_blocks returns for `strips` strips and `slots` resident blocks, whatever the
// rows.
inline long long max_pass_blocks(long long strips, long long slots) {
    return strips > slots * kMaxPassWaves ? strips : slots * kMaxPassWaves;
}

// Blocks G for a launch over `rows` rows of `strips` strips, `slots` blocks resident at once and passes of
// `levels` levels: G minimises the modelled time, (waves of resident blocks) x (the units of the largest
// share + 2.5 levels a segment for the overlaps and the pipeline's fill), among the multiples of the strips
// (bands of equal height) and, where `cross`, the whole waves (equal shares, crossing strips). Ties go to
// bands, then to fewer blocks. Bands alone where a launch must leave slots soon to another: one wave of
// whole-pass blocks holds every slot until the pass ends.
inline long long plan_pass_blocks(long long strips, long long rows, long long slots, int levels,
                                  bool cross = true) {
    if (strips < 1 || rows < 1) return 1;
    if (slots < 1) slots = 1;
    const long long n = strips * rows, cap = max_pass_blocks(strips, slots);
    const double fill = 2.5 * levels;
    // Shares shorter than 2 levels' rows cost more than they save: at most as many bands as bands of that
    // height (the last one shorter) would make, whole waves only of shares that long.
    const long long least = rows < 2 * levels ? rows : 2 * levels, bands = (rows + least - 1) / least;
    long long best = strips;
    double best_cost = -1;
    auto consider = [&](long long g, int segments) {
        if (g < strips || g > n || g > cap) return;
        const long long share = (n + g - 1) / g;
        if (share > kMaxBlockUnits) return;
        const double cost = double((g + slots - 1) / slots) * (double(share) + fill * segments);
        if (best_cost < 0 || cost < best_cost) best_cost = cost, best = g;
    };
    for (long long c = 1; c <= bands && strips * c <= cap; ++c) consider(strips * c, 1);
    for (long long k = 1; cross && k <= kMaxPassWaves; ++k)
        if (n / (slots * k) >= least) consider(slots * k, (slots * k) % strips == 0 ? 1 : 2);
    if (best_cost < 0) best = strips; // a share over kMaxBlockUnits everywhere: one band a strip
    return best;
}

} // namespace gpk::cuda::heat
