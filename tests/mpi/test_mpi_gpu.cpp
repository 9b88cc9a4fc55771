// libgpk_mpi on CUDA ranks (several may share one GPU): each rank's part equals the single-process CUDA
// result of the same library, bit for bit, computed by every rank itself on its own context: heat on 4096²
// (reports, convergence inside a pass and at its end, a progress callback stopping the run, a resumed
// checkpoint), convolutions (exact u8 min/max, f32 2D and
// separable with wrap and clamp), histograms (u8, f32, all samples equal); and a kernel launch failing on the
// last rank in the middle of a heat run, which every rank must return as GPK_ERR_DEVICE. Exits 77 on every
// rank where no CUDA device is usable. GPK_TEST_MPI_GPU_N overrides the heat grid's side; GPK_TEST_QUICK=1
// (sanitizer runs) makes every image smaller and the heat runs fewer and shorter, and GPK_TEST_ONLY picks
// groups (heat_runs, heat_device, heat_stops, convolve, block_heights, histogram). The same heat runs
// and convolutions again on blocks in each rank's device memory (inputs and outputs), equal to the same
// single-process results, and on blocks of 2 * reach rows and about it (device blocks, and one side on
// the host). Rank 0 prints the halo path of every link (gpk_mpi_halo_paths): CUDA IPC where
// the ranks' devices reach each other, host staging with GPK_TEST_MPI_HALO=host; tools/gpu/check.sh (stage
// mpi) runs both.
#include "heat_resume.hpp"
#include "hooks.hpp"
#include "mpi_test.hpp"
#include "samples.hpp"
#include "test_env.hpp"

#include "gpk_internal.h"

#include <algorithm>
#include <memory>

using namespace mpitest;

