// libFuzzer target for the C API's argument validation on the CPU backend: random parameter structs,
// sizes, strides, enum values, NULLs, NaN and infinities. A call either fails with a status and a
// non-empty message or, when it succeeds, touched only the memory its arguments described (ASan checks).
// Sizes whose buffers would exceed kMaxBytes are only passed when they must be rejected (overflow).
#include "gpk.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr size_t kMaxBytes = size_t(1) << 22;

class Reader {
public:
    Reader(const uint8_t *d, size_t n) : d_(d), n_(n) {}
    template <class T> T take() {
        T v{};
        size_t k = sizeof(T) < n_ ? sizeof(T) : n_;
        std::memcpy(&v, d_, k);
        d_ += k;
        n_ -= k;
        return v;
    }
    // A size biased towards small values, with occasional huge ones.
    size_t size() {
        uint8_t kind = take<uint8_t>();
        if (kind < 200) return take<uint8_t>() % 40;
        if (kind < 250) return take<uint16_t>();
        return take<size_t>();
    }
    double number() {
        uint8_t kind = take<uint8_t>();
        switch (kind % 8) {
        case 0:
            return std::nan("");
        case 1:
            return INFINITY;
        case 2:
            return -INFINITY;
        case 3:
            return take<int8_t>();
        default:
            return take<double>();
        }
    }

private:
    const uint8_t *d_;
    size_t n_;
};

// Stores a random enum value (mostly valid, some not) into `field` without loading it as the enum type,
// and returns it as a number.
template <class E> unsigned set_enum(E &field, Reader &r) {
    unsigned v = r.take<uint8_t>() % 10;
    std::memcpy(&field, &v, sizeof v);
    return v;
}

size_t sample_size(unsigned dtype) {
    static const size_t sizes[] = {1, 2, 4, 4, 4, 8};
    return dtype < 6 ? sizes[dtype] : 1;
}

// bytes = stride * (h - 1) + row, or SIZE_MAX on overflow.
size_t image_bytes(size_t w, size_t h, size_t c, size_t elem, size_t stride) {
    size_t row, body, total;
    if (__builtin_mul_overflow(w, c, &row) || __builtin_mul_overflow(row, elem, &row)) return SIZE_MAX;
    if (stride == 0) stride = row;
    if (h == 0) return 0;
    if (__builtin_mul_overflow(stride, h - 1, &body) || __builtin_add_overflow(body, row, &total))
        return SIZE_MAX;
    return total;
}

void expect_failure_has_message(gpk_context *ctx, gpk_status s) {
    if (s != GPK_OK && gpk_context_last_error(ctx)[0] == '\0') std::abort();
}

void fuzz_histogram(gpk_context *ctx, Reader &r) {
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    unsigned dtype = set_enum(p.dtype, r);
    p.width = r.size();
    p.height = r.size();
    p.channels = r.take<uint8_t>() % 6;
    p.stride = r.size();
    p.bins = r.size();
    p.lower = r.number();
    p.upper = r.number();
    p.saturate = r.take<uint8_t>();
    if (r.take<uint8_t>() == 7) p.struct_size = r.take<uint8_t>();
    size_t bytes = image_bytes(p.width, p.height, p.channels, sample_size(dtype), p.stride);
    // Only sizes whose products overflow must be rejected; valid but large requests (a histogram of 2^40
    // bins is valid) are skipped so that neither this harness nor the library allocates beyond kMaxBytes.
    size_t hist_n;
    bool hist_overflow = __builtin_mul_overflow(p.bins, size_t(p.channels), &hist_n) ||
                         __builtin_mul_overflow(hist_n, sizeof(uint64_t), &hist_n);
    bool must_fail = bytes == SIZE_MAX || hist_overflow;
    if (!must_fail && (bytes > kMaxBytes || hist_n > kMaxBytes)) return;
    hist_n /= sizeof(uint64_t);
    std::vector<uint8_t> data(must_fail ? 16 : bytes + 1);
    for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 131);
    std::vector<uint64_t> hist(must_fail ? 4 : hist_n + 1), unc(4);
    bool nulls = r.take<uint8_t>() == 3;
    gpk_status s = gpk_histogram(ctx, &p, nulls ? nullptr : data.data(), hist.data(), unc.data());
    if (must_fail && s == GPK_OK) std::abort();
    expect_failure_has_message(ctx, s);
}

