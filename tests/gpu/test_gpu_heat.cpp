// gpk_heat_run on the CUDA backend against the CPU backend (README, "What gpk computes": 1e-9 relative or
// 1e-12 absolute, the same niter), for host pageable, host pinned and device pointers: awkward sizes,
// periodic reports, convergence inside a pass, cancellation, determinism, device-side input checks, the
// out-of-memory path and the pat1 check. Exits 77 where no CUDA device exists. GPK_TEST_QUICK=1 leaves out
// the grids over 100000 cells; GPK_TEST_SMALL=1 keeps every path and kernel (several blocks each way) at the
// fewest cells and iterations, and leaves out pat1, so that compute-sanitizer's racecheck finishes in about a
// minute. GPK_TEST_ONLY=name,... runs the named groups only (kernels, awkward, convergence, cancellation,
// placements, memory_kinds, determinism, invalid, out_of_memory, checkpoints, statistics, pat1).
#include "check.hpp"
#include "gpk.h"
#include "gpu_common.hpp"
#include "heat_resume.hpp"
#include "heat_statistics.hpp"
#include "pat1.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Problem {
    size_t n = 0, m = 0;
    std::vector<double> t, c;
};

struct Settings {
    size_t maxiter = 1;
    double threshold = 0;
    size_t period = 0;
    size_t progress_interval = 0;
    size_t stop_at = 0;          // a callback returns non-zero at this iteration (progress: from it on)
    bool stop_in_report = false; // which callback stops: the periodic report or progress
    bool no_callbacks = false;   // a quiet run: no report or progress callback (the library's quiet path)
    bool no_report = false;      // no final report asked for: final NULL, no report callback
};

struct Outcome {
    gpk_status status = GPK_OK;
    std::string message;
    gpk_heat_report final{};
    int finals = 0;
    std::vector<gpk_heat_report> periodic;
    std::vector<size_t> progress_iters;
    std::vector<double> progress_maxdiffs;
    std::vector<double> grid;
    bool callbacks = true; // the run registered its report and progress callbacks (Settings::no_callbacks)
    size_t progress_interval = 0; // of a run with callbacks
    bool stop_asked = false;      // by the progress callback
};

struct Callbacks {
    const Settings *settings;
    Outcome *out;
};

int on_report(const gpk_heat_report *r, int is_final, void *user) {
    auto *cb = static_cast<Callbacks *>(user);
    if (is_final) {
        ++cb->out->finals;
        return 0;
    }
    cb->out->periodic.push_back(*r);
    return cb->settings->stop_in_report && r->niter == cb->settings->stop_at;
}

int on_progress(size_t niter, double maxdiff, double, void *user) {
    auto *cb = static_cast<Callbacks *>(user);
    cb->out->progress_iters.push_back(niter);
    cb->out->progress_maxdiffs.push_back(maxdiff);
    const Settings &s = *cb->settings;
    const bool stop = !s.stop_in_report && s.stop_at && niter >= s.stop_at;
    cb->out->stop_asked = cb->out->stop_asked || stop;
    return stop;
}

enum class Memory { pageable, pinned, device };

const char *memory_name(Memory k) {
    return k == Memory::pageable ? "pageable" : k == Memory::pinned ? "pinned" : "device";
}

