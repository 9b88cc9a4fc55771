// Validated, backend-neutral descriptions of the three operations. capi.cpp builds them after checking
// every argument; a backend may trust every field.
#pragma once

#include "gpk.h"

#include <cstddef>
#include <cstdint>

namespace gpk {

struct HeatJob {
    size_t rows = 0, cols = 0;
    size_t maxiter = 1;
    double threshold = 0;
    size_t period = 0;
    gpk_heat_report_fn on_report = nullptr;
    gpk_heat_progress_fn on_progress = nullptr;
    size_t progress_interval = 0;
    void *user_data = nullptr;
    const double *tinit = nullptr;
    const double *conductivity = nullptr;
    double *tfinal = nullptr;           // may be null
    gpk_heat_report *final = nullptr;   // may be null
    size_t start_iteration = 0;         // < maxiter
    const double *fixed_rows = nullptr; // 2 * cols, or null: tinit's first and last rows
    gpk_heat_checkpoint_fn on_checkpoint = nullptr;
    size_t checkpoint_interval = 0;
};

struct HistogramJob {
    gpk_dtype dtype = GPK_U8;
    size_t width = 0, height = 0;
    unsigned channels = 1;
    size_t stride = 0; // bytes, resolved (never 0)
    size_t bins = 0;
    double lower = 0, upper = 0;
    uint64_t saturate = 0; // 0 = none
    // Integer sample type with lower == 0 and upper == bins: sample v goes to bin v (v < bins).
    bool direct_bins = false;
    const void *data = nullptr;
    uint64_t *hist = nullptr;      // channels * bins
    uint64_t *uncounted = nullptr; // channels, may be null
};

struct ImageDesc {
    gpk_dtype dtype = GPK_U8;
    size_t width = 0, height = 0;
    unsigned channels = 1;
    size_t stride = 0; // bytes, resolved (never 0)
};

struct ConvolveJob {
    ImageDesc in, out;
    const void *in_data = nullptr;
    void *out_data = nullptr;
    const gpk_filter *filter = nullptr;
    gpk_border border = GPK_BORDER_CLAMP;
    gpk_normalize normalize = GPK_NORMALIZE_NONE;
    // Integer input with integer taps whose sum of |taps| * max sample < 2^54 (kExactLimit): exact int64
    // arithmetic.
    bool exact_integer = false;
    // Float path precision (ignored on the exact path).
    bool accumulate_f64 = false;
    // libgpk_mpi only (gpk_internal_convolve): min/max normalisation takes its range from output rows
    // [range_begin, range_end) alone and hands it to range_fn, which may replace it (with the range all
    // ranks agree on) before any output is written; a non-zero return stops the call.
    size_t range_begin = 0, range_end = SIZE_MAX;
    int (*range_fn)(void *user, unsigned channels, int exact, double *lo, double *hi, long long *ilo,
                    long long *ihi) = nullptr;
    void *range_user = nullptr;
    // gpk_internal_convolve_queued: a call on device images may return with its work queued on the
    // backend's stream, as with a caller's stream.
    bool queued = false;
};

} // namespace gpk
