/*
 * gpk.h: the whole public API of gpk, a GPU image and grid kernel library.
 *
 * If it is not in this file it is not API.
 *
 * gpk computes three operations, on a CUDA GPU when one is usable and on the CPU otherwise:
 *   - gpk_heat_run:  heat dissipation on a cylinder (8-neighbour stencil, per-cell conductivity);
 *   - gpk_histogram: histograms of 1D/2D arrays of any sample type, bin count and range;
 *   - gpk_convolve:  2D and separable convolution (correlation) with five border rules.
 *
 * Conventions
 *   - Every function that can fail returns a gpk_status; GPK_OK is 0. Output parameters come first.
 *   - The message of a context's last failure is read with gpk_context_last_error(ctx); failures that
 *     happen without a context (gpk_context_create, the filter constructors, device queries) leave their
 *     message in a thread-local slot read with gpk_context_last_error(NULL). Messages are never NULL.
 *   - Parameter structs begin with `struct_size` and only ever grow at the end. Initialise them with
 *     their init function (or the _INIT macro in C), then set the fields you need. The init functions
 *     are macros over their _sized forms that pass sizeof the caller's struct, so a program built
 *     against an older gpk.h gets, and is read in, the layout it was compiled with; bindings call the
 *     _sized forms with their own struct sizes. A struct_size that is no layout of the struct (older
 *     than gpk's first release, or newer than this library) is GPK_ERR_INVALID_ARGUMENT.
 *   - Buffers belong to the caller: gpk reads and writes them only during the call that receives them
 *     (or, with a caller stream on the CUDA backend, until that stream reaches the work; see
 *     gpk_context_options.stream) and never keeps a pointer to them afterwards. On Linux the CUDA
 *     backend faults in the pages of large pageable buffers ahead of its copies without changing a byte
 *     (MADV_POPULATE_*), and advises transparent huge pages on outputs (MADV_HUGEPAGE, which stays on
 *     the caller's mapping).
 *   - Any data pointer may be host memory (pageable or pinned) or CUDA device memory; the CUDA backend
 *     finds out which and moves only what must move. The CPU backend accepts host memory only.
 *   - Nothing is printed by the library, no call aborts, and nothing throws across this boundary.
 *     When arguments are rejected, outputs are left untouched.
 *
 * Thread safety
 *   A context is used by one thread at a time. Separate contexts may be used at the same time from
 *   separate threads. Functions that take no context (version, status strings, filters, device
 *   queries) are safe to call from any thread; a gpk_filter is immutable once created and may be shared
 *   by threads and contexts.
 */
#ifndef GPK_H
#define GPK_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#if defined(GPK_BUILDING_LIBRARY)
#define GPK_API __declspec(dllexport)
#else
#define GPK_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define GPK_API __attribute__((visibility("default")))
#else
#define GPK_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Versions                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

#define GPK_VERSION_MAJOR 0
#define GPK_VERSION_MINOR 2
#define GPK_VERSION_PATCH 0
/** The version as one number, MAJOR*10000 + MINOR*100 + PATCH. */
#define GPK_VERSION_NUMBER (GPK_VERSION_MAJOR * 10000 + GPK_VERSION_MINOR * 100 + GPK_VERSION_PATCH)

/** Returns the run-time version number (GPK_VERSION_NUMBER of the library actually loaded). */
GPK_API unsigned gpk_version_number(void);

/** Returns the run-time version as "MAJOR.MINOR.PATCH"; a static string, never NULL. */
GPK_API const char *gpk_version_string(void);

