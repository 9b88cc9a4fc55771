// gpk_mpi_convolve on 1-4 ranks: each rank's rows of the output equal gpk_convolve of the whole image, bit
// for bit, for every border rule and normalisation, exact integer and float paths, 2D and separable
// filters, default blocks and skewed ones, and images so short that a block is thinner than the filter's
// reach (rows then come from several ranks, and for wrap from the other end). A failure on one rank and
// parameters that differ fail on every rank alike.
#include "mpi_test.hpp"
#include "hooks.hpp"
#include "samples.hpp"

#include <cmath>
#include <memory>

using namespace mpitest;

namespace {

struct FilterDeleter {
    void operator()(gpk_filter *f) const { gpk_filter_destroy(f); }
};
using Filter = std::unique_ptr<gpk_filter, FilterDeleter>;

Filter named(const char *name) {
    gpk_filter *f = nullptr;
    gpk_filter_create_named(&f, name);
    return Filter(f);
}

struct Image {
    gpk_dtype dtype;
    size_t width, height;
    unsigned channels;
    std::vector<unsigned char> data;
    size_t row() const { return width * channels * gpk_dtype_size(dtype); }
};

Image random_image(gpk_dtype dtype, size_t width, size_t height, unsigned channels, uint64_t seed) {
    Image im{dtype, width, height, channels, {}};
    const size_t n = width * height * channels, sample = gpk_dtype_size(dtype);
    im.data.resize(n * sample);
    std::mt19937_64 rng(seed);
    const double top = dtype == GPK_U8 ? 255 : dtype == GPK_U16 ? 65535 : 1;
    std::uniform_real_distribution<double> dist(0, top);
    for (size_t k = 0; k < n; ++k) {
        double v = dist(rng);
        write_sample(dtype, &im.data[k * sample],
                     dtype == GPK_U8 || dtype == GPK_U16 ? std::floor(v) : v - 0.5);
    }
    return im;
}

gpk_image describe(gpk_dtype dtype, const Image &im, size_t height) {
    gpk_image d;
    gpk_image_init(&d, dtype, im.width, height, im.channels);
    return d;
}

void check_case(gpk_context *ctx, const Image &im, gpk_dtype out_dtype, const gpk_filter *filter,
                const char *name, gpk_border border, gpk_normalize normalize) {
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = filter;
    p.border = border;
    p.normalize = normalize;
    const gpk_image whole_in = describe(im.dtype, im, im.height),
                    whole_out = describe(out_dtype, im, im.height);
    const size_t out_row = im.width * im.channels * gpk_dtype_size(out_dtype);
    std::vector<unsigned char> want(im.height * out_row);
    CHECK_OK(ctx, gpk_convolve(ctx, &p, &whole_in, im.data.data(), &whole_out, want.data()));
    for (bool skewed : {false, true}) {
        size_t begin, count;
        block_of(im.height, skewed, &begin, &count);
        const gpk_image in = describe(im.dtype, im, count), out = describe(out_dtype, im, count);
        std::vector<unsigned char> got(count * out_row, 0xCD);
        gpk_status s = gpk_mpi_convolve(ctx, MPI_COMM_WORLD, &p, im.height, begin, &in,
                                        im.data.data() + begin * im.row(), &out, got.data());
        const std::string what = std::string(name) + " " + gpk_dtype_name(im.dtype) + "->" +
                                 gpk_dtype_name(out_dtype) + " " + std::to_string(im.width) + "x" +
                                 std::to_string(im.height) + "x" + std::to_string(im.channels) + " border " +
                                 std::to_string(border) + " normalize " + std::to_string(normalize) +
                                 (skewed ? " skewed" : "") + " rank " + std::to_string(rank());
        CHECK_MSG(s == GPK_OK, what + ": " + gpk_context_last_error(ctx));
        CHECK_MSG(same_bits(got.data(), want.data() + begin * out_row, count * out_row),
                  what + ": output rows");
    }
}

const gpk_border kBorders[] = {GPK_BORDER_ZERO, GPK_BORDER_CLAMP, GPK_BORDER_MIRROR, GPK_BORDER_REFLECT,
                               GPK_BORDER_WRAP};
const gpk_normalize kNormalizations[] = {GPK_NORMALIZE_NONE, GPK_NORMALIZE_SUM, GPK_NORMALIZE_MINMAX};

void test_filters(gpk_context *ctx) {
    struct Filters {
        const char *name;
        Filter f;
    };
    Filters filters[] = {{"lp3", named("lp3")},
                         {"smooth5", named("smooth5")},
                         {"log9", named("log9")},
                         {"gauss:1.5", named("gauss:1.5")},
                         {"box:7", named("box:7")}};
    const Image u8 = random_image(GPK_U8, 23, 29, 1, 1), u8c3 = random_image(GPK_U8, 11, 17, 3, 2);
    const Image f32 = random_image(GPK_F32, 19, 21, 1, 3), u16 = random_image(GPK_U16, 13, 15, 2, 4);
    const Image f64 = random_image(GPK_F64, 9, 11, 1, 5);
    // Shorter than the ranks' share of the reach: blocks of 1-3 rows under a 9x9 filter.
    const Image tiny = random_image(GPK_U8, 12, 7, 1, 6);
    for (auto &f : filters)
        for (gpk_border b : kBorders)
            for (gpk_normalize nz : kNormalizations) {
                if (nz == GPK_NORMALIZE_SUM && std::string(f.name).rfind("lp", 0) == 0)
                    continue; // taps sum to 0
                if (std::string(f.name) == "log9" && nz == GPK_NORMALIZE_SUM) continue;
                check_case(ctx, u8, GPK_U8, f.f.get(), f.name, b, nz);
                check_case(ctx, f32, GPK_F32, f.f.get(), f.name, b, nz);
                check_case(ctx, tiny, GPK_U8, f.f.get(), f.name, b, nz);
            }
    for (gpk_border b : kBorders)
        for (gpk_normalize nz : kNormalizations) {
            check_case(ctx, u8c3, GPK_F32, filters[1].f.get(), "smooth5", b, nz);
            check_case(ctx, u16, GPK_U16, filters[3].f.get(), "gauss:1.5", b, nz);
            check_case(ctx, f64, GPK_F64, filters[4].f.get(), "box:7", b, nz);
            if (nz != GPK_NORMALIZE_SUM) check_case(ctx, u8, GPK_F64, filters[2].f.get(), "log9", b, nz);
        }
}

void test_failures(gpk_context *ctx) {
    const Image im = random_image(GPK_U8, 16, 12, 1, 9);
    Filter f = named("lp3");
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = f.get();
    p.normalize = GPK_NORMALIZE_MINMAX;
    size_t begin, count;
    block_of(im.height, false, &begin, &count);
    gpk_image in = describe(GPK_U8, im, count), out = describe(GPK_U8, im, count);
    std::vector<unsigned char> got(count * im.row(), 0xCD);
    const unsigned char *mine = im.data.data() + begin * im.row();
    if (size() > 1) {
        gpk_convolve_params q = p;
        if (rank() == 1) q.border = GPK_BORDER_WRAP;
        gpk_status s =
            gpk_mpi_convolve(ctx, MPI_COMM_WORLD, &q, im.height, begin, &in, mine, &out, got.data());
        CHECK_MSG(s == GPK_ERR_INVALID_ARGUMENT &&
                      contains(gpk_context_last_error(ctx), "params->border differs"),
                  gpk_context_last_error(ctx));
    }
    // The last rank's output stride is shorter than a row: every rank gets that rank's message, and nobody
    // waits for its min/max range.
    gpk_image bad = out;
    if (rank() == size() - 1) bad.stride = 3;
    gpk_status s = gpk_mpi_convolve(ctx, MPI_COMM_WORLD, &p, im.height, begin, &in, mine, &bad, got.data());
    const std::string msg = gpk_context_last_error(ctx);
    CHECK_MSG(s == GPK_ERR_INVALID_ARGUMENT && contains(msg, "stride") &&
                  (size() == 1 || contains(msg, "rank " + std::to_string(size() - 1))),
              msg);
    // An allocation failing on the last rank in the middle of its convolution (its min/max buffer).
    hooks::Hook fault("GPK_TEST_FAULT", rank() == size() - 1 ? "host:2" : nullptr);
    s = gpk_mpi_convolve(ctx, MPI_COMM_WORLD, &p, im.height, begin, &in, mine, &out, got.data());
    fault.set(nullptr);
    CHECK_MSG(s == GPK_ERR_OUT_OF_MEMORY && (size() == 1 || contains(gpk_context_last_error(ctx), "rank ")),
              std::string(gpk_status_string(s)) + ": " + gpk_context_last_error(ctx));
}

} // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    gpk_context *ctx = cpu_context();
    test_filters(ctx);
    test_failures(ctx);
    gpk_context_destroy(ctx);
    return finish("test_mpi_convolve");
}
