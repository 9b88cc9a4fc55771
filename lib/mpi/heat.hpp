// The distributed heat solver of gpk_mpi_heat_run (heat.cpp).
#pragma once

#include "mpi/blocks.hpp"
#include "mpi/team.hpp"

#include <string>

namespace gpk::mpi {

// Runs the checked parameters on every rank of the team (capi.cpp checked them and the blocks); throws
// gpk::Error, the same on every rank.
void heat_run(Team &team, gpk_context *ctx, const gpk_heat_params &params, const Block &block,
              const double *tinit, const double *conductivity, double *tfinal, gpk_heat_report *final);

// gpk_mpi_halo_paths (gpk_mpi.h): the links a run of `cols` columns would set up, one line each in *text;
// with exchanges > 0 the median time of one exchange in *seconds. Throws as heat_run does.
void halo_paths(Team &team, gpk_context *ctx, size_t cols, unsigned exchanges, std::string *text,
                double *seconds);

} // namespace gpk::mpi