/* ---------------------------------------------------------------------------------------------- */
/* Statuses                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

/** Result of every fallible call. Values are pinned and never reused. */
typedef enum gpk_status {
    GPK_OK = 0,
    /** An argument is NULL, zero, out of range, NaN, or inconsistent with another. */
    GPK_ERR_INVALID_ARGUMENT = 1,
    /** Host or device memory could not be allocated; the message gives the bytes asked for. */
    GPK_ERR_OUT_OF_MEMORY = 2,
    /** The CUDA backend was asked for explicitly and no usable GPU exists (no driver, no device,
     *  a driver too old, or a library built without CUDA). */
    GPK_ERR_NO_DEVICE = 3,
    /** The request is valid but beyond what gpk supports (a size limit, a pointer kind). */
    GPK_ERR_UNSUPPORTED = 4,
    /** A CUDA call or kernel failed; the message names the CUDA error. The context stays usable
     *  unless the error was sticky (then every later GPU call fails the same way). */
    GPK_ERR_DEVICE = 5,
    /** A progress callback asked the operation to stop. */
    GPK_ERR_CANCELLED = 6,
    /** A bug in gpk: an unexpected internal failure. */
    GPK_ERR_INTERNAL = 7
} gpk_status;

/** Returns a short static description of `status` ("ok", "invalid argument", ...). Never NULL;
 *  unknown values give "unknown status". */
GPK_API const char *gpk_status_string(gpk_status status);

/* ---------------------------------------------------------------------------------------------- */
/* Backends and devices                                                                            */
/* ---------------------------------------------------------------------------------------------- */

/** Where a context computes. */
typedef enum gpk_backend {
    /** CUDA if a usable GPU exists, else the CPU. A GPU is usable when its CUDA context can be created:
     *  where that fails (device busy in exclusive-process mode, out of memory, ...) the context is created
     *  on the CPU instead, without an error (gpk_context_backend tells which). GPK_BACKEND=cpu|cuda in the
     *  environment overrides. */
    GPK_BACKEND_AUTO = 0,
    /** The CPU backend: all cores, host memory only. */
    GPK_BACKEND_CPU = 1,
    /** The CUDA backend; gpk_context_create fails with GPK_ERR_NO_DEVICE where no GPU is listed, and with
     *  GPK_ERR_DEVICE or GPK_ERR_OUT_OF_MEMORY where creating the device's CUDA context fails. */
    GPK_BACKEND_CUDA = 2
} gpk_backend;

/** Returns "auto", "cpu" or "cuda"; "unknown" for other values. Never NULL. */
GPK_API const char *gpk_backend_name(gpk_backend backend);

/** What a user needs to know about one CUDA device. */
typedef struct gpk_device_info {
    size_t struct_size;
    char name[256];
    int compute_major;
    int compute_minor;
    uint64_t total_memory; /**< bytes */
    uint64_t free_memory;  /**< bytes, when queried */
    int multiprocessors;
    int clock_khz; /**< SM clock */
    int memory_bus_bits;
    int l2_bytes;
    int driver_version;  /**< CUDA driver API version, e.g. 13000 */
    int runtime_version; /**< CUDA runtime gpk was built with, e.g. 13000 */
} gpk_device_info;

/** Sets *count to the number of usable CUDA devices.
 *  Returns GPK_OK with *count > 0, or GPK_ERR_NO_DEVICE with *count = 0 and a thread-local message
 *  saying why (no driver, no device, driver too old, built without CUDA); GPK_ERR_INVALID_ARGUMENT if
 *  count is NULL. Thread-safe. */
GPK_API gpk_status gpk_device_count(int *count);

/** Fills *info for device `index` (0-based), up to info->struct_size bytes: set it to
 *  sizeof(gpk_device_info) first.
 *  Returns GPK_OK, GPK_ERR_NO_DEVICE (no usable GPU), GPK_ERR_INVALID_ARGUMENT (NULL info, wrong
 *  struct_size, index out of range) or GPK_ERR_DEVICE. Thread-safe. */
GPK_API gpk_status gpk_device_get_info(gpk_device_info *info, int index);

/* ---------------------------------------------------------------------------------------------- */
/* Contexts                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

/** An opaque context: the chosen backend, its reusable buffers, streams and threads, and the message
 *  of the last failure. */
typedef struct gpk_context gpk_context;

