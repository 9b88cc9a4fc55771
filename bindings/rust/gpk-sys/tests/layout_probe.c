/* Prints the layout of gpk.h's structs (sizes, alignments, field offsets and sizes) and the values of its
 * constants, one "kind name number" a line, for the Rust layout test to compare with gpk-sys and for
 * bindings/check_layouts.py to compare with the Python and Fortran mirrors (it also checks that this
 * file names every field of the header). */
#include <gpk.h>

#include <stddef.h>
#include <stdio.h>

#define SIZE(T) printf("size %s %zu\nalign %s %zu\n", #T, sizeof(T), #T, _Alignof(T))
#define FIELD(T, f)                                                                                          \
    printf("offset %s.%s %zu\nfieldsize %s.%s %zu\n", #T, #f, offsetof(T, f), #T, #f, sizeof(((T *)0)->f))
#define VALUE(c) printf("value %s %lld\n", #c, (long long)(c))

static void enums(void) {
    SIZE(gpk_status);
    SIZE(gpk_backend);
    SIZE(gpk_dtype);
    SIZE(gpk_border);
    SIZE(gpk_normalize);
    SIZE(gpk_accumulate);
    VALUE(GPK_OK);
    VALUE(GPK_ERR_INVALID_ARGUMENT);
    VALUE(GPK_ERR_OUT_OF_MEMORY);
    VALUE(GPK_ERR_NO_DEVICE);
    VALUE(GPK_ERR_UNSUPPORTED);
    VALUE(GPK_ERR_DEVICE);
    VALUE(GPK_ERR_CANCELLED);
    VALUE(GPK_ERR_INTERNAL);
    VALUE(GPK_BACKEND_AUTO);
    VALUE(GPK_BACKEND_CPU);
    VALUE(GPK_BACKEND_CUDA);
    VALUE(GPK_U8);
    VALUE(GPK_U16);
    VALUE(GPK_U32);
    VALUE(GPK_I32);
    VALUE(GPK_F32);
    VALUE(GPK_F64);
    VALUE(GPK_BORDER_ZERO);
    VALUE(GPK_BORDER_CLAMP);
    VALUE(GPK_BORDER_MIRROR);
    VALUE(GPK_BORDER_REFLECT);
    VALUE(GPK_BORDER_WRAP);
    VALUE(GPK_NORMALIZE_NONE);
    VALUE(GPK_NORMALIZE_SUM);
    VALUE(GPK_NORMALIZE_MINMAX);
    VALUE(GPK_ACCUMULATE_AUTO);
    VALUE(GPK_ACCUMULATE_F32);
    VALUE(GPK_ACCUMULATE_F64);
    VALUE(GPK_FILTER_MAX_2D);
    VALUE(GPK_FILTER_MAX_SEPARABLE);
    VALUE(GPK_VERSION_NUMBER);
}

static void device_and_context(void) {
    SIZE(gpk_device_info);
    FIELD(gpk_device_info, struct_size);
    FIELD(gpk_device_info, name);
    FIELD(gpk_device_info, compute_major);
    FIELD(gpk_device_info, compute_minor);
    FIELD(gpk_device_info, total_memory);
    FIELD(gpk_device_info, free_memory);
    FIELD(gpk_device_info, multiprocessors);
    FIELD(gpk_device_info, clock_khz);
    FIELD(gpk_device_info, memory_bus_bits);
    FIELD(gpk_device_info, l2_bytes);
    FIELD(gpk_device_info, driver_version);
    FIELD(gpk_device_info, runtime_version);
    SIZE(gpk_context_options);
    FIELD(gpk_context_options, struct_size);
    FIELD(gpk_context_options, backend);
    FIELD(gpk_context_options, device);
    FIELD(gpk_context_options, stream);
    FIELD(gpk_context_options, threads);
}

static void heat_and_histogram(void) {
    SIZE(gpk_heat_report);
    FIELD(gpk_heat_report, niter);
    FIELD(gpk_heat_report, tmin);
    FIELD(gpk_heat_report, tmax);
    FIELD(gpk_heat_report, maxdiff);
    FIELD(gpk_heat_report, tavg);
    FIELD(gpk_heat_report, time);
    SIZE(gpk_heat_params);
    FIELD(gpk_heat_params, struct_size);
    FIELD(gpk_heat_params, rows);
    FIELD(gpk_heat_params, cols);
    FIELD(gpk_heat_params, maxiter);
    FIELD(gpk_heat_params, threshold);
    FIELD(gpk_heat_params, period);
    FIELD(gpk_heat_params, on_report);
    FIELD(gpk_heat_params, on_progress);
    FIELD(gpk_heat_params, progress_interval);
    FIELD(gpk_heat_params, user_data);
    FIELD(gpk_heat_params, start_iteration);
    FIELD(gpk_heat_params, fixed_rows);
    FIELD(gpk_heat_params, on_checkpoint);
    FIELD(gpk_heat_params, checkpoint_interval);
    SIZE(gpk_histogram_params);
    FIELD(gpk_histogram_params, struct_size);
    FIELD(gpk_histogram_params, dtype);
    FIELD(gpk_histogram_params, width);
    FIELD(gpk_histogram_params, height);
    FIELD(gpk_histogram_params, channels);
    FIELD(gpk_histogram_params, stride);
    FIELD(gpk_histogram_params, bins);
    FIELD(gpk_histogram_params, lower);
    FIELD(gpk_histogram_params, upper);
    FIELD(gpk_histogram_params, saturate);
}

static void filters_and_images(void) {
    SIZE(gpk_filter_info);
    FIELD(gpk_filter_info, struct_size);
    FIELD(gpk_filter_info, separable);
    FIELD(gpk_filter_info, kh);
    FIELD(gpk_filter_info, kw);
    FIELD(gpk_filter_info, sum);
    FIELD(gpk_filter_info, integer_taps);
    SIZE(gpk_image);
    FIELD(gpk_image, struct_size);
    FIELD(gpk_image, dtype);
    FIELD(gpk_image, width);
    FIELD(gpk_image, height);
    FIELD(gpk_image, channels);
    FIELD(gpk_image, stride);
    SIZE(gpk_convolve_params);
    FIELD(gpk_convolve_params, struct_size);
    FIELD(gpk_convolve_params, filter);
    FIELD(gpk_convolve_params, border);
    FIELD(gpk_convolve_params, normalize);
    FIELD(gpk_convolve_params, accumulate);
}

int main(void) {
    enums();
    device_and_context();
    heat_and_histogram();
    filters_and_images();
    return 0;
}