void fuzz_convolve(gpk_context *ctx, Reader &r) {
    gpk_filter *f = nullptr;
    size_t kh = r.take<uint8_t>() % 11, kw = r.take<uint8_t>() % 11;
    double taps[121];
    for (double &t : taps) t = r.take<uint8_t>() % 5 == 0 ? r.number() : double(r.take<int8_t>() % 4);
    gpk_status fs = r.take<uint8_t>() % 2 ? gpk_filter_create_2d(&f, kh, kw, taps)
                                          : gpk_filter_create_separable(&f, kw, taps, kh, taps + 11);
    if (fs != GPK_OK) {
        if (f != nullptr || gpk_context_last_error(nullptr)[0] == '\0') std::abort();
        return;
    }
    gpk_image in, out;
    gpk_image_init(&in, GPK_U8, r.size(), r.size(), r.take<uint8_t>() % 6);
    gpk_image_init(&out, GPK_U8, in.width, in.height, in.channels);
    unsigned in_type = set_enum(in.dtype, r), out_type = set_enum(out.dtype, r);
    in.stride = r.take<uint8_t>() % 4 ? 0 : r.size();
    if (r.take<uint8_t>() == 9) out.width = r.size();
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = f;
    set_enum(p.border, r);
    set_enum(p.normalize, r);
    set_enum(p.accumulate, r);
    size_t ib = image_bytes(in.width, in.height, in.channels, sample_size(in_type), in.stride);
    size_t ob = image_bytes(out.width, out.height, out.channels, sample_size(out_type), out.stride);
    bool must_fail = ib == SIZE_MAX || ob == SIZE_MAX;
    if (!must_fail && (ib > kMaxBytes || ob > kMaxBytes)) {
        gpk_filter_destroy(f);
        return;
    }
    std::vector<uint8_t> a(must_fail ? 16 : ib + 8), b(must_fail ? 16 : ob + 8);
    for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i * 7);
    gpk_status s = gpk_convolve(ctx, &p, &in, a.data(), &out, b.data());
    if (must_fail && s == GPK_OK) std::abort();
    expect_failure_has_message(ctx, s);
    gpk_filter_destroy(f);
}

void fuzz_heat(gpk_context *ctx, Reader &r) {
    gpk_heat_params p;
    gpk_heat_params_init(&p);
    p.rows = r.size();
    p.cols = r.size();
    p.maxiter = r.take<uint8_t>() % 20;
    p.threshold = r.number();
    p.period = r.take<uint8_t>() % 5;
    size_t n;
    // The padded grids the library needs overflow: the call must be rejected, so small buffers are safe.
    size_t padded;
    bool overflow = __builtin_mul_overflow(p.rows, p.cols, &n) || p.rows > SIZE_MAX - 2 ||
                    p.cols > SIZE_MAX - 2 || __builtin_mul_overflow(p.rows + 2, p.cols + 2, &padded) ||
                    __builtin_mul_overflow(padded, 2 * sizeof(double), &padded);
    if (!overflow && n > kMaxBytes / 8) return;
    std::vector<double> t(overflow ? 2 : n + 1), c(overflow ? 2 : n + 1), o(overflow ? 2 : n + 1);
    for (size_t i = 0; i < t.size(); ++i) {
        t[i] = r.take<uint8_t>() % 16 == 0 ? r.number() : double(i % 17);
        c[i] = r.take<uint8_t>() % 16 == 0 ? r.number() : 0.5;
    }
    gpk_heat_report rep;
    gpk_status s = gpk_heat_run(ctx, &p, t.data(), c.data(), o.data(), &rep);
    if (overflow && p.rows && p.cols && s == GPK_OK) std::abort();
    expect_failure_has_message(ctx, s);
}

gpk_context *cpu_context() {
    static gpk_context *ctx = [] {
        gpk_context_options o;
        gpk_context_options_init(&o);
        o.backend = GPK_BACKEND_CPU;
        o.threads = 1;
        gpk_context *c = nullptr;
        if (gpk_context_create(&c, &o) != GPK_OK) std::abort();
        return c;
    }();
    return ctx;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Reader r(data, size);
    gpk_context *ctx = cpu_context();
    switch (r.take<uint8_t>() % 3) {
    case 0:
        fuzz_histogram(ctx, r);
        break;
    case 1:
        fuzz_convolve(ctx, r);
        break;
    default:
        fuzz_heat(ctx, r);
        break;
    }
    return 0;
}
