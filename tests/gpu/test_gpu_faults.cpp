// Fault injection on the CUDA backend (GPK_TEST_FAULT, NOTES.md internal knobs): every device or pinned
// allocation, every kernel launch and every copy of each operation fails in turn. Each failure returns
// the right status with a message, leaves the context usable (the same call then gives the CPU backend's
// result), and leaks no device memory once the context is destroyed. Then every CUDA call of a context
// creation fails in turn: the explicit CUDA backend returns the error, keeps nothing (no context, no device
// memory, no CPU threads), and the automatic backend falls back to the CPU.
#include "check.hpp"
#include "hooks.hpp"
#include "gpu_common.hpp"
#include "process_threads.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
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

// Within the heat tolerance (1e-9 relative or 1e-12 absolute); histograms and the exact convolution
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

// Device memory is compared before and after, unless GPK_TEST_NO_LEAK_CHECK=1: compute-sanitizer's own
// device allocations move cudaMemGetInfo's figure (tools/gpu/check.sh sets it there and runs memcheck with
// --leak-check full instead).
bool leak_check() {
    const char *v = std::getenv("GPK_TEST_NO_LEAK_CHECK");
    return !(v && std::string(v) == "1");
}

// The next fault to inject after the n-th: each in turn, or in small mode (GPK_TEST_SMALL=1, for
// racecheck) the first three and then every half again as far.
int next_fault(int n) {
    const char *v = std::getenv("GPK_TEST_SMALL");
    return v && std::string(v) == "1" && n >= 3 ? n + n / 2 : n + 1;
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
    for (int n = 1; n <= 200; n = next_fault(n)) {
        gpk_context *ctx = gpu::make_context(GPK_BACKEND_CUDA);
        Result got;
        hooks::Hook fault("GPK_TEST_FAULT", std::string(point) + ":" + std::to_string(n));
        gpk_status s = op(ctx, got);
        std::string message = gpk_context_last_error(ctx);
        fault.set(nullptr);
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

struct Case {
    const char *name;
    Operation op;
    Result want; // the CPU backend's result
};

// Every operation on `ctx` gives the CPU backend's result.
void check_operations(gpk_context *ctx, const std::vector<Case> &cases, const std::string &where) {
    for (const Case &c : cases) {
        Result got;
        gpk_status s = c.op(ctx, got);
        CHECK_MSG(s == GPK_OK,
                  where + ", " + c.name + ": " + gpk_status_string(s) + ": " + gpk_context_last_error(ctx));
        CHECK_MSG(same(got, c.want), where + ", " + c.name + ": result differs from the CPU backend");
    }
}

gpk_status create(gpk_context **ctx, gpk_backend backend) {
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = backend;
    return gpk_context_create(ctx, &o);
}

// The CUDA call a context-creation failure names: "creating the CUDA context on device 0: <call> ...".
std::string failed_call(const std::string &message) {
    const std::string prefix = "creating the CUDA context on device 0: ";
    if (message.compare(0, prefix.size(), prefix) != 0) return "";
    size_t end = message.find_first_of(" (", prefix.size());
    return message.substr(prefix.size(), end == std::string::npos ? end : end - prefix.size());
}

// Fails the 1st, 2nd, ... CUDA call of a context creation (GPK_TEST_FAULT=create:N) until creation gets
// through; returns the number of faults injected.
int inject_creation(const std::vector<Case> &cases) {
    std::map<std::string, int> calls; // faults per CUDA call named in the messages
    size_t free_before = free_device_memory();
    size_t threads_before = thread_count();
    int injected = 0;
    std::vector<std::pair<gpk_status, std::string>> failures; // what the explicit backend returned, per N
    for (int n = 1;; ++n) {
        if (n > 200) {
            CHECK_MSG(false, "context creation still fails at create:200");
            break;
        }
        std::string where = "create:" + std::to_string(n);
        hooks::Hook fault("GPK_TEST_FAULT", where);
        int sentinel = 0;
        gpk_context *ctx = reinterpret_cast<gpk_context *>(&sentinel); // must become NULL on failure
        gpk_status s = create(&ctx, GPK_BACKEND_CUDA);
        std::string message = gpk_context_last_error(nullptr);
        if (s == GPK_OK) { // fewer than n creation points: the context is complete and must work
            CHECK_EQ(int(gpk_context_backend(ctx)), int(GPK_BACKEND_CUDA));
            check_operations(ctx, cases, where + " (not reached)"); // the knob is still set: no effect
            gpk_context_destroy(ctx);
            break;
        }
        fault.set(nullptr);
        ++injected;
        failures.emplace_back(s, message);
        std::string call = failed_call(message);
        ++calls[call];
        CHECK_MSG(ctx == nullptr, where + ": *out is not NULL after a failure");
        CHECK_MSG(call.compare(0, 4, "cuda") == 0, where + ": the message names no CUDA call: " + message);
        CHECK_MSG(message.find(" failed: cuda") != std::string::npos,
                  where + ": the message names no CUDA error: " + message);
        gpk_status expected = call.compare(0, 10, "cudaMalloc") == 0 ? GPK_ERR_OUT_OF_MEMORY : GPK_ERR_DEVICE;
        CHECK_MSG(s == expected, where + ": " + gpk_status_string(s) + ": " + message);
        // Nothing created before the failing call is kept.
        size_t free_now = free_device_memory();
        CHECK_MSG(!leak_check() || free_now + (size_t(2) << 20) >= free_before,
                  where + ": device memory leaked: " + std::to_string(free_before - free_now) + " bytes");
        size_t threads_now = thread_count_settled(threads_before);
        CHECK_MSG(threads_now <= threads_before,
                  where + ": " + std::to_string(threads_now - threads_before) + " thread(s) left behind");
    }
    std::string summary;
    for (const auto &[call, count] : calls)
        summary += (summary.empty() ? "" : ", ") + call + " " + std::to_string(count);
    std::printf("context creation: %d CUDA calls failed in turn: %s\n", injected, summary.c_str());
    // The calls DeviceContext makes: its device's properties, its own stream and fork event, and for each
    // lane (device_context.cuh) one stream and three events; cudaFree(0) initialises the device first.
    CHECK_MSG(injected >= 10, "only " + std::to_string(injected) + " creation points were exercised");
    for (const char *call :
         {"cudaFree", "cudaGetDeviceProperties", "cudaStreamCreateWithFlags", "cudaEventCreateWithFlags"})
        CHECK_MSG(calls.count(call) == 1, std::string("no creation fault hit ") + call);
    int streams = calls["cudaStreamCreateWithFlags"], events = calls["cudaEventCreateWithFlags"];
    CHECK_MSG(streams >= 2 && events == 1 + 3 * (streams - 1),
              std::to_string(streams) + " stream and " + std::to_string(events) +
                  " event creations failed; expected the own stream, the fork event and per lane a stream "
                  "and three events");

    // Without the knob, creation works and every operation gives the CPU backend's result.
    gpk_context *ctx = nullptr;
    CHECK_OK(nullptr, create(&ctx, GPK_BACKEND_CUDA));
    if (ctx) check_operations(ctx, cases, "after the creation faults");
    gpk_context_destroy(ctx);

    // The automatic backend treats a device whose context cannot be created as unusable (gpk.h,
    // GPK_BACKEND_AUTO): the context is created on the CPU and gives the right results. GPK_BACKEND=cuda
    // makes the choice explicit, and the error comes back as it did above.
    for (int n = 1; n <= injected + 1; ++n) {
        std::string where = "automatic backend, create:" + std::to_string(n);
        hooks::Hook fault("GPK_TEST_FAULT", "create:" + std::to_string(n));
        ctx = nullptr;
        gpk_status s = create(&ctx, GPK_BACKEND_AUTO);
        CHECK_MSG(s == GPK_OK, where + ": " + gpk_status_string(s) + ": " + gpk_context_last_error(nullptr));
        if (s == GPK_OK) {
            gpk_backend want = n <= injected ? GPK_BACKEND_CPU : GPK_BACKEND_CUDA;
            CHECK_MSG(gpk_context_backend(ctx) == want, where + ": backend " +
                                                            gpk_backend_name(gpk_context_backend(ctx)) +
                                                            ", expected " + gpk_backend_name(want));
            check_operations(ctx, cases, where);
            gpk_context_destroy(ctx);
        }
        if (n <= injected) {
            hooks::Hook backend("GPK_BACKEND", "cuda");
            ctx = nullptr;
            s = create(&ctx, GPK_BACKEND_AUTO);
            std::string message = gpk_context_last_error(nullptr);
            backend.set(nullptr);
            const auto &explicit_failure = failures[size_t(n - 1)];
            CHECK_MSG(s == explicit_failure.first && message == explicit_failure.second && ctx == nullptr,
                      where + ", GPK_BACKEND=cuda: " + gpk_status_string(s) + ": " + message +
                          "; expected: " + explicit_failure.second);
            if (s == GPK_OK) gpk_context_destroy(ctx);
        }
    }
    size_t free_after = free_device_memory();
    CHECK_MSG(!leak_check() || free_after + (size_t(2) << 20) >= free_before,
              "context creation faults: device memory leaked: " + std::to_string(free_before - free_after) +
                  " bytes");
    std::printf("context creation: %d faults injected and survived (explicit: error, nothing kept; "
                "automatic: CPU fallback, same results); device memory free before %zu, after %zu; threads "
                "before %zu, after %zu\n",
                injected, free_before, free_after, threads_before, thread_count_settled(threads_before));
    return injected;
}

} // namespace

int main() {
    gpu::require_device();
    hooks::require("test_gpu_faults");
    Inputs in = make_inputs();
    std::vector<Case> cases = {
        {"heat", [&](gpk_context *c, Result &r) { return run_heat(c, in, r); }, {}},
        {"histogram", [&](gpk_context *c, Result &r) { return run_histogram(c, in, r); }, {}},
        {"convolve", [&](gpk_context *c, Result &r) { return run_convolve(c, in, r); }, {}},
    };
    gpk_context *cpu = gpu::make_context(GPK_BACKEND_CPU);
    // A first CUDA context settles the runtime's own allocations before memory is measured.
    gpk_context_destroy(gpu::make_context(GPK_BACKEND_CUDA));
    size_t free_before = free_device_memory();
    int total = 0;
    bool any_alloc = false;
    for (Case &c : cases) {
        CHECK_OK(cpu, c.op(cpu, c.want));
        int allocs = inject_each("alloc", c.name, c.op, c.want, GPK_ERR_OUT_OF_MEMORY);
        int launches = inject_each("launch", c.name, c.op, c.want, GPK_ERR_DEVICE);
        int copies = inject_each("copy", c.name, c.op, c.want, GPK_ERR_DEVICE);
        std::printf("%s: %d allocation, %d launch and %d copy faults injected and survived\n", c.name, allocs,
                    launches, copies);
        // Convolution allocates nothing per call once its context exists: only launches and copies fail.
        CHECK_MSG(launches > 0 && copies > 0, std::string(c.name) + ": no launch or copy fault was hit");
        any_alloc = any_alloc || allocs > 0;
        total += allocs + launches + copies;
    }
    CHECK_MSG(any_alloc, "no allocation fault was hit");
    total += inject_creation(cases);
    size_t free_after = free_device_memory();
    // cudaMemGetInfo moves in 2 MiB pages; anything beyond one page would be a leak.
    CHECK_MSG(!leak_check() || free_after + (size_t(2) << 20) >= free_before,
              "device memory leaked: " + std::to_string(free_before - free_after) + " bytes");
    std::printf("%d faults in all; device memory free before %zu, after %zu\n", total, free_before,
                free_after);
    gpk_context_destroy(cpu);
    return check::finish("test_gpu_faults");
}
