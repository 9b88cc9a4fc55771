/*
 * gpk_internal.h: entry points that libgpk exports for libgpk_mpi and the gpk command of the same build,
 * and for nothing else.
 *
 * NOT API. Not installed; no compatibility between builds. The symbols carry the version node
 * GPK_INTERNAL_<version> (lib/gpk.map), so a libgpk_mpi cannot load against another build's libgpk.
 * They expose what a distribution layer above the backends needs and the public API does not: a slab of a
 * heat grid kept on the backend between passes (lib/engine/heat_slab.hpp), a convolution whose min/max
 * normalisation takes the range the ranks agree on, and a context's last-error message.
 */
#ifndef GPK_INTERNAL_H
#define GPK_INTERNAL_H

#include "gpk.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Replaces the context's last-error message (libgpk_mpi's failures belong to the context too); with a
 *  NULL ctx, the thread's context-less message (gpk_context_last_error(NULL)). */
GPK_API void gpk_internal_set_error(gpk_context *ctx, const char *message);

/** Checks `rows` rows of a heat block whose first row is row `first_row` of the whole grid: temperatures
 *  finite, conductivities in [0, 1]; messages name the whole grid's rows. Host memory, or memory of the
 *  context's device (scanned there). */
GPK_API gpk_status gpk_internal_check_heat_block(gpk_context *ctx, const double *tinit,
                                                 const double *conductivity, size_t rows, size_t cols,
                                                 size_t first_row);

/** Reads the test hooks (GPK_TEST_* variables, lib/engine/test_hooks.hpp) again, after a test changed one.
 *  Returns GPK_OK, or GPK_ERR_INVALID_ARGUMENT naming a bad value (which then fails every call). In a build
 *  without test hooks it reads nothing and returns GPK_OK. */
GPK_API gpk_status gpk_internal_reload_test_hooks(void);

/** 1 where this libgpk was built with its test hooks (-Dtest_hooks=true) and reads the GPK_TEST_*
 *  variables; 0 where it ignores them. The tests and the gpk command (`gpk info`) ask. */
GPK_API int gpk_internal_test_hooks(void);

/** 1 where p is memory of the context's device (device or managed memory: its calls use it in place). */
GPK_API int gpk_internal_on_device(const gpk_context *ctx, const void *p);

/** `rows` rows of `width` bytes from src (rows src_pitch bytes apart) to dst (dst_pitch apart), host memory
 *  or the context's device memory on either side; returns when done. */
GPK_API gpk_status gpk_internal_copy_rows(gpk_context *ctx, void *dst, size_t dst_pitch, const void *src,
                                          size_t src_pitch, size_t width, size_t rows);

/** gpk_internal_copy_rows queued behind the context's earlier work: it may return before the copy is done
 *  (gpk_context_synchronize waits for it), so page-locked host memory on either side (the host scratch) is
 *  neither read nor written until then. Pageable host memory makes it wait, as a plain copy. With `aside`
 *  the copy goes on a stream of the context's own beside its other work (ordered with it by
 *  gpk_internal_aside alone), so that it runs while the context's kernels do. */
GPK_API gpk_status gpk_internal_copy_rows_queued(gpk_context *ctx, int aside, void *dst, size_t dst_pitch,
                                                 const void *src, size_t src_pitch, size_t width,
                                                 size_t rows);

/** Orders the aside copies with the context's other work. how: 0 (fork) aside work queued from now on comes
 *  after the context's work queued so far; 1 (join) the context's work queued from now on comes after the
 *  aside work queued so far; 2 (wait) returns once the aside work queued so far is done. Nothing to do on
 *  a context without a device. */
GPK_API gpk_status gpk_internal_aside(gpk_context *ctx, int how);

/** Host memory kept by the context for the next call: page-locked on a context with a device, so that the
 *  queued copies between it and the device run without waiting. Grown where smaller than `bytes`
 *  (after the context's pending work), valid until the next call of this function or the context's
 *  destruction. */
GPK_API gpk_status gpk_internal_host_scratch(gpk_context *ctx, size_t bytes, void **out);

/** Device memory of the context's device (kept until freed or the context is destroyed). */
GPK_API gpk_status gpk_internal_device_alloc(gpk_context *ctx, size_t bytes, void **out);
GPK_API void gpk_internal_device_free(gpk_context *ctx, void *p);
/** Device memory of the context's device kept for the next call: grown where smaller than `bytes`, valid
 *  until the next call of this function or the context's destruction. */
GPK_API gpk_status gpk_internal_device_scratch(gpk_context *ctx, size_t bytes, void **out);

/** 1 where the test hook GPK_TEST_MPI_HALO=host forces libgpk_mpi's halos through host memory. */
GPK_API int gpk_internal_halo_host_forced(void);

typedef struct gpk_internal_heat_slab gpk_internal_heat_slab;

/** Most iterations a slab pass of the context's backend takes (before a slab exists). */
GPK_API unsigned gpk_internal_heat_slab_levels(const gpk_context *ctx);

/** A slab of rows x cols cells (rows >= 3; host or the context's device memory, copied), given in up to three
 * consecutive pieces of cell_rows[k] rows at cells[k]: rows 0 and rows-1 stay fixed within a pass; the
 * conductivity pieces hold rows 1..rows-2. Messages go to ctx, which must outlive the slab. */
