/*
 * gpk_mpi.h: gpk over MPI ranks (libgpk_mpi, pkg-config gpk-mpi). The whole API of that library.
 *
 * A distribution layer above gpk's backends: each rank holds a block of rows, the layer exchanges halo rows
 * and reduces between ranks, and the rank's own context (CPU or CUDA backend) computes its part. Results
 * are bit-identical to one process running gpk.h on the whole data, for any number of ranks.
 *
 * Conventions (those of gpk.h, plus):
 *   - Every function here is collective over its communicator unless it says otherwise: every rank calls
 *     it, in the same order as the other collective calls on that communicator. The library works on a
 *     duplicate of the communicator, so its messages never meet the caller's.
 *   - Every rank returns the same status. Parameters that must agree but differ between ranks, a failure on
 *     one rank (bad data, out of memory, a device error) or a callback that stops a run: every rank
 *     returns the same status and message, which names the field and the ranks, or the rank that failed
 *     ("rank 2: ..."); no rank is left waiting. The message is in gpk_context_last_error(ctx) (or
 *     gpk_context_last_error(NULL) on a rank whose ctx is NULL).
 *   - MPI must be initialised by the caller (MPI_Init or MPI_Init_thread; the calling thread makes every
 *     MPI call, so MPI_THREAD_SINGLE... MPI_THREAD_FUNNELED from the main thread suffice).
 *   - Data pointers may be host memory or, on a rank whose context is on the CUDA backend, memory of that
 *     rank's device, used in place (as in gpk.h). A rank on the CUDA backend computes on its GPU. Halo rows
 *     of heat runs travel, per neighbour: by CUDA IPC device to device between ranks of one node whose
 *     devices reach each other (the same device, or peer access); else through device buffers where the
 *     MPI library is CUDA-aware; else through pinned host buffers. gpk_mpi_halo_paths says which.
 */
#ifndef GPK_MPI_H
#define GPK_MPI_H

#include <gpk.h>
#include <mpi.h>

#if defined(__GNUC__)
#define GPK_MPI_API __attribute__((visibility("default")))
#else
#define GPK_MPI_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Pass as gpk_context_options.device to gpk_mpi_context_create: the device of local rank r is
 *  r modulo the number of devices of its node. */
#define GPK_MPI_DEVICE_BY_RANK (-1)

/** Pass as `root` to gpk_mpi_histogram: the counts go to every rank. */
#define GPK_MPI_ALL_RANKS (-1)

/** Creates a context for this rank as gpk_context_create does, with the CUDA device chosen by the rank's
 *  place on its node (ranks sharing a node, in rank order: local rank r takes device r % devices) when
 *  opts is NULL or opts->device is GPK_MPI_DEVICE_BY_RANK; any other opts->device is used as given.
 *  Collective. Returns GPK_OK on every rank, or on every rank the first failing rank's status (that rank
 *  gets its own message; the others "rank R: ..."); *out is NULL on every rank then. */
GPK_MPI_API gpk_status gpk_mpi_context_create(gpk_context **out, MPI_Comm comm,
                                              const gpk_context_options *opts);

/** The default block of rows of this rank: rows * rank / size up to rows * (rank + 1) / size. Not
 *  collective. Returns GPK_OK, or GPK_ERR_INVALID_ARGUMENT (NULL outputs, MPI not initialised, a null
 *  communicator). Ranks beyond the rows get a count of 0, which the operations refuse. */
GPK_MPI_API gpk_status gpk_mpi_default_block(size_t *row_begin, size_t *row_count, MPI_Comm comm,
                                             size_t rows);

/** Heat dissipation (gpk_heat_run) of an N x M cylinder split into blocks of whole rows: this rank holds
 *  rows [row_begin, row_begin + row_count) of tinit, conductivity and tfinal (row_count * M doubles
 *  each, host memory or the rank's device memory). The blocks tile the rows in rank order, each at least
 *  one row.
 *
 *  params describes the whole grid (rows = N) and must agree on every rank in rows, cols, maxiter,
 *  threshold, period, progress_interval, start_iteration, checkpoint_interval, and whether fixed_rows and
 *  on_checkpoint are given; params->fixed_rows (2 * M doubles) is read on the ranks holding the first and
 *  the last row. Callbacks run on every rank at the same iterations: on_report with the whole grid's report
 *  (the same on every rank; its time is the largest over the ranks), on_progress with the rank's own
 *  time, on_checkpoint with the rank's block of the grid (row_count * M doubles). Progress follows
 *  gpk_heat_run's rule, a pass (k iterations, below) being the boundary. A callback that asks to stop on
 *  any rank stops every rank at that boundary (GPK_ERR_CANCELLED, naming the callback and the rank);
 *  callbacks may make collective MPI calls on any communicator.
 *
 *  Each pass of up to k iterations (k = the backend's pass length, at most the smallest block) exchanges k
 *  halo rows with each neighbour once, while the rows away from the block's edges compute, and reduces the
 *  k iterations' maxdiffs in one all-reduce. The final grid and every report field but the time are
 *  bit-identical to gpk_heat_run of the whole grid on the same backend, for any number of ranks.
 *
 *  Returns as gpk_heat_run, the same on every rank; GPK_ERR_INVALID_ARGUMENT also for parameters that
 *  differ between ranks, blocks that do not tile the rows, a rank without rows (more ranks than rows). */