/** Options for gpk_context_create. */
typedef struct gpk_context_options {
    size_t struct_size;  /**< sizeof(gpk_context_options) */
    gpk_backend backend; /**< default GPK_BACKEND_AUTO */
    int device;          /**< CUDA device ordinal, default 0 */
    /** A cudaStream_t (as void*) on which the CUDA backend enqueues its work, or NULL (default).
     *  With a stream, calls whose data lives on the device return once the work is enqueued; the caller
     *  synchronises the stream (or calls gpk_context_synchronize) before reading results. Calls that
     *  involve host memory still finish before returning. Ignored by the CPU backend. */
    void *stream;
    /** CPU worker threads; 0 (default) = every core the process may use. */
    unsigned threads;
} gpk_context_options;

#define GPK_CONTEXT_OPTIONS_INIT                                                                             \
    { sizeof(gpk_context_options), GPK_BACKEND_AUTO, 0, NULL, 0 }

/** Sets *opts to the defaults, writing exactly `struct_size` bytes (sizeof the caller's
 *  gpk_context_options; the gpk_context_options_init macro passes it). Returns GPK_OK, or
 *  GPK_ERR_INVALID_ARGUMENT if opts is NULL or struct_size is no layout of the struct. Thread-safe. */
GPK_API gpk_status gpk_context_options_init_sized(gpk_context_options *opts, size_t struct_size);

/** gpk 0.1's entry point, for programs built against that header: the layout of gpk 0.1. */
GPK_API gpk_status gpk_context_options_init(gpk_context_options *opts);
#define gpk_context_options_init(opts) gpk_context_options_init_sized((opts), sizeof *(opts))

/** Creates a context in *out. `opts` may be NULL for the defaults.
 *  Returns GPK_OK; GPK_ERR_INVALID_ARGUMENT (NULL out, wrong struct_size, unknown backend, bad
 *  GPK_BACKEND value); GPK_ERR_NO_DEVICE (CUDA asked for, none usable); GPK_ERR_OUT_OF_MEMORY;
 *  GPK_ERR_DEVICE (the CUDA context could not be created; the message names the CUDA call). On failure
 *  *out is set to NULL (unless out is NULL), nothing created on the way is kept, and the message is in
 *  gpk_context_last_error(NULL).
 *  The caller owns the context and frees it with gpk_context_destroy. */
GPK_API gpk_status gpk_context_create(gpk_context **out, const gpk_context_options *opts);

/** Frees a context and everything it holds; waits for its pending GPU work. NULL is a no-op. */
GPK_API void gpk_context_destroy(gpk_context *ctx);

/** Returns the backend the context computes on (GPK_BACKEND_CPU or GPK_BACKEND_CUDA), or
 *  GPK_BACKEND_AUTO for a NULL context. */
GPK_API gpk_backend gpk_context_backend(const gpk_context *ctx);

/** Returns the message of the context's last failure ("" if none yet), or for a NULL context the
 *  calling thread's last failure outside a context. Never NULL. The string stays valid until the next
 *  call on the same context (or, for NULL, the next context-less call on the same thread). */
GPK_API const char *gpk_context_last_error(const gpk_context *ctx);

/** Replaces the caller stream (see gpk_context_options.stream); NULL returns to gpk's own streams.
 *  Returns GPK_OK, or GPK_ERR_INVALID_ARGUMENT for a NULL context. A no-op on the CPU backend. */
GPK_API gpk_status gpk_context_set_stream(gpk_context *ctx, void *stream);

/** Waits until all work the context enqueued has finished. Returns GPK_OK, GPK_ERR_INVALID_ARGUMENT
 *  (NULL ctx) or GPK_ERR_DEVICE. */
GPK_API gpk_status gpk_context_synchronize(gpk_context *ctx);

/* ---------------------------------------------------------------------------------------------- */
/* Sample types                                                                                    */
/* ---------------------------------------------------------------------------------------------- */

/** Element types of images and arrays. */
typedef enum gpk_dtype {
    GPK_U8 = 0,
    GPK_U16 = 1,
    GPK_U32 = 2,
    GPK_I32 = 3,
    GPK_F32 = 4,
    GPK_F64 = 5
} gpk_dtype;

/** Returns the size in bytes of one sample of `dtype`, or 0 for unknown values. */
GPK_API size_t gpk_dtype_size(gpk_dtype dtype);

