// Heat throughput over MPI ranks (tools/gpu/mpi.sh runs it on the H100): `bench_mpi_heat N ITER [REPS]`
// times N x N f64 heat runs of ITER and 2 ITER iterations, each the median of REPS (default 3) after a
// warm-up, on the ranks' own contexts (gpk_mpi_context_create: CUDA where a device is usable), and gives
// the time per iteration from their difference (a call's fixed cost cancels) and that fixed cost:
//   one    gpk_heat_run of the whole grid (on one rank only: run it with -np 1);
//   ranks  gpk_mpi_heat_run, every rank its default block (the time of the slowest rank);
//   plain  the same with GPK_TEST_MPI_OVERLAP=0: the exchange after every row instead of beside the rows
//          away from the edges (what the overlap hides is plain - ranks);
//   halo   one halo exchange as the solver makes it (k rows of N doubles to each neighbour, Isend/Irecv,
//          host buffers), median of 50, and the bytes a rank sends per pass.
// Prints one line a measurement: "what ranks N iter ms_per_iteration GCells_per_s fixed_s SECONDS", and
// "halo ranks N rows seconds bytes_per_neighbour BYTES".
#include "gpk_mpi.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

// The per-iteration time from runs of `iter` and 2 * `iter` iterations (a call's fixed cost, uploads and
// set-up, cancels out), and that fixed cost.
void line(const char *what, size_t n, size_t iter, double once, double twice) {
    const double per = (twice - once) / double(iter), fixed = once - per * double(iter);
    if (g_rank == 0)
        std::printf("%-6s %d %zu %zu %.4f %.2f fixed_s %.4f\n", what, g_size, n, iter, 1e3 * per,
                    double(n) * double(n) / per / 1e9, fixed);
}

// Times `run` (collective) REPS times after a warm-up: the slowest rank's time, median over the repeats.
template <class Run> double timed(int reps, Run &&run) {
    run();
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        run();
        double t = now() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        times.push_back(t);
    }
    return median(times);
}

} // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (argc < 3) {
        if (g_rank == 0) std::fprintf(stderr, "usage: bench_mpi_heat N ITER [REPS]\n");
        MPI_Finalize();
        return 2;
    }
    const size_t n = size_t(std::atoll(argv[1])), iter = size_t(std::atoll(argv[2]));
    const int reps = argc > 3 ? std::atoi(argv[3]) : 3;
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.device = GPK_MPI_DEVICE_BY_RANK;
    gpk_context *ctx = nullptr;
    if (gpk_mpi_context_create(&ctx, MPI_COMM_WORLD, &o) != GPK_OK) {
        std::fprintf(stderr, "rank %d: %s\n", g_rank, gpk_context_last_error(nullptr));
        MPI_Finalize();
        return 1;
    }
    if (g_rank == 0) std::printf("# backend %s\n", gpk_backend_name(gpk_context_backend(ctx)));
    size_t begin = 0, count = 0;
    gpk_mpi_default_block(&begin, &count, MPI_COMM_WORLD, n);
    // Inputs of the rank's rows only (a smooth field; the values do not change the time).
    std::vector<double> t(count * n), c(count * n, 0.5), out(count * n);
    for (size_t i = 0; i < count; ++i)
        for (size_t j = 0; j < n; ++j) t[i * n + j] = double((begin + i + 3 * j) % 97);
    gpk_heat_params p;
    gpk_heat_params_init(&p);
    p.rows = n;
    p.cols = n;
    p.maxiter = iter;
    gpk_status status = GPK_OK;
    auto both = [&](const char *what, auto &&run) {
        p.maxiter = iter;
        const double once = timed(reps, run);
        p.maxiter = 2 * iter;
        const double twice = timed(reps, run);
        line(what, n, iter, once, twice);
    };
    if (g_size == 1)
        both("one", [&] { status = gpk_heat_run(ctx, &p, t.data(), c.data(), out.data(), nullptr); });
    auto ranks = [&] {
        status =
            gpk_mpi_heat_run(ctx, MPI_COMM_WORLD, &p, begin, count, t.data(), c.data(), out.data(), nullptr);
    };
    both("ranks", ranks);
    setenv("GPK_TEST_MPI_OVERLAP", "0", 1);
    both("plain", ranks);
    unsetenv("GPK_TEST_MPI_OVERLAP");
    if (status != GPK_OK && g_rank == 0) std::fprintf(stderr, "heat: %s\n", gpk_context_last_error(ctx));
    // One halo exchange of k = 4 rows (the CPU and CUDA passes' length) with each neighbour.
    const int k = 4, up = g_rank > 0 ? g_rank - 1 : MPI_PROC_NULL,
              down = g_rank + 1 < g_size ? g_rank + 1 : MPI_PROC_NULL;
    std::vector<double> send(2 * k * n, 1.0), recv(2 * k * n);
    std::vector<double> times;
    for (int r = 0; r < 51; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        MPI_Request req[4];
        MPI_Irecv(recv.data(), int(k * n), MPI_DOUBLE, up, 9, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(recv.data() + k * n, int(k * n), MPI_DOUBLE, down, 9, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(send.data(), int(k * n), MPI_DOUBLE, up, 9, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(send.data() + k * n, int(k * n), MPI_DOUBLE, down, 9, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        double dt = now() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r > 0) times.push_back(dt);
    }
    if (g_rank == 0)
        std::printf("halo   %d %zu %d %.6f bytes_per_neighbour %zu\n", g_size, n, k, median(times),
                    size_t(k) * n * sizeof(double));
    gpk_context_destroy(ctx);
    MPI_Finalize();
    return status == GPK_OK ? 0 : 1;
}
