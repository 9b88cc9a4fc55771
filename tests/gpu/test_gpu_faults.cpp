// Fault injection on the CUDA backend (GPK_TEST_FAULT, NOTES.md internal knobs): every device or pinned
// allocation, every kernel launch and every copy of each operation fails in turn. Each failure returns
// the right status with a message, leaves the context usable (the same call then gives the CPU backend's
// result), and leaks no device memory once the context is destroyed.
#include "check.hpp"
#include "gpu_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

struct Inputs {
    size_t rows = 67, cols = 45; // heat
    std::vector<double> tinit, cond;
    size_t w = 301, h = 123; // images
    std::vector<uint8_t> image;
};

Inputs make_inputs() {
    Inputs in;
    std::mt19937 rng(77);
    std::uniform_real_distribution<double> u(0, 1);
    for (size_t i = 0; i < in.rows * in.cols; ++i) {
        in.tinit.push_back(u(rng) * 100 - 30);
        in.cond.push_back(u(rng));
    }
    for (size_t i = 0; i < in.w * in.h; ++i) in.image.push_back(uint8_t(rng()));
    return in;
}

// One operation on host (pageable) data; its result as doubles, for comparison with the CPU backend.
using Result = std::vector<double>;
using Operation = std::function<gpk_status(gpk_context *, Result &)>;

// Within SPEC's heat tolerance (1e-9 relative or 1e-12 absolute); histograms and the exact convolution
// path are integers, so for them this is equality.
bool same(const Result &a, const Result &b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::fabs(a[i] - b[i]) > std::max(1e-12, 1e-9 * std::fabs(b[i]))) return false;
    return true;
}

gpk_status run_heat(gpk_context *ctx, const Inputs &in, Result &result) {
    std::vector<double> grid(in.rows * in.cols);
    gpk_heat_params p = GPK_HEAT_PARAMS_INIT;
    p.rows = in.rows;
    p.cols = in.cols;
    p.maxiter = 40;
    p.period = 10;
    gpk_status s = gpk_heat_run(ctx, &p, in.tinit.data(), in.cond.data(), grid.data(), nullptr);
    result.assign(grid.begin(), grid.end());
    return s;
}

gpk_status run_histogram(gpk_context *ctx, const Inputs &in, Result &result) {
    std::vector<uint64_t> hist(256);
    gpk_histogram_params p = GPK_HISTOGRAM_PARAMS_INIT;
    p.width = in.w;
    p.height = in.h;
    gpk_status s = gpk_histogram(ctx, &p, in.image.data(), hist.data(), nullptr);
    result.assign(hist.begin(), hist.end());
    return s;
}

gpk_status run_convolve(gpk_context *ctx, const Inputs &in, Result &result) {
    gpk_filter *f = nullptr;
    if (gpk_filter_create_named(&f, "lp3") != GPK_OK) return GPK_ERR_INTERNAL;
    gpk_image ii, oi;
    gpk_image_init(&ii, GPK_U8, in.w, in.h, 1);
    gpk_image_init(&oi, GPK_U8, in.w, in.h, 1);
    gpk_convolve_params p = GPK_CONVOLVE_PARAMS_INIT;
    p.filter = f;
    p.border = GPK_BORDER_ZERO;
    p.normalize = GPK_NORMALIZE_MINMAX;
    std::vector<uint8_t> out(in.image.size());
    gpk_status s = gpk_convolve(ctx, &p, &ii, in.image.data(), &oi, out.data());
    gpk_filter_destroy(f);
    result.assign(out.begin(), out.end());
    return s;
}

size_t free_device_memory() {
    size_t free_b = 0, total_b = 0;
    gpu::cuda_ok(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    return free_b;
}

// Fails the 1st, 2nd, ... call of `point` until the operation no longer reaches that many; returns the
// number of faults injected.
int inject_each(const char *point, const char *name, const Operation &op, const Result &want,
                gpk_status expected) {
    int injected = 0;
    for (int n = 1; n <= 200; ++n) {
        gpk_context *ctx = gpu::make_context(GPK_BACKEND_CUDA);
        Result got;
        setenv("GPK_TEST_FAULT", (std::string(point) + ":" + std::to_string(n)).c_str(), 1);
        gpk_status s = op(ctx, got);
        std::string message = gpk_context_last_error(ctx);
        unsetenv("GPK_TEST_FAULT");
        std::string where = std::string(name) + ", " + point + " " + std::to_string(n);
        if (s == GPK_OK) { // fewer than n such calls: the run is complete and must be right
            CHECK_MSG(same(got, want), where + ": result after no fault differs from the CPU backend");
            gpk_context_destroy(ctx);
            break;
        }
        ++injected;
        CHECK_MSG(s == expected, where + ": " + gpk_status_string(s) + ": " + message);
        CHECK_MSG(!message.empty(), where + ": no message");
        // The same context is usable right after the failure.
        Result again;
        CHECK_MSG(op(ctx, again) == GPK_OK, where + ": next call failed: " + gpk_context_last_error(ctx));
        CHECK_MSG(same(again, want), where + ": next call's result differs from the CPU backend");
        gpk_context_destroy(ctx);
    }
    return injected;
}

} // namespace

int main() {
    gpu::require_device();
    Inputs in = make_inputs();
    struct Case {
        const char *name;
        Operation op;
    };
    std::vector<Case> cases = {
        {"heat", [&](gpk_context *c, Result &r) { return run_heat(c, in, r); }},
        {"histogram", [&](gpk_context *c, Result &r) { return run_histogram(c, in, r); }},
        {"convolve", [&](gpk_context *c, Result &r) { return run_convolve(c, in, r); }},
    };
    gpk_context *cpu = gpu::make_context(GPK_BACKEND_CPU);
    // A first CUDA context settles the runtime's own allocations before memory is measured.
    gpk_context_destroy(gpu::make_context(GPK_BACKEND_CUDA));
    size_t free_before = free_device_memory();
    int total = 0;
    bool any_alloc = false;
    for (const Case &c : cases) {
        Result want;
        CHECK_OK(cpu, c.op(cpu, want));
        int allocs = inject_each("alloc", c.name, c.op, want, GPK_ERR_OUT_OF_MEMORY);
        int launches = inject_each("launch", c.name, c.op, want, GPK_ERR_DEVICE);
        int copies = inject_each("copy", c.name, c.op, want, GPK_ERR_DEVICE);
        std::printf("%s: %d allocation, %d launch and %d copy faults injected and survived\n", c.name, allocs,
                    launches, copies);
        // Convolution allocates nothing per call once its context exists: only launches and copies fail.
        CHECK_MSG(launches > 0 && copies > 0, std::string(c.name) + ": no launch or copy fault was hit");
        any_alloc = any_alloc || allocs > 0;
        total += allocs + launches + copies;
    }
    CHECK_MSG(any_alloc, "no allocation fault was hit");
    size_t free_after = free_device_memory();
    // cudaMemGetInfo moves in 2 MiB pages; anything beyond one page would be a leak.
    CHECK_MSG(free_after + (size_t(2) << 20) >= free_before,
              "device memory leaked: " + std::to_string(free_before - free_after) + " bytes");
    std::printf("%d faults in all; device memory free before %zu, after %zu\n", total, free_before,
                free_after);
    gpk_context_destroy(cpu);
    return check::finish("test_gpu_faults");
}