/** Returns "u8", "u16", "u32", "i32", "f32" or "f64"; "unknown" otherwise. Never NULL. */
GPK_API const char *gpk_dtype_name(gpk_dtype dtype);

/* ---------------------------------------------------------------------------------------------- */
/* Heat dissipation on a cylinder                                                                  */
/* ---------------------------------------------------------------------------------------------- */

/** One report of a heat run: values over the interior of the newest grid. */
typedef struct gpk_heat_report {
    size_t niter;   /**< iterations done so far */
    double tmin;    /**< minimum temperature */
    double tmax;    /**< maximum temperature */
    double maxdiff; /**< max |new - old| of the newest iteration */
    double tavg;    /**< mean temperature */
    double time;    /**< seconds since the loop started */
} gpk_heat_report;

/** Receives each periodic report (is_final = 0) and the final report (is_final = 1).
 *  Return 0 to go on; a non-zero return stops the run (GPK_ERR_CANCELLED). */
typedef int (*gpk_heat_report_fn)(const gpk_heat_report *report, int is_final, void *user_data);

/** Receives progress about every `progress_interval` iterations (gpk_heat_run says when exactly):
 *  iterations done, the maxdiff of the last one, and seconds since the loop started. Return 0 to go on,
 *  non-zero to stop (GPK_ERR_CANCELLED). */
typedef int (*gpk_heat_progress_fn)(size_t niter, double maxdiff, double time, void *user_data);

/** Receives the state every `checkpoint_interval` iterations (never on the iteration that ends the run:
 *  convergence or maxiter): the iteration number, that iteration's maxdiff, and the N*M interior grid
 *  (row-major, valid during the call only). A run started from that grid with start_iteration = niter
 *  and the same fixed_rows continues bit for bit as this one does. Return 0 to go on, non-zero to stop
 *  (GPK_ERR_CANCELLED). */
typedef int (*gpk_heat_checkpoint_fn)(size_t niter, double maxdiff, const double *grid, void *user_data);

/** Parameters of gpk_heat_run. */
typedef struct gpk_heat_params {
    size_t struct_size;               /**< sizeof(gpk_heat_params) */
    size_t rows;                      /**< N >= 1 */
    size_t cols;                      /**< M >= 1 */
    size_t maxiter;                   /**< >= 1, default 1 */
    double threshold;                 /**< stop when an iteration's maxdiff < threshold; >= 0, default 0 */
    size_t period;                    /**< periodic report every `period` iterations; 0 (default) = none */
    gpk_heat_report_fn on_report;     /**< optional */
    gpk_heat_progress_fn on_progress; /**< optional */
    size_t progress_interval;         /**< progress at the first pass boundary at or after each
                                           multiple; 0 = never */
    void *user_data;                  /**< passed to every callback */
    /** Iterations already done on tinit, for a run resumed from a checkpoint; default 0. Iteration
     *  numbers (reports, callbacks, niter), maxiter and the schedules of reports, progress and
     *  checkpoints count from the original start. Must be below maxiter. */
    size_t start_iteration;
    /** Optional: 2*M doubles, the fixed rows above row 1 and below row N (by default the initial rows 1
     *  and N, in that order), finite. NULL (default) takes tinit's first and last rows; a resumed run passes
     *  those of the original tinit. */
    const double *fixed_rows;
    gpk_heat_checkpoint_fn on_checkpoint; /**< optional */
    size_t checkpoint_interval;           /**< iterations between checkpoints; 0 (default) = never */
} gpk_heat_params;

#define GPK_HEAT_PARAMS_INIT                                                                                 \
    { sizeof(gpk_heat_params), 0, 0, 1, 0.0, 0, NULL, NULL, 0, NULL, 0, NULL, NULL, 0 }

/** Sets *params to the defaults, writing exactly `struct_size` bytes (sizeof the caller's
 *  gpk_heat_params; the gpk_heat_params_init macro passes it). Returns GPK_OK, or
 *  GPK_ERR_INVALID_ARGUMENT if params is NULL or struct_size is no layout of the struct. Thread-safe. */
GPK_API gpk_status gpk_heat_params_init_sized(gpk_heat_params *params, size_t struct_size);

