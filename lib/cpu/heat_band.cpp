// The CPU heat stencil (heat_band.hpp): the row update, row statistics and the band wavefront.
#include "cpu/heat_band.hpp"

#include "common/semantics.hpp"
#include "cpu/convolve_simd.hpp"
#include "cpu/isa.hpp"
#include "engine/error.hpp"
#include "engine/validate.hpp"

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
// C++), so their grids agree with the baseline's within the contract's tolerance (1e-9 relative), not bit
// for bit.
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
//
// The end of a row's statistics, whichever form made the start: the sum's lanes take the whole groups of
// four columns from column c4 on and then the last m % 4 columns (into lane 0); the minimum and maximum's
// lanes the columns from c8 (past the whole groups of eight) on (into lane 0); then each set of lanes is
// combined in its fixed order.
inline __attribute__((always_inline)) RowStats finish_row_stats(const double *row, size_t m, size_t c4,
                                                                double (&lane)[4], size_t c8, double (&lo)[8],
                                                                double (&hi)[8]) {
    for (; c4 + 4 <= m; c4 += 4)
        for (int k = 0; k < 4; ++k) lane[k] += row[c4 + k];
    for (; c4 < m; ++c4) lane[0] += row[c4];
    for (; c8 < m; ++c8) {
        lo[0] = row[c8] < lo[0] ? row[c8] : lo[0];
        hi[0] = row[c8] > hi[0] ? row[c8] : hi[0];
    }
    for (int k = 1; k < 8; ++k) {
        lo[0] = lo[k] < lo[0] ? lo[k] : lo[0];
        hi[0] = hi[k] > hi[0] ? hi[k] : hi[0];
    }
    return {lo[0], hi[0], (lane[0] + lane[1]) + (lane[2] + lane[3])};
}

inline __attribute__((always_inline)) RowStats row_stats_impl(const double *row, size_t m) {
    double lane[4] = {0, 0, 0, 0}, lo[8], hi[8];
    for (int k = 0; k < 8; ++k) lo[k] = hi[k] = row[0];
    size_t c = 0;
    for (; c + 8 <= m; c += 8)
        for (int k = 0; k < 8; ++k) {
            lo[k] = row[c + k] < lo[k] ? row[c + k] : lo[k];
            hi[k] = row[c + k] > hi[k] ? row[c + k] : hi[k];
        }
    return finish_row_stats(row, m, 0, lane, c, lo, hi);
}

// row_stats_impl in 32-byte vectors of four lanes, for the AVX2 and AVX-512 variants: the sum's four lanes
// are one vector (columns c..c+3, then c+4..c+7: each lane adds its columns in the same order), the minimum
// and maximum's eight lanes two vectors each, the rest as row_stats_impl takes it; so the same bits, in one
// sweep of the row: GCC makes less of row_stats_impl's two loops. The baseline variant keeps row_stats_impl
// (32-byte vectors in SSE2 registers are slower).
typedef double RowVec __attribute__((vector_size(32)));

inline __attribute__((always_inline)) RowStats row_stats_vec_impl(const double *row, size_t m) {
    const double first = row[0];
    RowVec sum = {0, 0, 0, 0}, lo[2], hi[2];
    lo[0] = lo[1] = hi[0] = hi[1] = RowVec{first, first, first, first};
    size_t c = 0;
    for (; c + 8 <= m; c += 8) {
        const RowVec x[2] = {conv::simd::load<RowVec>(row + c), conv::simd::load<RowVec>(row + c + 4)};
        sum += x[0];
        sum += x[1];
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            lo[h] = x[h] < lo[h] ? x[h] : lo[h];
            hi[h] = x[h] > hi[h] ? x[h] : hi[h];
        }
    }
    double lane[4] = {sum[0], sum[1], sum[2], sum[3]}, l[8], u[8];
    for (int k = 0; k < 4; ++k) {
        l[k] = lo[0][k], l[4 + k] = lo[1][k];
        u[k] = hi[0][k], u[4 + k] = hi[1][k];
    }
    return finish_row_stats(row, m, c, lane, c, l, u);
}