// n doubles in the given kind of memory.
class Buffer {
public:
    Buffer(Memory kind, size_t n) : kind_(kind), n_(n) {
        if (kind == Memory::pageable) {
            host_.resize(n);
            ptr_ = host_.data();
        } else if (kind == Memory::pinned) {
            CHECK(cudaMallocHost(reinterpret_cast<void **>(&ptr_), n * sizeof(double)) == cudaSuccess);
        } else {
            CHECK(cudaMalloc(reinterpret_cast<void **>(&ptr_), n * sizeof(double)) == cudaSuccess);
        }
    }
    ~Buffer() {
        if (kind_ == Memory::pinned) cudaFreeHost(ptr_);
        if (kind_ == Memory::device) cudaFree(ptr_);
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    void upload(const std::vector<double> &v) {
        CHECK(cudaMemcpy(ptr_, v.data(), n_ * sizeof(double), cudaMemcpyDefault) == cudaSuccess);
    }
    std::vector<double> download() const {
        std::vector<double> v(n_);
        CHECK(cudaMemcpy(v.data(), ptr_, n_ * sizeof(double), cudaMemcpyDefault) == cudaSuccess);
        return v;
    }
    double *get() const { return ptr_; }

private:
    Memory kind_;
    size_t n_;
    std::vector<double> host_;
    double *ptr_ = nullptr;
};

bool small() {
    const char *v = std::getenv("GPK_TEST_SMALL");
    return v && *v && std::strcmp(v, "0") != 0;
}

// The pass kernels the solver chooses (lib/cuda/heat/pass.cu): 6/2, and on devices whose blocks hold less
// shared memory 4/2 or 4/4, reached here by capping the limit (GPK_TEST_SHARED_LIMIT: 6/2 needs about 104
// KiB a block, 4/2 about 64, 4/4 about 32).
struct Kernel {
    const char *name, *shared_limit;
};
constexpr Kernel kKernels[] = {{"6/2", ""}, {"4/2", "100000"}, {"4/4", "60000"}};

// Runs `body` with the solver choosing `k` (and with `rows` rows per block where given, GPK_TEST_HEAT_ROWS).
template <class Body> auto with_kernel(const Kernel &k, const char *rows, Body &&body) {
    hooks::Hook limit("GPK_TEST_SHARED_LIMIT", *k.shared_limit ? k.shared_limit : nullptr);
    hooks::Hook block_rows("GPK_TEST_HEAT_ROWS", rows && *rows ? rows : nullptr);
    return body();
}

// Where each array of a call lives; tfinal may also be left out (no_tfinal).
struct Placement {
    Memory t = Memory::pageable, c = Memory::pageable, f = Memory::pageable;
    bool no_tfinal = false;
};

std::string placement_name(const Placement &m) {
    return std::string("tinit ") + memory_name(m.t) + ", conductivity " + memory_name(m.c) + ", tfinal " +
           (m.no_tfinal ? "none" : memory_name(m.f));
}

// tfinal is poisoned with NaN first so that an unwritten cell shows.
Outcome run(gpk_context *ctx, const Problem &p, const Settings &s, Placement mem) {
    Outcome out;
    Callbacks cb{&s, &out};
    gpk_heat_params params;
    gpk_heat_params_init(&params);
    params.rows = p.n;
    params.cols = p.m;
    params.maxiter = s.maxiter;
    params.threshold = s.threshold;
    params.period = s.period;
    params.on_report = s.no_callbacks || s.no_report ? nullptr : on_report;
    params.on_progress = s.no_callbacks ? nullptr : on_progress;
    params.progress_interval = s.progress_interval;
    params.user_data = &cb;
    Buffer t(mem.t, p.n * p.m), c(mem.c, p.n * p.m), f(mem.f, p.n * p.m);
    t.upload(p.t);
    c.upload(p.c);
    f.upload(std::vector<double>(p.n * p.m, NAN));
    out.callbacks = !s.no_callbacks;
    out.progress_interval = s.no_callbacks ? 0 : s.progress_interval;
    out.status = gpk_heat_run(ctx, &params, t.get(), c.get(), mem.no_tfinal ? nullptr : f.get(),
                              s.no_report ? nullptr : &out.final);
    out.message = gpk_context_last_error(ctx);
    if (!mem.no_tfinal) out.grid = f.download();
    return out;
}

Outcome run(gpk_context *ctx, const Problem &p, const Settings &s, Memory mem = Memory::pageable) {
    return run(ctx, p, s, Placement{mem, mem, mem, false});
}

Problem random_problem(size_t n, size_t m, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> temp(-100.0, 100.0), cond(0.0, 1.0);
    Problem p{n, m, std::vector<double>(n * m), std::vector<double>(n * m)};
    for (double &v : p.t) v = temp(rng);
    for (double &v : p.c) v = cond(rng);
    return p;
}

bool close(double a, double b) {
    return std::fabs(a - b) <= 1e-12 || std::fabs(a - b) <= 1e-9 * std::fabs(b);
}

// The CUDA report against the CPU backend's, within close().
bool close_report(const gpk_heat_report &a, const gpk_heat_report &b) {
    return a.niter == b.niter && close(a.tmin, b.tmin) && close(a.tmax, b.tmax) && close(a.tavg, b.tavg) &&
           close(a.maxdiff, b.maxdiff);
}

std::string label(const Problem &p, const Settings &s) {
    return std::to_string(p.n) + "x" + std::to_string(p.m) + " maxiter " + std::to_string(s.maxiter) +
           " threshold " + std::to_string(s.threshold) + " period " + std::to_string(s.period);
}

// The CUDA outcome against the CPU one: status, niter, every report, every cell.
void compare(const Outcome &gpu, const Outcome &cpu, const std::string &what) {
    CHECK_MSG(gpu.status == cpu.status, what + ": " + gpu.message + " vs " + cpu.message);
    CHECK_MSG(gpu.final.niter == cpu.final.niter,
              what + ": niter " + std::to_string(gpu.final.niter) + " vs " + std::to_string(cpu.final.niter));
    CHECK_MSG(close_report(gpu.final, cpu.final), what + ": final report");
    const int finals = gpu.callbacks ? 1 : 0; // a quiet run hands its final report back through `final` only
    CHECK_MSG(gpu.finals == finals,
              what + ": final report delivered " + std::to_string(gpu.finals) + " times");
    CHECK_MSG(gpu.periodic.size() == cpu.periodic.size(), what + ": periodic report count");
    for (size_t k = 0; k < std::min(gpu.periodic.size(), cpu.periodic.size()); ++k)
        CHECK_MSG(close_report(gpu.periodic[k], cpu.periodic[k]),
                  what + ": periodic report " + std::to_string(k));
    size_t bad = 0;
    for (size_t k = 0; k < gpu.grid.size(); ++k) bad += !close(gpu.grid[k], cpu.grid[k]); // NaN counts
    CHECK_MSG(bad == 0, what + ": " + std::to_string(bad) + " cells differ");
}

bool identical(const Outcome &a, const Outcome &b) {
    return a.status == b.status && a.final.niter == b.final.niter && a.final.tmin == b.final.tmin &&
           a.final.tmax == b.final.tmax && a.final.tavg == b.final.tavg &&
           a.final.maxdiff == b.final.maxdiff &&
           std::memcmp(a.grid.data(), b.grid.data(), a.grid.size() * sizeof(double)) == 0;
}

// ---------------------------------------------------------------------------------------------------

// maxdiff of iterations 1..maxiter, from the CPU backend's periodic reports.
std::vector<double> maxdiffs(gpk_context *cpu, const Problem &p, size_t maxiter) {
    std::vector<double> md;
    for (const gpk_heat_report &r : run(cpu, p, Settings{maxiter, 0.0, 1, 0}).periodic)
        md.push_back(r.maxdiff);
    return md;
}

// Iterations a CUDA batch of a run with callbacks holds at most, on the grids here (lib/cuda/heat/heat.cu).
constexpr size_t kLongestBatch = 1024;

// The CUDA outcome of settings `s` against the CPU backend's. Progress comes at each backend's own pass
// boundaries (gpk.h): the CUDA calls are checked by that rule against the CPU's maxdiffs, and a run that
// a progress callback stopped (at a boundary of its own) against the CPU run of as many iterations.
void check_against_cpu(gpk_context *cpu, const Problem &p, const Settings &s, const Outcome &gpu,
                       const std::string &what) {
    Settings until = s;
    if (gpu.stop_asked) {
        until.stop_at = 0;
        until.maxiter = std::max<size_t>(gpu.final.niter, 1);
    }
    Outcome want = run(cpu, p, until);
    if (gpu.stop_asked) {
        const bool ended = gpu.final.niter == s.maxiter || gpu.final.maxdiff < s.threshold;
        want.status = ended ? GPK_OK : GPK_ERR_CANCELLED;
        want.message = "the CPU run of " + std::to_string(until.maxiter) + " iterations";
        // No periodic report comes after the boundary where the stop was asked.
        if (gpu.periodic.size() < want.periodic.size()) want.periodic.resize(gpu.periodic.size());
    }
    compare(gpu, want, what);
    if (!gpu.progress_interval) return;
    heat_resume::ProgressRule rule{gpu.progress_interval, 0, gpu.final.niter, kLongestBatch};
    rule.complete = !gpu.stop_asked;
    rule.rel = 1e-9;
    const std::string broken = heat_resume::progress_rule_broken(gpu.progress_iters, gpu.progress_maxdiffs,
                                                                 rule, maxdiffs(cpu, p, s.maxiter));
    CHECK_MSG(broken.empty(), what + ": " + broken);
}

// Sizes around the pass kernel's strip (248 owned columns) and row blocks, single rows and columns.
void test_awkward_sizes(gpk_context *cpu, gpk_context *gpu) {
    const size_t sizes[][2] = {{1, 1},    {1, 300},   {300, 1},   {2, 3},     {17, 248},
                               {19, 249}, {129, 497}, {333, 250}, {64, 1000}, {1000, 1001}};
    const bool quick = std::getenv("GPK_TEST_QUICK") != nullptr || small();
    unsigned seed = 1;
    for (auto &nm : sizes) {
        if (quick && nm[0] * nm[1] > 100000) continue;
        if (small() && nm[0] * nm[1] > 300) continue;
        Problem p = random_problem(nm[0], nm[1], seed++);
        for (size_t period : {0, 1, 7}) {
            if (small() && period != 7) continue;
            Settings s{small() ? 19u : nm[0] * nm[1] > 100000 ? 30u : 61u, 0.0, period, 5};
            check_against_cpu(cpu, p, s, run(gpu, p, s), label(p, s));
        }
    }
}

// A threshold under which iteration k is the first to fall, or -1 when the sequence does not allow one.
double threshold_for(const std::vector<double> &md, size_t k) {
    double before = INFINITY;
    for (size_t i = 0; i + 1 < k; ++i) before = std::min(before, md[i]);
    if (!(md[k - 1] < before)) return -1;
    return 0.5 * (md[k - 1] + before);
}

// Convergence at each position inside a pass (of up to 8; the first pass also checks the inputs) and inside
// a batch, with reports on and off; on device data the recomputation of a converged pass, or the pass that
// ends the run, writes tfinal directly, also from the caller's tinit when the first pass converged.
void test_convergence(gpk_context *cpu, gpk_context *gpu) {
    Problem p = random_problem(150, 260, 42); // every k below is a new minimum of its maxdiffs
    std::vector<double> md = maxdiffs(cpu, p, 200);
    CHECK_EQ(md.size(), size_t(200));
    const std::vector<size_t> all = {1, 2, 3, 4, 5, 7, 8, 9, 14, 16, 23, 64, 101, 150, 199}, few = {3, 9};
    for (size_t k : small() ? few : all) {
        double threshold = threshold_for(md, k);
        CHECK_MSG(threshold > 0, "no threshold converges at " + std::to_string(k));
        if (threshold <= 0) continue;
        for (size_t period : {0, 3, 8}) {
            if (small() && period != 0) continue;
            for (Memory mem : {Memory::pageable, Memory::device}) {
                if (mem == Memory::device && period == 3) continue;
                Settings s{200, threshold, period, 2};
                Outcome g = run(gpu, p, s, mem), c = run(cpu, p, s);
                CHECK_EQ(c.final.niter, k);
                check_against_cpu(cpu, p, s, g,
                                  label(p, s) + " converging at " + std::to_string(k) + " " +
                                      memory_name(mem));
            }
        }
        // The run ends where it converges: the pass that ends it also writes tfinal.
        Settings s{k, threshold, 0, 0};
        check_against_cpu(cpu, p, s, run(gpu, p, s, Memory::device),
                          label(p, s) + " converging at maxiter " + std::to_string(k));
    }
}

// Every placement of the three arrays (the first pass reads a device tinit in place; a device tfinal is
// written by the pass that ends the run; host arrays go through copies) and no tfinal at all; maxiter
// around the pass lengths, so that the checking first pass is also the last one, or not.
void test_placements(gpk_context *cpu, gpk_context *gpu) {
    Problem p = random_problem(small() ? 40 : 210, small() ? 260 : 530, 31);
    const Memory D = Memory::device, H = Memory::pageable, P = Memory::pinned;
    const Placement placements[] = {{D, D, D, false}, {D, H, D, false}, {H, D, D, false}, {D, D, H, false},
                                    {H, H, D, false}, {P, D, P, false}, {D, D, D, true},  {H, H, H, true}};
    // With callbacks, and quiet (no callback registered: one batch, the final statistics enqueued behind it,
    // the run's quiet path), on the CPU reference too.
    for (size_t maxiter : {1, 2, 7, 8, 9, 17, 50}) {
        if (small() && maxiter != 1 && maxiter != 9) continue;
        for (bool quiet : {false, true}) {
            Settings s{maxiter, 0.0, quiet || maxiter <= 8 ? 0u : 5u, quiet ? 0u : 3u};
            s.no_callbacks = quiet;
            for (const Placement &m : placements) // without tfinal, nothing to compare but the reports
                check_against_cpu(cpu, p, s, run(gpu, p, s, m), label(p, s) + ", " + placement_name(m));
        }
    }
}

// A call that asks for no report (final NULL, no report callback) leaves out the final grid's statistics:
// tfinal must hold the very bits of the same call with a report. Quiet runs (the statistics kernel only
// copies, where the run did not end on tfinal) and runs with a progress callback; one pass (the checking
// pass, which never writes tfinal), whole passes, shorter last passes; convergence inside a pass and at
// maxiter; cancellation by the progress callback; tfinal on the device (written by the last pass) and on
// the host (copied), tinit on both.
void test_no_report(gpk_context *cpu, gpk_context *gpu) {
    Problem p = random_problem(small() ? 40 : 150, small() ? 260 : 330, 61);
    std::vector<double> md = maxdiffs(cpu, p, 30);
    std::vector<double> thresholds = {0.0};
    for (size_t k : {2, 9})
        if (double t = threshold_for(md, k); t > 0) thresholds.push_back(t);
    const Memory D = Memory::device, H = Memory::pageable;
    const Placement placements[] = {{D, D, D, false}, {H, D, D, false}, {D, D, H, false}, {H, H, H, false}};
    for (size_t maxiter : {1, 2, 6, 7, 9, 20}) {
        if (small() && maxiter != 1 && maxiter != 9) continue;
        for (double threshold : thresholds)
            for (int progress : {0, 1, 2}) { // none; every 3 iterations; every 3, stopping from 6
                if (small() && progress == 1) continue;
                Settings with{maxiter, threshold, 0, progress ? 3u : 0u, progress == 2 ? 6u : 0u};
                with.no_callbacks = progress == 0;
                Settings without = with;
                without.no_report = true;
                for (const Placement &m : placements) {
                    const Outcome a = run(gpu, p, with, m), b = run(gpu, p, without, m);
                    const std::string what = label(p, with) + " progress " + std::to_string(progress) + ", " +
                                             placement_name(m) + ", without a report";
                    CHECK_MSG(b.status == a.status, what + ": " + b.message);
                    CHECK_MSG(b.grid.size() == a.grid.size() &&
                                  std::memcmp(b.grid.data(), a.grid.data(), a.grid.size() * sizeof(double)) ==
                                      0,
                              what + ": tfinal differs from the call with a report");
                    CHECK_MSG(b.progress_iters == a.progress_iters, what + ": progress calls");
                    CHECK_MSG(b.finals == 0 && b.periodic.empty(), what + ": a report was delivered");
                }
                check_against_cpu(cpu, p, with, run(gpu, p, with), label(p, with) + " with a report");
            }
    }
}

// A callback that stops the run: CANCELLED, the state of that iteration, the final report delivered; a
// stop asked on the converging or last iteration is no cancellation. Periodic reports every 6 iterations
// end the batches there, and none is enqueued beyond one: progress stops there too.
void test_cancellation(gpk_context *cpu, gpk_context *gpu) {
    Problem p = small() ? random_problem(40, 260, 9) : random_problem(77, 301, 9);
    for (bool in_report : {false, true}) {
        for (size_t stop_at : {6, 30, 60}) {
            if (small() && (in_report || stop_at != 30)) continue;
            Settings s{60, 0.0, 6, 3, stop_at, in_report};
            Outcome g = run(gpu, p, s);
            gpk_status want = stop_at == 60 ? GPK_OK : GPK_ERR_CANCELLED;
            CHECK_STATUS(gpu, g.status, want);
            CHECK_EQ(g.final.niter, stop_at);
            check_against_cpu(cpu, p, s, g, label(p, s) + " stopped at " + std::to_string(stop_at));
        }
    }
    if (small()) return;
    std::vector<double> md = maxdiffs(cpu, p, 40);
    Settings s{40, threshold_for(md, 27), 0, 1, 27};
    CHECK(s.threshold > 0);
    Outcome g = run(gpu, p, s);
    CHECK_STATUS(gpu, g.status, GPK_OK);
    CHECK_EQ(g.final.niter, size_t(27));
    // Without periodic reports, a stop asked at the end of a batch ends the run at the end of the batch
    // queued behind it (batches of L, 2L, 4L for passes of L levels): asked at L, it ends at 3L.
    Settings late{40, 0.0, 0, 1, 1};
    Outcome l = run(gpu, p, late);
    CHECK_STATUS(gpu, l.status, GPK_ERR_CANCELLED);
    CHECK(l.progress_iters.size() == 1);
    if (!l.progress_iters.empty()) CHECK_EQ(l.final.niter, 3 * l.progress_iters[0]);
    check_against_cpu(cpu, p, late, l, "stopped by progress at the first batch");
}

// Host pageable, host pinned and device pointers, and a caller stream: the same bits every time.
void test_memory_kinds(gpk_context *cpu, gpk_context *gpu) {
    Problem p = small() ? random_problem(40, 260, 5) : random_problem(201, 333, 5);
    Settings s{small() ? 20u : 45u, 0.0, 9, 4};
    Outcome want = run(gpu, p, s);
    check_against_cpu(cpu, p, s, want, "pageable");
    for (Memory k : {Memory::pinned, Memory::device}) {
        Outcome got = run(gpu, p, s, k);
        CHECK_MSG(identical(got, want), std::string(memory_name(k)) + " differs from pageable");
        CHECK_EQ(got.periodic.size(), want.periodic.size());
    }
    cudaStream_t stream = nullptr;
    CHECK(cudaStreamCreate(&stream) == cudaSuccess);
    gpk_context *streamed = gpu::make_context(GPK_BACKEND_CUDA, stream);
    Outcome got = run(streamed, p, s, Memory::device);
    CHECK_OK(streamed, gpk_context_synchronize(streamed));
    CHECK_MSG(identical(got, want), "caller stream differs");
    gpk_context_destroy(streamed);
    cudaStreamDestroy(stream);
}

// The same call twice, every kernel and passes of every length give the same bits, with progress at every
// batch's end or none. Periodic reports every p iterations end batches there: with 6/2 (and the 4/4 tail
// kernel), p = 1, 2, 3 are tail passes of that many levels, 5 a shorter pass on the run's kernel, 7 two
// tail passes of 4 and 3; with 4/2 the shorter passes run on the run's kernel. The reports of the
// reference run (every 10) are compared where both have them.
void test_determinism(gpk_context *gpu) {
    Problem p = small()                         ? random_problem(40, 260, 77)
                : std::getenv("GPK_TEST_QUICK") ? random_problem(123, 311, 77)
                                                : random_problem(523, 611, 77);
    Settings s{small() ? 20u : 90u, 0.0, 10, 0};
    Outcome first = run(gpu, p, s);
    CHECK_MSG(identical(run(gpu, p, s), first), "second run differs");
    for (const Kernel &k : kKernels)
        for (size_t period : {0, 1, 2, 3, 5, 7}) {
            if (small() && (k.shared_limit[0] || period != 3)) continue; // kernels: test_kernels
            Settings v = s;
            v.period = period ? period : s.period;
            v.progress_interval = period ? 0 : 1;
            Outcome got = with_kernel(k, nullptr, [&] { return run(gpu, p, v); });
            std::string what = std::string("kernel ") + k.name +
                               (period ? ", reports every " + std::to_string(period) : ", progress every 1");
            CHECK_MSG(identical(got, first), what + " differs");
            size_t compared = 0;
            for (const gpk_heat_report &r : got.periodic) {
                if (r.niter % s.period) continue;
                const gpk_heat_report &want = first.periodic[r.niter / s.period - 1];
                CHECK_MSG(std::memcmp(&r, &want, offsetof(gpk_heat_report, time)) == 0,
                          what + ": periodic report at " + std::to_string(r.niter) + " differs");
                ++compared;
            }
            CHECK_EQ(compared, period ? s.maxiter / std::lcm(period, s.period) : first.periodic.size());
        }
}

// Every pass kernel (lib/cuda/heat/pass.cu) on a grid of two strips (three for 128-thread blocks) and three
// row blocks of 30 rows (GPK_TEST_HEAT_ROWS), so that blocks take lean steps (lib/cuda/heat/blocked.cuh) as
// well as general ones: a first, checking pass of every level, whole passes, a shorter last pass, and
// convergence inside a pass (its recomputation); against the CPU backend, and the same bits from every
// kernel. In GPK_TEST_SMALL mode this is what covers the kernels.
void test_kernels(gpk_context *cpu, gpk_context *gpu) {
    Problem p = random_problem(70, 300, 11);
    const double threshold = threshold_for(maxdiffs(cpu, p, 40), 10);
    CHECK(threshold > 0);
    // Batches of 6, 12, then 9 (27: a 3-level pass), 8 (26: two 4-level passes) or 22 (40); where the run's
    // kernel is deeper than 4 levels, the shorter passes run on the tail kernel (4/4).
    const Settings runs[] = {{27, 0.0, 0, 3}, {26, 0.0, 0, 3}, {40, threshold, 0, 3}};
    for (const Settings &s : runs) {
        Outcome first;
        for (const Kernel &k : kKernels) {
            const Outcome got = with_kernel(k, "30", [&] { return run(gpu, p, s, Memory::device); });
            const std::string what = label(p, s) + ", kernel " + k.name + ", 30-row blocks";
            if (&k == &kKernels[0]) {
                check_against_cpu(cpu, p, s, got, what);
                first = got;
            } else {
                CHECK_MSG(identical(got, first), what + " differs from the default kernel");
            }
        }
    }
}

// Bad values in device or host memory are found on the device by the first pass, named, and nothing is
// written or called; with maxiter 1 the checking pass is also the last one.
void test_invalid_device_inputs(gpk_context *gpu) {
    Problem p = random_problem(40, 70, 3);
    struct Case {
        bool temperature;
        size_t index;
        double value;
        const char *needle;
    } cases[] = {{true, 1234, NAN, "tinit[1234] (row 17, column 44) is nan"},
                 {true, 2799, -INFINITY, "tinit[2799]"},
                 {false, 0, 1.5, "conductivity[0] (row 0, column 0) is 1.5"},
                 {false, 901, NAN, "conductivity[901]"},
                 {false, 2000, -1e-300, "conductivity[2000]"}};
    for (const Case &k : cases) {
        if (small() && &k != &cases[0] && &k != &cases[3]) continue;
        Problem bad = p;
        std::vector<double> &cells = k.temperature ? bad.t : bad.c;
        cells[k.index] = k.value;
        if (k.index + 5 < cells.size()) cells[k.index + 5] = NAN; // the first bad cell is the one named
        for (Memory mem : {Memory::device, Memory::pageable})
            for (size_t maxiter : {1, 10}) {
                Settings s{maxiter, 0.0, 1, 1};
                Outcome got = run(gpu, bad, s, mem);
                CHECK_STATUS(gpu, got.status, GPK_ERR_INVALID_ARGUMENT);
                CHECK_MSG(got.message.find(k.needle) != std::string::npos, got.message);
                CHECK(got.finals == 0 && got.periodic.empty() && got.progress_iters.empty());
                CHECK(std::all_of(got.grid.begin(), got.grid.end(), [](double v) { return std::isnan(v); }));
            }
    }
    // The context is usable after the failures.
    Settings s{10, 0.0, 1, 1};
    CHECK_OK(gpu, run(gpu, p, s, Memory::device).status);
}

// A bad cell at the edges of row blocks (30 rows, GPK_TEST_HEAT_ROWS) and strips, in the first and last
// rows and columns, on every pass kernel: the checking pass (lean steps inside a block, general ones at its
// edges; general ones only in a shorter pass) flags it and the scan that follows names the same cell, with
// the same message, as the CPU backend; a -0 conductivity (valid) before it is not taken for one, and a
// second bad cell after it does not change which one is named.
void test_invalid_positions(gpk_context *cpu, gpk_context *gpu) {
    const Problem p = random_problem(70, 300, 4);
    const size_t rows[] = {0, 1, 6, 23, 29, 30, 31, 36, 59, 60, 64, 69};
    const size_t cols[] = {0, 1, 6, 237, 243, 244, 250, 299};
    for (const Kernel &kernel : kKernels) {
        if (small() && &kernel != &kKernels[0]) continue;
        size_t runs = 0;
        for (bool temperature : {true, false})
            for (size_t r : rows)
                for (size_t c : cols) {
                    if (small() && (r % 2 || c % 2)) continue;
                    Problem bad = p;
                    std::vector<double> &cells = temperature ? bad.t : bad.c;
                    const size_t k = r * p.m + c;
                    const double values[] = {NAN, INFINITY, -INFINITY, 1.0000000000000002, -1e-300};
                    cells[k] = temperature ? values[runs % 3] : values[runs % 5 == 1 ? 0 : runs % 5];
                    if (k > 0 && !temperature) cells[k - 1] = -0.0;
                    if (k + 7 < cells.size()) cells[k + 7] = NAN;
                    const size_t maxiter = runs % 4 == 3 ? 1 : 12; // 1: a shorter checking pass
                    Settings s{maxiter, 0.0, 0, 0};
                    const Outcome want = run(cpu, bad, s);
                    const Outcome got = with_kernel(kernel, "30", [&] {
                        return run(gpu, bad, s, runs % 2 ? Memory::pageable : Memory::device);
                    });
                    const std::string what = std::string("kernel ") + kernel.name + ", " +
                                             (temperature ? "tinit" : "conductivity") + " row " +
                                             std::to_string(r) + " column " + std::to_string(c);
                    CHECK_STATUS(gpu, got.status, GPK_ERR_INVALID_ARGUMENT);
                    CHECK_MSG(got.message == want.message, what + ": " + got.message + " vs " + want.message);
                    CHECK_MSG(
                        std::all_of(got.grid.begin(), got.grid.end(), [](double v) { return std::isnan(v); }),
                        what + ": tfinal written");
                    ++runs;
                }
    }
}

// The knob caps the device memory: the grid no longer fits, the message names the bytes.
void test_out_of_memory(gpk_context *gpu) {
    const size_t n = small() ? 500 : 1000;
    const char *limit = small() ? "2000000" : "8000000";
    Problem p = random_problem(n, n, 8);
    Outcome got;
    {
        hooks::Hook memory("GPK_TEST_DEVICE_MEMORY_LIMIT", limit);
        got = run(gpu, p, Settings{5, 0.0, 1, 1}, Memory::device);
    }
    CHECK_STATUS(gpu, got.status, GPK_ERR_OUT_OF_MEMORY);
    CHECK_MSG(got.message.find("bytes") != std::string::npos && got.message.find(limit) != std::string::npos,
              got.message);
    CHECK(got.finals == 0);
    CHECK(std::all_of(got.grid.begin(), got.grid.end(), [](double v) { return std::isnan(v); }));
    got = run(gpu, p, Settings{5, 0.0, 1, 1}, Memory::device); // the limit is gone: it runs
    CHECK_OK(gpu, got.status);
}

// ---------------------------------------------------------------------------------------------------
// The course pattern's check on its image.

// Returns false when the image is not there.
bool test_pat1(gpk_context *cpu, gpk_context *gpu) {
    const char *dir = std::getenv("GPK_TEST_DATA");
    if (!dir || !std::ifstream(std::string(dir) + "/pat1_100x150.pgm")) return false;
    size_t w = 0, h = 0;
    long maxval = 0;
    std::vector<long> px;
    CHECK(read_pgm(std::string(dir) + "/pat1_100x150.pgm", w, h, maxval, px));
    CHECK(w == 100 && h == 150);
    if (w != 100 || h != 150) return true;
    Problem p{150, 100, std::vector<double>(px.size()), std::vector<double>(px.size())};
    for (size_t k = 0; k < px.size(); ++k) {
        p.t[k] = -100.0 + double(px[k]) * 200.0 / double(maxval);
        p.c[k] = double(px[k]) / double(maxval);
    }
    Settings s{5000, 0.001, 500, 0};
    Outcome got = run(gpu, p, s);
    CHECK_OK(gpu, got.status);
    CHECK_EQ(got.final.niter, size_t(5000));
    CHECK_MSG(e6(got.final.tmin) == "-6.818562e+00", e6(got.final.tmin));
    CHECK_MSG(e6(got.final.tmax) == "2.687404e+01", e6(got.final.tmax));
    CHECK_MSG(e6(got.final.maxdiff) == "4.175908e-03", e6(got.final.maxdiff));
    CHECK_MSG(e6(got.final.tavg) == "8.652341e+00", e6(got.final.tavg));
    CHECK_EQ(got.periodic.size(), size_t(10));
    check_against_cpu(cpu, p, s, got, "pat1");
    return true;
}

// A row's sum in the CUDA backend's documented order (lib/cuda/heat/kernels.cuh, row_stats_kernel): lane l
// of 32 adds columns l, l + 32, ... in order from 0.0, then a butterfly combines the lanes. Bit for bit, as
// the device adds (each addition one IEEE double operation).
double documented_row_sum(const double *row, size_t m) {
    double v[32] = {};
    for (size_t j = 0; j < m; ++j) v[j % 32] += row[j];
    for (int o = 16; o > 0; o /= 2) {
        double next[32];
        for (int l = 0; l < 32; ++l) next[l] = v[l] + v[l ^ o];
        std::copy(next, next + 32, v);
    }
    return v[0];
}

// The final report's statistics in the documented order, bit for bit, whatever made the grid: tmin and
// tmax are the grid's, tavg the mean of documented_row_sum's rows added in row order (which makes a split
// into row blocks, libgpk_mpi's ranks, give the same bits): widths around the warp and the pass kernels'
// strips (244 columns; 120 for 128-thread blocks), one and several row blocks (GPK_TEST_HEAT_ROWS), the
// default kernel and 4/4, calls of one pass, of whole passes and of shorter last passes, device and host
// memory.
void test_statistics(gpk_context *gpu) {
    const size_t all_widths[] = {1, 2, 31, 32, 33, 63, 64, 65, 119, 120, 121, 243, 244, 245, 489, 3877};
    const size_t small_widths[] = {1, 33, 245};
    const struct {
        const char *name;
        const Kernel &kernel;
        const char *rows;
    } variants[] = {{"default", kKernels[0], ""},
                    {"default, 12-row blocks", kKernels[0], "12"},
                    {"kernel 4/4, 12-row blocks", kKernels[2], "12"}};
    unsigned seed = 900;
    for (size_t m : small() ? std::vector<size_t>(std::begin(small_widths), std::end(small_widths))
                            : std::vector<size_t>(std::begin(all_widths), std::end(all_widths)))
        for (size_t n : {1, 5, 37}) {
            if (small() && n != 37) continue;
            Problem p = random_problem(n, m, seed++);
            for (size_t maxiter : {3, 6, 7, 9, 13, 25}) {
                if (small() && maxiter != 7 && maxiter != 13) continue;
                for (const auto &v : variants) {
                    if (small() && std::strcmp(v.name, "default, 12-row blocks") != 0) continue;
                    for (Memory mem : {Memory::device, Memory::pageable}) {
                        Settings quiet;
                        quiet.maxiter = maxiter;
                        quiet.no_callbacks = true; // the final statistics follow the last pass at once
                        const Outcome got =
                            with_kernel(v.kernel, v.rows, [&] { return run(gpu, p, quiet, mem); });
                        const std::string what = std::to_string(n) + "x" + std::to_string(m) + " maxiter " +
                                                 std::to_string(maxiter) + ", " + v.name + ", " +
                                                 memory_name(mem);
                        CHECK_MSG(got.status == GPK_OK, what + ": " + got.message);
                        if (got.status != GPK_OK) continue;
                        check_final_statistics(got.final, got.grid, n, m, documented_row_sum, what);
                    }
                }
            }
        }
}

// Checkpoints and resuming (tests/common/heat_resume.hpp): batches and passes end at checkpoints, a
// resumed run ends bit for bit as the run never stopped, for every pass length and with convergence
// inside a pass and on a checkpoint iteration.
void test_checkpoints(gpk_context *cpu, gpk_context *gpu) {
    // Small mode: the largest shape still two strips wide and four row blocks high (the planned 12-row
    // blocks), at about a tenth of the cells (racecheck of this group ran past 230 s with 301 x 409).
    const size_t large_n = small() ? 37 : 301, large_m = small() ? 300 : 409;
    const size_t shapes[][2] = {{1, 5}, {7, 13}, {large_n, large_m}};
    unsigned seed = 500;
    for (auto nm : shapes) {
        Problem p = random_problem(nm[0], nm[1], seed++);
        std::vector<double> md = maxdiffs(cpu, p, 30);
        std::vector<double> thresholds = {0.0};
        for (size_t k : {11, 12})
            if (double t = threshold_for(md, k); t > 0) thresholds.push_back(t);
        for (double threshold : thresholds)
            for (size_t interval : {1, 3, 8})
                heat_resume::check_resume(gpu, {p.n, p.m, 30, threshold, 7}, p.t, p.c, interval,
                                          std::to_string(p.n) + "x" + std::to_string(p.m) + " threshold " +
                                              std::to_string(threshold) + " every " +
                                              std::to_string(interval));
    }
    Problem p = random_problem(97, 133, 7);
    for (const Kernel &k : kKernels)
        with_kernel(k, nullptr, [&] {
            heat_resume::check_resume(gpu, {p.n, p.m, 40, 0.0, 6}, p.t, p.c, 5,
                                      std::string("kernel ") + k.name);
            return 0;
        });
    heat_resume::check_resume_arguments(gpu);
}

} // namespace

