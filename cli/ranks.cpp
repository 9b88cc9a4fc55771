// The gpk command under mpirun (ranks.hpp). GPK_CLI_MPI: the build has libgpk_mpi.
#include "ranks.hpp"

#include <cstdlib>
#include <string>
#include <vector>

#ifdef GPK_CLI_MPI
#include "gpk_mpi.h"

#include <climits>
#include <fcntl.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <unistd.h>
#endif

namespace gpkcli::ranks {

#ifdef GPK_CLI_MPI

namespace {

bool g_active = false;
int g_rank = 0, g_size = 1;

// Launched by an MPI process manager (Open MPI's, Hydra, or a PMIx one).
bool launched_by_mpirun() {
    for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
        if (std::getenv(name)) return true;
    return false;
}

struct Rows {
    size_t begin = 0, count = 0;
};

Rows my_rows(size_t rows) {
    Rows r;
    gpk_mpi_default_block(&r.begin, &r.count, MPI_COMM_WORLD, rows);
    return r;
}

// Gathers every rank's default block of `rows` rows of `row_bytes` bytes (packed) into `whole` on rank 0.
void gather_rows(const void *block, size_t rows, size_t row_bytes, void *whole) {
    if (row_bytes > size_t(INT_MAX)) throw Failure("a row of more than 2^31 - 1 bytes cannot be gathered");
    MPI_Datatype row;
    MPI_Type_contiguous(int(row_bytes), MPI_BYTE, &row);
    MPI_Type_commit(&row);
    std::vector<int> counts(static_cast<size_t>(g_size)), displs(static_cast<size_t>(g_size));
    const size_t share = rows / size_t(g_size), extra = rows % size_t(g_size);
    for (size_t r = 0; r < size_t(g_size); ++r) {
        counts[r] = int(share + (r < extra ? 1 : 0));
        displs[r] = int(r * share + std::min(r, extra));
    }
    MPI_Gatherv(block, counts[size_t(g_rank)], row, whole, counts.data(), displs.data(), row, 0,
                MPI_COMM_WORLD);
    MPI_Type_free(&row);
}

} // namespace

void start(int *argc, char ***argv) {
    if (!launched_by_mpirun()) return;
    MPI_Init(argc, argv);
    g_active = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (g_rank != 0) { // rank 0 alone prints
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, STDOUT_FILENO);
            close(devnull);
        }
    }
}

int finish(int code) {
    if (g_active) MPI_Finalize();
    return code;
}

bool active() {
    return g_active;
}
int rank() {
    return g_rank;
}
int size() {
    return g_size;
}

std::string describe() {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string name(version, size_t(length));
    name = name.substr(0, name.find_first_of(",\n")); // "Open MPI v4.1.4"
    std::string line = "MPI: " + name + " (libgpk_mpi)";
    line += gpk_mpi_cuda_aware()
                ? ", CUDA-aware"
                : ", not CUDA-aware (halos that CUDA IPC cannot carry go through host memory)";
    if (!g_active) return line + "; not started by mpirun: 1 process";
    return line + "; " + std::to_string(g_size) + " rank" + (g_size > 1 ? "s" : "") + " (this is rank " +
           std::to_string(g_rank) + ")";
}

std::string describe_sharing(int devices) {
    if (!g_active) return "";
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
    int local = 1;
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    if (devices < 1 || local <= devices) return "";
    // The control daemon's pid file in its pipe directory names a live process while it runs (its control
    // socket stays behind when it quits).
    const char *dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
    const std::string pipes = dir && *dir ? dir : "/tmp/nvidia-mps";
    long pid = 0;
    if (FILE *f = std::fopen((pipes + "/nvidia-cuda-mps-control.pid").c_str(), "r")) {
        if (std::fscanf(f, "%ld", &pid) != 1) pid = 0;
        std::fclose(f);
    }
    const bool mps = pid > 0 && (kill(pid_t(pid), 0) == 0 || errno == EPERM);
    std::string line = "GPU sharing: " + std::to_string(local) + " ranks on this node share " +
                       std::to_string(devices) + " CUDA device" + (devices > 1 ? "s" : "") + "; ";
    return line +
           (mps ? "the CUDA MPS control daemon runs (" + pipes + "): their kernels can run side by side"
                : "no CUDA MPS control daemon found in " + pipes +
                      ": their kernels take turns on the device (start the MPS server with "
                      "nvidia-cuda-mps-control -d; README, MPI)");
}

std::string describe_halos() {
    if (!g_active || g_size < 2) return "";
    gpk_context_options opts;
    gpk_context_options_init(&opts);
    opts.device = GPK_MPI_DEVICE_BY_RANK;
    gpk_context *ctx = nullptr;
    if (gpk_mpi_context_create(&ctx, MPI_COMM_WORLD, &opts) != GPK_OK)
        return std::string("Heat halos: unknown (no context: ") + gpk_context_last_error(nullptr) + ")";
    std::vector<char> text(256 * size_t(g_size) + 1);
    std::string out;
    if (gpk_mpi_halo_paths(ctx, MPI_COMM_WORLD, 4096, 0, text.data(), text.size(), nullptr) == GPK_OK) {
        out = "Heat halos (" + std::string(gpk_backend_name(gpk_context_backend(ctx))) + " backend):\n" +
              text.data();
        while (!out.empty() && out.back() == '\n') out.pop_back();
    } else {
        out = std::string("Heat halos: unknown (") + gpk_context_last_error(ctx) + ")";
    }
    gpk_context_destroy(ctx);
    return out;
}