namespace {

// Device memory of the rank's context holding a copy of `bytes` bytes of host data (or none).
struct DeviceCopy {
    gpk_context *ctx;
    void *p = nullptr;
    DeviceCopy(gpk_context *c, const void *host, size_t bytes) : ctx(c) {
        CHECK_OK(ctx, gpk_internal_device_alloc(ctx, bytes, &p));
        if (host && p) CHECK_OK(ctx, gpk_internal_copy_rows(ctx, p, bytes, host, bytes, bytes, 1));
    }
    ~DeviceCopy() { gpk_internal_device_free(ctx, p); }
    DeviceCopy(const DeviceCopy &) = delete;
    DeviceCopy &operator=(const DeviceCopy &) = delete;
    template <class T> T *as() const { return static_cast<T *>(p); }
    void to_host(void *host, size_t bytes) const {
        CHECK_OK(ctx, gpk_internal_copy_rows(ctx, host, bytes, p, bytes, bytes, 1));
    }
};

gpk_context *gpu_context() {
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = GPK_BACKEND_CUDA;
    o.device = GPK_MPI_DEVICE_BY_RANK;
    gpk_context *ctx = nullptr;
    gpk_status s = gpk_mpi_context_create(&ctx, MPI_COMM_WORLD, &o);
    CHECK_MSG(s == GPK_OK, std::string("gpk_mpi_context_create: ") + gpk_context_last_error(nullptr));
    return ctx;
}

using heat_resume::Run;
using heat_resume::Setup;

Run whole(gpk_context *ctx, const Setup &s, const std::vector<double> &t, const std::vector<double> &c) {
    Run r;
    r.grid.assign(s.n * s.m, -1.0);
    gpk_heat_params p = heat_resume::params_of(s, &r.rec);
    r.status = gpk_heat_run(ctx, &p, t.data(), c.data(), r.grid.data(), &r.final);
    r.message = gpk_context_last_error(ctx);
    return r;
}

Run mine(gpk_context *ctx, const Setup &s, const std::vector<double> &t, const std::vector<double> &c,
         size_t begin, size_t count, size_t start = 0, const double *fixed = nullptr) {
    Run r;
    r.grid.assign(count * s.m, -1.0);
    gpk_heat_params p = heat_resume::params_of(s, &r.rec);
    p.start_iteration = start;
    p.fixed_rows = fixed;
    r.status = gpk_mpi_heat_run(ctx, MPI_COMM_WORLD, &p, begin, count, t.data() + begin * s.m,
                                c.data() + begin * s.m, r.grid.data(), &r.final);
    r.message = gpk_context_last_error(ctx);
    return r;
}

// A run resumed at iteration `start` reports only after it: compared with the whole run's reports after it.
void compare(const Run &got, const Run &want, size_t begin, size_t count, size_t m, const std::string &what,
             size_t start = 0) {
    CHECK_MSG(got.status == GPK_OK && want.status == GPK_OK, what + ": " + got.message + want.message);
    CHECK_MSG(same_bits(got.grid.data(), want.grid.data() + begin * m, count * m * sizeof(double)),
              what + ": final grid");
    CHECK_MSG(heat_resume::same_report(got.final, want.final), what + ": final report");
    std::vector<gpk_heat_report> later;
    for (const gpk_heat_report &r : want.rec.periodic)
        if (r.niter > start) later.push_back(r);
    CHECK_MSG(!later.empty() || want.rec.periodic.empty(), what + ": no periodic report to compare");
    CHECK_MSG(heat_resume::same_reports(got.rec.periodic, later), what + ": periodic reports");
}

// mine() on device copies of the rank's rows, the result read back.
Run mine_on_device(gpk_context *ctx, const Setup &s, const std::vector<double> &t,
                   const std::vector<double> &c, size_t begin, size_t count) {
    const size_t bytes = count * s.m * sizeof(double);
    DeviceCopy dt(ctx, t.data() + begin * s.m, bytes), dc(ctx, c.data() + begin * s.m, bytes),
        out(ctx, nullptr, bytes);
    Run r;
    r.grid.assign(count * s.m, -1.0);
    gpk_heat_params p = heat_resume::params_of(s, &r.rec);
    r.status = gpk_mpi_heat_run(ctx, MPI_COMM_WORLD, &p, begin, count, dt.as<double>(), dc.as<double>(),
                                out.as<double>(), &r.final);
    r.message = gpk_context_last_error(ctx);
    if (r.status == GPK_OK) out.to_host(r.grid.data(), bytes);
    return r;
}

// The heat grid and this rank's block of it.
struct HeatCase {
    Setup s;
    std::vector<double> t, c;
    size_t begin = 0, count = 0;
};

// Quick mode (sanitizer runs): a smaller grid and 150 iterations (racecheck takes seconds a launch).
HeatCase heat_case() {
    const char *side = std::getenv("GPK_TEST_MPI_GPU_N");
    const bool quick = testenv::quick();
    const size_t n = side ? size_t(std::atoll(side)) : quick ? 256 : 4096, m = n;
    HeatCase h{Setup{n, m, quick ? size_t(150) : size_t(200), 0.0, 50}, random_values(n * m, -100, 100, 1),
               random_values(n * m, 0, 1, 2)};
    block_of(n, false, &h.begin, &h.count);
    return h;
}

// The maxdiff of every iteration of a free run (a periodic report every iteration), in one process.
std::vector<double> maxdiffs(gpk_context *ctx, const Setup &s, const std::vector<double> &t,
                             const std::vector<double> &c) {
    return heat_resume::every_maxdiff(s, [&](const Setup &free) { return whole(ctx, free, t, c); });
}

// Runs to their end, on host blocks or on device blocks: to maxiter, and converging inside a pass and at its
// end.
void test_heat_runs(gpk_context *ctx, bool device) {
    const HeatCase h = heat_case();
    const Setup &s = h.s;
    const auto &t = h.t, &c = h.c;
    const size_t begin = h.begin, count = h.count, n = s.n, m = s.m;
    const std::string blocks = device ? ", device blocks" : "";
    auto run = [&](const Setup &x) {
        return device ? mine_on_device(ctx, x, t, c, begin, count) : mine(ctx, x, t, c, begin, count);
    };
    compare(run(s), whole(ctx, s, t, c), begin, count, m, "heat " + std::to_string(n) + blocks);
    const std::vector<double> md = maxdiffs(ctx, s, t, c);
    // Convergence at iterations inside a pass and at its end (passes of up to 6 levels restart at the
    // periods' multiples): the pass launched beyond it is dropped and the one it is in redone up to it.
    // Quick mode keeps one of each.
    const std::vector<size_t> ats =
        testenv::quick() ? std::vector<size_t>{101, 106} : std::vector<size_t>{101, 102, 106, 107, 149};
    for (size_t at : ats) {
        if (md.size() < at || !(md[at - 1] < md[at - 2])) continue;
        if (*std::min_element(md.begin(), md.begin() + long(at) - 1) <= md[at - 1]) continue;
        Setup conv = s;
        conv.threshold = 0.5 * (md[at - 1] + *std::min_element(md.begin(), md.begin() + long(at) - 1));
        const Run w = whole(ctx, conv, t, c);
        CHECK_EQ(w.final.niter, at);
        compare(run(conv), w, begin, count, m, "heat converging at " + std::to_string(at) + blocks);
    }
}

// Runs that end early or start late: a progress callback stopping them, a resumed checkpoint, and a launch
// failing on one rank.
void test_heat_stops(gpk_context *ctx) {
    const HeatCase h = heat_case();
    const Setup &s = h.s;
    const auto &t = h.t, &c = h.c;
    const size_t begin = h.begin, count = h.count, n = s.n, m = s.m;
    const Run want = whole(ctx, s, t, c);
    // A progress callback that asks to stop inside a pass, and at a pass's end (quick mode: inside): the
    // run ends at that pass's boundary (passes of up to 6 iterations), as the run of that many iterations.
    const std::vector<double> md = maxdiffs(ctx, s, t, c);
    const std::vector<size_t> stops =
        testenv::quick() ? std::vector<size_t>{77} : std::vector<size_t>{77, 96};
    for (size_t at : stops) {
        Setup every = s;
        every.progress = 1;
        Run got;
        got.rec.stop_progress_at = at;
        got.grid.assign(count * m, -1.0);
        gpk_heat_params pg = heat_resume::params_of(every, &got.rec);
        got.status = gpk_mpi_heat_run(ctx, MPI_COMM_WORLD, &pg, begin, count, t.data() + begin * m,
                                      c.data() + begin * m, got.grid.data(), &got.final);
        const std::string what = "heat stopped by progress from " + std::to_string(at);
        CHECK_MSG(got.status == GPK_ERR_CANCELLED, what + ": " + got.message);
        CHECK_MSG(got.final.niter >= at && got.final.niter < at + 6,
                  what + ": niter " + std::to_string(got.final.niter));
        Setup until = s;
        until.maxiter = got.final.niter;
        const Run w = whole(ctx, until, t, c);
        CHECK_MSG(same_bits(got.grid.data(), w.grid.data() + begin * m, count * m * sizeof(double)),
                  what + ": final grid");
        CHECK_MSG(heat_resume::same_report(got.final, w.final), what + ": final report");
        const heat_resume::ProgressRule rule{1, 0, got.final.niter, 6};
        const std::string broken =
            heat_resume::progress_rule_broken(got.rec.progress_iters, got.rec.progress_maxdiffs, rule, md);
        CHECK_MSG(broken.empty(), what + ": " + broken);
    }
    // Resumed at 120 from the whole run's grid there, with its fixed rows.
    Setup first = s;
    first.maxiter = 120;
    const Run at = whole(ctx, first, t, c);
    const std::vector<double> fixed = heat_resume::fixed_rows_of(t, n, m);
    compare(mine(ctx, s, at.grid, c, begin, count, 120, fixed.data()), want, begin, count, m,
            "heat resumed at 120", 120);
    // A launch failing on the last rank in the middle of the run (its 40th): every rank returns the failure,
    // with host blocks and with device blocks.
    if (hooks::skip_part("a launch failing on the last rank (GPK_TEST_FAULT)")) return;
    hooks::Hook fault("GPK_TEST_FAULT", nullptr);
    for (bool device : {false, true}) {
        fault.set(rank() == size() - 1 ? "launch:40" : nullptr);
        const Run failed =
            device ? mine_on_device(ctx, s, t, c, begin, count) : mine(ctx, s, t, c, begin, count);
        fault.set(nullptr);
        CHECK_MSG(failed.status == GPK_ERR_DEVICE &&
                      (size() == 1 || contains(failed.message, "rank " + std::to_string(size() - 1) + ":")),
                  std::string(gpk_status_string(failed.status)) + ": " + failed.message);
        if (!device)
            compare(mine(ctx, s, t, c, begin, count), want, begin, count, m, "heat after the failure");
    }
}

struct FilterDeleter {
    void operator()(gpk_filter *f) const { gpk_filter_destroy(f); }
};

// `count` samples: bytes for u8, else values in [-0.5, 0.5].
std::vector<unsigned char> random_samples(gpk_dtype dtype, size_t count, uint64_t seed) {
    const size_t sample = gpk_dtype_size(dtype);
    std::vector<unsigned char> v(count * sample);
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i < count; ++i)
        write_sample(dtype, &v[i * sample],
                     dtype == GPK_U8 ? double(rng() % 256) : double(rng() % 1000) / 999 - 0.5);
    return v;
}

