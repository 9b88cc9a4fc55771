// Concurrency and determinism: 8 threads, each with its own context, run all three operations at once on
// every usable backend; their results must equal a sequential run bit for bit. One context shared by
// threads that take turns (the documented rule: one thread at a time) gives the same results too.
#include "check.hpp"
#include "cpu_context.hpp"
#include "gpk.h"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace {

struct Inputs {
    size_t rows = 61, cols = 47;
    std::vector<double> tinit, cond;
    size_t w = 173, h = 97;
    std::vector<uint8_t> image;
    std::vector<float> fimage;
};

struct Results {
    std::vector<double> grid;
    gpk_heat_report report{};
    std::vector<uint64_t> hist;
    std::vector<uint8_t> lap;
    std::vector<float> smooth;
    bool ok = false;
};

Inputs make_inputs(unsigned seed) {
    Inputs in;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> temp(-50, 80), unit(0, 1);
    for (size_t i = 0; i < in.rows * in.cols; ++i) {
        in.tinit.push_back(temp(rng));
        in.cond.push_back(unit(rng));
    }
    for (size_t i = 0; i < in.w * in.h * 3; ++i) {
        in.image.push_back(uint8_t(rng() & 0xFF));
        in.fimage.push_back(float(unit(rng) * 100 - 20));
    }
    return in;
}

// Runs the three operations on `ctx`; `ok` says whether every call succeeded.
Results run_all(gpk_context *ctx, const Inputs &in) {
    Results r;
    r.grid.resize(in.rows * in.cols);
    gpk_heat_params hp = GPK_HEAT_PARAMS_INIT;
    hp.rows = in.rows;
    hp.cols = in.cols;
    hp.maxiter = 300;
    hp.threshold = 1e-4;
    bool ok = gpk_heat_run(ctx, &hp, in.tinit.data(), in.cond.data(), r.grid.data(), &r.report) == GPK_OK;

    gpk_histogram_params p = GPK_HISTOGRAM_PARAMS_INIT;
    p.width = in.w;
    p.height = in.h;
    p.channels = 3;
    r.hist.resize(3 * 256);
    ok = ok && gpk_histogram(ctx, &p, in.image.data(), r.hist.data(), nullptr) == GPK_OK;

    gpk_filter *lp3 = nullptr, *gauss = nullptr;
    ok = ok && gpk_filter_create_named(&lp3, "lp3") == GPK_OK &&
         gpk_filter_create_named(&gauss, "gauss:2.5") == GPK_OK;
    gpk_image img, out;
    gpk_image_init(&img, GPK_U8, in.w, in.h, 3);
    gpk_image_init(&out, GPK_U8, in.w, in.h, 3);
    gpk_convolve_params cp = GPK_CONVOLVE_PARAMS_INIT;
    cp.filter = lp3;
    cp.border = GPK_BORDER_ZERO;
    cp.normalize = GPK_NORMALIZE_MINMAX;
    r.lap.resize(in.image.size());
    ok = ok && gpk_convolve(ctx, &cp, &img, in.image.data(), &out, r.lap.data()) == GPK_OK;
    gpk_image_init(&img, GPK_F32, in.w, in.h, 3);
    gpk_image_init(&out, GPK_F32, in.w, in.h, 3);
    cp.filter = gauss;
    cp.border = GPK_BORDER_REFLECT;
    cp.normalize = GPK_NORMALIZE_NONE;
    r.smooth.resize(in.fimage.size());
    ok = ok && gpk_convolve(ctx, &cp, &img, in.fimage.data(), &out, r.smooth.data()) == GPK_OK;
    gpk_filter_destroy(lp3);
    gpk_filter_destroy(gauss);
    r.ok = ok;
    if (!ok) std::fprintf(stderr, "failed: %s\n", gpk_context_last_error(ctx));
    return r;
}

bool same(const Results &a, const Results &b) {
    return a.ok && b.ok && std::memcmp(a.grid.data(), b.grid.data(), a.grid.size() * sizeof(double)) == 0 &&
           std::memcmp(&a.report.tavg, &b.report.tavg, sizeof(double)) == 0 &&
           a.report.niter == b.report.niter && a.report.tmin == b.report.tmin &&
           a.report.tmax == b.report.tmax && a.report.maxdiff == b.report.maxdiff && a.hist == b.hist &&
           a.lap == b.lap &&
           std::memcmp(a.smooth.data(), b.smooth.data(), a.smooth.size() * sizeof(float)) == 0;
}

void test_backend(gpk_backend backend) {
    const int kThreads = 8;
    std::vector<Inputs> inputs;
    for (int t = 0; t < kThreads; ++t) inputs.push_back(make_inputs(1000u + unsigned(t)));

    // Sequential reference, each input twice on a fresh context: determinism.
    std::vector<Results> expected;
    for (int t = 0; t < kThreads; ++t) {
        gpk_context *ctx = new_context(backend);
        if (!ctx) return;
        expected.push_back(run_all(ctx, inputs[size_t(t)]));
        Results again = run_all(ctx, inputs[size_t(t)]);
        CHECK_MSG(same(expected.back(), again), "same call twice on one context differs");
        gpk_context_destroy(ctx);
    }

    // 8 threads, own contexts, all at once.
    std::vector<Results> got(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            gpk_context *ctx = new_context(backend);
            if (!ctx) return;
            got[size_t(t)] = run_all(ctx, inputs[size_t(t)]);
            gpk_context_destroy(ctx);
        });
    for (auto &th : threads) th.join();
    for (int t = 0; t < kThreads; ++t)
        CHECK_MSG(same(expected[size_t(t)], got[size_t(t)]),
                  std::string(gpk_backend_name(backend)) + ": thread " + std::to_string(t) + " differs");

    // One context shared by threads that take turns under a mutex.
    gpk_context *shared = new_context(backend);
    if (!shared) return;
    std::mutex turn;
    std::vector<Results> shared_got(kThreads);
    threads.clear();
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            std::lock_guard<std::mutex> lock(turn);
            shared_got[size_t(t)] = run_all(shared, inputs[size_t(t)]);
        });
    for (auto &th : threads) th.join();
    gpk_context_destroy(shared);
    for (int t = 0; t < kThreads; ++t)
        CHECK_MSG(same(expected[size_t(t)], shared_got[size_t(t)]),
                  std::string(gpk_backend_name(backend)) + ": shared context, thread " + std::to_string(t));
}

} // namespace

int main() {
    test_backend(GPK_BACKEND_CPU);
    int devices = 0;
    if (gpk_device_count(&devices) == GPK_OK && devices > 0) {
        std::printf("CUDA devices: %d; testing the CUDA backend too\n", devices);
        test_backend(GPK_BACKEND_CUDA);
    } else {
        std::printf("no CUDA device: CPU backend only\n");
    }
    return check::finish("test_concurrency");
}
