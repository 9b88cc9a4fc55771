// The C boundary of gpk.h: argument validation with messages that name the argument and its value, and the
// place where C++ exceptions become statuses. Nothing below this file sees an unchecked argument.
#include "gpk.h"

#include "engine/abi.hpp"
#include "engine/arguments.hpp"
#include "engine/boundary.hpp"
#include "engine/context.hpp"
#include "engine/cuda_api.hpp"
#include "engine/error.hpp"
#include "engine/filter.hpp"
#include "engine/validate.hpp"
#include "common/semantics.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>
#include <algorithm>
#include <memory>

using gpk::format_value;
using gpk::guarded;
using gpk::invalid;
using gpk::require;
using gpk::with_context;

namespace {

thread_local std::string t_last_error;

// a * b, or an error naming `what` when the product does not fit in size_t.
size_t checked_mul(size_t a, size_t b, const std::string &what) {
    if (a != 0 && b > std::numeric_limits<size_t>::max() / a)
        invalid(what + " overflows: " + std::to_string(a) + " * " + std::to_string(b));
    return a * b;
}

size_t checked_add(size_t a, size_t b, const std::string &what) {
    if (b > std::numeric_limits<size_t>::max() - a)
        invalid(what + " overflows: " + std::to_string(a) + " + " + std::to_string(b));
    return a + b;
}

// The value of an enum field as the caller stored it. Reading it through memcpy keeps an out-of-range
// value (a C caller may pass anything) from being an invalid load of the enum type.
template <class E> unsigned raw(const E &e) {
    static_assert(sizeof(E) == sizeof(unsigned), "C enums are int-sized");
    unsigned v;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

bool known_dtype(const gpk_dtype &t) {
    return raw(t) <= unsigned(GPK_F64);
}
bool integer_dtype(gpk_dtype t) {
    return t == GPK_U8 || t == GPK_U16 || t == GPK_U32 || t == GPK_I32;
}

double dtype_max(gpk_dtype t) {
    switch (t) {
    case GPK_U8:
        return 255;
    case GPK_U16:
        return 65535;
    case GPK_U32:
        return 4294967295.0;
    case GPK_I32:
        return 2147483648.0; // magnitude of the most negative value
    default:
        return std::numeric_limits<double>::infinity();
    }
}

// Samples are read and written as their type: the data must be aligned to the sample size.
void check_alignment(const void *data, gpk_dtype dtype, const std::string &name) {
    size_t elem = gpk_dtype_size(dtype);
    if (reinterpret_cast<uintptr_t>(data) % elem != 0)
        invalid(name + " is not aligned to the " + gpk_dtype_name(dtype) + " sample size (" +
                std::to_string(elem) + " bytes)");
}

// Resolves a stride (0 = packed) after checking the row fits; returns the stride in bytes.
size_t resolve_stride(const std::string &name, size_t width, size_t height, unsigned channels,
                      gpk_dtype dtype, size_t stride) {
    if (width == 0) invalid(name + "->width is 0; it must be at least 1");
    if (height == 0) invalid(name + "->height is 0; it must be at least 1");
    if (channels < 1 || channels > 4)
        invalid(name + "->channels is " + std::to_string(channels) + "; it must be 1, 2, 3 or 4");
    size_t row = checked_mul(checked_mul(width, channels, name + " row size"), gpk_dtype_size(dtype),
                             name + " row size in bytes");
    if (stride == 0) stride = row;
    if (stride % gpk_dtype_size(dtype) != 0)
        invalid(name + "->stride is " + std::to_string(stride) + " bytes; it must be a multiple of the " +
                gpk_dtype_name(dtype) + " sample size (" + std::to_string(gpk_dtype_size(dtype)) + ")");
    if (stride < row)
        invalid(name + "->stride is " + std::to_string(stride) + " bytes; a row of " + std::to_string(width) +
                " x " + std::to_string(channels) + " " + gpk_dtype_name(dtype) + " samples needs at least " +
                std::to_string(row));
    // The last byte read must be addressable.
    size_t bytes =
        checked_add(checked_mul(stride, height - 1, name + " size in bytes"), row, name + " size in bytes");
    // No object is larger (pointer differences must fit), and the backends index samples in 64-bit signed
    // integers.
    if (bytes > size_t(std::numeric_limits<ptrdiff_t>::max()))
        gpk::fail(GPK_ERR_UNSUPPORTED, name + " describes " + std::to_string(bytes) +
                                           " bytes of data; gpk takes at most PTRDIFF_MAX (" +
                                           std::to_string(std::numeric_limits<ptrdiff_t>::max()) + ") bytes");
    return stride;
}

bool ranges_overlap(const void *a, size_t a_len, const void *b, size_t b_len) {
    auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
    return pa < pb + b_len && pb < pa + a_len;
}

gpk::ImageDesc check_image(const gpk_image *caller, const char *name) {
    const gpk_image image = gpk::abi::read(caller, name);
    const gpk_image *img = &image;
    if (!known_dtype(img->dtype))
        invalid(std::string(name) + "->dtype is " + std::to_string(int(raw(img->dtype))) +
                "; not a gpk_dtype");
    if (img->dtype != GPK_U8 && img->dtype != GPK_U16 && img->dtype != GPK_F32 && img->dtype != GPK_F64)
        invalid(std::string(name) + "->dtype is " + gpk_dtype_name(img->dtype) +
                "; convolution takes u8, u16, f32 or f64");
    gpk::ImageDesc d;
    d.dtype = img->dtype;
    d.width = img->width;
    d.height = img->height;
    d.channels = img->channels;
    d.stride = resolve_stride(name, img->width, img->height, img->channels, img->dtype, img->stride);
    return d;
}

size_t image_bytes(const gpk::ImageDesc &d) {
    return d.stride * (d.height - 1) + d.width * d.channels * gpk_dtype_size(d.dtype);
}

} // namespace

namespace gpk {

std::string &thread_error() {
    return t_last_error;
}

ConvolveJob convolve_job(const gpk_convolve_params *caller, const gpk_image *in, const void *in_data,
                         const gpk_image *out, void *out_data) {
    const gpk_convolve_params p = gpk::abi::read(caller, "params");
    const gpk_convolve_params *params = &p;
    require(params->filter, "params->filter");
    require(in_data, "in_data");
    require(out_data, "out_data");
    ConvolveJob job;
    job.in = check_image(in, "in");
    job.out = check_image(out, "out");
    if (job.in.width != job.out.width || job.in.height != job.out.height ||
        job.in.channels != job.out.channels)
        invalid("out is " + std::to_string(job.out.width) + "x" + std::to_string(job.out.height) + "x" +
                std::to_string(job.out.channels) + " but in is " + std::to_string(job.in.width) + "x" +
                std::to_string(job.in.height) + "x" + std::to_string(job.in.channels) +
                "; they must have the same width, height and channels");
    if (raw(params->border) > unsigned(GPK_BORDER_WRAP))
        invalid("params->border is " + std::to_string(int(raw(params->border))) + "; not a gpk_border");
    if (raw(params->normalize) > unsigned(GPK_NORMALIZE_MINMAX))
        invalid("params->normalize is " + std::to_string(int(raw(params->normalize))) +
                "; not a gpk_normalize");
    if (raw(params->accumulate) > unsigned(GPK_ACCUMULATE_F64))
        invalid("params->accumulate is " + std::to_string(int(raw(params->accumulate))) +
                "; not a gpk_accumulate");
    const gpk_filter &f = *params->filter;
    if (params->normalize == GPK_NORMALIZE_SUM && f.sum == 0)
        invalid("params->normalize is GPK_NORMALIZE_SUM but the filter's taps sum to 0");
    check_alignment(in_data, job.in.dtype, "in_data");
    check_alignment(out_data, job.out.dtype, "out_data");
    if (ranges_overlap(in_data, image_bytes(job.in), out_data, image_bytes(job.out)))
        invalid("in_data and out_data overlap; convolution cannot run in place");
    job.in_data = in_data;
    job.out_data = out_data;
    job.filter = &f;
    job.border = params->border;
    job.normalize = params->normalize;
    job.exact_integer = integer_dtype(job.in.dtype) && f.integer_taps &&
                        f.abs_sum * dtype_max(job.in.dtype) < gpk::kExactLimit;
    job.accumulate_f64 =
        params->accumulate == GPK_ACCUMULATE_F64 ||
        (params->accumulate == GPK_ACCUMULATE_AUTO && (job.in.dtype == GPK_F64 || job.out.dtype == GPK_F64));
    return job;
}

} // namespace gpk

namespace {

// The init functions: the _sized forms write the caller's layout; the plain symbols, which only programs
// built against gpk 0.1's header reach (gpk.h maps the names onto the _sized forms), write 0.1's layout.
template <class S> gpk_status init_struct(S *caller, size_t size, const char *name) {
    return guarded(t_last_error, [&] { gpk::abi::init(caller, size, name); });
}

} // namespace

extern "C" {

GPK_API unsigned gpk_version_number(void) {
    return GPK_VERSION_NUMBER;
}

GPK_API const char *gpk_version_string(void) {
#define GPK_STR2(x) #x
#define GPK_STR(x) GPK_STR2(x)
    return GPK_STR(GPK_VERSION_MAJOR) "." GPK_STR(GPK_VERSION_MINOR) "." GPK_STR(GPK_VERSION_PATCH);
}

GPK_API const char *gpk_status_string(gpk_status status) {
    if (raw(status) > unsigned(GPK_ERR_INTERNAL)) return "unknown status";
    switch (status) {
    case GPK_OK:
        return "ok";
    case GPK_ERR_INVALID_ARGUMENT:
        return "invalid argument";
    case GPK_ERR_OUT_OF_MEMORY:
        return "out of memory";
    case GPK_ERR_NO_DEVICE:
        return "no usable GPU";
    case GPK_ERR_UNSUPPORTED:
        return "unsupported";
    case GPK_ERR_DEVICE:
        return "GPU error";
    case GPK_ERR_CANCELLED:
        return "cancelled";
    case GPK_ERR_INTERNAL:
        return "internal error";
    }
    return "unknown status";
}

GPK_API const char *gpk_backend_name(gpk_backend backend) {
    if (raw(backend) > unsigned(GPK_BACKEND_CUDA)) return "unknown";
    switch (backend) {
    case GPK_BACKEND_AUTO:
        return "auto";
    case GPK_BACKEND_CPU:
        return "cpu";
    case GPK_BACKEND_CUDA:
        return "cuda";
    }
    return "unknown";
}

GPK_API size_t gpk_dtype_size(gpk_dtype dtype) {
    if (!known_dtype(dtype)) return 0;
    switch (dtype) {
    case GPK_U8:
        return 1;
    case GPK_U16:
        return 2;
    case GPK_U32:
    case GPK_I32:
    case GPK_F32:
        return 4;
    case GPK_F64:
        return 8;
    }
    return 0;
}

GPK_API const char *gpk_dtype_name(gpk_dtype dtype) {
    static const char *names[] = {"u8", "u16", "u32", "i32", "f32", "f64"};
    return known_dtype(dtype) ? names[raw(dtype)] : "unknown";
}

GPK_API gpk_status gpk_device_count(int *count) {
    return guarded(t_last_error, [&] {
        require(count, "count");
        *count = 0;
        std::string why;
        int n = gpk::cuda::device_count(&why);
        if (n == 0) gpk::fail(GPK_ERR_NO_DEVICE, why);
        *count = n;
    });
}

GPK_API gpk_status gpk_device_get_info(gpk_device_info *info, int index) {
    return guarded(t_last_error, [&] {
        const size_t size = gpk::abi::caller_size(info, "info");
        std::string why;
        int n = gpk::cuda::device_count(&why);
        if (n == 0) gpk::fail(GPK_ERR_NO_DEVICE, why);
        if (index < 0 || index >= n)
            invalid("index is " + std::to_string(index) + "; " + std::to_string(n) + " CUDA device(s) exist");
        gpk_device_info full = gpk::abi::Layout<gpk_device_info>::defaults();
        gpk::cuda::device_info(index, &full);
        gpk::abi::write(info, full, size);
    });
}

GPK_API gpk_status gpk_context_options_init_sized(gpk_context_options *opts, size_t struct_size) {
    return init_struct(opts, struct_size, "opts");
}

GPK_API gpk_status(gpk_context_options_init)(gpk_context_options *opts) {
    return init_struct(opts, gpk::abi::first_size<gpk_context_options>(), "opts");
}

GPK_API gpk_status gpk_context_create(gpk_context **out, const gpk_context_options *opts) {
    return guarded(t_last_error, [&] {
        require(out, "out");
        *out = nullptr;
        gpk_context_options o = GPK_CONTEXT_OPTIONS_INIT;
        if (opts) o = gpk::abi::read(opts, "opts");
        if (raw(o.backend) > unsigned(GPK_BACKEND_CUDA))
            invalid("opts->backend is " + std::to_string(int(raw(o.backend))) +
                    "; expected auto (0), cpu (1) or cuda (2)");
        if (o.device < 0) invalid("opts->device is " + std::to_string(o.device) + "; it must be >= 0");
        if (o.threads > 4096) invalid("opts->threads is " + std::to_string(o.threads) + "; at most 4096");
        auto ctx = std::make_unique<gpk_context>();
        ctx->backend = gpk::create_backend(o);
        *out = ctx.release();
    });
}

GPK_API void gpk_context_destroy(gpk_context *ctx) {
    if (!ctx) return;
    try {
        ctx->backend->synchronize();
    } catch (...) {
        // Destruction must not fail; pending errors are dropped with the context.
    }
    delete ctx;
}

GPK_API gpk_backend gpk_context_backend(const gpk_context *ctx) {
    return ctx ? ctx->backend->kind() : GPK_BACKEND_AUTO;
}

GPK_API const char *gpk_context_last_error(const gpk_context *ctx) {
    return ctx ? ctx->last_error.c_str() : t_last_error.c_str();
}

GPK_API gpk_status gpk_context_set_stream(gpk_context *ctx, void *stream) {
    return with_context(ctx, [&] { ctx->backend->set_stream(stream); });
}

GPK_API gpk_status gpk_context_synchronize(gpk_context *ctx) {
    return with_context(ctx, [&] { ctx->backend->synchronize(); });
}

GPK_API gpk_status gpk_heat_params_init_sized(gpk_heat_params *params, size_t struct_size) {
    return init_struct(params, struct_size, "params");
}

GPK_API gpk_status(gpk_heat_params_init)(gpk_heat_params *params) {
    return init_struct(params, gpk::abi::first_size<gpk_heat_params>(), "params");
}

GPK_API gpk_status gpk_heat_run(gpk_context *ctx, const gpk_heat_params *caller, const double *tinit,
                                const double *conductivity, double *tfinal, gpk_heat_report *final) {
    return with_context(ctx, [&] {
        const gpk_heat_params p = gpk::abi::read(caller, "params");
        const gpk_heat_params *params = &p;
        require(tinit, "tinit");
        require(conductivity, "conductivity");
        if (params->rows == 0) invalid("params->rows is 0; it must be at least 1");
        if (params->cols == 0) invalid("params->cols is 0; it must be at least 1");
        if (params->maxiter == 0) invalid("params->maxiter is 0; it must be at least 1");
        if (params->start_iteration >= params->maxiter)
            invalid("params->start_iteration is " + std::to_string(params->start_iteration) +
                    "; it must be below params->maxiter (" + std::to_string(params->maxiter) + ")");
        if (!(params->threshold >= 0))
            invalid("params->threshold is " + format_value(params->threshold) + "; it must be >= 0");
        size_t padded = checked_mul(checked_add(params->rows, 2, "params->rows + 2"),
                                    checked_add(params->cols, 2, "params->cols + 2"), "the grid size");
        checked_mul(padded, 2 * sizeof(double), "the grid size in bytes");
        if (tfinal && (ranges_overlap(tfinal, params->rows * params->cols * sizeof(double), tinit,
                                      params->rows * params->cols * sizeof(double)) ||
                       ranges_overlap(tfinal, params->rows * params->cols * sizeof(double), conductivity,
                                      params->rows * params->cols * sizeof(double))))
            invalid("tfinal overlaps tinit or conductivity");
        gpk::HeatJob job;
        job.rows = params->rows;
        job.cols = params->cols;
        job.maxiter = params->maxiter;
        job.threshold = params->threshold;
        job.period = params->period;
        job.on_report = params->on_report;
        job.on_progress = params->on_progress;
        job.progress_interval = params->progress_interval;
        job.user_data = params->user_data;
        job.tinit = tinit;
        job.conductivity = conductivity;
        job.tfinal = tfinal;
        job.final = final;
        job.start_iteration = params->start_iteration;
        job.fixed_rows = params->fixed_rows;
        job.on_checkpoint = params->on_checkpoint;
        job.checkpoint_interval = params->checkpoint_interval;
        ctx->backend->heat_run(job);
    });
}

GPK_API gpk_status gpk_histogram_params_init_sized(gpk_histogram_params *params, size_t struct_size) {
    return init_struct(params, struct_size, "params");
}

GPK_API gpk_status(gpk_histogram_params_init)(gpk_histogram_params *params) {
    return init_struct(params, gpk::abi::first_size<gpk_histogram_params>(), "params");
}

GPK_API gpk_status gpk_histogram(gpk_context *ctx, const gpk_histogram_params *params, const void *data,
                                 uint64_t *hist, uint64_t *uncounted) {
    return with_context(ctx, [&] {
        const gpk_histogram_params p = gpk::abi::read(params, "params");
        require(data, "data");
        require(hist, "hist");
        if (!known_dtype(p.dtype))
            invalid("params->dtype is " + std::to_string(int(raw(p.dtype))) + "; not a gpk_dtype");
        gpk::HistogramJob job;
        job.stride = resolve_stride("params", p.width, p.height, p.channels, p.dtype, p.stride);
        if (p.bins == 0) invalid("params->bins is 0; it must be at least 1");
        checked_mul(checked_mul(p.bins, p.channels, "params->bins * channels"), sizeof(uint64_t),
                    "the histogram size in bytes");
        if (p.bins > (size_t(1) << 40))
            invalid("params->bins is " + std::to_string(p.bins) + "; at most 2^40");
        if (!std::isfinite(p.lower))
            invalid("params->lower is " + format_value(p.lower) + "; it must be finite");
        if (!std::isfinite(p.upper))
            invalid("params->upper is " + format_value(p.upper) + "; it must be finite");
        if (!(p.upper > p.lower))
            invalid("params->upper (" + format_value(p.upper) + ") must be greater than params->lower (" +
                    format_value(p.lower) + ")");
        if (!std::isfinite(double(p.bins) / (p.upper - p.lower)))
            invalid("params->bins / (upper - lower) is not finite: the range [" + format_value(p.lower) +
                    ", " + format_value(p.upper) + ") is too narrow");
        job.dtype = p.dtype;
        job.width = p.width;
        job.height = p.height;
        job.channels = p.channels;
        job.bins = p.bins;
        job.lower = p.lower;
        job.upper = p.upper;
        job.saturate = p.saturate;
        job.direct_bins = integer_dtype(p.dtype) && p.lower == 0 && p.upper == double(p.bins);
        check_alignment(data, p.dtype, "data");
        job.data = data;
        job.hist = hist;
        job.uncounted = uncounted;
        ctx->backend->histogram(job);
    });
}

GPK_API gpk_status gpk_filter_create_2d(gpk_filter **out, size_t kh, size_t kw, const double *taps) {
    return guarded(t_last_error, [&] {
        require(out, "out");
        *out = nullptr;
        *out = gpk::new_filter_2d(kh, kw, taps);
    });
}

GPK_API gpk_status gpk_filter_create_separable(gpk_filter **out, size_t row_len, const double *row,
                                               size_t col_len, const double *col) {
    return guarded(t_last_error, [&] {
        require(out, "out");
        *out = nullptr;
        *out = gpk::new_filter_separable(row_len, row, col_len, col);
    });
}

GPK_API gpk_status gpk_filter_create_named(gpk_filter **out, const char *name) {
    return guarded(t_last_error, [&] {
        require(out, "out");
        *out = nullptr;
        *out = gpk::new_named_filter(name);
    });
}

GPK_API void gpk_filter_destroy(gpk_filter *filter) {
    delete filter;
}

GPK_API gpk_status gpk_filter_get_info(gpk_filter_info *info, const gpk_filter *filter) {
    return guarded(t_last_error, [&] {
        const size_t size = gpk::abi::caller_size(info, "info");
        require(filter, "filter");
        gpk_filter_info full = gpk::abi::Layout<gpk_filter_info>::defaults();
        full.separable = filter->separable ? 1 : 0;
        full.kh = size_t(filter->kh);
        full.kw = size_t(filter->kw);
        full.sum = filter->sum;
        full.integer_taps = filter->integer_taps ? 1 : 0;
        gpk::abi::write(info, full, size);
    });
}

GPK_API gpk_status gpk_filter_get_taps(double *taps, size_t capacity, const gpk_filter *filter) {
    return guarded(t_last_error, [&] {
        require(taps, "taps");
        require(filter, "filter");
        size_t need = filter->separable ? filter->row.size() + filter->col.size() : filter->taps.size();
        if (capacity < need)
            invalid("capacity is " + std::to_string(capacity) + "; the filter has " + std::to_string(need) +
                    " taps");
        if (filter->separable) {
            std::copy(filter->row.begin(), filter->row.end(), taps);
            std::copy(filter->col.begin(), filter->col.end(), taps + filter->row.size());
        } else {
            std::copy(filter->taps.begin(), filter->taps.end(), taps);
        }
    });
}

GPK_API gpk_status gpk_image_init_sized(gpk_image *image, size_t struct_size, gpk_dtype dtype, size_t width,
                                        size_t height, unsigned channels) {
    return guarded(t_last_error, [&] {
        gpk_image v = gpk::abi::Layout<gpk_image>::defaults();
        v.dtype = dtype;
        v.width = width;
        v.height = height;
        v.channels = channels;
        gpk::abi::init(image, struct_size, "image", v);
    });
}

GPK_API gpk_status(gpk_image_init)(gpk_image *image, gpk_dtype dtype, size_t width, size_t height,
                                   unsigned channels) {
    return gpk_image_init_sized(image, gpk::abi::first_size<gpk_image>(), dtype, width, height, channels);
}

GPK_API gpk_status gpk_convolve_params_init_sized(gpk_convolve_params *params, size_t struct_size) {
    return init_struct(params, struct_size, "params");
}

GPK_API gpk_status(gpk_convolve_params_init)(gpk_convolve_params *params) {
    return init_struct(params, gpk::abi::first_size<gpk_convolve_params>(), "params");
}

GPK_API gpk_status gpk_convolve(gpk_context *ctx, const gpk_convolve_params *params, const gpk_image *in,
                                const void *in_data, const gpk_image *out, void *out_data) {
    return with_context(
        ctx, [&] { ctx->backend->convolve(gpk::convolve_job(params, in, in_data, out, out_data)); });
}

} // extern "C"