void test_convolve(gpk_context *ctx) {
    struct Case {
        const char *filter;
        gpk_dtype in, out;
        gpk_border border;
        gpk_normalize normalize;
    };
    const Case cases[] = {{"lp3", GPK_U8, GPK_U8, GPK_BORDER_CLAMP, GPK_NORMALIZE_MINMAX},
                          {"smooth5", GPK_U8, GPK_U8, GPK_BORDER_MIRROR, GPK_NORMALIZE_SUM},
                          {"log9", GPK_F32, GPK_F32, GPK_BORDER_WRAP, GPK_NORMALIZE_NONE},
                          {"gauss:2", GPK_F32, GPK_F32, GPK_BORDER_REFLECT, GPK_NORMALIZE_MINMAX},
                          {"box:9", GPK_U8, GPK_F32, GPK_BORDER_WRAP, GPK_NORMALIZE_NONE},
                          {"lp5", GPK_F64, GPK_F64, GPK_BORDER_ZERO, GPK_NORMALIZE_MINMAX},
                          {"box:17", GPK_F32, GPK_F32, GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE}};
    const size_t w = testenv::quick() ? 512 : 2048, h = testenv::quick() ? 499 : 1999;
    for (const Case &k : cases) {
        gpk_filter *raw = nullptr;
        gpk_filter_create_named(&raw, k.filter);
        std::unique_ptr<gpk_filter, FilterDeleter> f(raw);
        const size_t in_sample = gpk_dtype_size(k.in), out_sample = gpk_dtype_size(k.out);
        const std::vector<unsigned char> in = random_samples(k.in, w * h, 7);
        gpk_convolve_params p;
        gpk_convolve_params_init(&p);
        p.filter = f.get();
        p.border = k.border;
        p.normalize = k.normalize;
        gpk_image wi, wo;
        gpk_image_init(&wi, k.in, w, h, 1);
        gpk_image_init(&wo, k.out, w, h, 1);
        std::vector<unsigned char> want(w * h * out_sample);
        CHECK_OK(ctx, gpk_convolve(ctx, &p, &wi, in.data(), &wo, want.data()));
        size_t begin, count;
        block_of(h, true, &begin, &count);
        gpk_image bi = wi, bo = wo;
        bi.height = bo.height = count;
        std::vector<unsigned char> got(count * w * out_sample);
        gpk_status s = gpk_mpi_convolve(ctx, MPI_COMM_WORLD, &p, h, begin, &bi,
                                        in.data() + begin * w * in_sample, &bo, got.data());
        const std::string what = std::string("convolve ") + k.filter + " rank " + std::to_string(rank());
        CHECK_MSG(s == GPK_OK, what + ": " + gpk_context_last_error(ctx));
        CHECK_MSG(same_bits(got.data(), want.data() + begin * w * out_sample, got.size()),
                  what + ": output rows");
        // The block in device memory, in and out.
        DeviceCopy din(ctx, in.data() + begin * w * in_sample, count * w * in_sample),
            dout(ctx, nullptr, got.size());
        std::vector<unsigned char> got_dev(got.size());
        s = gpk_mpi_convolve(ctx, MPI_COMM_WORLD, &p, h, begin, &bi, din.p, &bo, dout.p);
        CHECK_MSG(s == GPK_OK, what + ", device blocks: " + gpk_context_last_error(ctx));
        dout.to_host(got_dev.data(), got_dev.size());
        CHECK_MSG(same_bits(got_dev.data(), want.data() + begin * w * out_sample, got.size()),
                  what + ", device blocks: output rows");
        // Device blocks whose output rows are apart (a stride beyond the row): the rows in place, the gaps
        // untouched.
        const size_t row = w * out_sample, stride = row + 64;
        std::vector<unsigned char> strided(count * stride, 0xA5);
        DeviceCopy dstrided(ctx, strided.data(), strided.size());
        gpk_image so = bo;
        so.stride = stride;
        s = gpk_mpi_convolve(ctx, MPI_COMM_WORLD, &p, h, begin, &bi, din.p, &so, dstrided.p);
        CHECK_MSG(s == GPK_OK, what + ", device blocks, strided output: " + gpk_context_last_error(ctx));
        dstrided.to_host(strided.data(), strided.size());
        bool rows_same = true, gaps_kept = true;
        for (size_t i = 0; i < count; ++i) {
            rows_same = rows_same && same_bits(&strided[i * stride], want.data() + (begin + i) * row, row);
            for (size_t b = row; b < stride; ++b) gaps_kept = gaps_kept && strided[i * stride + b] == 0xA5;
        }
        CHECK_MSG(rows_same && gaps_kept, what + ", device blocks, strided output");
    }
}

