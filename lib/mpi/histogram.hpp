// gpk_mpi_histogram (histogram.cpp).
#pragma once

#include "mpi/team.hpp"

namespace gpk::mpi {

// Checks, counts this rank's data and sums the counts exactly on `root` (or every rank); throws
// gpk::Error, the same on every rank.
void histogram(Team &team, gpk_context *ctx, int root, const gpk_histogram_params *params, const void *data,
               uint64_t *hist, uint64_t *uncounted);

} // namespace gpk::mpi
