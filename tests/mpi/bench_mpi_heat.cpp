// Heat throughput over MPI ranks (tools/gpu/bench.sh runs it on the GPU machine):
// `bench_mpi_heat N|ROWSxCOLS ITER [REPS] [auto|host|both]` runs N x N (or ROWS x COLS: weak scaling, a
// fixed block a rank) f64 heat for 3 ITER iterations, REPS times
// (default 3) after a warm-up, on the ranks' own contexts (gpk_mpi_context_create: CUDA where a device is
// usable), with the halo paths chosen automatically (auto), with host staging forced (host, the test hook
// GPK_TEST_MPI_HALO=host), or both one after the other (the default). On a CUDA rank the blocks are in
// device memory (gpk_internal_device_alloc), as a GPU code's would be. The time per
// iteration is taken inside the loop, from the progress callbacks at the first pass boundary at or after
// iteration ITER and at 3 ITER, the run's end (seconds since the loop started; the slowest rank's), so that a
// call's uploads and set-up (seconds at 16384^2 from pageable memory) do not enter it; the call's fixed cost
// is its wall time less 3 ITER such iterations. Medians over the repeats:
//   one    gpk_heat_run of the whole grid (on one rank only: run it with -np 1);
//   ranks  gpk_mpi_heat_run, every rank its default block (ranks-auto, ranks-host by the paths);
//   block  (several ranks) gpk_heat_run of each rank's own block, all ranks at once: the passes without
//          their exchanges, and "pass-MODE": ms a pass of the ranks and of the block alone (levels a
//          pass), and what a pass of the ranks costs beyond the block's alone, in µs;
//   halo   one halo exchange as a pass makes it on the path in force (gpk_mpi_halo_paths: k rows of COLS
//          doubles with each neighbour, k the slab's pass length), median of 50, and the bytes a rank
//          sends per pass.
// Prints the links' paths ("path ..."), one line a measurement: "what ranks ROWSxCOLS iter
// ms_per_iteration GCells_per_s fixed_s SECONDS", and "halo-MODE ranks ROWSxCOLS rows microseconds
// bytes_per_neighbour BYTES".
#include "gpk_internal.h"
#include "gpk_mpi.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_rank = 0, g_size = 1;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

size_t g_rows = 0, g_cols = 0;

void line(const char *what, size_t iter, double per, double fixed) {
    if (g_rank == 0)
        std::printf("%-6s %d %zux%zu %zu %.4f %.2f fixed_s %.4f\n", what, g_size, g_rows, g_cols, iter,
                    1e3 * per, double(g_rows) * double(g_cols) / per / 1e9, fixed);
}

// The loop's clock at the first progress call after ITER (`reached`, a pass boundary) and at 3 ITER.
struct Clock {
    size_t first = 0, reached = 0;
    double at_first = 0, at_last = 0;
};

int on_progress(size_t niter, double, double time, void *user) {
    Clock &c = *static_cast<Clock *>(user);
    if (c.reached == 0 && niter < 3 * c.first) {
        c.reached = niter;
        c.at_first = time;
    }
    if (niter == 3 * c.first) c.at_last = time;
    return 0;
}

