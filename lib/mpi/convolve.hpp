// gpk_mpi_convolve (convolve.cpp).
#pragma once

#include "mpi/team.hpp"

namespace gpk::mpi {

// Checks, fetches the halo rows and convolves this rank's block; throws gpk::Error, the same on every rank.
void convolve(Team &team, gpk_context *ctx, const gpk_convolve_params *params, size_t height,
              size_t row_begin, const gpk_image *in, const void *in_data, const gpk_image *out,
              void *out_data);

} // namespace gpk::mpi
