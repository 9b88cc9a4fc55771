// gpk_mpi_histogram: every rank counts its own data with its backend, without saturation; the counts are
// summed exactly (64-bit integers) to the root or to every rank, and saturation then clamps the sums, as
// gpk_histogram clamps its exact counts.
#include "mpi/histogram.hpp"

#include "engine/abi.hpp"
#include "engine/arguments.hpp"
#include "gpk_mpi.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

namespace gpk::mpi {
namespace {

// Sums `count` values over the ranks into `root`'s (or everyone's) buffer, in pieces MPI's int counts take.
void sum_counts(Team &team, int root, uint64_t *values, size_t count) {
    constexpr size_t kPiece = size_t(1) << 30;
    for (size_t at = 0; at < count; at += kPiece) {
        const int n = int(std::min(kPiece, count - at));
        if (root == GPK_MPI_ALL_RANKS)
            MPI_Allreduce(MPI_IN_PLACE, values + at, n, MPI_UINT64_T, MPI_SUM, team.comm());
        else
            MPI_Reduce(team.rank() == root ? MPI_IN_PLACE : values + at, values + at, n, MPI_UINT64_T,
                       MPI_SUM, root, team.comm());
    }
}

} // namespace

void histogram(Team &team, gpk_context *ctx, int root, const gpk_histogram_params *caller, const void *data,
               uint64_t *hist, uint64_t *uncounted) {
    const bool receives = root == GPK_MPI_ALL_RANKS || root == team.rank();
    gpk_histogram_params p{}; // the caller's, in this library's layout (engine/abi.hpp)
    const Outcome read = capture([&] {
        require(ctx, "ctx");
        p = gpk::abi::read(caller, "params");
        if (root != GPK_MPI_ALL_RANKS && (root < 0 || root >= team.size()))
            invalid("root is " + std::to_string(root) + "; expected a rank from 0 to " +
                    std::to_string(team.size() - 1) + " or GPK_MPI_ALL_RANKS");
        if (receives && !hist) invalid("hist is NULL on the rank that receives the counts");
        if (p.channels < 1 || p.channels > 4)
            invalid("params->channels is " + std::to_string(p.channels) + "; it must be 1, 2, 3 or 4");
        if (p.bins == 0 || p.bins > (size_t(1) << 40))
            invalid("params->bins is " + std::to_string(p.bins) + "; it must be in 1..2^40");
    });
    team.open(read, {field("root", uint64_t(int64_t(root))), field("params->dtype", uint64_t(p.dtype)),
                     field("params->channels", uint64_t(p.channels)), field("params->bins", uint64_t(p.bins)),
                     field("params->lower", p.lower), field("params->upper", p.upper),
                     field("params->saturate", uint64_t(p.saturate))});
    // The counts go straight into hist on a rank that receives them and needs no clamping; elsewhere into a
    // buffer kept for the thread's next call (no allocation of the bins on each call).
    const size_t cells = size_t(p.channels) * p.bins;
    static thread_local std::vector<uint64_t> kept;
    const bool direct = receives && p.saturate == 0;
    uint64_t *counts = hist;
    uint64_t outside[4] = {0, 0, 0, 0};
    team.step([&] {
        if (!direct) {
            if (kept.size() < cells) kept.resize(cells);
            counts = kept.data();
        }
        gpk_histogram_params local = p;
        local.saturate = 0; // clamp the sums, not the parts
        check_ok(gpk_histogram(ctx, &local, data, counts, outside), ctx);
    });
    sum_counts(team, root, counts, cells);
    sum_counts(team, root, outside, p.channels);
    if (!receives) return;
    if (!direct)
        for (size_t k = 0; k < cells; ++k) hist[k] = std::min(counts[k], p.saturate);
    if (uncounted) std::copy_n(outside, p.channels, uncounted);
}

} // namespace gpk::mpi
