/* The C side of the Fortran binding tests: the same operations called through gpk.h directly, and the
 * formulas from which both sides build their inputs (so that a layout mistake in the binding shows). */
#include <gpk.h>

#include <stdlib.h>

double ref_temperature(size_t row, size_t col) {
    return (double)((row * 7 + col * 13) % 17) - 5.0 + 0.25 * (double)(col % 3);
}

double ref_conductivity(size_t row, size_t col) {
    return (double)((row * 3 + col * 5) % 11) / 10.0;
}

/* Integer taps, asymmetric in both directions. */
double ref_tap(size_t a, size_t b) {
    return (double)((a * 5 + b * 3) % 7) - 3.0;
}

struct report_log {
    gpk_heat_report *reports;
    size_t capacity;
    size_t count;
};

static int log_report(const gpk_heat_report *report, int is_final, void *user_data) {
    struct report_log *log = user_data;
    if (!is_final && log->count < log->capacity) log->reports[log->count] = *report;
    if (!is_final) ++log->count;
    return 0;
}

/* Runs heat on the rows x cols grid of the formulas; the periodic reports go to periodic[], their number
 * to *count. */
int ref_heat(size_t rows, size_t cols, size_t maxiter, double threshold, size_t period, double *tfinal,
             gpk_heat_report *final, gpk_heat_report *periodic, size_t capacity, size_t *count) {
    double *tinit = malloc(rows * cols * sizeof(double));
    double *conductivity = malloc(rows * cols * sizeof(double));
    gpk_context *ctx = NULL;
    gpk_status status = GPK_ERR_OUT_OF_MEMORY;
    struct report_log log = {periodic, capacity, 0};
    if (tinit && conductivity && (status = gpk_context_create(&ctx, NULL)) == GPK_OK) {
        for (size_t i = 0; i < rows; ++i)
            for (size_t j = 0; j < cols; ++j) {
                tinit[i * cols + j] = ref_temperature(i, j);
                conductivity[i * cols + j] = ref_conductivity(i, j);
            }
        gpk_heat_params params;
        gpk_heat_params_init(&params);
        params.rows = rows;
        params.cols = cols;
        params.maxiter = maxiter;
        params.threshold = threshold;
        params.period = period;
        params.on_report = log_report;
        params.user_data = &log;
        status = gpk_heat_run(ctx, &params, tinit, conductivity, tfinal, final);
    }
    *count = log.count;
    gpk_context_destroy(ctx);
    free(tinit);
    free(conductivity);
    return status;
}

int ref_histogram(int dtype, const void *data, size_t width, size_t height, unsigned channels, size_t stride,
                  size_t bins, double lower, double upper, uint64_t saturate, uint64_t *hist,
                  uint64_t *uncounted) {
    gpk_context *ctx = NULL;
    gpk_status status = gpk_context_create(&ctx, NULL);
    if (status != GPK_OK) return status;
    gpk_histogram_params params;
    gpk_histogram_params_init(&params);
    params.dtype = (gpk_dtype)dtype;
    params.width = width;
    params.height = height;
    params.channels = channels;
    params.stride = stride;
    params.bins = bins;
    params.lower = lower;
    params.upper = upper;
    params.saturate = saturate;
    status = gpk_histogram(ctx, &params, data, hist, uncounted);
    gpk_context_destroy(ctx);
    return status;
}

/* Convolves with the named filter, or with kh x kw taps of ref_tap when name is NULL. */
int ref_convolve(const char *name, size_t kh, size_t kw, int border, int normalize, int accumulate,
                 int in_dtype, const void *in, int out_dtype, void *out, size_t width, size_t height,
                 unsigned channels) {
    gpk_filter *filter = NULL;
    gpk_status status;
    if (name) {
        status = gpk_filter_create_named(&filter, name);
    } else {
        double taps[GPK_FILTER_MAX_2D * GPK_FILTER_MAX_2D];
        for (size_t a = 0; a < kh; ++a)
            for (size_t b = 0; b < kw; ++b) taps[a * kw + b] = ref_tap(a, b);
        status = gpk_filter_create_2d(&filter, kh, kw, taps);
    }
    gpk_context *ctx = NULL;
    if (status == GPK_OK) status = gpk_context_create(&ctx, NULL);
    if (status == GPK_OK) {
        gpk_convolve_params params;
        gpk_convolve_params_init(&params);
        params.filter = filter;
        params.border = (gpk_border)border;
        params.normalize = (gpk_normalize)normalize;
        params.accumulate = (gpk_accumulate)accumulate;
        gpk_image in_image, out_image;
        gpk_image_init(&in_image, (gpk_dtype)in_dtype, width, height, channels);
        gpk_image_init(&out_image, (gpk_dtype)out_dtype, width, height, channels);
        status = gpk_convolve(ctx, &params, &in_image, in, &out_image, out);
    }
    gpk_context_destroy(ctx);
    gpk_filter_destroy(filter);
    return status;
}
