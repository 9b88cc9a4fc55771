// The gpk command under mpirun (where the build has libgpk_mpi). Every rank runs the same command: it
// parses the same arguments and reads the same input files (so they must be on a file system every rank
// sees), then computes only its block of rows with libgpk_mpi; the results are gathered on rank 0, which
// alone prints (the other ranks' standard output goes to /dev/null) and writes files. Started outside
// mpirun, or in a build without MPI, the command is the single process it always was and these calls
// are gpk.h's.
#pragma once

#include "common.hpp"

#include <string>
#include <vector>

namespace gpkcli::ranks {

// Starts MPI when the environment says mpirun launched this process; the first call in main.
void start(int *argc, char ***argv);

// Ends MPI (when started) and returns code; the last call in main.
int finish(int code);

// Running under mpirun (with any number of ranks, one included).
bool active();
int rank();
int size();
inline bool root() {
    return rank() == 0;
}

// One line for gpk info: whether the build has MPI, and the ranks it sees.
std::string describe();

// For gpk info, after the devices are listed (collective under mpirun): where more ranks of this node than
// it has CUDA devices share them, a line saying so and whether the CUDA MPS control daemon runs (its pid
// file in CUDA_MPS_PIPE_DIRECTORY, or /tmp/nvidia-mps, names a live process): without MPS the ranks' kernels
// take turns on the device instead of running side by side. Empty otherwise.
std::string describe_sharing(int devices);

// For gpk info, under mpirun with more than one rank (collective): how the heat halo rows of each link of
// ranks travel (gpk_mpi_halo_paths on a context of the automatic backend, each rank's device by its place
// on its node), one line a link under a heading. Empty otherwise.
std::string describe_halos();

// A context for this rank: under MPI each rank's device is its local rank modulo the node's devices.
Context open_context(gpk_backend backend);

// The library's calls on the whole data, each rank doing its default block of rows (gpk_mpi_default_block)
// and the rows of the result gathered on rank 0 (tfinal, out_data: whole-size there, and on the other
// ranks too, which they leave untouched). Outside MPI, the gpk.h calls.
gpk_status heat_run(gpk_context *ctx, const gpk_heat_params *params, const double *tinit,
                    const double *conductivity, double *tfinal, gpk_heat_report *final);
gpk_status histogram(gpk_context *ctx, const gpk_histogram_params *params, const void *data, uint64_t *hist,
                     uint64_t *uncounted);
gpk_status convolve(gpk_context *ctx, const gpk_convolve_params *params, const gpk_image *in,
                    const void *in_data, const gpk_image *out, void *out_data);

// A heat callback's grid as the whole grid: under MPI (a rank's block, collective) gathered into `buffer`
// on rank 0, which gets buffer.data(), the others nullptr; otherwise `grid` itself.
const double *whole_grid(const double *grid, size_t rows, size_t cols, std::vector<double> &buffer);

} // namespace gpkcli::ranks