GPK_MPI_API gpk_status gpk_mpi_heat_run(gpk_context *ctx, MPI_Comm comm, const gpk_heat_params *params,
                                        size_t row_begin, size_t row_count, const double *tinit,
                                        const double *conductivity, double *tfinal, gpk_heat_report *final);

/** gpk_mpi_heat_run for Fortran: the communicator as a Fortran handle (MPI_Comm_c2f; mpi_f08's
 *  type(MPI_Comm) holds it in MPI_VAL). */
GPK_MPI_API gpk_status gpk_mpi_heat_run_f(gpk_context *ctx, MPI_Fint comm, const gpk_heat_params *params,
                                          size_t row_begin, size_t row_count, const double *tinit,
                                          const double *conductivity, double *tfinal, gpk_heat_report *final);

/** Histogram (gpk_histogram) of data spread over the ranks: each rank counts its own array (params
 *  describes it: width, height, stride may differ between ranks; dtype, channels, bins, lower, upper and
 *  saturate must agree) and the counts are summed exactly (64-bit) into hist and uncounted on `root`, or
 *  on every rank with GPK_MPI_ALL_RANKS; saturation applies to the sums. hist (and uncounted, optional)
 *  are written only where the result goes and may be NULL elsewhere. data may be host or device memory.
 *  Returns as gpk_histogram, the same on every rank; GPK_ERR_INVALID_ARGUMENT also for parameters that
 *  differ between ranks or a root out of range. */
GPK_MPI_API gpk_status gpk_mpi_histogram(gpk_context *ctx, MPI_Comm comm, int root,
                                         const gpk_histogram_params *params, const void *data, uint64_t *hist,
                                         uint64_t *uncounted);

/** Convolution (gpk_convolve) of an image split into blocks of whole rows: `height` is the whole image's;
 *  this rank holds rows [row_begin, row_begin + in->height) of the input and of the output (in and out
 *  describe the rank's rows: their heights are its row count; width, channels and dtypes agree). The
 *  blocks tile the rows in rank order. Halo rows come from the neighbouring ranks (from several where a
 *  block is thinner than the filter's reach); at the image's top and bottom the border rule applies,
 *  wrap reads the rows of the other end. Min/max normalisation uses the range over the whole image
 *  (one all-reduce). The output is bit-identical to gpk_convolve of the whole image on the same
 *  backend. in_data and out_data may be host memory or the rank's device memory; with device memory the
 *  block stays on the device and only the halo rows travel through host memory. Returns as gpk_convolve,
 *  the same on every rank. */
GPK_MPI_API gpk_status gpk_mpi_convolve(gpk_context *ctx, MPI_Comm comm, const gpk_convolve_params *params,
                                        size_t height, size_t row_begin, const gpk_image *in,
                                        const void *in_data, const gpk_image *out, void *out_data);

/** How this rank's heat halo rows travel to each neighbour, as gpk_mpi_heat_run on this context with
 *  `cols` columns would choose (collective: it sets up the same links on a small slab, filled with zeros).
 *  Writes into text (text_size bytes, NUL-terminated, cut where longer; NULL with text_size 0) one line a
 *  link of the communicator, the same on every rank, e.g. "rank 0 <-> 1: CUDA IPC, device 0 -> 1 (peer
 *  access)" or "rank 1 <-> 2: host staging (rank 2 is on another node; MPI not CUDA-aware)". With
 *  exchanges > 0 it then makes that many halo exchanges of k rows (the pass length) with each neighbour as
 *  a pass does, and writes the median time of one, the slowest rank's, to *seconds. Returns GPK_OK, the
 *  same on every rank, or a failure as gpk_mpi_heat_run. */
GPK_MPI_API gpk_status gpk_mpi_halo_paths(gpk_context *ctx, MPI_Comm comm, size_t cols, unsigned exchanges,
                                          char *text, size_t text_size, double *seconds);

/** 1 when the MPI library reports CUDA support (MPIX_Query_cuda_support, where it exists), else 0.
 *  Not collective. */
GPK_MPI_API int gpk_mpi_cuda_aware(void);

#ifdef __cplusplus
}
#endif

#endif /* GPK_MPI_H */
