// How the CUDA heat pass shares a launch's rows among its blocks (lib/cuda/heat/schedule.hpp), checked on
// the host: every strip's every row goes to exactly one block, in one or two segments, shares differing by
// at most a row; and the planner's choice is valid and, by its own model, no slower than bands of any
// height of at least 2 levels' rows (the last band shorter) or than whole waves of equal shares.
#include "check.hpp"
#include "cuda/heat/schedule.hpp"

#include <algorithm>
#include <string>
#include <vector>

using gpk::cuda::heat::Segment;

namespace {

std::string shape_name(long long strips, long long rows, long long blocks) {
    return std::to_string(strips) + " strips x " + std::to_string(rows) + " rows, " + std::to_string(blocks) +
           " blocks";
}

// Every unit covered once; segments in order, the second at the next strip's first row.
void check_cover(long long strips, long long rows, long long blocks) {
    const std::string what = shape_name(strips, rows, blocks);
    std::vector<unsigned char> seen(size_t(strips * rows), 0);
    long long least = rows + 1, most = 0, crossing = 0;
    bool ok = true;
    for (long long b = 0; b < blocks && ok; ++b) {
        Segment s[2];
        const bool first = gpk::cuda::heat::pass_segment(strips, rows, blocks, b, 0, s[0]);
        const bool second = gpk::cuda::heat::pass_segment(strips, rows, blocks, b, 1, s[1]);
        ok = first;
        CHECK_MSG(first, what + ": block " + std::to_string(b) + " has no rows");
        if (!first) break;
        long long units = 0;
        for (int k = 0; k < 1 + second; ++k) {
            const Segment &g = s[k];
            if (g.strip < 0 || g.strip >= strips || g.r0 < 0 || g.r1 > rows || g.r0 >= g.r1) {
                CHECK_MSG(false, what + ": block " + std::to_string(b) + " segment out of range");
                ok = false;
                break;
            }
            for (long long r = g.r0; r < g.r1; ++r) ++seen[size_t(g.strip * rows + r)];
            units += g.r1 - g.r0;
        }
        if (second) {
            ++crossing;
            CHECK_MSG(s[0].r1 == rows && s[1].strip == s[0].strip + 1 && s[1].r0 == 0,
                      what + ": block " + std::to_string(b) + " does not run on into the next strip");
        }
        least = std::min(least, units);
        most = std::max(most, units);
    }
    if (!ok) return;
    const long long wrong = std::count_if(seen.begin(), seen.end(), [](unsigned char c) { return c != 1; });
    CHECK_MSG(wrong == 0, what + ": " + std::to_string(wrong) + " units not covered exactly once");
    CHECK_MSG(most - least <= 1,
              what + ": shares of " + std::to_string(least) + " to " + std::to_string(most));
    if (blocks % strips == 0) CHECK_MSG(crossing == 0, what + ": bands cross strips");
}

// The planner's model: waves x (largest share + 2.5 levels a segment).
double modelled(long long strips, long long rows, long long slots, int levels, long long blocks,
                bool crosses) {
    const long long n = strips * rows, share = (n + blocks - 1) / blocks;
    return double((blocks + slots - 1) / slots) * (double(share) + 2.5 * levels * (crosses ? 2 : 1));
}

// Bands of H rows, as blocks were planned before they could cross strips (the last band shorter).
double bands_of_height(long long strips, long long rows, long long slots, int levels, long long h) {
    const long long blocks = strips * ((rows + h - 1) / h);
    return double((blocks + slots - 1) / slots) * (double(h) + 2.5 * levels);
}

void check_plan(long long strips, long long rows, long long slots, int levels) {
    const long long g = gpk::cuda::heat::plan_pass_blocks(strips, rows, slots, levels);
    const std::string what = shape_name(strips, rows, g) + ", " + std::to_string(slots) + " slots";
    CHECK_MSG(g >= strips && g <= strips * rows && g <= gpk::cuda::heat::max_pass_blocks(strips, slots),
              what + ": blocks out of range");
    const double cost = modelled(strips, rows, slots, levels, g, g % strips != 0);
    const long long h_max = std::min(rows, 4096ll);
    for (long long h = std::min(rows, 2ll * levels); h <= h_max; ++h)
        if (bands_of_height(strips, rows, slots, levels, h) < cost - 1e-9) {
            CHECK_MSG(false, what + ": bands of " + std::to_string(h) + " rows model faster");
            break;
        }
    const long long bands = gpk::cuda::heat::plan_pass_blocks(strips, rows, slots, levels, false);
    CHECK_MSG(bands % strips == 0 && bands <= strips * rows,
              what + ": bands alone give " + std::to_string(bands));
    for (long long k = 1; k <= 8; ++k) {
        const long long w = slots * k;
        if (w < strips || w > strips * rows || strips * rows / w < std::min(rows, 2ll * levels))
            continue; // shares shorter than 2 levels' rows are not planned
        CHECK_MSG(modelled(strips, rows, slots, levels, w, w % strips != 0) >= cost - 1e-9,
                  what + ": " + std::to_string(k) + " whole waves model faster");
    }
}

} // namespace

int main() {
    // Cover: every block count for small shapes, and spread counts for larger ones.
    for (long long strips : {1, 2, 3, 7, 17})
        for (long long rows : {1, 2, 5, 12, 37, 100})
            for (long long blocks = strips; blocks <= strips * rows; ++blocks)
                check_cover(strips, rows, blocks);
    for (long long strips : {68, 135, 269})
        for (long long rows : {6, 4090, 8190, 16382})
            for (long long blocks : {strips, strips * 3, 264ll, 528ll, 1000ll, 2112ll, 4224ll})
                if (blocks >= strips && blocks <= strips * rows) check_cover(strips, rows, blocks);

    // The plan: H200/H100 (132 SMs) with 6/2 and 4/4, smaller devices, one slot.
    for (long long slots : {264ll, 528ll, 160ll, 1ll})
        for (int levels : {4, 6})
            for (long long strips : {1, 2, 17, 68, 135, 269})
                for (long long rows : {1, 5, 6, 12, 37, 300, 2046, 4094, 8190, 12282, 16382, 32766})
                    check_plan(strips, rows, slots, levels);

    // What the model gives where the strips do not fill whole waves: one wave of equal shares crossing
    // strips, 16384² on 132 SMs with 6/2 (68 strips of 244 columns), one GPU and a half of it.
    CHECK_EQ(gpk::cuda::heat::plan_pass_blocks(68, 16382, 264, 6), 264ll);
    CHECK_EQ(gpk::cuda::heat::plan_pass_blocks(68, 8191, 264, 6), 264ll);
    // A slab's edge rows: one block a strip.
    CHECK_EQ(gpk::cuda::heat::plan_pass_blocks(68, 6, 264, 6), 68ll);
    return check::finish("test_heat_schedule");
}
