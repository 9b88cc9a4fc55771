// The distributed heat solver of gpk_mpi_heat_run (heat.cpp).
#pragma once

#include "mpi/blocks.hpp"
#include "mpi/team.hpp"

namespace gpk::mpi {

// Runs the checked parameters on every rank of the team (capi.cpp checked them and the blocks); throws
// gpk::Error, the same on every rank.
void heat_run(Team &team, gpk_context *ctx, const gpk_heat_params &params, const Block &block,
              const double *tinit, const double *conductivity, double *tfinal, gpk_heat_report *final);

} // namespace gpk::mpi
