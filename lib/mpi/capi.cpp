// The C boundary of libgpk_mpi (gpk_mpi.h): local argument checks, the checks that the ranks agree, and
// the one place where exceptions become statuses and messages in the rank's context.
#include "gpk_mpi.h"

#include "engine/abi.hpp"
#include "engine/arguments.hpp"
#include "gpk_internal.h"
#include "mpi/blocks.hpp"
#include "mpi/convolve.hpp"
#include "mpi/heat.hpp"
#include "mpi/histogram.hpp"
#include "mpi/team.hpp"

#include <cmath>
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

using gpk::invalid;
using gpk::require;
using namespace gpk::mpi;

namespace {

// Runs body; a failure's message goes to ctx (or to the thread's context-less slot) and its status back.
template <class F> gpk_status boundary(gpk_context *ctx, F &&body) {
    Outcome o = capture(std::forward<F>(body));
    if (o.failed()) gpk_internal_set_error(ctx, o.message.c_str());
    return o.status;
}

uint64_t given(const void *p) {
    return p ? 1 : 0;
}

// What one rank can check alone of gpk_mpi_heat_run's arguments.
void check_heat_locally(gpk_context *ctx, const gpk_heat_params &p, size_t row_count, const double *tinit,
                        const double *conductivity) {
    require(ctx, "ctx");
    require(tinit, "tinit");
    require(conductivity, "conductivity");
    if (p.rows == 0) invalid("params->rows is 0; it must be at least 1");
    if (p.cols == 0) invalid("params->cols is 0; it must be at least 1");
    if (p.maxiter == 0) invalid("params->maxiter is 0; it must be at least 1");
    if (p.start_iteration >= p.maxiter)
        invalid("params->start_iteration is " + std::to_string(p.start_iteration) +
                "; it must be below params->maxiter (" + std::to_string(p.maxiter) + ")");
    if (!(p.threshold >= 0)) invalid("params->threshold must be >= 0 (and not NaN)");
    if (p.cols > std::numeric_limits<size_t>::max() / sizeof(double) / (p.rows + 2))
        invalid("params->rows * params->cols overflows");
    if (row_count > p.rows)
        invalid("row_count (" + std::to_string(row_count) + ") is more than params->rows");
}

// The fixed rows this rank uses (the first or the last row of the grid is its), finite.
void check_fixed_rows(const gpk_heat_params &p, const Block &b) {
    if (!p.fixed_rows) return;
    for (size_t k = 0; k < 2 * p.cols; ++k) {
        const bool mine = k < p.cols ? b.begin == 0 : b.begin + b.count == p.rows;
        if (mine && !std::isfinite(p.fixed_rows[k]))
            invalid("params->fixed_rows[" + std::to_string(k) +
                    "] is not finite; temperatures must be finite");
    }
}

gpk_status heat_run(gpk_context *ctx, MPI_Comm comm, const gpk_heat_params *params, size_t row_begin,
                    size_t row_count, const double *tinit, const double *conductivity, double *tfinal,
                    gpk_heat_report *final) {
    return boundary(ctx, [&] {
        Team team(comm);
        gpk_heat_params p{};
        std::vector<double> fixed; // fixed rows given in device memory, read on the host
        const Outcome read = capture([&] {
            p = gpk::abi::read(params, "params");
            check_heat_locally(ctx, p, row_count, tinit, conductivity);
            if (p.fixed_rows && gpk_internal_on_device(ctx, p.fixed_rows)) {
                fixed.resize(2 * p.cols);
                if (gpk_internal_copy_rows(ctx, fixed.data(), 0, p.fixed_rows, 0,
                                           fixed.size() * sizeof(double), 1) != GPK_OK)
                    throw gpk::Error(GPK_ERR_DEVICE, gpk_context_last_error(ctx));
                p.fixed_rows = fixed.data();
            }
        });
        const std::vector<uint64_t> blocks = team.open(
            read,
            {field("params->rows", uint64_t(p.rows)), field("params->cols", uint64_t(p.cols)),
             field("params->maxiter", uint64_t(p.maxiter)), field("params->threshold", p.threshold),
             field("params->period", uint64_t(p.period)),
             field("params->progress_interval", uint64_t(p.progress_interval)),
             field("params->start_iteration", uint64_t(p.start_iteration)),
             field("params->checkpoint_interval", uint64_t(p.checkpoint_interval)),
             field("params->fixed_rows given (1) or NULL (0)", given(p.fixed_rows)),
             field("params->on_checkpoint given (1) or NULL (0)", given((const void *)p.on_checkpoint))},
            {uint64_t(row_begin), uint64_t(row_count)});
        Block block = check_blocks(team, p.rows, blocks, "params->rows");
        team.step([&] {
            gpk_status s =
                gpk_internal_check_heat_block(ctx, tinit, conductivity, row_count, p.cols, row_begin);
            gpk::mpi::check_ok(s, ctx);
            check_fixed_rows(p, block);
        });
        gpk::mpi::heat_run(team, ctx, p, block, tinit, conductivity, tfinal, final);
    });
}

} // namespace

