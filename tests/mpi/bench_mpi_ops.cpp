// Convolution and histogram throughput over MPI ranks on blocks in each rank's device memory
// (tools/gpu/bench.sh, stage mpiops, runs it): `bench_mpi_ops conv-u8 W H [REPS]` (u8 lp3, 3 x 3),
// `bench_mpi_ops conv-f32 W H [REPS]` (f32 box:17, separable, radius 8), `bench_mpi_ops hist SAMPLES [REPS]`
// (u32, 65536 bins over [0, 65536), the samples spread over the ranks). Every rank takes its default block of
// rows (for the histogram, SAMPLES / ranks samples in rows of 2^16), and times, median of REPS (default 10)
// after a warm-up:
//   alone  the same call of gpk.h on its own block, the ranks one after the other (one GPU on its own block);
//   block  (several ranks) that call on every rank together: what sharing the host (or a GPU) costs without
//          the gpk_mpi call's collectives, halos and reduction;
//   ranks  the gpk_mpi call on every rank together (halo rows and min/max or the counts' reduction).
// Prints "what op ranks size seconds Gsamples_per_s_per_gpu" (the slowest rank's time). Blocks are filled
// on the device from a host pattern; values do not change the time.
#include "gpk_internal.h"
#include "gpk_mpi.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

int g_rank = 0, g_size = 1;

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void die(gpk_context *ctx, const std::string &what) {
    std::fprintf(stderr, "rank %d: %s: %s\n", g_rank, what.c_str(), gpk_context_last_error(ctx));
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
}

// Device memory filled with a repeated host pattern.
void *device_block(gpk_context *ctx, size_t bytes, unsigned seed) {
    void *p = nullptr;
    if (gpk_internal_device_alloc(ctx, bytes, &p) != GPK_OK) die(ctx, "device memory");
    std::vector<unsigned char> pattern(std::min<size_t>(bytes, size_t(64) << 20));
    unsigned x = seed * 2654435761u + 1;
    for (auto &b : pattern) b = (unsigned char)((x = x * 1664525u + 1013904223u) >> 24);
    for (size_t at = 0; at < bytes; at += pattern.size()) {
        const size_t n = std::min(pattern.size(), bytes - at);
        if (gpk_internal_copy_rows(ctx, static_cast<char *>(p) + at, n, pattern.data(), n, n, 1) != GPK_OK)
            die(ctx, "fill");
    }
    return p;
}