/** gpk 0.1's entry point, for programs built against that header: writes gpk 0.1's layout (the fields
 *  up to user_data) and nothing past it. */
GPK_API gpk_status gpk_heat_params_init(gpk_heat_params *params);
#define gpk_heat_params_init(params) gpk_heat_params_init_sized((params), sizeof *(params))

/** Runs the heat-dissipation simulation on an N×M cylinder (README.md, "What gpk computes").
 *
 *  tinit and conductivity: N*M row-major doubles each (temperatures finite, conductivities in [0, 1]).
 *  tfinal: optional (NULL to skip), N*M doubles receiving the final interior grid.
 *  final: optional, receives the final report (also passed to on_report with is_final = 1). A call with
 *  neither final nor on_report leaves out the final grid's min, max and mean (one read of the grid less).
 *
 *  The run stops at the first iteration whose maxdiff is strictly below threshold, or after maxiter.
 *  Reports are produced every `period` iterations (not on the iteration that converges) and once at the
 *  end. If a callback asks to stop, the run ends at a pass boundary (below), tfinal and final hold that
 *  state, the final report is still delivered, and the call returns GPK_ERR_CANCELLED naming the
 *  iteration; a stop that lands on the iteration that ends the run anyway (convergence, maxiter) cancels
 *  nothing.
 *
 *  Progress is a request, not a barrier: the backend advances several iterations a pass (CPU: up to 4;
 *  CUDA: batches of passes, up to about 1000 iterations or 2^36 cell updates) and looks at the run only
 *  at the end of each, its pass boundary; the end of the run (maxiter, or the iteration that converged)
 *  is one too. on_progress comes at the first boundary at or after each multiple of progress_interval,
 *  at most once a boundary (a small interval: every boundary), with the boundary's iteration and maxdiff.
 *  A stop it asks for ends the run at that boundary; on CUDA, where the next batch may already be queued,
 *  at the end of that batch. Passes end at periodic reports and checkpoints, which therefore come, and
 *  stop the run, at their exact iterations. A run that no callback stops gives the same final grid,
 *  reports and niter, bit for bit, whatever progress_interval and whichever callbacks are given.
 *
 *  Callbacks of one boundary come in this order: periodic report, progress, checkpoint.
 *
 *  Checkpoints and resuming: with on_checkpoint and checkpoint_interval, the grid is handed over at
 *  every multiple of checkpoint_interval; a later call with that grid as tinit, start_iteration set to
 *  its iteration and the original fixed_rows gives the same final grid and reports, bit for bit, as
 *  the run that was never stopped (report times excepted).
 *
 *  Returns GPK_OK; GPK_ERR_INVALID_ARGUMENT (NULL pointer, wrong struct_size, zero rows or cols,
 *  maxiter 0, start_iteration >= maxiter, a non-finite temperature or fixed row value, a conductivity
 *  outside [0, 1] or NaN, a negative or NaN threshold, a size whose product overflows); GPK_ERR_OUT_OF_MEMORY
 * (the message names the bytes); GPK_ERR_CANCELLED; GPK_ERR_DEVICE. */
GPK_API gpk_status gpk_heat_run(gpk_context *ctx, const gpk_heat_params *params, const double *tinit,
                                const double *conductivity, double *tfinal, gpk_heat_report *final);

/* ---------------------------------------------------------------------------------------------- */
/* Histograms                                                                                      */
/* ---------------------------------------------------------------------------------------------- */

/** Parameters of gpk_histogram. */
typedef struct gpk_histogram_params {
    size_t struct_size; /**< sizeof(gpk_histogram_params) */
    gpk_dtype dtype;    /**< sample type, default GPK_U8 */
    size_t width;       /**< samples per row (per channel), >= 1 */
    size_t height;      /**< rows, >= 1 (1 for 1D data), default 1 */
    unsigned channels;  /**< interleaved channels, 1..4, default 1 */
    /** Row pitch in bytes, a multiple of the sample size; 0 (default) = width*channels*sample size. */
    size_t stride;
    size_t bins;  /**< bins per channel, >= 1, default 256 */
    double lower; /**< lower edge (inclusive), default 0 */
    double upper; /**< upper edge (exclusive), > lower, default 256 */
    /** Counts clamp at this value after exact counting; 0 (default) = no clamp. 255 reproduces 8-bit
     *  saturating counters. */
    uint64_t saturate;
} gpk_histogram_params;