// Blocks of 2 * reach rows and about it (the stacked edge image of a block convolved in place; thinner
// blocks widened, beside ranks in place), device blocks and blocks with one side on the host: equal to the
// single-process result. Rank r's block has shape[r % shape.size()] rows.
void test_convolve_block_heights(gpk_context *ctx) {
    struct Case {
        const char *filter;
        size_t reach;
        gpk_dtype dtype;
    };
    const Case cases[] = {{"lp3", 1, GPK_U8},
                          {"smooth5", 2, GPK_U8},
                          {"box:7", 3, GPK_F32},
                          {"log9", 4, GPK_F32},
                          {"box:17", 8, GPK_F32}};
    const size_t w = 1000;
    for (const Case &k : cases) {
        gpk_filter *raw = nullptr;
        gpk_filter_create_named(&raw, k.filter);
        std::unique_ptr<gpk_filter, FilterDeleter> f(raw);
        const size_t r2 = 2 * k.reach, sample = gpk_dtype_size(k.dtype), row = w * sample;
        const std::vector<std::vector<size_t>> shapes = {{r2}, {r2, r2 - 1}, {1, r2, r2 + 1}};
        for (const auto &shape : shapes)
            for (gpk_border border : {GPK_BORDER_CLAMP, GPK_BORDER_WRAP, GPK_BORDER_MIRROR}) {
                size_t begin = 0, h = 0;
                for (int r = 0; r < size(); ++r) {
                    if (r == rank()) begin = h;
                    h += shape[size_t(r) % shape.size()];
                }
                const size_t count = shape[size_t(rank()) % shape.size()];
                const std::vector<unsigned char> in = random_samples(k.dtype, w * h, h);
                gpk_convolve_params p;
                gpk_convolve_params_init(&p);
                p.filter = f.get();
                p.border = border;
                p.normalize = k.filter[0] == 'l' ? GPK_NORMALIZE_NONE : GPK_NORMALIZE_SUM;
                gpk_image wi, bi;
                gpk_image_init(&wi, k.dtype, w, h, 1);
                gpk_image_init(&bi, k.dtype, w, count, 1);
                std::vector<unsigned char> want(h * row);
                CHECK_OK(ctx, gpk_convolve(ctx, &p, &wi, in.data(), &wi, want.data()));
                const unsigned char *mine = in.data() + begin * row;
                for (int sides = 0; sides < 3; ++sides) { // both on the device; input on the host; output
                    const bool in_dev = sides != 1, out_dev = sides != 2;
                    DeviceCopy din(ctx, in_dev ? mine : nullptr, in_dev ? count * row : 0),
                        dout(ctx, nullptr, out_dev ? count * row : 0);
                    std::vector<unsigned char> got(count * row, 0xCD);
                    gpk_status s = gpk_mpi_convolve(ctx, MPI_COMM_WORLD, &p, h, begin, &bi,
                                                    in_dev ? din.p : static_cast<const void *>(mine), &bi,
                                                    out_dev ? dout.p : got.data());
                    if (out_dev && s == GPK_OK) dout.to_host(got.data(), got.size());
                    std::string blocks;
                    for (size_t c : shape) blocks += std::to_string(c) + ",";
                    const std::string what = std::string("convolve ") + k.filter + " blocks " + blocks +
                                             " border " + std::to_string(border) + " sides " +
                                             std::to_string(sides) + " rank " + std::to_string(rank());
                    CHECK_MSG(s == GPK_OK, what + ": " + gpk_context_last_error(ctx));
                    CHECK_MSG(same_bits(got.data(), want.data() + begin * row, got.size()),
                              what + ": output rows");
                }
            }
    }
}

