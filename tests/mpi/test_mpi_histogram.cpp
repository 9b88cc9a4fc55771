// gpk_mpi_histogram on 1-4 ranks: each rank counts its rows of a whole array (blocks of different heights,
// row padding on some ranks), the sums at a root or on every rank equal gpk_histogram of the whole array,
// saturation included (it clamps the sums, not the parts); all samples equal; u8, u16, i32, f32 and f64;
// 1 and 3 channels. Parameters that differ between ranks and a bad root fail on every rank alike.
#include "mpi_test.hpp"
#include "samples.hpp"

#include <algorithm>
#include <cmath>

using namespace mpitest;

namespace {

struct Case {
    gpk_dtype dtype;
    unsigned channels;
    size_t width, height, bins;
    double lower, upper;
    uint64_t saturate;
    bool all_equal;
};

// The whole array, the same on every rank: values spread a little beyond [lower, upper), NaN among floats.
std::vector<unsigned char> whole_array(const Case &c, uint64_t seed) {
    const size_t sample = gpk_dtype_size(c.dtype), n = c.width * c.height * c.channels;
    std::vector<unsigned char> data(n * sample);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> spread(c.lower - 2, c.upper + 2);
    for (size_t k = 0; k < n; ++k) {
        double v = c.all_equal ? c.lower + 1 : spread(rng);
        if (c.dtype == GPK_U8 || c.dtype == GPK_U16) v = std::max(0.0, std::floor(v));
        if (c.dtype == GPK_I32) v = std::floor(v);
        if ((c.dtype == GPK_F32 || c.dtype == GPK_F64) && k % 97 == 5) v = NAN;
        write_sample(c.dtype, &data[k * sample], v);
    }
    return data;
}

void check_case(gpk_context *ctx, const Case &c, uint64_t seed) {
    const std::vector<unsigned char> data = whole_array(c, seed);
    const size_t sample = gpk_dtype_size(c.dtype), row = c.width * c.channels * sample;
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.dtype = c.dtype;
    p.width = c.width;
    p.height = c.height;
    p.channels = c.channels;
    p.bins = c.bins;
    p.lower = c.lower;
    p.upper = c.upper;
    p.saturate = c.saturate;
    const size_t cells = c.bins * c.channels;
    std::vector<uint64_t> want(cells), want_out(c.channels);
    CHECK_OK(ctx, gpk_histogram(ctx, &p, data.data(), want.data(), want_out.data()));
    for (bool skewed : {false, true}) {
        size_t begin, count;
        block_of(c.height, skewed, &begin, &count);
        // Odd ranks keep their rows with padding (a stride of one more sample per row).
        const size_t stride = rank() % 2 ? row + sample : row;
        std::vector<unsigned char> mine(std::max<size_t>(count, 1) * stride, 0xAB);
        for (size_t i = 0; i < count; ++i) std::memcpy(&mine[i * stride], &data[(begin + i) * row], row);
        gpk_histogram_params local = p;
        local.height = count;
        local.stride = stride;
        for (int root : {0, size() - 1, GPK_MPI_ALL_RANKS}) {
            std::vector<uint64_t> got(cells, 7), got_out(c.channels, 7);
            gpk_status s =
                gpk_mpi_histogram(ctx, MPI_COMM_WORLD, root, &local, mine.data(), got.data(), got_out.data());
            const std::string what = std::string(gpk_dtype_name(c.dtype)) + " x" +
                                     std::to_string(c.channels) + " " + std::to_string(c.bins) +
                                     " bins root " + std::to_string(root) + " rank " + std::to_string(rank());
            CHECK_MSG(s == GPK_OK, what + ": " + gpk_context_last_error(ctx));
            if (root == GPK_MPI_ALL_RANKS || root == rank()) {
                CHECK_MSG(got == want && got_out == want_out,
                          what + ": counts differ from the whole array's");
            } else {
                CHECK_MSG(got == std::vector<uint64_t>(cells, 7),
                          what + ": a rank that does not receive was written");
            }
        }
    }
}

void test_failures(gpk_context *ctx) {
    std::vector<unsigned char> data(64, 3);
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.width = 64;
    std::vector<uint64_t> hist(512);
    gpk_status s = gpk_mpi_histogram(ctx, MPI_COMM_WORLD, size(), &p, data.data(), hist.data(), nullptr);
    CHECK_MSG(s == GPK_ERR_INVALID_ARGUMENT && contains(gpk_context_last_error(ctx), "root is"),
              gpk_context_last_error(ctx));
    if (size() > 1) {
        gpk_histogram_params q = p;
        if (rank() == 1) q.bins = 512;
        s = gpk_mpi_histogram(ctx, MPI_COMM_WORLD, 0, &q, data.data(), hist.data(), nullptr);
        CHECK_MSG(s == GPK_ERR_INVALID_ARGUMENT &&
                      contains(gpk_context_last_error(ctx), "params->bins differs") &&
                      contains(gpk_context_last_error(ctx), "512 on rank 1"),
                  gpk_context_last_error(ctx));
    }
    // A failure on the last rank only (its data NULL): every rank returns it, named.
    s = gpk_mpi_histogram(ctx, MPI_COMM_WORLD, 0, &p, rank() == size() - 1 ? nullptr : data.data(),
                          hist.data(), nullptr);
    CHECK_MSG(s == GPK_ERR_INVALID_ARGUMENT && contains(gpk_context_last_error(ctx), "data is NULL"),
              gpk_context_last_error(ctx));
}

} // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    gpk_context *ctx = cpu_context();
    const Case cases[] = {
        {GPK_U8, 1, 61, 37, 256, 0, 256, 0, false},  {GPK_U8, 3, 17, 29, 256, 0, 256, 0, false},
        {GPK_U8, 1, 64, 48, 256, 0, 256, 0, true},   {GPK_U16, 1, 33, 41, 1024, 0, 1024, 255, false},
        {GPK_I32, 1, 40, 23, 50, -20, 30, 3, false}, {GPK_F32, 3, 19, 31, 40, -1.5, 2.5, 0, false},
        {GPK_F64, 1, 55, 13, 1000, 0, 1, 2, false},  {GPK_U16, 1, 64, 9, 7, 10, 20, 0, true},
    };
    uint64_t seed = 1;
    for (const Case &c : cases) check_case(ctx, c, seed++);
    test_failures(ctx);
    gpk_context_destroy(ctx);
    return finish("test_mpi_histogram");
}
