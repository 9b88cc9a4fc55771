// The entry points libgpk exports for libgpk_mpi of the same build (gpk_internal.h): not API.
#include "gpk_internal.h"

#include "engine/arguments.hpp"
#include "engine/boundary.hpp"
#include "engine/context.hpp"
#include "engine/heat_slab.hpp"
#include "engine/test_hooks.hpp"
#include "engine/validate.hpp"

#include <algorithm>
#include <cstring>
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

namespace {

gpk::HaloExchange halo_exchange(size_t depth, int up, int down, gpk_internal_exchange_fn run, void *user) {
    gpk::HaloExchange x;
    x.depth = depth;
    x.up = up != 0;
    x.down = down != 0;
    x.run = run;
    x.user = user;
    return x;
}

} // namespace

extern "C" {

GPK_API gpk_status gpk_internal_reload_test_hooks(void) {
    return guarded(gpk::thread_error(), [] { gpk::reload_test_hooks(); });
}

GPK_API int gpk_internal_test_hooks(void) {
    return gpk::kTestHooks ? 1 : 0;
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
        ctx->backend->check_heat_block(tinit, conductivity, rows, cols, first_row);
    });
}

GPK_API int gpk_internal_on_device(const gpk_context *ctx, const void *p) {
    if (!ctx || !p) return 0;
    try {
        return ctx->backend->on_device(p) ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

GPK_API gpk_status gpk_internal_copy_rows(gpk_context *ctx, void *dst, size_t dst_pitch, const void *src,
                                          size_t src_pitch, size_t width, size_t rows) {
    return with_context(ctx, [&] { ctx->backend->copy_rows(dst, dst_pitch, src, src_pitch, width, rows); });
}

GPK_API gpk_status gpk_internal_copy_rows_queued(gpk_context *ctx, int aside, void *dst, size_t dst_pitch,
                                                 const void *src, size_t src_pitch, size_t width,
                                                 size_t rows) {
    return with_context(ctx, [&] {
        ctx->backend->copy_rows_queued(aside != 0, dst, dst_pitch, src, src_pitch, width, rows);
    });
}

GPK_API gpk_status gpk_internal_aside(gpk_context *ctx, int how) {
    return with_context(ctx, [&] {
        if (how < 0 || how > 2) invalid("how is " + std::to_string(how) + "; it must be 0, 1 or 2");
        ctx->backend->aside(gpk::Backend::Aside(how));
    });
}

GPK_API gpk_status gpk_internal_host_scratch(gpk_context *ctx, size_t bytes, void **out) {
    return with_context(ctx, [&] {
        require(out, "out");
        *out = nullptr;
        *out = ctx->backend->host_scratch(bytes);
    });
}

GPK_API gpk_status gpk_internal_device_alloc(gpk_context *ctx, size_t bytes, void **out) {
    return with_context(ctx, [&] {
        require(out, "out");
        *out = nullptr;
        *out = ctx->backend->device_alloc(bytes);
    });
}

GPK_API gpk_status gpk_internal_device_scratch(gpk_context *ctx, size_t bytes, void **out) {
    return with_context(ctx, [&] {
        require(out, "out");
        *out = nullptr;
        *out = ctx->backend->device_scratch(bytes);
    });
}

GPK_API void gpk_internal_device_free(gpk_context *ctx, void *p) {
    if (ctx && p) with_context(ctx, [&] { ctx->backend->device_free(p); });
}

GPK_API int gpk_internal_halo_host_forced(void) {
    try {
        return gpk::test_hooks().halo_host ? 1 : 0;
    } catch (...) {
        return 0; // a bad hook value fails the calls themselves
    }
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

GPK_API gpk_status gpk_internal_heat_slab_launch(gpk_internal_heat_slab *slab, unsigned levels,
                                                 size_t own_begin, size_t own_end, size_t depth, int up,
                                                 int down, gpk_internal_exchange_fn exchange, void *user) {
    const gpk::HaloExchange x = halo_exchange(depth, up, down, exchange, user);
    return with_context(slab->ctx,
                        [&] { slab->slab->launch(levels, own_begin, own_end, exchange ? &x : nullptr); });
}

GPK_API gpk_status gpk_internal_heat_slab_collect(gpk_internal_heat_slab *slab, double *maxdiff) {
    return with_context(slab->ctx, [&] { slab->slab->collect(maxdiff); });
}

GPK_API gpk_status gpk_internal_heat_slab_back(gpk_internal_heat_slab *slab) {
    return with_context(slab->ctx, [&] { slab->slab->back(); });
}

GPK_API unsigned gpk_internal_heat_slab_ahead(const gpk_internal_heat_slab *slab) {
    return slab ? slab->slab->ahead() : 0;
}

GPK_API gpk_status gpk_internal_heat_slab_exchange(gpk_internal_heat_slab *slab, size_t own_begin,
                                                   size_t own_end, size_t depth, int up, int down,
                                                   gpk_internal_exchange_fn exchange, void *user) {
    const gpk::HaloExchange x = halo_exchange(depth, up, down, exchange, user);
    return with_context(slab->ctx, [&] { slab->slab->exchange_only(own_begin, own_end, x); });
}

namespace {

void copy_reason(const std::string &text, char *why, size_t why_size) {
    if (!why || !why_size) return;
    const size_t n = std::min(text.size(), why_size - 1);
    std::memcpy(why, text.data(), n);
    why[n] = '\0';
}

} // namespace

GPK_API gpk_status gpk_internal_heat_slab_offer(gpk_internal_heat_slab *slab, size_t depth, void *blob,
                                                size_t capacity, size_t *bytes, char *why, size_t why_size) {
    return with_context(slab->ctx, [&] {
        std::string reason;
        *bytes = slab->slab->peer_offer(depth, blob, capacity, &reason);
        copy_reason(reason, why, why_size);
    });
}

GPK_API gpk_status gpk_internal_heat_slab_accept(gpk_internal_heat_slab *slab, int side, const void *blob,
                                                 size_t bytes, int *accepted, char *why, size_t why_size) {
    return with_context(slab->ctx, [&] {
        std::string reason;
        *accepted = slab->slab->peer_accept(side, blob, bytes, &reason) ? 1 : 0;
        copy_reason(reason, why, why_size);
    });
}

GPK_API gpk_status gpk_internal_heat_slab_set_paths(gpk_internal_heat_slab *slab, int up, int down) {
    return with_context(slab->ctx, [&] {
        if (up < 0 || up > 2 || down < 0 || down > 2) invalid("a halo path out of range");
        slab->slab->set_paths(gpk::HaloPath(up), gpk::HaloPath(down));
    });
}

GPK_API void gpk_internal_heat_slab_close_peers(gpk_internal_heat_slab *slab) {
    if (slab) with_context(slab->ctx, [&] { slab->slab->close_peers(); });
}

GPK_API int gpk_internal_heat_slab_on_device(const gpk_internal_heat_slab *slab) {
    return slab && slab->slab->on_device() ? 1 : 0;
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

GPK_API gpk_status gpk_internal_convolve_queued(gpk_context *ctx, const gpk_convolve_params *params,
                                                const gpk_image *in, const void *in_data,
                                                const gpk_image *out, void *out_data) {
    return with_context(ctx, [&] {
        gpk::ConvolveJob job = gpk::convolve_job(params, in, in_data, out, out_data);
        job.queued = true;
        ctx->backend->convolve(job);
    });
}

} // extern "C"