// Runs `run` (collective) REPS times after a warm-up; medians of the slowest rank's in-loop time per
// iteration and of its call's wall time less the iterations.
template <class Run> double timed(const char *what, size_t iter, int reps, Clock &clock, Run &&run) {
    run();
    std::vector<double> per, fixed;
    for (int r = 0; r < reps; ++r) {
        clock.at_first = clock.at_last = 0;
        clock.reached = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        run();
        const size_t from = clock.reached ? clock.reached : 0; // no call before the end: from the start
        double v[2] = {now() - t0, (clock.at_last - clock.at_first) / double(3 * iter - from)};
        MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        per.push_back(v[1]);
        fixed.push_back(v[0] - v[1] * double(3 * iter));
    }
    line(what, iter, median(per), median(fixed));
    return median(per);
}

} // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (argc < 3) {
        if (g_rank == 0)
            std::fprintf(stderr, "usage: bench_mpi_heat N|ROWSxCOLS ITER [REPS] [auto|host|both]\n");
        MPI_Finalize();
        return 2;
    }
    char *x = nullptr, *end = nullptr;
    const size_t rows = size_t(std::strtoull(argv[1], &x, 10)), iter = size_t(std::atoll(argv[2]));
    const size_t cols = *x == 'x' ? size_t(std::strtoull(x + 1, &end, 10)) : rows;
    g_rows = rows;
    g_cols = cols;
    if (rows == 0 || cols == 0 || iter == 0 || *(*x == 'x' ? end : x) != '\0') {
        if (g_rank == 0)
            std::fprintf(stderr, "bench_mpi_heat: bad size '%s' or ITER '%s'\n", argv[1], argv[2]);
        MPI_Finalize();
        return 2;
    }
    const int reps = argc > 3 ? std::atoi(argv[3]) : 3;
    const std::string modes = argc > 4 ? argv[4] : "both";
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.device = GPK_MPI_DEVICE_BY_RANK;
    gpk_context *ctx = nullptr;
    if (gpk_mpi_context_create(&ctx, MPI_COMM_WORLD, &o) != GPK_OK) {
        std::fprintf(stderr, "rank %d: %s\n", g_rank, gpk_context_last_error(nullptr));
        MPI_Finalize();
        return 1;
    }
    const bool cuda = gpk_context_backend(ctx) == GPK_BACKEND_CUDA;
    if (g_rank == 0)
        std::printf("# backend %s, blocks in %s memory\n", gpk_backend_name(gpk_context_backend(ctx)),
                    cuda ? "device" : "host");
    size_t begin = 0, count = 0;
    gpk_mpi_default_block(&begin, &count, MPI_COMM_WORLD, rows);
    // Inputs of the rank's rows only (a smooth field; the values do not change the time).
    std::vector<double> t(count * cols), c(count * cols, 0.5), out(count * cols);
    for (size_t i = 0; i < count; ++i)
        for (size_t j = 0; j < cols; ++j) t[i * cols + j] = double((begin + i + 3 * j) % 97);
    const size_t bytes = count * cols * sizeof(double);
    void *dev[3] = {nullptr, nullptr, nullptr};
    if (cuda) {
        for (void *&d : dev)
            if (gpk_internal_device_alloc(ctx, bytes, &d) != GPK_OK) {
                std::fprintf(stderr, "rank %d: %s\n", g_rank, gpk_context_last_error(ctx));
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        gpk_internal_copy_rows(ctx, dev[0], bytes, t.data(), bytes, bytes, 1);
        gpk_internal_copy_rows(ctx, dev[1], bytes, c.data(), bytes, bytes, 1);
    }
    const double *tin = cuda ? static_cast<const double *>(dev[0]) : t.data();
    const double *cin = cuda ? static_cast<const double *>(dev[1]) : c.data();
    double *tout = cuda ? static_cast<double *>(dev[2]) : out.data();
    gpk_heat_params p;
    gpk_heat_params_init(&p);
    p.rows = rows;
    p.cols = cols;
    p.maxiter = 3 * iter;
    Clock clock;
    clock.first = iter;
    p.on_progress = on_progress;
    p.progress_interval = iter;
    p.user_data = &clock;
    gpk_status status = GPK_OK;
    if (g_size == 1)
        timed("one", iter, reps, clock, [&] { status = gpk_heat_run(ctx, &p, tin, cin, tout, nullptr); });
    // Each rank's GPU on its own block alone through gpk_heat_run (the block's edge rows as fixed rows: the
    // same cells computed), all ranks at once: what a pass of the ranks would cost without its exchange.
    double block_alone = 0;
    if (g_size > 1) {
        gpk_heat_params b = p;
        b.rows = count;
        block_alone = timed("block", iter, reps, clock,
                            [&] { status = gpk_heat_run(ctx, &b, tin, cin, tout, nullptr); });
    }
    const unsigned levels = gpk_internal_heat_slab_levels(ctx);
    for (const char *mode : {"auto", "host"}) {
        if (modes != "both" && modes != mode) continue;
        if (g_size == 1 && std::string(mode) == "host" && modes == "both") continue; // no halos on 1 rank
        if (std::string(mode) == "host" && !gpk_internal_test_hooks()) {
            if (g_rank == 0) std::printf("host staging forced: skipped (this libgpk has no test hooks)\n");
            continue;
        }
        setenv("GPK_TEST_MPI_HALO", std::string(mode) == "host" ? "host" : "", 1);
        gpk_internal_reload_test_hooks();
        // The links' paths and one exchange on them.
        char paths[8192] = {};
        double seconds = 0;
        if (gpk_mpi_halo_paths(ctx, MPI_COMM_WORLD, cols, 50, paths, sizeof paths, &seconds) != GPK_OK) {
            if (g_rank == 0) std::fprintf(stderr, "halo paths: %s\n", gpk_context_last_error(ctx));
            status = GPK_ERR_INTERNAL;
            break;
        }
        const std::string what = std::string("ranks-") + mode;
        const double per = timed(what.c_str(), iter, reps, clock, [&] {
            status = gpk_mpi_heat_run(ctx, MPI_COMM_WORLD, &p, begin, count, tin, cin, tout, nullptr);
        });
        if (status != GPK_OK && g_rank == 0) std::fprintf(stderr, "heat: %s\n", gpk_context_last_error(ctx));
        if (g_rank == 0) {
            std::printf("path %s:\n%s", mode, paths);
            if (g_size > 1)
                std::printf("halo-%s %d %zux%zu %u %.1f bytes_per_neighbour %zu\n", mode, g_size, rows, cols,
                            levels, 1e6 * seconds, size_t(levels) * cols * sizeof(double));
            if (g_size > 1)
                std::printf("pass-%s %d %zux%zu levels %u ms_per_pass %.4f block_alone_ms_per_pass %.4f "
                            "overhead_us_per_pass %.1f\n",
                            mode, g_size, rows, cols, levels, 1e3 * per * levels, 1e3 * block_alone * levels,
                            1e6 * (per - block_alone) * levels);
        }
    }
    for (void *d : dev) gpk_internal_device_free(ctx, d);
    gpk_context_destroy(ctx);
    MPI_Finalize();
    return status == GPK_OK ? 0 : 1;
}
