// gpk_mpi_heat_run on 1-4 ranks against gpk_heat_run of the whole grid in the same process, bit for bit:
// the rank's rows of the final grid, every report field but the time, the periodic reports, the progress
// calls; the course pattern, random grids whose rows do not divide evenly (default and skewed blocks, one
// row a rank), convergence inside a pass, checkpoints and resuming, a callback that stops the run on one
// rank; and the failures: parameters that differ between ranks, blocks that do not tile, more ranks than
// rows, bad data on one rank, an allocation failing on one rank. Every failure must reach every rank with
// the same status and message (a hang would fail the test by its time limit).
#include "heat_resume.hpp"
#include "hooks.hpp"
#include "mpi_test.hpp"

#include <fstream>

using namespace mpitest;

namespace {

using heat_resume::params_of;
using heat_resume::Setup;
using Result = heat_resume::Run;

Result single(gpk_context *ctx, const Setup &s, const std::vector<double> &t, const std::vector<double> &c) {
    Result r;
    r.grid.assign(s.n * s.m, -1.0);
    gpk_heat_params p = params_of(s, &r.rec);
    r.status = gpk_heat_run(ctx, &p, t.data(), c.data(), r.grid.data(), &r.final);
    r.message = gpk_context_last_error(ctx);
    return r;
}

// The rank's block of the whole grid's inputs through gpk_mpi_heat_run; `edit` may change the parameters.
template <class Edit>
Result distributed(gpk_context *ctx, const Setup &s, const std::vector<double> &t,
                   const std::vector<double> &c, size_t begin, size_t count, Edit &&edit,
                   size_t stop_progress_at = 0) {
    Result r;
    r.rec.stop_progress_at = stop_progress_at;
    r.grid.assign(count * s.m, -1.0);
    gpk_heat_params p = params_of(s, &r.rec);
    edit(p);
    r.status = gpk_mpi_heat_run(ctx, MPI_COMM_WORLD, &p, begin, count, t.data() + begin * s.m,
                                c.data() + begin * s.m, r.grid.data(), &r.final);
    r.message = gpk_context_last_error(ctx);
    return r;
}

Result distributed(gpk_context *ctx, const Setup &s, const std::vector<double> &t,
                   const std::vector<double> &c, size_t begin, size_t count) {
    return distributed(ctx, s, t, c, begin, count, [](gpk_heat_params &) {});
}

bool same_reports(const std::vector<gpk_heat_report> &a, const std::vector<gpk_heat_report> &b) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k)
        if (!heat_resume::same_report(a[k], b[k])) return false;
    return true;
}

std::string label(const Setup &s, bool skewed) {
    return std::to_string(s.n) + "x" + std::to_string(s.m) + " maxiter " + std::to_string(s.maxiter) +
           " period " + std::to_string(s.period) + (skewed ? " skewed blocks" : " default blocks") +
           " on rank " + std::to_string(rank());
}

// The rank's part of a distributed run equals the single-process run.
// Progress comes at pass boundaries: with `same_passes` (the slabs' passes as long as one process's),
// the same calls.
void compare(const Result &got, const Result &want, size_t begin, size_t count, size_t m,
             const std::string &what, bool same_passes = true) {
    CHECK_MSG(got.status == want.status, what + ": " + got.message);
    CHECK_MSG(same_bits(got.grid.data(), want.grid.data() + begin * m, count * m * sizeof(double)),
              what + ": final grid");
    CHECK_MSG(heat_resume::same_report(got.final, want.final), what + ": final report");
    CHECK_MSG(same_reports(got.rec.finals, want.rec.finals), what + ": final callback");
    CHECK_MSG(same_reports(got.rec.periodic, want.rec.periodic), what + ": periodic reports");
    if (same_passes)
        CHECK_MSG(got.rec.progress_iters == want.rec.progress_iters &&
                      same_bits(got.rec.progress_maxdiffs.data(), want.rec.progress_maxdiffs.data(),
                                want.rec.progress_maxdiffs.size() * sizeof(double)),
                  what + ": progress calls");
}

std::vector<double> maxdiffs(gpk_context *ctx, const Setup &s, const std::vector<double> &t,
                             const std::vector<double> &c);