#define GPK_HISTOGRAM_PARAMS_INIT                                                                            \
    { sizeof(gpk_histogram_params), GPK_U8, 0, 1, 1, 0, 256, 0.0, 256.0, 0 }

/** Sets *params to the defaults, writing exactly `struct_size` bytes (sizeof the caller's
 *  gpk_histogram_params; the gpk_histogram_params_init macro passes it). Returns GPK_OK, or
 *  GPK_ERR_INVALID_ARGUMENT if params is NULL or struct_size is no layout of the struct. Thread-safe. */
GPK_API gpk_status gpk_histogram_params_init_sized(gpk_histogram_params *params, size_t struct_size);

/** gpk 0.1's entry point, for programs built against that header: the layout of gpk 0.1. */
GPK_API gpk_status gpk_histogram_params_init(gpk_histogram_params *params);
#define gpk_histogram_params_init(params) gpk_histogram_params_init_sized((params), sizeof *(params))

/** Counts the samples of a 2D array into `bins` equal bins over [lower, upper) per channel.
 *
 *  Binning: for integer types with lower = 0 and upper = bins, sample v goes to bin v. Otherwise,
 *  with scale = bins / (upper - lower) in double, bin = floor((v - lower) * scale), a result of `bins`
 *  for v < upper going to the last bin. Samples outside [lower, upper) and NaN are not counted.
 *  Counting is exact (64-bit) on every backend and identical between backends.
 *
 *  data: height rows of `stride` bytes, aligned to the sample size; the bytes between width*channels
 *  samples and the stride are never read.
 *  hist: channels*bins counters, channel-major (hist[c*bins + b]); overwritten.
 *  uncounted: optional (NULL to skip), `channels` counters receiving the samples not counted.
 *
 *  Returns GPK_OK; GPK_ERR_INVALID_ARGUMENT (NULL data or hist, wrong struct_size, unknown dtype,
 *  zero width/height/bins, channels outside 1..4, stride too small or not a multiple of the sample
 *  size, data not aligned to the sample size, non-finite or empty range, a size
 *  whose product overflows); GPK_ERR_UNSUPPORTED (data spanning more than PTRDIFF_MAX bytes);
 *  GPK_ERR_OUT_OF_MEMORY; GPK_ERR_DEVICE. Data larger than the GPU is
 *  streamed in chunks. */
GPK_API gpk_status gpk_histogram(gpk_context *ctx, const gpk_histogram_params *params, const void *data,
                                 uint64_t *hist, uint64_t *uncounted);

/* ---------------------------------------------------------------------------------------------- */
/* Filters and convolution                                                                         */
/* ---------------------------------------------------------------------------------------------- */

/** An immutable filter: a 2D kernel of kh×kw taps or a separable (row, column) pair. */
typedef struct gpk_filter gpk_filter;

/** Largest 2D filter side and largest separable length (radius 64). */
#define GPK_FILTER_MAX_2D 63
#define GPK_FILTER_MAX_SEPARABLE 129

/** Creates a 2D filter of kh rows × kw columns of taps (row-major, copied). kh and kw are odd and in
 *  1..GPK_FILTER_MAX_2D; taps are finite. Returns GPK_OK, GPK_ERR_INVALID_ARGUMENT or
 *  GPK_ERR_OUT_OF_MEMORY (message in gpk_context_last_error(NULL)). Free with gpk_filter_destroy. */
GPK_API gpk_status gpk_filter_create_2d(gpk_filter **out, size_t kh, size_t kw, const double *taps);

/** Creates a separable filter: `row` (row_len taps, applied along x) then `col` (col_len taps, along
 *  y). Lengths are odd and in 1..GPK_FILTER_MAX_SEPARABLE; taps are finite and copied. Returns as
 *  gpk_filter_create_2d. */