GPK_TARGET_AVX512 RowStats row_stats_avx512(const double *row, size_t m) {
    return row_stats_vec_impl(row, m);
}
GPK_TARGET_AVX2 RowStats row_stats_avx2(const double *row, size_t m) {
    return row_stats_vec_impl(row, m);
}
RowStats row_stats_baseline(const double *row, size_t m) {
    return row_stats_impl(row, m);
}

RowStats row_stats(const double *row, size_t m) {
    GPK_ISA_CALL(row_stats, row, m)
}

namespace {

constexpr unsigned kMaxBandLevels = 32;

// The input checks of one row, for each instruction set (vectorised from AVX2 on).
GPK_ISA_VARIANTS(size_t, bad_temperature_in, (const double *row, size_t m),
                 first_bad(row, m, BadTemperature{}))
GPK_ISA_VARIANTS(size_t, bad_conductivity_in, (const double *row, size_t m),
                 first_bad(row, m, BadConductivity{}))

size_t bad_temperature_in(const double *row, size_t m){GPK_ISA_CALL(bad_temperature_in, row, m)}

size_t bad_conductivity_in(const double *row, size_t m) {
    GPK_ISA_CALL(bad_conductivity_in, row, m)
}

// Row `row` of iteration `level` of the pass: level 0 is src unless it is read from g.initial; the fixed
// rows are the same at every level.
const double *level_row(const PassGrid &g, const double *ring, unsigned level, size_t row) {
    if (row == 0 || row == g.rows - 1 || (level == 0 && !g.initial)) return g.src + row * g.pitch;
    return ring + (level * 3 + row % 3) * g.pitch;
}

} // namespace

void band_pass(const PassGrid &g, size_t r0, size_t r1, unsigned levels, double *ring, double *maxdiff_out,
               BandCheck *check) {
    if (levels > kMaxBandLevels) fail(GPK_ERR_INTERNAL, "heat: a band pass of more than 32 iterations");
    const size_t m = g.m, n = g.rows - 2;
    double maxdiff[kMaxBandLevels] = {}; // local: the callers' slots may share a cache line
    BandCheck found;
    // Level 0 from g.initial: row j goes to ring slot j % 3 just before level 1 needs it.
    size_t loaded = band_first_row(r0, levels) - 1;
    auto load_initial_row = [&](size_t j) {
        const double *values = g.initial + (j - 1) * m;
        if (check && found.temperature == SIZE_MAX)
            if (size_t k = bad_temperature_in(values, m); k < m) found.temperature = (j - 1) * m + k;
        load_padded_row(ring + (j % 3) * g.pitch, values, m);
    };
    if (g.initial && loaded >= 1) load_initial_row(loaded);
    band_wavefront(r0, r1, n + 1, levels, [&](unsigned s, size_t j) {
        const double *cond = g.cond + (j - 1) * m;
        if (s == 1 && g.initial) {
            for (; loaded < std::min(j + 1, n); ++loaded) load_initial_row(loaded + 1);
            if (check && found.conductivity == SIZE_MAX)
                if (size_t k = bad_conductivity_in(cond, m); k < m) found.conductivity = (j - 1) * m + k;
        }
        const bool last = s == levels;
        double *out = !last         ? ring + (s * 3 + j % 3) * g.pitch + 1
                      : g.final_out ? g.final_out + (j - 1) * m
                                    : g.dst + j * g.pitch + 1;
        double d = update_row(level_row(g, ring, s - 1, j - 1), level_row(g, ring, s - 1, j),
                              level_row(g, ring, s - 1, j + 1), cond, out, m, !(last && g.final_out));
        if (j >= r0 && j < r1) maxdiff[s - 1] = std::max(maxdiff[s - 1], d);
        if (last && g.stats) g.stats[j - 1] = row_stats(out, m);
    });
    std::copy(maxdiff, maxdiff + levels, maxdiff_out);
    if (check) *check = found;
}

} // namespace gpk::cpu
