// The entry points libgpk exports for libgpk_mpi of the same build (gpk_internal.h): not API.
#include "gpk_internal.h"

#include "engine/arguments.hpp"
#include "engine/boundary.hpp"
#include "engine/context.hpp"
#include "engine/heat_slab.hpp"
#include "engine/test_hooks.hpp"
#include "engine/validate.hpp"

#include <memory>
#include <string>

using gpk::guarded;
using gpk::invalid;
using gpk::require;
using gpk::with_context;

// The handle behind gpk_internal_heat_slab: the slab and the context its messages go to.
struct gpk_internal_heat_slab {
    gpk_context *ctx = nullptr;
    std::unique_ptr<gpk::HeatSlab> slab;
};

extern "C" {

GPK_API gpk_status gpk_internal_reload_test_hooks(void) {
    return guarded(gpk::thread_error(), [] { gpk::reload_test_hooks(); });
}

GPK_API void gpk_internal_set_error(gpk_context *ctx, const char *message) {
    if (!message) return;
    std::string &slot = ctx ? ctx->last_error : gpk::thread_error();
    guarded(slot, [&] { slot = message; });
}

GPK_API gpk_status gpk_internal_check_heat_block(gpk_context *ctx, const double *tinit,
                                                 const double *conductivity, size_t rows, size_t cols,
                                                 size_t first_row) {
    return with_context(ctx, [&] {
        require(tinit, "tinit");
        require(conductivity, "conductivity");
        gpk::check_heat_inputs(tinit, conductivity, rows, cols, first_row);
    });
}

GPK_API unsigned gpk_internal_heat_slab_levels(const gpk_context *ctx) {
    return ctx ? ctx->backend->heat_slab_levels() : 0;
}

GPK_API gpk_status gpk_internal_heat_slab_create(gpk_internal_heat_slab **out, gpk_context *ctx, size_t rows,
                                                 size_t cols, const double *const cells[3],
                                                 const size_t cell_rows[3],
                                                 const double *const conductivity[3],
                                                 const size_t conductivity_rows[3]) {
    return with_context(ctx, [&] {
        require(out, "out");
        *out = nullptr;
        if (rows < 3 || cols == 0) invalid("a heat slab needs 3 rows and 1 column at least");
        gpk::HeatSlabJob job;
        job.rows = rows;
        job.cols = cols;
        size_t cells_total = 0, cond_total = 0;
        for (int k = 0; k < 3; ++k) {
            if ((cell_rows[k] && !cells[k]) || (conductivity_rows[k] && !conductivity[k]))
                invalid("a NULL piece");
            job.cells.data[k] = cells[k];
            job.cells.counts[k] = cell_rows[k];
            job.conductivity.data[k] = conductivity[k];
            job.conductivity.counts[k] = conductivity_rows[k];
            cells_total += cell_rows[k];
            cond_total += conductivity_rows[k];
        }
        if (cells_total != rows || cond_total != rows - 2)
            invalid("the slab's pieces do not add up to its rows");
        auto slab = std::make_unique<gpk_internal_heat_slab>();
        slab->ctx = ctx;
        slab->slab = ctx->backend->heat_slab(job);
        *out = slab.release();
    });
}

GPK_API void gpk_internal_heat_slab_destroy(gpk_internal_heat_slab *slab) {
    delete slab;
}

GPK_API gpk_status gpk_internal_heat_slab_pass(gpk_internal_heat_slab *slab, unsigned levels,
                                               size_t own_begin, size_t own_end, size_t depth, int up,
                                               int down, gpk_internal_exchange_fn exchange, void *user,
                                               double *maxdiff) {
    gpk::HaloExchange x;
    x.depth = depth;
    x.up = up != 0;
    x.down = down != 0;
    x.run = exchange;
    x.user = user;
    return with_context(
        slab->ctx, [&] { slab->slab->pass(levels, own_begin, own_end, exchange ? &x : nullptr, maxdiff); });
}

GPK_API gpk_status gpk_internal_heat_slab_swap(gpk_internal_heat_slab *slab) {
    return with_context(slab->ctx, [&] { slab->slab->swap(); });
}

GPK_API gpk_status gpk_internal_heat_slab_read_rows(gpk_internal_heat_slab *slab, size_t first, size_t count,
                                                    double *out) {
    return with_context(slab->ctx, [&] { slab->slab->read_rows(first, count, out); });
}

GPK_API gpk_status gpk_internal_heat_slab_row_stats(gpk_internal_heat_slab *slab, size_t first, size_t count,
                                                    double *mins, double *maxs, double *sums) {
    return with_context(slab->ctx, [&] { slab->slab->row_stats(first, count, mins, maxs, sums); });
}

GPK_API gpk_status gpk_internal_convolve(gpk_context *ctx, const gpk_convolve_params *params,
                                         const gpk_image *in, const void *in_data, const gpk_image *out,
                                         void *out_data, size_t range_begin, size_t range_end,
                                         gpk_internal_range_fn range_fn, void *user) {
    return with_context(ctx, [&] {
        gpk::ConvolveJob job = gpk::convolve_job(params, in, in_data, out, out_data);
        job.range_begin = range_begin;
        job.range_end = range_end;
        job.range_fn = range_fn;
        job.range_user = user;
        ctx->backend->convolve(job);
    });
}

} // extern "C"
