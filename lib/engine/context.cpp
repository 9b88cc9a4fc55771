#include "engine/context.hpp"

#include "engine/cpu_api.hpp"
#include "engine/cuda_api.hpp"
#include "engine/error.hpp"
#include "engine/test_hooks.hpp"

#include <cstdlib>
#include <cstring>

namespace gpk {

std::unique_ptr<Backend> create_backend(const gpk_context_options &opts) {
    test_hooks(); // a test hook's bad value fails here, named
    gpk_backend choice = opts.backend;
    bool from_env = false;
    if (choice == GPK_BACKEND_AUTO) {
        if (const char *env = std::getenv("GPK_BACKEND"); env && *env) {
            if (std::strcmp(env, "cpu") == 0)
                choice = GPK_BACKEND_CPU;
            else if (std::strcmp(env, "cuda") == 0)
                choice = GPK_BACKEND_CUDA;
            else if (std::strcmp(env, "auto") != 0)
                invalid(std::string("GPK_BACKEND is \"") + env + "\"; expected cpu, cuda or auto");
            from_env = choice != GPK_BACKEND_AUTO;
        }
    }
    if (choice == GPK_BACKEND_CPU) return cpu::make_backend(opts.threads);
    std::string why;
    int count = cuda::device_count(&why);
    if (choice == GPK_BACKEND_CUDA) {
        if (count == 0)
            fail(GPK_ERR_NO_DEVICE, std::string("the CUDA backend was asked for") +
                                        (from_env ? " (GPK_BACKEND=cuda)" : "") +
                                        " but no GPU is usable: " + why);
        if (opts.device < 0 || opts.device >= count)
            invalid("opts->device is " + std::to_string(opts.device) + "; " + std::to_string(count) +
                    " CUDA device(s) exist");
        return cuda::make_backend(opts.device, opts.stream, opts.threads);
    }
    if (count > 0 && opts.device >= count)
        invalid("opts->device is " + std::to_string(opts.device) + "; " + std::to_string(count) +
                " CUDA device(s) exist");
    if (count > 0) {
        try {
            return cuda::make_backend(opts.device, opts.stream, opts.threads);
        } catch (const Error &) {
            // A device that is listed but whose context cannot be created (busy, out of memory, any CUDA
            // failure while creating it) is not usable: the automatic choice falls back to the CPU, as
            // gpk.h documents for GPK_BACKEND_AUTO. An explicit choice (option or GPK_BACKEND=cuda)
            // returns the error instead.
        }
    }
    return cpu::make_backend(opts.threads);
}

} // namespace gpk