// Median over reps of the slowest rank's time of `run` (after one warm-up), every rank together.
template <class Run> double together(int reps, Run &&run) {
    run();
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        run();
        double dt = now() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        t.push_back(dt);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

// The same, the ranks one after the other (each GPU alone); the slowest rank's median.
template <class Run> double alone(int reps, Run &&run) {
    double mine = 0;
    for (int r = 0; r < g_size; ++r) {
        if (r == g_rank) {
            run();
            std::vector<double> t;
            for (int k = 0; k < reps; ++k) {
                double t0 = now();
                run();
                t.push_back(now() - t0);
            }
            std::sort(t.begin(), t.end());
            mine = t[t.size() / 2];
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mine;
}

void line(const char *what, const std::string &op, const std::string &size, double seconds, double per_gpu) {
    if (g_rank == 0)
        std::printf("%-6s %s %d %s %.6f %.2f\n", what, op.c_str(), g_size, size.c_str(), seconds,
                    per_gpu / seconds / 1e9);
}

void convolve(gpk_context *ctx, bool f32, size_t w, size_t h, int reps) {
    size_t begin = 0, count = 0;
    gpk_mpi_default_block(&begin, &count, MPI_COMM_WORLD, h);
    gpk_filter *f = nullptr;
    if (gpk_filter_create_named(&f, f32 ? "box:17" : "lp3") != GPK_OK) die(nullptr, "filter");
    const gpk_dtype dt = f32 ? GPK_F32 : GPK_U8;
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = f;
    gpk_image in, out;
    gpk_image_init(&in, dt, w, count, 1);
    gpk_image_init(&out, dt, w, count, 1);
    const size_t bytes = w * count * gpk_dtype_size(dt);
    void *src = device_block(ctx, bytes, 1), *dst = device_block(ctx, bytes, 2);
    if (f32) { // values in [0, 1): the byte pattern as floats could be NaN
        std::vector<float> v(std::min<size_t>(w * count, size_t(16) << 20));
        for (size_t i = 0; i < v.size(); ++i) v[i] = float((i * 2654435761u) % 1000) / 1000.0f;
        const size_t vb = v.size() * sizeof(float);
        for (size_t at = 0; at < bytes; at += vb) {
            const size_t n = std::min(vb, bytes - at);
            gpk_internal_copy_rows(ctx, static_cast<char *>(src) + at, n, v.data(), n, n, 1);
        }
    }
    const std::string op = f32 ? "conv-f32-box17" : "conv-u8-lp3";
    const std::string size = std::to_string(w) + "x" + std::to_string(h);
    const double pixels = double(w) * double(count);
    gpk_status s = GPK_OK;
    auto plain = [&] { s = gpk_convolve(ctx, &p, &in, src, &out, dst); };
    line("alone", op, size, alone(reps, plain), pixels);
    if (g_size > 1) line("block", op, size, together(reps, plain), pixels);
    if (s != GPK_OK) die(ctx, "gpk_convolve");
    line(
        "ranks", op, size,
        together(reps, [&] { s = gpk_mpi_convolve(ctx, MPI_COMM_WORLD, &p, h, begin, &in, src, &out, dst); }),
        pixels);
    if (s != GPK_OK) die(ctx, "gpk_mpi_convolve");
    gpk_internal_device_free(ctx, src);
    gpk_internal_device_free(ctx, dst);
    gpk_filter_destroy(f);
}

void histogram(gpk_context *ctx, double total, int reps) {
    // Rows of 2^16 samples: alone and ranks count the same samples, SAMPLES / ranks on each rank (rounded
    // down to whole rows; the size column gives the samples counted).
    const size_t mine = size_t(total / g_size), width = std::min<size_t>(mine, size_t(1) << 16);
    const size_t height = mine / width;
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.dtype = GPK_U32;
    p.width = width;
    p.height = height;
    p.bins = 65536;
    p.lower = 0;
    p.upper = 65536;
    void *data = device_block(ctx, width * height * sizeof(uint32_t), 3);
    std::vector<uint64_t> hist(p.bins);
    const double samples = double(width) * double(height);
    const std::string size = std::to_string(width * height * size_t(g_size));
    gpk_status s = GPK_OK;
    auto plain = [&] { s = gpk_histogram(ctx, &p, data, hist.data(), nullptr); };
    line("alone", "hist-u32-65536", size, alone(reps, plain), samples);
    if (g_size > 1) line("block", "hist-u32-65536", size, together(reps, plain), samples);
    if (s != GPK_OK) die(ctx, "gpk_histogram");
    line("ranks", "hist-u32-65536", size,
         together(reps,
                  [&] {
                      s = gpk_mpi_histogram(ctx, MPI_COMM_WORLD, 0, &p, data,
                                            g_rank == 0 ? hist.data() : nullptr, nullptr);
                  }),
         samples);
    if (s != GPK_OK) die(ctx, "gpk_mpi_histogram");
    gpk_internal_device_free(ctx, data);
}

} // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    const std::string op = argc > 1 ? argv[1] : "";
    const bool conv = op == "conv-u8" || op == "conv-f32";
    if ((!conv && op != "hist") || argc < (conv ? 4 : 3)) {
        if (g_rank == 0)
            std::fprintf(stderr, "usage: bench_mpi_ops conv-u8|conv-f32 W H [REPS] | hist SAMPLES [REPS]\n");
        MPI_Finalize();
        return 2;
    }
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = GPK_BACKEND_CUDA;
    o.device = GPK_MPI_DEVICE_BY_RANK;
    gpk_context *ctx = nullptr;
    if (gpk_mpi_context_create(&ctx, MPI_COMM_WORLD, &o) != GPK_OK) {
        if (g_rank == 0) std::printf("SKIP: %s\n", gpk_context_last_error(nullptr));
        MPI_Finalize();
        return 77;
    }
    const int reps = std::atoi(argc > (conv ? 4 : 3) ? argv[conv ? 4 : 3] : "10");
    if (g_rank == 0) std::printf("# what op ranks size seconds Gsamples_per_s_per_gpu\n");
    if (conv)
        convolve(ctx, op == "conv-f32", size_t(std::atoll(argv[2])), size_t(std::atoll(argv[3])),
                 std::max(reps, 1));
    else
        histogram(ctx, std::atof(argv[2]), std::max(reps, 1));
    gpk_context_destroy(ctx);
    MPI_Finalize();
    return 0;
}
