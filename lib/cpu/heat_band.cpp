// The CPU heat stencil (heat_band.hpp): the row update, row statistics and the band wavefront.
#include "cpu/heat_band.hpp"

#include "common/semantics.hpp"
#include "cpu/isa.hpp"
#include "engine/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace gpk::cpu {

// Updates one interior row: out[0..m-1] (columns 1..m) from the rows above, at and below (padded rows,
// column 0 and m+1 are the wrapped halo). With `wrap`, out is a padded row too and its own halo columns
// (out[-1], out[m]) are wrapped; without, it is a row of tfinal, which has none. Returns max |out - mid|.
// The max is taken on the bit patterns of the non-negative differences (ordered like the values), which
// gcc vectorises without -ffast-math. Compiled for each instruction set (cpu/isa.hpp): the same expression
// in the same order, but the AVX2 and AVX-512 variants contract multiply-adds into FMA (GCC's default for
// C++), so their grids agree with the baseline's within SPEC's tolerance, not bit for bit.
inline __attribute__((always_inline)) double
update_row_impl(const double *__restrict up, const double *__restrict mid, const double *__restrict down,
                const double *__restrict cond, double *__restrict out, size_t m, bool wrap) {
    int64_t max_bits = 0;
    for (size_t c = 1; c <= m; ++c) {
        double w = cond[c - 1], r = 1.0 - w;
        double v = w * mid[c] + (down[c] + up[c] + mid[c + 1] + mid[c - 1]) * (r * kHeatCdir) +
                   (up[c - 1] + up[c + 1] + down[c - 1] + down[c + 1]) * (r * kHeatCdiag);
        out[c - 1] = v;
        double d = std::fabs(v - mid[c]);
        int64_t bits;
        std::memcpy(&bits, &d, sizeof bits);
        max_bits = bits > max_bits ? bits : max_bits;
    }
    if (wrap) {
        out[-1] = out[m - 1];
        out[m] = out[0];
    }
    double maxdiff;
    std::memcpy(&maxdiff, &max_bits, sizeof maxdiff);
    return maxdiff;
}

GPK_ISA_VARIANTS(double, update_row,
                 (const double *__restrict up, const double *__restrict mid, const double *__restrict down,
                  const double *__restrict cond, double *__restrict out, size_t m, bool wrap),
                 update_row_impl(up, mid, down, cond, out, m, wrap))

double update_row(const double *up, const double *mid, const double *down, const double *cond, double *out,
                  size_t m, bool wrap) {
    GPK_ISA_CALL(update_row, up, mid, down, cond, out, m, wrap)
}

// Sum in four fixed lanes combined in a fixed order: fast, and the same whatever the thread count or
// instruction set. The values are finite (checked inputs, convex combinations of them), so the minimum and
// maximum do not depend on the order they are taken in: eight lanes of each, which vectorise.
inline __attribute__((always_inline)) RowStats row_stats_impl(const double *row, size_t m) {
    double lane[4] = {0, 0, 0, 0};
    size_t c = 0;
    for (; c + 4 <= m; c += 4)
        for (int k = 0; k < 4; ++k) lane[k] += row[c + k];
    for (; c < m; ++c) lane[0] += row[c];
    double lo[8], hi[8];
    for (int k = 0; k < 8; ++k) lo[k] = hi[k] = row[0];
    for (c = 0; c + 8 <= m; c += 8)
        for (int k = 0; k < 8; ++k) {
            lo[k] = row[c + k] < lo[k] ? row[c + k] : lo[k];
            hi[k] = row[c + k] > hi[k] ? row[c + k] : hi[k];
        }
    for (; c < m; ++c) {
        lo[0] = row[c] < lo[0] ? row[c] : lo[0];
        hi[0] = row[c] > hi[0] ? row[c] : hi[0];
    }
    for (int k = 1; k < 8; ++k) {
        lo[0] = lo[k] < lo[0] ? lo[k] : lo[0];
        hi[0] = hi[k] > hi[0] ? hi[k] : hi[0];
    }
    return {lo[0], hi[0], (lane[0] + lane[1]) + (lane[2] + lane[3])};
}

GPK_ISA_VARIANTS(RowStats, row_stats, (const double *row, size_t m), row_stats_impl(row, m))

RowStats row_stats(const double *row, size_t m) {
    GPK_ISA_CALL(row_stats, row, m)
}

namespace {

constexpr unsigned kMaxBandLevels = 32;

// Row `row` of iteration `level` of the pass (level 0 is src). The fixed rows are the same at every level.
const double *level_row(const PassGrid &g, const double *ring, unsigned level, size_t row) {
    if (level == 0 || row == 0 || row == g.rows - 1) return g.src + row * g.pitch;
    return ring + ((level - 1) * 3 + row % 3) * g.pitch;
}

} // namespace

void band_pass(const PassGrid &g, size_t r0, size_t r1, unsigned levels, double *ring, double *maxdiff_out) {
    if (levels > kMaxBandLevels) fail(GPK_ERR_INTERNAL, "heat: a band pass of more than 32 iterations");
    double maxdiff[kMaxBandLevels] = {}; // local: the callers' slots may share a cache line
    band_wavefront(r0, r1, g.rows - 1, levels, [&](unsigned s, size_t j) {
        double *out = s == levels ? g.dst + j * g.pitch : ring + ((s - 1) * 3 + j % 3) * g.pitch;
        double d = update_row(level_row(g, ring, s - 1, j - 1), level_row(g, ring, s - 1, j),
                              level_row(g, ring, s - 1, j + 1), g.cond + (j - 1) * g.m, out + 1, g.m, true);
        if (j >= r0 && j < r1) maxdiff[s - 1] = std::max(maxdiff[s - 1], d);
    });
    std::copy(maxdiff, maxdiff + levels, maxdiff_out);
}

} // namespace gpk::cpu