GPK_API gpk_status gpk_filter_create_separable(gpk_filter **out, size_t row_len, const double *row,
                                               size_t col_len, const double *col);

/** Creates a named filter: "identity" (1×1), "lp3" (3×3 Laplacian), "lp5" (5×5, -1 around 24), "log9"
 *  (9×9 Laplacian of Gaussian), "smooth5" (5×5 smoothing, sum 35), "box:K" (separable K ones, K odd),
 *  "gauss:SIGMA" (separable Gaussian, radius ceil(3*SIGMA) capped at 64, taps summing to 1).
 *  Returns GPK_OK, GPK_ERR_INVALID_ARGUMENT (unknown name, bad K or SIGMA) or GPK_ERR_OUT_OF_MEMORY. */
GPK_API gpk_status gpk_filter_create_named(gpk_filter **out, const char *name);

/** Frees a filter. NULL is a no-op. */
GPK_API void gpk_filter_destroy(gpk_filter *filter);

/** The shape of a filter. */
typedef struct gpk_filter_info {
    size_t struct_size; /**< sizeof(gpk_filter_info) */
    int separable;      /**< 1 for a (row, col) pair */
    size_t kh;          /**< rows of the 2D kernel, or col_len for a separable filter */
    size_t kw;          /**< columns of the 2D kernel, or row_len for a separable filter */
    double sum;         /**< the sum of the taps (for separable: sum(row) * sum(col)) */
    int integer_taps;   /**< 1 if every tap is an integer (the exact integer path applies) */
} gpk_filter_info;

/** Fills *info up to info->struct_size bytes (set it to sizeof(gpk_filter_info) first). Returns GPK_OK
 *  or GPK_ERR_INVALID_ARGUMENT. */
GPK_API gpk_status gpk_filter_get_info(gpk_filter_info *info, const gpk_filter *filter);

/** Copies the taps: for a 2D filter kh*kw taps into `taps` (row-major); for a separable one the row
 *  taps then the column taps (kw + kh values). `capacity` is the number of doubles `taps` holds.
 *  Returns GPK_OK or GPK_ERR_INVALID_ARGUMENT (NULL, capacity too small). */
GPK_API gpk_status gpk_filter_get_taps(double *taps, size_t capacity, const gpk_filter *filter);

/** How pixels outside the image are read. */
typedef enum gpk_border {
    GPK_BORDER_ZERO = 0,    /**< outside pixels are 0 */
    GPK_BORDER_CLAMP = 1,   /**< nearest edge pixel: aaa|abcd|ddd */
    GPK_BORDER_MIRROR = 2,  /**< edge not repeated: dcb|abcd|cba */
    GPK_BORDER_REFLECT = 3, /**< edge repeated: cba|abcd|dcb */
    GPK_BORDER_WRAP = 4     /**< periodic: bcd|abcd|abc */
} gpk_border;

/** What is done with the weighted sums. */
typedef enum gpk_normalize {
    GPK_NORMALIZE_NONE = 0,  /**< the weighted sum */
    GPK_NORMALIZE_SUM = 1,   /**< divided by the sum of the taps (a zero sum is rejected) */
    GPK_NORMALIZE_MINMAX = 2 /**< per channel, (v - min) * 255 / (max - min); 0 when max == min */
} gpk_normalize;

/** Accumulation precision for filters with non-integer taps (or non-integer images). */
typedef enum gpk_accumulate {
    /** f64 when the input or output is f64, else f32. */
    GPK_ACCUMULATE_AUTO = 0,
    GPK_ACCUMULATE_F32 = 1,
    GPK_ACCUMULATE_F64 = 2
} gpk_accumulate;

/** Describes an image: its samples live in a separate pointer. */
typedef struct gpk_image {
    size_t struct_size; /**< sizeof(gpk_image) */
    gpk_dtype dtype;    /**< GPK_U8, GPK_U16, GPK_F32 or GPK_F64 for convolution */
    size_t width;       /**< >= 1 */
    size_t height;      /**< >= 1 */
    unsigned channels;  /**< interleaved, 1..4 */
    size_t stride;      /**< row pitch in bytes, a multiple of the sample size; 0 = packed */
} gpk_image;