GPK_API gpk_status gpk_internal_heat_slab_create(gpk_internal_heat_slab **out, gpk_context *ctx, size_t rows,
                                                 size_t cols, const double *const cells[3],
                                                 const size_t cell_rows[3],
                                                 const double *const conductivity[3],
                                                 const size_t conductivity_rows[3]);
GPK_API void gpk_internal_heat_slab_destroy(gpk_internal_heat_slab *slab);

/** The halo exchange of a pass (engine/heat_slab.hpp, HaloExchange): buffers of depth * cols doubles, host
 *  or device memory by the side's path; NULL on a side whose rows the slab copies itself (a notice only). */
typedef void (*gpk_internal_exchange_fn)(void *user, double *const send[2], double *const recv[2]);

/** Advances rows [own_begin, own_end) by `levels` iterations into another grid, which becomes current
 *  (HeatSlab::launch: the pass may still run on return). With `exchange`, the exchange is run once while
 *  the rows away from the edges compute, and the received rows land above (up) and below (down) the own
 *  rows of the result; it is run also when the pass fails. collect writes the maxdiffs (one a level) of the
 *  oldest pass not collected yet, once it is done; back makes the newest pass's source current again;
 *  ahead is how many passes may be launched before the first is collected (and back called in a row). */
GPK_API gpk_status gpk_internal_heat_slab_launch(gpk_internal_heat_slab *slab, unsigned levels,
                                                 size_t own_begin, size_t own_end, size_t depth, int up,
                                                 int down, gpk_internal_exchange_fn exchange, void *user);
GPK_API gpk_status gpk_internal_heat_slab_collect(gpk_internal_heat_slab *slab, double *maxdiff);
GPK_API gpk_status gpk_internal_heat_slab_back(gpk_internal_heat_slab *slab);
GPK_API unsigned gpk_internal_heat_slab_ahead(const gpk_internal_heat_slab *slab);
/** One exchange as a pass makes it, without computing (HeatSlab::exchange_only). */
GPK_API gpk_status gpk_internal_heat_slab_exchange(gpk_internal_heat_slab *slab, size_t own_begin,
                                                   size_t own_end, size_t depth, int up, int down,
                                                   gpk_internal_exchange_fn exchange, void *user);

/** The links to the neighbours' slabs (HeatSlab::peer_offer, peer_accept, set_paths, close_peers; paths
 *  as HaloPath: 0 host, 1 device, 2 peer). offer writes *bytes (0: no offer, the reason in why) and
 *  accept *accepted (with what was opened, or why not, in why); neither fails for a refusal. why holds
 *  why_size bytes, NUL-terminated. */
GPK_API gpk_status gpk_internal_heat_slab_offer(gpk_internal_heat_slab *slab, size_t depth, void *blob,
                                                size_t capacity, size_t *bytes, char *why, size_t why_size);
GPK_API gpk_status gpk_internal_heat_slab_accept(gpk_internal_heat_slab *slab, int side, const void *blob,
                                                 size_t bytes, int *accepted, char *why, size_t why_size);
GPK_API gpk_status gpk_internal_heat_slab_set_paths(gpk_internal_heat_slab *slab, int up, int down);
GPK_API void gpk_internal_heat_slab_close_peers(gpk_internal_heat_slab *slab);
/** 1 where the slab's rows are in device memory. */
GPK_API int gpk_internal_heat_slab_on_device(const gpk_internal_heat_slab *slab);

GPK_API gpk_status gpk_internal_heat_slab_read_rows(gpk_internal_heat_slab *slab, size_t first, size_t count,
                                                    double *out);
GPK_API gpk_status gpk_internal_heat_slab_row_stats(gpk_internal_heat_slab *slab, size_t first, size_t count,
                                                    double *mins, double *maxs, double *sums);

/** Receives the per-channel range of the filtered values of a min/max normalisation (lo/hi as doubles,
 *  ilo/ihi as integers when `exact`) and may replace it; non-zero stops the call (GPK_ERR_CANCELLED). */
typedef int (*gpk_internal_range_fn)(void *user, unsigned channels, int exact, double *lo, double *hi,
                                     long long *ilo, long long *ihi);

/** gpk_convolve, except that a min/max normalisation takes its range from output rows
 *  [range_begin, range_end) only and hands it to range_fn (when not NULL) before any output is written. */
GPK_API gpk_status gpk_internal_convolve(gpk_context *ctx, const gpk_convolve_params *params,
                                         const gpk_image *in, const void *in_data, const gpk_image *out,
                                         void *out_data, size_t range_begin, size_t range_end,
                                         gpk_internal_range_fn range_fn, void *user);

/** gpk_convolve, except that where both images are in the context's device memory the call returns once
 *  its work is queued on the context's stream (gpk_context_synchronize waits for it; a failure of the
 *  queued work comes back from there). Host images make it wait, as gpk_convolve. */
GPK_API gpk_status gpk_internal_convolve_queued(gpk_context *ctx, const gpk_convolve_params *params,
                                                const gpk_image *in, const void *in_data,
                                                const gpk_image *out, void *out_data);

#ifdef __cplusplus
}
#endif

#endif /* GPK_INTERNAL_H */