Context open_context(gpk_backend backend) {
    if (!g_active) return gpkcli::open_context(backend);
    gpk_context_options opts;
    gpk_context_options_init(&opts);
    opts.backend = backend;
    opts.device = GPK_MPI_DEVICE_BY_RANK;
    gpk_context *ctx = nullptr;
    if (gpk_mpi_context_create(&ctx, MPI_COMM_WORLD, &opts) != GPK_OK)
        throw Failure(std::string("cannot start the ") + gpk_backend_name(backend) +
                      " backend: " + gpk_context_last_error(nullptr));
    return Context(ctx);
}

gpk_status heat_run(gpk_context *ctx, const gpk_heat_params *params, const double *tinit,
                    const double *conductivity, double *tfinal, gpk_heat_report *final) {
    if (!g_active) return gpk_heat_run(ctx, params, tinit, conductivity, tfinal, final);
    const size_t cols = params->cols;
    const Rows mine = my_rows(params->rows);
    std::vector<double> block(tfinal ? mine.count * cols : 0);
    gpk_status s =
        gpk_mpi_heat_run(ctx, MPI_COMM_WORLD, params, mine.begin, mine.count, tinit + mine.begin * cols,
                         conductivity + mine.begin * cols, tfinal ? block.data() : nullptr, final);
    if (tfinal && (s == GPK_OK || s == GPK_ERR_CANCELLED))
        gather_rows(block.data(), params->rows, cols * sizeof(double), tfinal);
    return s;
}

gpk_status histogram(gpk_context *ctx, const gpk_histogram_params *params, const void *data, uint64_t *hist,
                     uint64_t *uncounted) {
    // Fewer rows than ranks (a single row, say) are not split: every rank counts the whole.
    if (!g_active || params->height < size_t(g_size))
        return gpk_histogram(ctx, params, data, hist, uncounted);
    const Rows mine = my_rows(params->height);
    gpk_histogram_params local = *params;
    local.height = mine.count;
    if (local.stride == 0) local.stride = params->width * params->channels * gpk_dtype_size(params->dtype);
    return gpk_mpi_histogram(ctx, MPI_COMM_WORLD, 0, &local,
                             static_cast<const unsigned char *>(data) + mine.begin * local.stride, hist,
                             uncounted);
}

gpk_status convolve(gpk_context *ctx, const gpk_convolve_params *params, const gpk_image *in,
                    const void *in_data, const gpk_image *out, void *out_data) {
    if (!g_active) return gpk_convolve(ctx, params, in, in_data, out, out_data);
    const Rows mine = my_rows(in->height);
    const size_t in_row = in->width * in->channels * gpk_dtype_size(in->dtype);
    const size_t out_row = out->width * out->channels * gpk_dtype_size(out->dtype);
    if (out->stride && out->stride != out_row) throw Failure("the gathered output must be packed");
    gpk_image in_block = *in, out_block = *out;
    in_block.height = out_block.height = mine.count;
    out_block.stride = 0;
    std::vector<unsigned char> block(mine.count * out_row);
    const size_t in_stride = in->stride ? in->stride : in_row;
    gpk_status s = gpk_mpi_convolve(ctx, MPI_COMM_WORLD, params, in->height, mine.begin, &in_block,
                                    static_cast<const unsigned char *>(in_data) + mine.begin * in_stride,
                                    &out_block, block.data());
    if (s != GPK_OK) return s;
    gather_rows(block.data(), in->height, out_row, out_data);
    return s;
}

const double *whole_grid(const double *grid, size_t rows, size_t cols, std::vector<double> &buffer) {
    if (!g_active) return grid;
    if (g_rank == 0) buffer.resize(rows * cols);
    gather_rows(grid, rows, cols * sizeof(double), buffer.data());
    return g_rank == 0 ? buffer.data() : nullptr;
}

#else // a build without MPI: one process, gpk.h

void start(int *, char ***) {}
int finish(int code) {
    return code;
}
bool active() {
    return false;
}
int rank() {
    return 0;
}
int size() {
    return 1;
}

std::string describe() {
    return "MPI: not built (libgpk_mpi needs MPI at build time: -Dmpi=enabled)";
}

std::string describe_sharing(int) {
    return "";
}

std::string describe_halos() {
    return "";
}

Context open_context(gpk_backend backend) {
    return gpkcli::open_context(backend);
}

gpk_status heat_run(gpk_context *ctx, const gpk_heat_params *params, const double *tinit,
                    const double *conductivity, double *tfinal, gpk_heat_report *final) {
    return gpk_heat_run(ctx, params, tinit, conductivity, tfinal, final);
}

gpk_status histogram(gpk_context *ctx, const gpk_histogram_params *params, const void *data, uint64_t *hist,
                     uint64_t *uncounted) {
    return gpk_histogram(ctx, params, data, hist, uncounted);
}

gpk_status convolve(gpk_context *ctx, const gpk_convolve_params *params, const gpk_image *in,
                    const void *in_data, const gpk_image *out, void *out_data) {
    return gpk_convolve(ctx, params, in, in_data, out, out_data);
}

const double *whole_grid(const double *grid, size_t, size_t, std::vector<double> &) {
    return grid;
}

#endif

} // namespace gpkcli::ranks