void test_histogram(gpk_context *ctx) {
    const size_t w = testenv::quick() ? 1024 : 4096, h = w;
    for (int kind = 0; kind < 3; ++kind) {
        const gpk_dtype dtype = kind == 1 ? GPK_F32 : GPK_U8;
        const size_t sample = gpk_dtype_size(dtype);
        std::vector<unsigned char> data(w * h * sample);
        std::mt19937_64 rng(11);
        for (size_t i = 0; i < w * h; ++i)
            write_sample(dtype, &data[i * sample],
                         kind == 2   ? 77.0
                         : kind == 1 ? double(rng() % 10000) / 10000
                                     : double(rng() % 256));
        gpk_histogram_params p;
        gpk_histogram_params_init(&p);
        p.dtype = dtype;
        p.width = w;
        p.height = h;
        if (dtype == GPK_F32) {
            p.bins = 1000;
            p.upper = 1;
        }
        std::vector<uint64_t> want(p.bins), got(p.bins);
        CHECK_OK(ctx, gpk_histogram(ctx, &p, data.data(), want.data(), nullptr));
        size_t begin, count;
        block_of(h, false, &begin, &count);
        gpk_histogram_params b = p;
        b.height = count;
        gpk_status s = gpk_mpi_histogram(ctx, MPI_COMM_WORLD, GPK_MPI_ALL_RANKS, &b,
                                         data.data() + begin * w * sample, got.data(), nullptr);
        CHECK_MSG(s == GPK_OK && got == want,
                  "histogram " + std::to_string(kind) + ": " + gpk_context_last_error(ctx));
    }
}

} // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int devices = 0;
    if (gpk_device_count(&devices) != GPK_OK || devices == 0) {
        if (rank() == 0) std::printf("SKIP: no CUDA device\n");
        MPI_Finalize();
        return 77;
    }
    gpk_context *ctx = gpu_context();
    if (ctx) {
        char paths[4096] = {};
        double seconds = 0;
        CHECK_OK(ctx, gpk_mpi_halo_paths(ctx, MPI_COMM_WORLD, 4096, 20, paths, sizeof paths, &seconds));
        if (rank() == 0)
            std::printf("halo paths (exchange of 4096 columns: %.1f us):\n%s", 1e6 * seconds, paths);
        if (testenv::wanted("heat_runs")) test_heat_runs(ctx, false);
        if (testenv::wanted("heat_device")) test_heat_runs(ctx, true);
        if (testenv::wanted("heat_stops")) test_heat_stops(ctx);
        if (testenv::wanted("convolve")) test_convolve(ctx);
        if (testenv::wanted("block_heights")) test_convolve_block_heights(ctx);
        if (testenv::wanted("histogram")) test_histogram(ctx);
    }
    gpk_context_destroy(ctx);
    return finish("test_mpi_gpu");
}