void check_case(gpk_context *ctx, const Setup &s, const std::vector<double> &t,
                const std::vector<double> &c) {
    const Result want = single(ctx, s, t, c);
    CHECK_MSG(want.status == GPK_OK, want.message);
    for (bool skewed : {false, true}) {
        if (skewed && s.n < size_t(size())) continue;
        size_t begin, count;
        block_of(s.n, skewed, &begin, &count);
        // Passes of 4 iterations in one process, of min(4, the fewest rows of a block) on the ranks.
        unsigned long long fewest = count;
        MPI_Allreduce(MPI_IN_PLACE, &fewest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
        const Result got = distributed(ctx, s, t, c, begin, count);
        compare(got, want, begin, count, s.m, label(s, skewed), fewest >= 4);
        if (fewest < 4 && s.progress) {
            const heat_resume::ProgressRule rule{s.progress, 0, got.final.niter, size_t(fewest)};
            const std::string broken = heat_resume::progress_rule_broken(
                got.rec.progress_iters, got.rec.progress_maxdiffs, rule, maxdiffs(ctx, s, t, c));
            CHECK_MSG(broken.empty(), label(s, skewed) + ": " + broken);
        }
    }
}

// The maxdiff of every iteration of a free run (a periodic report every iteration).
std::vector<double> maxdiffs(gpk_context *ctx, const Setup &s, const std::vector<double> &t,
                             const std::vector<double> &c) {
    return heat_resume::every_maxdiff(s, [&](const Setup &free) { return single(ctx, free, t, c); });
}

// A threshold that the run first falls below at iteration k (0 when none does).
double threshold_at(const std::vector<double> &md, size_t k) {
    double before = INFINITY;
    for (size_t i = 0; i + 1 < k; ++i) before = std::min(before, md[i]);
    return md[k - 1] < before ? 0.5 * (md[k - 1] + (std::isinf(before) ? 2 * md[k - 1] : before)) : 0;
}

void test_random_grids(gpk_context *ctx) {
    const size_t shapes[][2] = {{37, 23}, {53, 41}, {7, 5}, {257, 263}};
    uint64_t seed = 11;
    for (auto nm : shapes) {
        const size_t n = nm[0], m = nm[1];
        auto t = random_values(n * m, -100, 100, seed), c = random_values(n * m, 0, 1, seed + 1);
        seed += 2;
        check_case(ctx, {n, m, 30, 0.0, 7, 3}, t, c);
        check_case(ctx, {n, m, 9, 0.0, 0, 1}, t, c);
        std::vector<double> md = maxdiffs(ctx, {n, m, 30, 0.0, 0, 0}, t, c);
        for (size_t k : {13, 16}) // inside a pass of four, and at its end
            if (double threshold = threshold_at(md, k); threshold > 0)
                check_case(ctx, {n, m, 30, threshold, 5, 2}, t, c);
    }
    // One row a rank: passes of one iteration.
    const size_t n = size_t(size());
    auto t = random_values(n * 9, -5, 5, 99), c = random_values(n * 9, 0, 1, 98);
    check_case(ctx, {n, 9, 11, 0.0, 4, 1}, t, c);
}

// The course's pattern (a P2 or P5 PGM, maxval up to 65535), as the course's check runs it.
bool test_pat1(gpk_context *ctx) {
    const char *dir = std::getenv("GPK_TEST_DATA");
    if (!dir) return false;
    std::ifstream in(std::string(dir) + "/pat1_100x150.pgm", std::ios::binary);
    std::string magic;
    auto number = [&](size_t &v) {
        while (in >> std::ws && in.peek() == '#') in.ignore(1 << 20, '\n');
        return bool(in >> v);
    };
    size_t w = 0, h = 0, maxval = 0;
    if (!(in >> magic) || !number(w) || !number(h) || !number(maxval) || w != 100 || h != 150) return false;
    std::vector<double> px(w * h);
    if (magic == "P2") {
        for (double &v : px) {
            size_t x = 0;
            if (!number(x)) return false;
            v = double(x);
        }
    } else {
        in.get();
        for (double &v : px) {
            int hi = in.get(), lo = maxval > 255 ? in.get() : -1;
            v = maxval > 255 ? double(hi << 8 | lo) : double(hi);
        }
    }
    std::vector<double> t(w * h), c(w * h);
    for (size_t k = 0; k < w * h; ++k) {
        t[k] = -100 + px[k] * 200 / double(maxval);
        c[k] = px[k] / double(maxval);
    }
    check_case(ctx, {150, 100, 5000, 0.001, 500, 0}, t, c);
    // The published final line.
    size_t begin, count;
    block_of(150, false, &begin, &count);
    Result r = distributed(ctx, {150, 100, 5000, 0.001, 500, 0}, t, c, begin, count);
    char line[128];
    std::snprintf(line, sizeof line, "%.6e %.6e %.6e %.6e", r.final.tmin, r.final.tmax, r.final.maxdiff,
                  r.final.tavg);
    CHECK_MSG(std::string(line) == "-6.818562e+00 2.687404e+01 4.175908e-03 8.652341e+00", line);
    return true;
}

// Checkpoints of the distributed run: every rank's block at the same iterations, each the single-process
// checkpoint's rows; resumed from them (start_iteration, the original fixed rows) the run ends bit for bit
// as the run never stopped.
void test_checkpoints(gpk_context *ctx) {
    const Setup s{41, 19, 30, 0.0, 6, 0};
    auto t = random_values(s.n * s.m, -50, 50, 7), c = random_values(s.n * s.m, 0, 1, 8);
    const Result want = single(ctx, s, t, c);
    size_t begin, count;
    block_of(s.n, true, &begin, &count);
    heat_resume::Recorder rec;
    rec.cells = count * s.m;
    Result with = distributed(ctx, s, t, c, begin, count, [&](gpk_heat_params &p) {
        p.on_checkpoint = heat_resume::record_checkpoint;
        p.checkpoint_interval = 4;
        p.user_data = &rec; // the reports are checked by the other tests
        p.on_report = nullptr;
        p.on_progress = nullptr;
    });
    CHECK_MSG(with.status == GPK_OK, with.message);
    CHECK(same_bits(with.grid.data(), want.grid.data() + begin * s.m, count * s.m * sizeof(double)));
    std::vector<size_t> iters;
    for (const auto &cp : rec.checkpoints) iters.push_back(cp.niter);
    CHECK(iters == std::vector<size_t>({4, 8, 12, 16, 20, 24, 28}));
    const std::vector<double> fixed = heat_resume::fixed_rows_of(t, s.n, s.m);
    for (const auto &cp : rec.checkpoints) {
        if (cp.niter != 12 && cp.niter != 28) continue;
        Setup stopped = s;
        stopped.maxiter = cp.niter;
        const Result until = single(ctx, stopped, t, c);
        CHECK_MSG(same_bits(cp.grid.data(), until.grid.data() + begin * s.m, count * s.m * sizeof(double)),
                  "checkpoint " + std::to_string(cp.niter) + " on rank " + std::to_string(rank()));
        // Resume: this rank's block of the checkpoint, in a whole-size array at its place.
        std::vector<double> resumed_t = t;
        std::copy(cp.grid.begin(), cp.grid.end(), resumed_t.begin() + long(begin * s.m));
        Result resumed = distributed(ctx, s, resumed_t, c, begin, count, [&](gpk_heat_params &p) {
            p.start_iteration = cp.niter;
            p.fixed_rows = fixed.data();
        });
        std::vector<gpk_heat_report> later;
        for (const auto &r : want.rec.periodic)
            if (r.niter > cp.niter) later.push_back(r);
        const std::string what =
            "resumed at " + std::to_string(cp.niter) + " on rank " + std::to_string(rank());
        CHECK_MSG(resumed.status == GPK_OK, what + ": " + resumed.message);
        CHECK_MSG(
            same_bits(resumed.grid.data(), want.grid.data() + begin * s.m, count * s.m * sizeof(double)),
            what + ": final grid");
        CHECK_MSG(heat_resume::same_report(resumed.final, want.final), what + ": final report");
        CHECK_MSG(same_reports(resumed.rec.periodic, later), what + ": periodic reports");
    }
}

// A progress callback of the last rank asks to stop from iteration 7 on (inside a pass): the run ends at
// the pass boundary after it (8), every rank returns CANCELLED naming it, with the grid of iteration 8.
void test_stop_on_one_rank(gpk_context *ctx) {
    const Setup s{29, 31, 40, 0.0, 0, 1};
    auto t = random_values(s.n * s.m, -1, 1, 3), c = random_values(s.n * s.m, 0, 1, 4);
    Setup eight = s;
    eight.maxiter = 8;
    const Result want = single(ctx, eight, t, c);
    size_t begin, count;
    block_of(s.n, false, &begin, &count);
    const bool last = rank() == size() - 1;
    Result got = distributed(
        ctx, s, t, c, begin, count, [](gpk_heat_params &) {}, last ? 7 : 0);
    CHECK_MSG(got.status == GPK_ERR_CANCELLED, got.message);
    CHECK_MSG(contains(got.message, "progress callback") && contains(got.message, "iteration 8") &&
                  (size() == 1 || contains(got.message, "rank " + std::to_string(size() - 1))),
              got.message);
    CHECK_EQ(got.final.niter, size_t(8));
    CHECK(same_bits(got.grid.data(), want.grid.data() + begin * s.m, count * s.m * sizeof(double)));
    CHECK(heat_resume::same_report(got.final, want.final));
}

// Every rank gets `status` and a message holding every part.
void expect_everywhere(const Result &r, gpk_status status, const std::vector<std::string> &parts,
                       const std::string &what) {
    CHECK_MSG(r.status == status, what + ": " + gpk_status_string(r.status) + ": " + r.message);
    for (const auto &part : parts)
        CHECK_MSG(contains(r.message, part), what + ": '" + part + "' in: " + r.message);
    // The same message on every rank.
    unsigned long long h = 1469598103934665603ull;
    for (char ch : r.message) h = (h ^ (unsigned char)ch) * 1099511628211ull;
    unsigned long long lo = h, hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK_MSG(lo == hi, what + ": the ranks' messages differ: " + r.message);
}

void test_failures(gpk_context *ctx) {
    const Setup s{23, 17, 12, 0.0, 3, 0};
    auto t = random_values(s.n * s.m, -1, 1, 5), c = random_values(s.n * s.m, 0, 1, 6);
    size_t begin, count;
    block_of(s.n, false, &begin, &count);
    const int p = size(), last = p - 1;
    if (p > 1) {
        Result r =
            distributed(ctx, s, t, c, begin, count, [&](gpk_heat_params &q) { q.maxiter += rank() == 1; });
        expect_everywhere(r, GPK_ERR_INVALID_ARGUMENT,
                          {"params->maxiter differs between ranks", "13 on rank 1"}, "maxiter differing");
        Result th = distributed(ctx, s, t, c, begin, count, [&](gpk_heat_params &q) {
            if (rank() == last) q.threshold = 0.5;
        });
        expect_everywhere(th, GPK_ERR_INVALID_ARGUMENT,
                          {"params->threshold differs", "0.5 on rank " + std::to_string(last)},
                          "threshold differing");
        Result gap = distributed(ctx, s, t, c, begin + (rank() == 1), count - (rank() == 1));
        expect_everywhere(gap, GPK_ERR_INVALID_ARGUMENT, {"do not follow each other", "rank 1"}, "a gap");
        // More ranks than rows.
        Setup few = s;
        few.n = size_t(p - 1);
        size_t b2, c2;
        block_of(few.n, false, &b2, &c2);
        Result none = distributed(ctx, few, t, c, b2, c2);
        expect_everywhere(none, GPK_ERR_INVALID_ARGUMENT,
                          {"no rows on rank", "every rank needs at least one row"}, "more ranks than rows");
    }
    // A NaN in the last rank's block: named by its row of the whole grid.
    auto bad = t;
    bad[(s.n - 1) * s.m + 2] = NAN;
    Result nan = distributed(ctx, s, bad, c, begin, count);
    expect_everywhere(
        nan, GPK_ERR_INVALID_ARGUMENT,
        {"tinit[" + std::to_string((s.n - 1) * s.m + 2) + "]", "row " + std::to_string(s.n - 1)},
        "a NaN on the last rank");
    if (p > 1) CHECK_MSG(contains(nan.message, "rank " + std::to_string(last) + ": "), nan.message);
    // The last rank's first host allocation (its slab) fails.
    if (hooks::skip_part("an allocation failing on the last rank (GPK_TEST_FAULT)")) return;
    hooks::Hook fault("GPK_TEST_FAULT", rank() == last ? "host:1" : nullptr);
    Result oom = distributed(ctx, s, t, c, begin, count);
    fault.set(nullptr);
    expect_everywhere(oom, GPK_ERR_OUT_OF_MEMORY, {"bytes"}, "an allocation failing on the last rank");
    CHECK(oom.grid[0] == -1.0); // outputs untouched
    // And the next call works again.
    compare(distributed(ctx, s, t, c, begin, count), single(ctx, s, t, c), begin, count, s.m,
            "after the failure");
}

// gpk_mpi_halo_paths on CPU ranks: one line a link, through host memory, and exchanges that take time; a
// heat run with host staging forced (GPK_TEST_MPI_HALO=host) equal to one process; bad arguments and a bad
// hook value refused on every rank.
void test_halo_paths(gpk_context *ctx) {
    char text[4096];
    double seconds = -1;
    gpk_status s = gpk_mpi_halo_paths(ctx, MPI_COMM_WORLD, 1000, 5, text, sizeof text, &seconds);
    CHECK_MSG(s == GPK_OK, gpk_context_last_error(ctx));
    const std::string lines(text);
    for (int r = 0; r + 1 < size(); ++r) {
        const std::string link =
            "rank " + std::to_string(r) + " <-> " + std::to_string(r + 1) + ": host staging";
        CHECK_MSG(contains(lines, link), lines);
    }
    CHECK_EQ(size_t(std::count(lines.begin(), lines.end(), '\n')), size_t(size() - 1));
    CHECK_MSG(seconds > 0 && seconds < 1, std::to_string(seconds));
    char small[8];
    CHECK_OK(ctx, gpk_mpi_halo_paths(ctx, MPI_COMM_WORLD, 10, 0, small, sizeof small, nullptr));
    CHECK(std::strlen(small) == (size() > 1 ? 7u : 0u)); // cut to the buffer
    s = gpk_mpi_halo_paths(ctx, MPI_COMM_WORLD, rank() == 0 ? 0 : 10, 0, nullptr, 0, nullptr);
    CHECK_MSG(s == GPK_ERR_INVALID_ARGUMENT && contains(gpk_context_last_error(ctx), "cols"),
              gpk_context_last_error(ctx));
    const Setup st{size_t(6 * size() + 5), 37, 50, 0.0, 10};
    auto t = random_values(st.n * st.m, -100, 100, 5), c = random_values(st.n * st.m, 0, 1, 6);
    size_t begin, count;
    block_of(st.n, false, &begin, &count);
    if (!hooks::skip_part("host staging forced (GPK_TEST_MPI_HALO)")) {
        hooks::Hook staged("GPK_TEST_MPI_HALO", "host");
        compare(distributed(ctx, st, t, c, begin, count), single(ctx, st, t, c), begin, count, st.m,
                "host staging forced");
        hooks::Hook bad("GPK_TEST_MPI_HALO", rank() == size() - 1 ? "ipc" : "host");
        Result refused = distributed(ctx, st, t, c, begin, count);
        expect_everywhere(refused, GPK_ERR_INVALID_ARGUMENT, {"GPK_TEST_MPI_HALO"}, "a bad hook value");
    }
}

} // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    gpk_context *ctx = cpu_context();
    test_random_grids(ctx);
    test_checkpoints(ctx);
    test_stop_on_one_rank(ctx);
    test_failures(ctx);
    test_halo_paths(ctx);
    const bool pat1 = test_pat1(ctx);
    if (rank() == 0 && !pat1)
        std::printf("note: GPK_TEST_DATA/pat1_100x150.pgm absent; the course pattern not run\n");
    gpk_context_destroy(ctx);
    return finish("test_mpi_heat");
}