int main() {
    int devices = 0;
    if (gpk_device_count(&devices) != GPK_OK || devices == 0) check::skip("no CUDA device");
    hooks::require("test_gpu_heat");
    gpk_context *cpu = gpu::make_context(GPK_BACKEND_CPU), *gpu = gpu::make_context(GPK_BACKEND_CUDA);
    if (!cpu || !gpu) return check::finish("test_gpu_heat");
    // GPK_TEST_ONLY=name,name runs only the named groups (sanitizer runs split the test over processes).
    using ::gpu::wanted; // the namespace of gpu_common.hpp, not the context `gpu` above
    if (wanted("kernels")) test_kernels(cpu, gpu);
    if (wanted("awkward")) test_awkward_sizes(cpu, gpu);
    if (wanted("convergence")) test_convergence(cpu, gpu);
    if (wanted("cancellation")) test_cancellation(cpu, gpu);
    if (wanted("placements")) test_placements(cpu, gpu);
    if (wanted("no_report")) test_no_report(cpu, gpu);
    if (wanted("memory_kinds")) test_memory_kinds(cpu, gpu);
    if (wanted("determinism")) test_determinism(gpu);
    if (wanted("invalid")) {
        test_invalid_device_inputs(gpu);
        test_invalid_positions(cpu, gpu);
    }
    if (wanted("out_of_memory")) test_out_of_memory(gpu);
    if (wanted("checkpoints")) test_checkpoints(cpu, gpu);
    if (wanted("statistics")) test_statistics(gpu);
    bool pat1 = wanted("pat1") && !small() ? test_pat1(cpu, gpu) : true;
    gpk_context_destroy(cpu);
    gpk_context_destroy(gpu);
    int rc = check::finish("test_gpu_heat");
    if (rc == 0 && !pat1) check::skip("GPK_TEST_DATA (pat1_100x150.pgm) is absent; every other check passed");
    return rc;
}
