// API misuse: every bad argument gets a specific status and a message naming it, never a crash, and
// outputs stay untouched.
#include "check.hpp"
#include "gpk.h"

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Stores an arbitrary value into an enum field, as a C caller could.
template <class E> void set_raw(E &field, unsigned value) {
    std::memcpy(&field, &value, sizeof value);
}

bool mentions(const char *message, const char *what) {
    return std::strstr(message, what) != nullptr;
}

// Expects `status` to be `want` with the context's (or the thread's) message naming `what`.
#define EXPECT_REJECTED(ctx, expr, want, what)                                                               \
    do {                                                                                                     \
        gpk_status s_ = (expr);                                                                              \
        const char *m_ = gpk_context_last_error(ctx);                                                        \
        CHECK_MSG(s_ == (want), std::string(#expr) + " gave " + gpk_status_string(s_) + ": " + m_);          \
        CHECK_MSG(mentions(m_, what),                                                                        \
                  std::string(#expr) + ": message \"" + m_ + "\" does not name " + what);                    \
    } while (0)

void test_strings_and_versions() {
    for (int s = 0; s <= 7; ++s) CHECK(std::strcmp(gpk_status_string(gpk_status(s)), "unknown status") != 0);
    CHECK(std::strcmp(gpk_backend_name(GPK_BACKEND_CPU), "cpu") == 0);
    CHECK(std::strcmp(gpk_backend_name(GPK_BACKEND_CUDA), "cuda") == 0);
    CHECK(std::strcmp(gpk_dtype_name(GPK_U16), "u16") == 0);
    CHECK(gpk_dtype_size(GPK_F64) == 8 && gpk_dtype_size(GPK_U16) == 2);
    CHECK(gpk_version_number() == GPK_VERSION_NUMBER);
    char expect[32];
    std::snprintf(expect, sizeof expect, "%d.%d.%d", GPK_VERSION_MAJOR, GPK_VERSION_MINOR, GPK_VERSION_PATCH);
    CHECK(std::strcmp(gpk_version_string(), expect) == 0);
}

void test_context_misuse() {
    EXPECT_REJECTED(nullptr, gpk_context_create(nullptr, nullptr), GPK_ERR_INVALID_ARGUMENT, "out");
    gpk_context *ctx = reinterpret_cast<gpk_context *>(0x1);
    gpk_context_options o;
    CHECK(gpk_context_options_init(&o) == GPK_OK);
    o.struct_size = 3;
    EXPECT_REJECTED(nullptr, gpk_context_create(&ctx, &o), GPK_ERR_INVALID_ARGUMENT, "struct_size");
    CHECK(ctx == nullptr);
    gpk_context_options_init(&o);
    set_raw(o.backend, 42);
    EXPECT_REJECTED(nullptr, gpk_context_create(&ctx, &o), GPK_ERR_INVALID_ARGUMENT, "42");
    gpk_context_options_init(&o);
    o.device = -3;
    EXPECT_REJECTED(nullptr, gpk_context_create(&ctx, &o), GPK_ERR_INVALID_ARGUMENT, "-3");
    EXPECT_REJECTED(nullptr, (gpk_context_options_init)(nullptr), GPK_ERR_INVALID_ARGUMENT, "opts");
    EXPECT_REJECTED(nullptr, gpk_context_options_init_sized(nullptr, sizeof o), GPK_ERR_INVALID_ARGUMENT,
                    "opts");
    gpk_context_destroy(nullptr); // a no-op
    CHECK(gpk_context_backend(nullptr) == GPK_BACKEND_AUTO);
    EXPECT_REJECTED(nullptr, gpk_context_synchronize(nullptr), GPK_ERR_INVALID_ARGUMENT, "ctx");
    EXPECT_REJECTED(nullptr, gpk_context_set_stream(nullptr, nullptr), GPK_ERR_INVALID_ARGUMENT, "ctx");
    EXPECT_REJECTED(nullptr, gpk_device_count(nullptr), GPK_ERR_INVALID_ARGUMENT, "count");
    EXPECT_REJECTED(nullptr, gpk_device_get_info(nullptr, 0), GPK_ERR_INVALID_ARGUMENT, "info");
    CHECK(gpk_context_last_error(nullptr) != nullptr);
}

void test_heat_misuse(gpk_context *ctx) {
    const size_t n = 4, m = 5;
    std::vector<double> t(n * m, 1.0), c(n * m, 0.5), out(n * m, -7.0);
    gpk_heat_params p;
    CHECK(gpk_heat_params_init(&p) == GPK_OK);
    p.rows = n;
    p.cols = m;
    p.maxiter = 3;
    gpk_heat_report rep;
    rep.niter = 12345;
    EXPECT_REJECTED(nullptr, gpk_heat_run(nullptr, &p, t.data(), c.data(), out.data(), &rep),
                    GPK_ERR_INVALID_ARGUMENT, "ctx");
    EXPECT_REJECTED(ctx, gpk_heat_run(ctx, nullptr, t.data(), c.data(), nullptr, nullptr),
                    GPK_ERR_INVALID_ARGUMENT, "params");
    EXPECT_REJECTED(ctx, gpk_heat_run(ctx, &p, nullptr, c.data(), nullptr, nullptr), GPK_ERR_INVALID_ARGUMENT,
                    "tinit");
    EXPECT_REJECTED(ctx, gpk_heat_run(ctx, &p, t.data(), nullptr, nullptr, nullptr), GPK_ERR_INVALID_ARGUMENT,
                    "conductivity");
    auto bad = [&](auto mutate, const char *what) {
        gpk_heat_params q = p;
        mutate(q);
        EXPECT_REJECTED(ctx, gpk_heat_run(ctx, &q, t.data(), c.data(), out.data(), &rep),
                        GPK_ERR_INVALID_ARGUMENT, what);
    };
    bad([](gpk_heat_params &q) { q.struct_size = sizeof(q) - 8; }, "struct_size");
    bad([](gpk_heat_params &q) { q.struct_size = offsetof(gpk_heat_params, start_iteration) + 8; },
        "struct_size");
    bad([](gpk_heat_params &q) { q.rows = 0; }, "rows");
    bad([](gpk_heat_params &q) { q.cols = 0; }, "cols");
    bad([](gpk_heat_params &q) { q.maxiter = 0; }, "maxiter");
    bad([](gpk_heat_params &q) { q.threshold = kNaN; }, "threshold");
    bad([](gpk_heat_params &q) { q.threshold = -1e-3; }, "threshold");
    bad([](gpk_heat_params &q) { q.rows = SIZE_MAX; }, "overflow");
    bad(
        [](gpk_heat_params &q) {
            q.rows = SIZE_MAX / 4;
            q.cols = 16;
        },
        "overflow");
    // Data contents are checked before anything is written.
    t[7] = kNaN;
    bad([](gpk_heat_params &) {}, "nan");
    t[7] = -kInf;
    bad([](gpk_heat_params &) {}, "inf");
    t[7] = 1.0;
    c[3] = 1.5;
    bad([](gpk_heat_params &) {}, "conductivity");
    c[3] = -0.25;
    bad([](gpk_heat_params &) {}, "-0.25");
    c[3] = kNaN;
    bad([](gpk_heat_params &) {}, "conductivity");
    c[3] = 0.5;
    for (double v : out) CHECK(v == -7.0);
    CHECK(rep.niter == 12345);
    // tfinal aliasing an input is rejected.
    EXPECT_REJECTED(ctx, gpk_heat_run(ctx, &p, t.data(), c.data(), t.data(), nullptr),
                    GPK_ERR_INVALID_ARGUMENT, "tfinal");
}

// A program built against gpk 0.1's header passes the smaller gpk_heat_params (up to user_data): it runs
// as with the defaults of the fields it lacks, and no byte past its struct is read (the struct is alone in
// an allocation of its own size, which AddressSanitizer builds check).
void test_heat_params_first_release(gpk_context *ctx) {
    struct FirstParams {
        size_t struct_size, rows, cols, maxiter;
        double threshold;
        size_t period;
        gpk_heat_report_fn on_report;
        gpk_heat_progress_fn on_progress;
        size_t progress_interval;
        void *user_data;
    };
    static_assert(sizeof(FirstParams) == offsetof(gpk_heat_params, start_iteration), "first layout");
    const size_t n = 6, m = 7;
    std::vector<double> t(n * m), c(n * m), now(n * m), first(n * m);
    for (size_t k = 0; k < n * m; ++k) {
        t[k] = double((k * 37) % 11);
        c[k] = double(k % 5) / 4.0;
    }
    gpk_heat_params p;
    CHECK(gpk_heat_params_init(&p) == GPK_OK);
    p.rows = n;
    p.cols = m;
    p.maxiter = 9;
    gpk_heat_report want, got;
    CHECK(gpk_heat_run(ctx, &p, t.data(), c.data(), now.data(), &want) == GPK_OK);
    auto *old = static_cast<FirstParams *>(std::malloc(sizeof(FirstParams)));
    std::memcpy(old, &p, sizeof(FirstParams));
    old->struct_size = sizeof(FirstParams);
    CHECK(gpk_heat_run(ctx, reinterpret_cast<const gpk_heat_params *>(old), t.data(), c.data(), first.data(),
                       &got) == GPK_OK);
    CHECK(got.niter == want.niter && got.tavg == want.tavg && got.maxdiff == want.maxdiff);
    CHECK(std::memcmp(first.data(), now.data(), n * m * sizeof(double)) == 0);
    std::free(old);
}

// The init functions write exactly the caller's layout: the _sized forms `size` bytes, the plain symbols
// (what a program built against gpk 0.1's header calls) gpk 0.1's layout; a size that is no layout of the
// struct is refused, naming the struct and its first and current sizes, and nothing is written.
template <class S, class Sized, class Plain>
void check_init(const char *name, size_t first, Sized sized, Plain plain) {
    constexpr unsigned char kCanary = 0xA5;
    struct Guarded {
        S s;
        unsigned char after[64];
    };
    auto intact = [&](const Guarded &g, size_t from) {
        const auto *bytes = reinterpret_cast<const unsigned char *>(&g);
        for (size_t k = from; k < sizeof g; ++k)
            if (bytes[k] != kCanary) return false;
        return true;
    };
    Guarded g;
    std::memset(&g, kCanary, sizeof g);
    CHECK_MSG(plain(&g.s) == GPK_OK, name);
    CHECK_MSG(g.s.struct_size == first && intact(g, first),
              std::string(name) + ": 0.1 symbol wrote past 0.1");
    std::memset(&g, kCanary, sizeof g);
    CHECK_MSG(sized(&g.s, sizeof(S)) == GPK_OK, name);
    CHECK_MSG(g.s.struct_size == sizeof(S) && intact(g, sizeof(S)), name);
    std::memset(&g, kCanary, sizeof g);
    CHECK(sized(&g.s, first) == GPK_OK && g.s.struct_size == first && intact(g, first));
    for (size_t size : {size_t(0), size_t(8), first - 8, first + 8, sizeof(S) + 8}) {
        if (size == sizeof(S)) continue;
        std::memset(&g, kCanary, sizeof g);
        EXPECT_REJECTED(nullptr, sized(&g.s, size), GPK_ERR_INVALID_ARGUMENT, name);
        const std::string m = gpk_context_last_error(nullptr);
        CHECK_MSG(mentions(m.c_str(), std::to_string(size).c_str()) &&
                      mentions(m.c_str(), std::to_string(first).c_str()) &&
                      mentions(m.c_str(), std::to_string(sizeof(S)).c_str()),
                  m);
        CHECK_MSG(intact(g, 0), std::string(name) + ": a refused size wrote");
    }
}

void test_init_layouts() {
    check_init<gpk_heat_params>("gpk_heat_params", offsetof(gpk_heat_params, start_iteration),
                                gpk_heat_params_init_sized, (gpk_heat_params_init));
    CHECK(offsetof(gpk_heat_params, start_iteration) < sizeof(gpk_heat_params));
    check_init<gpk_context_options>("gpk_context_options", sizeof(gpk_context_options),
                                    gpk_context_options_init_sized, (gpk_context_options_init));
    check_init<gpk_histogram_params>("gpk_histogram_params", sizeof(gpk_histogram_params),
                                     gpk_histogram_params_init_sized, (gpk_histogram_params_init));
    check_init<gpk_convolve_params>("gpk_convolve_params", sizeof(gpk_convolve_params),
                                    gpk_convolve_params_init_sized, (gpk_convolve_params_init));
    check_init<gpk_image>(
        "gpk_image", sizeof(gpk_image),
        [](gpk_image *i, size_t size) { return gpk_image_init_sized(i, size, GPK_F32, 5, 4, 2); },
        [](gpk_image *i) { return (gpk_image_init)(i, GPK_F32, 5, 4, 2); });
    gpk_image image;
    CHECK(gpk_image_init(&image, GPK_U16, 7, 3, 2) == GPK_OK);
    CHECK(image.struct_size == sizeof image && image.dtype == GPK_U16 && image.width == 7 &&
          image.height == 3 && image.channels == 2 && image.stride == 0);
    // The defaults through the macro (the _sized form) equal the _INIT macro's.
    gpk_heat_params h, want = GPK_HEAT_PARAMS_INIT;
    std::memset(&h, 0x5A, sizeof h);
    CHECK(gpk_heat_params_init(&h) == GPK_OK);
    CHECK(std::memcmp(&h, &want, sizeof h) == 0);
}

void test_histogram_misuse(gpk_context *ctx) {
    std::vector<uint8_t> data(64, 3);
    std::vector<uint64_t> hist(4 * 256, 99), unc(4, 99);
    gpk_histogram_params p;
    CHECK(gpk_histogram_params_init(&p) == GPK_OK);
    p.width = 8;
    p.height = 8;
    EXPECT_REJECTED(nullptr, gpk_histogram(nullptr, &p, data.data(), hist.data(), nullptr),
                    GPK_ERR_INVALID_ARGUMENT, "ctx");
    EXPECT_REJECTED(ctx, gpk_histogram(ctx, nullptr, data.data(), hist.data(), nullptr),
                    GPK_ERR_INVALID_ARGUMENT, "params");
    EXPECT_REJECTED(ctx, gpk_histogram(ctx, &p, nullptr, hist.data(), nullptr), GPK_ERR_INVALID_ARGUMENT,
                    "data");
    EXPECT_REJECTED(ctx, gpk_histogram(ctx, &p, data.data(), nullptr, nullptr), GPK_ERR_INVALID_ARGUMENT,
                    "hist");
    auto bad = [&](auto mutate, const char *what) {
        gpk_histogram_params q = p;
        mutate(q);
        EXPECT_REJECTED(ctx, gpk_histogram(ctx, &q, data.data(), hist.data(), unc.data()),
                        GPK_ERR_INVALID_ARGUMENT, what);
    };
    bad([](gpk_histogram_params &q) { q.struct_size = 0; }, "struct_size");
    bad([](gpk_histogram_params &q) { set_raw(q.dtype, 6); }, "dtype");
    bad([](gpk_histogram_params &q) { set_raw(q.dtype, 0xFFFFFFFFu); }, "dtype");
    bad([](gpk_histogram_params &q) { q.width = 0; }, "width");
    bad([](gpk_histogram_params &q) { q.height = 0; }, "height");
    bad([](gpk_histogram_params &q) { q.channels = 0; }, "channels");
    bad([](gpk_histogram_params &q) { q.channels = 5; }, "channels");
    bad([](gpk_histogram_params &q) { q.stride = 7; }, "stride");
    bad([](gpk_histogram_params &q) { q.bins = 0; }, "bins");
    bad([](gpk_histogram_params &q) { q.lower = kNaN; }, "lower");
    bad([](gpk_histogram_params &q) { q.upper = kInf; }, "upper");
    bad([](gpk_histogram_params &q) { q.upper = 0; }, "upper");
    bad(
        [](gpk_histogram_params &q) {
            q.lower = 1;
            q.upper = std::nextafter(1.0, 2.0);
            q.bins = SIZE_MAX / 64;
        },
        "bins");
    bad(
        [](gpk_histogram_params &q) {
            q.width = SIZE_MAX / 2;
            q.channels = 4;
        },
        "overflow");
    bad(
        [](gpk_histogram_params &q) {
            q.height = SIZE_MAX / 2;
            q.stride = 64;
        },
        "overflow");
    bad(
        [](gpk_histogram_params &q) {
            q.bins = SIZE_MAX / 4;
            q.channels = 4;
            q.upper = 1e300;
        },
        "overflow");
    bad(
        [](gpk_histogram_params &q) {
            q.dtype = GPK_U16;
            q.width = 3;
            q.stride = 7;
        },
        "multiple");
    gpk_histogram_params huge = p;
    huge.width = size_t(1) << 61;
    huge.channels = 4;
    huge.height = 1;
    EXPECT_REJECTED(ctx, gpk_histogram(ctx, &huge, data.data(), hist.data(), unc.data()), GPK_ERR_UNSUPPORTED,
                    "params describes 9223372036854775808 bytes of data; gpk takes at most PTRDIFF_MAX");
    gpk_histogram_params q16 = p;
    q16.dtype = GPK_U16;
    q16.width = 4;
    EXPECT_REJECTED(ctx, gpk_histogram(ctx, &q16, data.data() + 1, hist.data(), unc.data()),
                    GPK_ERR_INVALID_ARGUMENT, "aligned");
    for (uint64_t v : hist) CHECK(v == 99);
    for (uint64_t v : unc) CHECK(v == 99);
}

void test_filter_misuse() {
    gpk_filter *f = reinterpret_cast<gpk_filter *>(0x1);
    double taps[129 * 2] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    EXPECT_REJECTED(nullptr, gpk_filter_create_2d(nullptr, 3, 3, taps), GPK_ERR_INVALID_ARGUMENT, "out");
    EXPECT_REJECTED(nullptr, gpk_filter_create_2d(&f, 0, 3, taps), GPK_ERR_INVALID_ARGUMENT, "kh");
    CHECK(f == nullptr);
    EXPECT_REJECTED(nullptr, gpk_filter_create_2d(&f, 3, 4, taps), GPK_ERR_INVALID_ARGUMENT, "kw");
    EXPECT_REJECTED(nullptr, gpk_filter_create_2d(&f, 65, 1, taps), GPK_ERR_INVALID_ARGUMENT, "kh");
    EXPECT_REJECTED(nullptr, gpk_filter_create_2d(&f, 3, 3, nullptr), GPK_ERR_INVALID_ARGUMENT, "taps");
    taps[4] = kNaN;
    EXPECT_REJECTED(nullptr, gpk_filter_create_2d(&f, 3, 3, taps), GPK_ERR_INVALID_ARGUMENT, "taps[4]");
    taps[4] = 1e308;
    taps[5] = 1e308;
    EXPECT_REJECTED(nullptr, gpk_filter_create_2d(&f, 3, 3, taps), GPK_ERR_INVALID_ARGUMENT, "finite");
    taps[4] = taps[5] = 1;
    EXPECT_REJECTED(nullptr, gpk_filter_create_separable(&f, 131, taps, 3, taps), GPK_ERR_INVALID_ARGUMENT,
                    "row_len");
    EXPECT_REJECTED(nullptr, gpk_filter_create_separable(&f, 3, taps, 2, taps), GPK_ERR_INVALID_ARGUMENT,
                    "col_len");
    EXPECT_REJECTED(nullptr, gpk_filter_create_separable(&f, 3, taps, 3, nullptr), GPK_ERR_INVALID_ARGUMENT,
                    "col");
    taps[1] = kInf;
    EXPECT_REJECTED(nullptr, gpk_filter_create_separable(&f, 3, taps, 3, taps + 3), GPK_ERR_INVALID_ARGUMENT,
                    "row[1]");
    for (const char *name : {"lp4", "box:4", "box:", "box:x", "box:3.5", "box:131", "gauss:", "gauss:-1",
                             "gauss:nan", "gauss:1e9", "smooth5 ", ""})
        EXPECT_REJECTED(nullptr, gpk_filter_create_named(&f, name), GPK_ERR_INVALID_ARGUMENT, "filter");
    EXPECT_REJECTED(nullptr, gpk_filter_create_named(&f, nullptr), GPK_ERR_INVALID_ARGUMENT, "name");
    gpk_filter_destroy(nullptr);

    CHECK(gpk_filter_create_named(&f, "log9") == GPK_OK);
    gpk_filter_info info;
    info.struct_size = 8;
    EXPECT_REJECTED(nullptr, gpk_filter_get_info(&info, f), GPK_ERR_INVALID_ARGUMENT, "struct_size");
    info.struct_size = sizeof info;
    EXPECT_REJECTED(nullptr, gpk_filter_get_info(&info, nullptr), GPK_ERR_INVALID_ARGUMENT, "filter");
    EXPECT_REJECTED(nullptr, gpk_filter_get_taps(taps, 80, f), GPK_ERR_INVALID_ARGUMENT, "81");
    EXPECT_REJECTED(nullptr, gpk_filter_get_taps(nullptr, 81, f), GPK_ERR_INVALID_ARGUMENT, "taps");
    CHECK(gpk_filter_get_taps(taps, 81, f) == GPK_OK);
    gpk_filter_destroy(f);
}

void test_convolve_misuse(gpk_context *ctx) {
    const size_t w = 9, h = 7;
    std::vector<uint8_t> in(w * h, 5), out(w * h, 77);
    gpk_filter *lp3 = nullptr, *smooth = nullptr;
    CHECK(gpk_filter_create_named(&lp3, "lp3") == GPK_OK);
    CHECK(gpk_filter_create_named(&smooth, "smooth5") == GPK_OK);
    gpk_image ii, oi;
    gpk_image_init(&ii, GPK_U8, w, h, 1);
    gpk_image_init(&oi, GPK_U8, w, h, 1);
    gpk_convolve_params p;
    CHECK(gpk_convolve_params_init(&p) == GPK_OK);
    p.filter = smooth;
    EXPECT_REJECTED(nullptr, (gpk_image_init)(nullptr, GPK_U8, 1, 1, 1), GPK_ERR_INVALID_ARGUMENT, "image");
    EXPECT_REJECTED(nullptr, gpk_image_init_sized(nullptr, sizeof(gpk_image), GPK_U8, 1, 1, 1),
                    GPK_ERR_INVALID_ARGUMENT, "image");
    EXPECT_REJECTED(nullptr, gpk_convolve(nullptr, &p, &ii, in.data(), &oi, out.data()),
                    GPK_ERR_INVALID_ARGUMENT, "ctx");
    EXPECT_REJECTED(ctx, gpk_convolve(ctx, nullptr, &ii, in.data(), &oi, out.data()),
                    GPK_ERR_INVALID_ARGUMENT, "params");
    EXPECT_REJECTED(ctx, gpk_convolve(ctx, &p, nullptr, in.data(), &oi, out.data()), GPK_ERR_INVALID_ARGUMENT,
                    "in");
    EXPECT_REJECTED(ctx, gpk_convolve(ctx, &p, &ii, nullptr, &oi, out.data()), GPK_ERR_INVALID_ARGUMENT,
                    "in_data");
    EXPECT_REJECTED(ctx, gpk_convolve(ctx, &p, &ii, in.data(), nullptr, out.data()), GPK_ERR_INVALID_ARGUMENT,
                    "out");
    EXPECT_REJECTED(ctx, gpk_convolve(ctx, &p, &ii, in.data(), &oi, nullptr), GPK_ERR_INVALID_ARGUMENT,
                    "out_data");
    EXPECT_REJECTED(ctx, gpk_convolve(ctx, &p, &ii, in.data(), &oi, in.data()), GPK_ERR_INVALID_ARGUMENT,
                    "overlap");
    auto bad = [&](auto mutate, const char *what) {
        gpk_convolve_params q = p;
        gpk_image a = ii, b = oi;
        mutate(q, a, b);
        EXPECT_REJECTED(ctx, gpk_convolve(ctx, &q, &a, in.data(), &b, out.data()), GPK_ERR_INVALID_ARGUMENT,
                        what);
    };
    using P = gpk_convolve_params;
    using I = gpk_image;
    bad([](P &q, I &, I &) { q.filter = nullptr; }, "filter");
    bad([](P &q, I &, I &) { q.struct_size = 1; }, "struct_size");
    bad([](P &q, I &, I &) { set_raw(q.border, 5); }, "border");
    bad([](P &q, I &, I &) { set_raw(q.normalize, 3); }, "normalize");
    bad(
        [&](P &q, I &, I &) {
            q.normalize = GPK_NORMALIZE_SUM;
            q.filter = lp3;
        },
        "sum to 0");
    bad([](P &q, I &, I &) { set_raw(q.accumulate, 3); }, "accumulate");
    bad([](P &, I &a, I &) { a.struct_size = 0; }, "struct_size");
    bad([](P &, I &a, I &) { a.dtype = GPK_U32; }, "u32");
    bad([](P &, I &, I &b) { b.dtype = GPK_I32; }, "i32");
    bad([](P &, I &a, I &) { set_raw(a.dtype, 9); }, "dtype");
    bad([](P &, I &a, I &) { a.width = 0; }, "width");
    bad([](P &, I &a, I &) { a.height = 0; }, "height");
    bad([](P &, I &a, I &b) { a.channels = b.channels = 0; }, "channels");
    bad([](P &, I &a, I &b) { a.channels = b.channels = 5; }, "channels");
    bad([](P &, I &, I &b) { b.width = w - 1; }, "same width");
    bad([](P &, I &a, I &) { a.stride = w - 1; }, "stride");
    bad(
        [](P &, I &a, I &b) {
            a.width = b.width = SIZE_MAX / 2;
            a.channels = b.channels = 3;
        },
        "overflow");
    bad(
        [](P &, I &a, I &) {
            a.dtype = GPK_F32;
            a.stride = 4 * w + 2;
        },
        "multiple");
    gpk_image fi = ii, fo = oi;
    fi.dtype = fo.dtype = GPK_F32;
    fi.width = fo.width = 2;
    EXPECT_REJECTED(ctx, gpk_convolve(ctx, &p, &fi, in.data() + 1, &fo, out.data() + 32),
                    GPK_ERR_INVALID_ARGUMENT, "in_data is not aligned");
    // Images no address space holds (beyond PTRDIFF_MAX bytes, sizes that still fit size_t): unsupported,
    // the bytes and the limit named, before any sample is read.
    gpk_image huge_in = ii, huge_out = oi;
    huge_in.width = huge_out.width = (size_t(1) << 62) + 1;
    huge_in.channels = huge_out.channels = 2;
    huge_in.height = huge_out.height = 1;
    EXPECT_REJECTED(ctx, gpk_convolve(ctx, &p, &huge_in, in.data(), &huge_out, out.data()),
                    GPK_ERR_UNSUPPORTED,
                    "in describes 9223372036854775810 bytes of data; gpk takes at most PTRDIFF_MAX");
    huge_in = ii, huge_out = oi;
    huge_out.height = huge_in.height = (size_t(1) << 61) + 1;
    huge_out.stride = 4;
    huge_out.width = huge_in.width = 4;
    EXPECT_REJECTED(ctx, gpk_convolve(ctx, &p, &ii, in.data(), &huge_out, out.data()), GPK_ERR_UNSUPPORTED,
                    "out describes 9223372036854775812 bytes");
    for (uint8_t v : out) CHECK(v == 77);
    gpk_filter_destroy(lp3);
    gpk_filter_destroy(smooth);
}

} // namespace

int main() {
    test_strings_and_versions();
    test_context_misuse();
    test_init_layouts();
    test_filter_misuse();
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = GPK_BACKEND_CPU;
    gpk_context *ctx = nullptr;
    CHECK_OK(nullptr, gpk_context_create(&ctx, &o));
    if (!ctx) return check::finish("test_api_misuse");
    test_heat_misuse(ctx);
    test_heat_params_first_release(ctx);
    test_histogram_misuse(ctx);
    test_convolve_misuse(ctx);
    gpk_context_destroy(ctx);
    return check::finish("test_api_misuse");
}