/** Sets *image to a packed image of the given shape, writing exactly `struct_size` bytes (sizeof the
 *  caller's gpk_image; the gpk_image_init macro passes it). Returns GPK_OK or GPK_ERR_INVALID_ARGUMENT
 *  (NULL image, struct_size no layout of the struct). The values themselves are checked when the image
 *  is used. Thread-safe. */
GPK_API gpk_status gpk_image_init_sized(gpk_image *image, size_t struct_size, gpk_dtype dtype, size_t width,
                                        size_t height, unsigned channels);

/** gpk 0.1's entry point, for programs built against that header: the layout of gpk 0.1. */
GPK_API gpk_status gpk_image_init(gpk_image *image, gpk_dtype dtype, size_t width, size_t height,
                                  unsigned channels);
#define gpk_image_init(image, dtype, width, height, channels)                                                \
    gpk_image_init_sized((image), sizeof *(image), (dtype), (width), (height), (channels))

/** Parameters of gpk_convolve. */
typedef struct gpk_convolve_params {
    size_t struct_size;        /**< sizeof(gpk_convolve_params) */
    const gpk_filter *filter;  /**< required */
    gpk_border border;         /**< default GPK_BORDER_CLAMP */
    gpk_normalize normalize;   /**< default GPK_NORMALIZE_NONE */
    gpk_accumulate accumulate; /**< default GPK_ACCUMULATE_AUTO */
} gpk_convolve_params;

#define GPK_CONVOLVE_PARAMS_INIT                                                                             \
    { sizeof(gpk_convolve_params), NULL, GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_AUTO }

/** Sets *params to the defaults, writing exactly `struct_size` bytes (sizeof the caller's
 *  gpk_convolve_params; the gpk_convolve_params_init macro passes it). Returns GPK_OK, or
 *  GPK_ERR_INVALID_ARGUMENT if params is NULL or struct_size is no layout of the struct. Thread-safe. */
GPK_API gpk_status gpk_convolve_params_init_sized(gpk_convolve_params *params, size_t struct_size);

/** gpk 0.1's entry point, for programs built against that header: the layout of gpk 0.1. */
GPK_API gpk_status gpk_convolve_params_init(gpk_convolve_params *params);
#define gpk_convolve_params_init(params) gpk_convolve_params_init_sized((params), sizeof *(params))

/** Correlates `in` with the filter: out(y,x) = sum_{a,b} in(y+a-kh/2, x+b-kw/2) * f[a][b] per
 *  channel, with the border rule for pixels outside; a separable filter runs the row pass, then the
 *  column pass on its result. The output has the input's width, height and channels; its dtype may
 *  differ. Integer outputs round to nearest (ties away from zero) and saturate; float outputs are
 *  stored as computed.
 *
 *  An integer image (u8, u16) with integer taps is computed in exact integer arithmetic, identical on
 *  every backend, normalisations included (sum: rounded division; minmax: truncating division, as in
 *  the Laplacian exercise). Otherwise the sums accumulate in params->accumulate precision.
 *
 *  in_data and out_data are aligned to their sample sizes and must not overlap. Output bytes between
 *  a row's samples and the stride are left untouched.
 *
 *  Returns GPK_OK; GPK_ERR_INVALID_ARGUMENT (NULL pointers, wrong struct_size, unknown enum values,
 *  sizes that differ between in and out, a dtype other than u8/u16/f32/f64, channels outside 1..4,
 *  a stride too small, SUM normalisation of a filter whose taps sum to 0, overlapping buffers);
 *  GPK_ERR_UNSUPPORTED (an image spanning more than PTRDIFF_MAX bytes; on the CUDA backend a row of
 *  more than 32 * (2^31 - 1) samples, width * channels); GPK_ERR_OUT_OF_MEMORY; GPK_ERR_DEVICE. */
GPK_API gpk_status gpk_convolve(gpk_context *ctx, const gpk_convolve_params *params, const gpk_image *in,
                                const void *in_data, const gpk_image *out, void *out_data);

#ifdef __cplusplus
}
#endif

#endif /* GPK_H */
