// Shared pieces of the MPI suite (run under mpirun, 1 to 4 ranks): MPI set-up, each rank's CPU context, and
// the end of a test, where every rank's failures are summed and rank 0 prints the total (exit 0 or 1 on
// every rank). Tests compare each rank's part with the single-process result of the same library, bit for
// bit, every rank computing that reference itself.
#pragma once

#include "check.hpp"
#include "gpk.h"
#include "gpk_mpi.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace mpitest {

inline int rank() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

inline int size() {
    int s = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
}

// A CPU context for this rank: 1 or 2 threads by rank, so that both the single-thread and the overlapped
// pool paths of the CPU slab run.
inline gpk_context *cpu_context(unsigned threads = 0) {
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = GPK_BACKEND_CPU;
    o.threads = threads ? threads : 1 + unsigned(rank() % 2);
    gpk_context *ctx = nullptr;
    if (gpk_context_create(&ctx, &o) != GPK_OK) {
        std::fprintf(stderr, "rank %d: cannot create a CPU context: %s\n", rank(),
                     gpk_context_last_error(nullptr));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return ctx;
}

// Every rank's checks and failures summed; rank 0 prints; the same exit code on every rank.
inline int finish(const char *name) {
    long long counts[2] = {check::checks().load(), check::failures().load()};
    MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank() == 0)
        std::printf("%s on %d rank%s: %lld checks, %lld failed\n", name, size(), size() > 1 ? "s" : "",
                    counts[0], counts[1]);
    MPI_Finalize();
    return counts[1] == 0 ? 0 : 1;
}

// The rank's part of `rows`: the default blocks, or blocks growing with the rank (rank r gets about
// r + 1 shares), each at least one row where rows >= ranks.
inline void block_of(size_t rows, bool skewed, size_t *begin, size_t *count) {
    if (!skewed) {
        gpk_mpi_default_block(begin, count, MPI_COMM_WORLD, rows);
        return;
    }
    const size_t p = size_t(size()), r = size_t(rank()), shares = p * (p + 1) / 2;
    auto edge = [&](size_t k) { // first row of rank k: k rows of one, then the rest by shares
        return k + (rows - p) * (k * (k + 1) / 2) / shares;
    };
    *begin = edge(r);
    *count = (r + 1 == p ? rows : edge(r + 1)) - *begin;
}

inline std::vector<double> random_values(size_t count, double lo, double hi, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> v(count);
    for (double &x : v) x = dist(rng);
    return v;
}

inline bool same_bits(const void *a, const void *b, size_t bytes) {
    return std::memcmp(a, b, bytes) == 0;
}

inline bool contains(const std::string &text, const std::string &part) {
    return text.find(part) != std::string::npos;
}

} // namespace mpitest