extern "C" {

GPK_MPI_API gpk_status gpk_mpi_context_create(gpk_context **out, MPI_Comm comm,
                                              const gpk_context_options *opts) {
    gpk_context *made = nullptr;
    gpk_status status = boundary(nullptr, [&] {
        Team team(comm);
        gpk_context_options o;
        gpk_context_options_init(&o);
        team.step([&] {
            require(out, "out");
            *out = nullptr;
            if (opts) o = gpk::abi::read(opts, "opts");
        });
        if (o.device == GPK_MPI_DEVICE_BY_RANK || !opts) {
            MPI_Comm node;
            int local = 0, devices = 0;
            MPI_Comm_split_type(team.comm(), MPI_COMM_TYPE_SHARED, team.rank(), MPI_INFO_NULL, &node);
            MPI_Comm_rank(node, &local);
            MPI_Comm_free(&node);
            o.device = gpk_device_count(&devices) == GPK_OK && devices > 0 ? local % devices : 0;
        }
        Outcome mine = outcome_of(gpk_context_create(&made, &o), nullptr);
        try {
            team.agree(mine);
        } catch (...) {
            gpk_context_destroy(made);
            made = nullptr;
            throw;
        }
    });
    if (out) *out = made;
    return status;
}

GPK_MPI_API gpk_status gpk_mpi_default_block(size_t *row_begin, size_t *row_count, MPI_Comm comm,
                                             size_t rows) {
    return boundary(nullptr, [&] {
        require(row_begin, "row_begin");
        require(row_count, "row_count");
        int initialized = 0;
        MPI_Initialized(&initialized);
        if (!initialized) invalid("MPI is not initialised (call MPI_Init first)");
        if (comm == MPI_COMM_NULL) invalid("comm is MPI_COMM_NULL");
        int rank = 0, size = 1;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        const size_t share = rows / size_t(size), extra = rows % size_t(size), r = size_t(rank);
        *row_begin = r * share + std::min(r, extra);
        *row_count = share + (r < extra ? 1 : 0);
    });
}

GPK_MPI_API gpk_status gpk_mpi_heat_run(gpk_context *ctx, MPI_Comm comm, const gpk_heat_params *params,
                                        size_t row_begin, size_t row_count, const double *tinit,
                                        const double *conductivity, double *tfinal, gpk_heat_report *final) {
    return heat_run(ctx, comm, params, row_begin, row_count, tinit, conductivity, tfinal, final);
}

GPK_MPI_API gpk_status gpk_mpi_heat_run_f(gpk_context *ctx, MPI_Fint comm, const gpk_heat_params *params,
                                          size_t row_begin, size_t row_count, const double *tinit,
                                          const double *conductivity, double *tfinal,
                                          gpk_heat_report *final) {
    return heat_run(ctx, MPI_Comm_f2c(comm), params, row_begin, row_count, tinit, conductivity, tfinal,
                    final);
}

GPK_MPI_API gpk_status gpk_mpi_histogram(gpk_context *ctx, MPI_Comm comm, int root,
                                         const gpk_histogram_params *params, const void *data, uint64_t *hist,
                                         uint64_t *uncounted) {
    return boundary(ctx, [&] {
        Team team(comm);
        histogram(team, ctx, root, params, data, hist, uncounted);
    });
}

GPK_MPI_API gpk_status gpk_mpi_convolve(gpk_context *ctx, MPI_Comm comm, const gpk_convolve_params *params,
                                        size_t height, size_t row_begin, const gpk_image *in,
                                        const void *in_data, const gpk_image *out, void *out_data) {
    return boundary(ctx, [&] {
        Team team(comm);
        convolve(team, ctx, params, height, row_begin, in, in_data, out, out_data);
    });
}

GPK_MPI_API gpk_status gpk_mpi_halo_paths(gpk_context *ctx, MPI_Comm comm, size_t cols, unsigned exchanges,
                                          char *text, size_t text_size, double *seconds) {
    return boundary(ctx, [&] {
        Team team(comm);
        team.step([&] {
            require(ctx, "ctx");
            if (cols == 0) invalid("cols is 0; it must be at least 1");
            if (text_size && !text) invalid("text is NULL but text_size is " + std::to_string(text_size));
            if (exchanges && !seconds) require(seconds, "seconds");
        });
        std::string lines;
        double s = 0;
        gpk::mpi::halo_paths(team, ctx, cols, exchanges, &lines, &s);
        if (text_size) {
            const size_t n = std::min(lines.size(), text_size - 1);
            lines.copy(text, n);
            text[n] = '\0';
        }
        if (exchanges) *seconds = s;
    });
}

GPK_MPI_API int gpk_mpi_cuda_aware(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}

} // extern "C"
