// gpk_mpi_convolve on 1-4 ranks: each rank's rows of the output equal gpk_convolve of the whole image, bit
// for bit, for every border rule and normalisation, exact integer and float paths, 2D and separable
// filters, default blocks and skewed ones, and images so short that a block is thinner than the filter's
// reach (rows then come from several ranks, and for wrap from the other end). Blocks of exactly 2 * reach
// rows and about it (the edge rows of a block convolved in place come from one stacked image; thinner
// blocks take the widened path, ranks of both kinds in one call), with strided rows whose padding stays
// untouched. A failure on one rank and parameters that differ fail on every rank alike.
#include "mpi_test.hpp"
#include "hooks.hpp"
#include "samples.hpp"

#include <cmath>
#include <cstring>
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

// Rank r's block has counts[r % counts.size()] rows; rows of in_pad and out_pad samples beyond each row.
void check_blocks_case(gpk_context *ctx, gpk_dtype in_dtype, gpk_dtype out_dtype, unsigned channels,
                       const gpk_filter *filter, const char *name, gpk_border border, gpk_normalize normalize,
                       const std::vector<size_t> &counts, size_t in_pad, size_t out_pad) {
    size_t begin = 0, height = 0;
    for (int r = 0; r < size(); ++r) {
        if (r == rank()) begin = height;
        height += counts[size_t(r) % counts.size()];
    }
    const size_t count = counts[size_t(rank()) % counts.size()], width = 7;
    const Image im = random_image(in_dtype, width, height, channels, 100 + height);
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = filter;
    p.border = border;
    p.normalize = normalize;
    const gpk_image whole_in = describe(in_dtype, im, height), whole_out = describe(out_dtype, im, height);
    const size_t out_row = width * channels * gpk_dtype_size(out_dtype);
    std::vector<unsigned char> want(height * out_row);
    CHECK_OK(ctx, gpk_convolve(ctx, &p, &whole_in, im.data.data(), &whole_out, want.data()));
    // This rank's rows at their strides.
    gpk_image in = describe(in_dtype, im, count), out = describe(out_dtype, im, count);
    in.stride = im.row() + in_pad * gpk_dtype_size(in_dtype);
    out.stride = out_row + out_pad * gpk_dtype_size(out_dtype);
    std::vector<unsigned char> mine(count * in.stride, 0xAB), got(count * out.stride, 0xCD);
    for (size_t y = 0; y < count; ++y)
        std::memcpy(&mine[y * in.stride], &im.data[(begin + y) * im.row()], im.row());
    const gpk_status s =
        gpk_mpi_convolve(ctx, MPI_COMM_WORLD, &p, height, begin, &in, mine.data(), &out, got.data());
    std::string shape;
    for (size_t c : counts) shape += std::to_string(c) + ",";
    const std::string what = std::string(name) + " " + gpk_dtype_name(in_dtype) + "->" +
                             gpk_dtype_name(out_dtype) + "x" + std::to_string(channels) + " blocks " + shape +
                             " border " + std::to_string(border) + " normalize " + std::to_string(normalize) +
                             " pads " + std::to_string(in_pad) + "," + std::to_string(out_pad) + " rank " +
                             std::to_string(rank());
    CHECK_MSG(s == GPK_OK, what + ": " + gpk_context_last_error(ctx));
    bool rows_same = true, pads_kept = true;
    for (size_t y = 0; y < count; ++y) {
        rows_same = rows_same && same_bits(&got[y * out.stride], &want[(begin + y) * out_row], out_row);
        for (size_t b = out_row; b < out.stride; ++b)
            pads_kept = pads_kept && got[y * out.stride + b] == 0xCD;
    }
    CHECK_MSG(rows_same, what + ": output rows");
    CHECK_MSG(pads_kept, what + ": bytes between rows written");
}

// Reach 1 to 4, 2D and separable filters; blocks of 2 * reach rows, one more, one fewer (widened on those
// ranks), and a first block of one row (the next block's rows above then start at the image's top).
void test_block_heights(gpk_context *ctx) {
    struct Case {
        const char *name;
        size_t reach;
    };
    const Case cases[] = {{"lp3", 1},   {"box:3", 1},   {"smooth5", 2}, {"box:5", 2},
                          {"box:7", 3}, {"gauss:1", 3}, {"log9", 4},    {"box:9", 4}};
    for (const Case &c : cases) {
        Filter f = named(c.name);
        const size_t r2 = 2 * c.reach;
        const std::vector<std::vector<size_t>> shapes = {
            {r2}, {r2, r2 + 1}, {r2 + 1, r2 - 1}, {1, r2, r2}, {r2 + 3, r2, 1}};
        for (const auto &shape : shapes)
            for (gpk_border b : kBorders) {
                const bool sums_to_zero = c.name[0] == 'l';
                check_blocks_case(ctx, GPK_U8, GPK_U8, 1, f.get(), c.name, b,
                                  sums_to_zero ? GPK_NORMALIZE_NONE : GPK_NORMALIZE_SUM, shape, 0, 0);
                check_blocks_case(ctx, GPK_F32, GPK_F32, 1, f.get(), c.name, b, GPK_NORMALIZE_NONE, shape, 3,
                                  1);
                check_blocks_case(ctx, GPK_U8, GPK_F32, 3, f.get(), c.name, b, GPK_NORMALIZE_NONE, shape, 1,
                                  2);
            }
        for (gpk_border b : {GPK_BORDER_MIRROR, GPK_BORDER_WRAP})
            check_blocks_case(ctx, GPK_U16, GPK_U16, 2, f.get(), c.name, b, GPK_NORMALIZE_MINMAX,
                              {r2, r2 - 1}, 2, 1);
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
    if (hooks::skip_part("an allocation failing on the last rank (GPK_TEST_FAULT)")) return;
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
    test_block_heights(ctx);
    test_failures(ctx);
    gpk_context_destroy(ctx);
    return finish("test_mpi_convolve");
}
