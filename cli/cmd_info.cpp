// gpk info: what this gpk is and where it would compute.
#include "args.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "ranks.hpp"

#include <cstdio>
#include <cstdlib>
#include <thread>

// libgpk's internal entry point for its own command (lib/gpk_internal.h): 1 where the library reads its
// test hooks.
extern "C" int gpk_internal_test_hooks(void);

namespace gpkcli {

namespace {

const std::vector<OptionSpec> kInfoOptions = {
    {'h', "help", nullptr, "show this help"},
};

std::string cuda_version(int v) {
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

void print_device(int index) {
    gpk_device_info info{};
    info.struct_size = sizeof info;
    gpk_status status = gpk_device_get_info(&info, index);
    if (status != GPK_OK) {
        std::printf("  device %d: %s: %s\n", index, gpk_status_string(status),
                    gpk_context_last_error(nullptr));
        return;
    }
    const double gib = 1024.0 * 1024.0 * 1024.0;
    std::printf("  device %d: %s\n", index, info.name);
    std::printf("    compute capability %d.%d, %d SMs at %.0f MHz\n", info.compute_major, info.compute_minor,
                info.multiprocessors, info.clock_khz / 1000.0);
    std::printf("    memory %.1f GiB (%.1f GiB free), %d-bit bus, L2 cache %.0f MiB\n",
                info.total_memory / gib, info.free_memory / gib, info.memory_bus_bits,
                info.l2_bytes / (1024.0 * 1024.0));
    std::printf("    CUDA driver %s, runtime %s\n", cuda_version(info.driver_version).c_str(),
                cuda_version(info.runtime_version).c_str());
}

void print_backend() {
    const char *env = std::getenv("GPK_BACKEND");
    gpk_context_options opts;
    gpk_context_options_init(&opts);
    gpk_context *ctx = nullptr;
    if (gpk_context_create(&ctx, &opts) != GPK_OK) {
        std::printf("backend: none: %s\n", gpk_context_last_error(nullptr));
        return;
    }
    std::printf("backend: %s%s%s%s\n", gpk_backend_name(gpk_context_backend(ctx)),
                env && *env ? " (GPK_BACKEND=" : " (automatic choice)", env && *env ? env : "",
                env && *env ? ")" : "");
    gpk_context_destroy(ctx);
}

} // namespace

int run_info(const Args &args) {
    ParsedArgs parsed = parse_args(args, kInfoOptions);
    if (parsed.has("help")) {
        std::printf(
            "Usage: gpk info\nPrints the gpk version, the backend a run would use, whether the library has "
            "test\n"
            "hooks, the CPU threads, and\n"
            "every CUDA device (or why none is usable); under mpirun, the ranks, and whether more ranks of "
            "a\n"
            "node than it has devices share them (and whether a CUDA MPS server lets them run side by "
            "side), and how the heat halo rows of each link of ranks travel (CUDA IPC, CUDA-aware MPI or "
            "host\n"
            "staging, with the reason).\n"
            "\nOptions:\n%s",
            options_help(kInfoOptions).c_str());
        return kExitOk;
    }
    if (!parsed.positional().empty())
        throw UsageError("unexpected argument '" + parsed.positional()[0] + "'");
    std::printf("gpk %s\n", gpk_version_string());
    print_backend();
    std::printf("test hooks: %s\n", gpk_internal_test_hooks()
                                        ? "compiled in (a test build: GPK_TEST_* variables steer the library)"
                                        : "none (GPK_TEST_* variables are ignored)");
    std::printf("CPU threads: %u\n", std::thread::hardware_concurrency());
    std::printf("%s\n", ranks::describe().c_str());
    int count = 0;
    if (gpk_device_count(&count) != GPK_OK) {
        count = 0;
        std::printf("CUDA devices: none usable: %s\n", gpk_context_last_error(nullptr));
    } else {
        std::printf("CUDA devices: %d\n", count);
        for (int i = 0; i < count; ++i) print_device(i);
    }
    const std::string sharing = ranks::describe_sharing(count); // collective under mpirun
    if (!sharing.empty()) std::printf("%s\n", sharing.c_str());
    const std::string halos = ranks::describe_halos(); // collective under mpirun
    if (!halos.empty()) std::printf("%s\n", halos.c_str());
    return kExitOk;
}

} // namespace gpkcli
