// Contexts: backend choice (automatic, explicit, GPK_BACKEND), device queries, and where messages live.
#include "check.hpp"
#include "hooks.hpp"
#include "gpk.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

gpk_status create(gpk_context **ctx, gpk_backend backend) {
    gpk_context_options o = GPK_CONTEXT_OPTIONS_INIT;
    o.backend = backend;
    return gpk_context_create(ctx, &o);
}

void test_backend_choice(bool have_gpu) {
    gpk_context *ctx = nullptr;
    hooks::Hook backend("GPK_BACKEND", nullptr);
    CHECK_OK(nullptr, create(&ctx, GPK_BACKEND_AUTO));
    CHECK(gpk_context_backend(ctx) == (have_gpu ? GPK_BACKEND_CUDA : GPK_BACKEND_CPU));
    gpk_context_destroy(ctx);

    CHECK_OK(nullptr, gpk_context_create(&ctx, nullptr)); // NULL options: the defaults
    CHECK(gpk_context_backend(ctx) == (have_gpu ? GPK_BACKEND_CUDA : GPK_BACKEND_CPU));
    CHECK(std::strcmp(gpk_context_last_error(ctx), "") == 0);
    CHECK_OK(ctx, gpk_context_synchronize(ctx));
    CHECK_OK(ctx, gpk_context_set_stream(ctx, nullptr));
    gpk_context_destroy(ctx);

    CHECK_OK(nullptr, create(&ctx, GPK_BACKEND_CPU));
    CHECK(gpk_context_backend(ctx) == GPK_BACKEND_CPU);
    gpk_context_destroy(ctx);

    ctx = nullptr;
    gpk_status s = create(&ctx, GPK_BACKEND_CUDA);
    if (have_gpu) {
        CHECK_OK(nullptr, s);
        CHECK(gpk_context_backend(ctx) == GPK_BACKEND_CUDA);
        gpk_context_destroy(ctx);
    } else {
        CHECK_STATUS(nullptr, s, GPK_ERR_NO_DEVICE);
        CHECK(ctx == nullptr);
        CHECK(std::strlen(gpk_context_last_error(nullptr)) > 10);
    }

    backend.set("cpu");
    CHECK_OK(nullptr, create(&ctx, GPK_BACKEND_AUTO));
    CHECK(gpk_context_backend(ctx) == GPK_BACKEND_CPU);
    gpk_context_destroy(ctx);

    backend.set("cuda");
    s = create(&ctx, GPK_BACKEND_AUTO);
    CHECK(s == (have_gpu ? GPK_OK : GPK_ERR_NO_DEVICE));
    if (!have_gpu) CHECK(std::strstr(gpk_context_last_error(nullptr), "GPK_BACKEND=cuda") != nullptr);
    gpk_context_destroy(s == GPK_OK ? ctx : nullptr);

    // An explicit backend wins over the environment.
    CHECK_OK(nullptr, create(&ctx, GPK_BACKEND_CPU));
    gpk_context_destroy(ctx);

    backend.set("gpu");
    CHECK_STATUS(nullptr, create(&ctx, GPK_BACKEND_AUTO), GPK_ERR_INVALID_ARGUMENT);
    CHECK(std::strstr(gpk_context_last_error(nullptr), "\"gpu\"") != nullptr);
}

void test_devices(bool have_gpu, int count) {
    gpk_device_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (!have_gpu) {
        CHECK(count == 0);
        CHECK(std::strlen(gpk_context_last_error(nullptr)) > 0);
        CHECK_STATUS(nullptr, gpk_device_get_info(&info, 0), GPK_ERR_NO_DEVICE);
        return;
    }
    for (int i = 0; i < count; ++i) {
        CHECK_OK(nullptr, gpk_device_get_info(&info, i));
        CHECK(std::strlen(info.name) > 0);
        CHECK(info.compute_major >= 7);
        CHECK(info.total_memory > (1ull << 30) && info.free_memory <= info.total_memory);
        CHECK(info.multiprocessors > 0 && info.driver_version > 0 && info.runtime_version > 0);
    }
    CHECK_STATUS(nullptr, gpk_device_get_info(&info, count), GPK_ERR_INVALID_ARGUMENT);
    info.struct_size = 1;
    CHECK_STATUS(nullptr, gpk_device_get_info(&info, 0), GPK_ERR_INVALID_ARGUMENT);
}

// The message of a failure lives in its context; context-less failures are per thread.
void test_message_homes() {
    gpk_context *a = nullptr, *b = nullptr;
    CHECK_OK(nullptr, create(&a, GPK_BACKEND_CPU));
    CHECK_OK(nullptr, create(&b, GPK_BACKEND_CPU));
    gpk_histogram_params p = GPK_HISTOGRAM_PARAMS_INIT;
    unsigned char byte = 0;
    uint64_t hist[256];
    CHECK(gpk_histogram(a, &p, &byte, hist, nullptr) == GPK_ERR_INVALID_ARGUMENT); // width 0
    CHECK(std::strstr(gpk_context_last_error(a), "width") != nullptr);
    CHECK(std::strcmp(gpk_context_last_error(b), "") == 0);

    gpk_filter *f = nullptr;
    CHECK(gpk_filter_create_named(&f, "nope") == GPK_ERR_INVALID_ARGUMENT);
    std::string here = gpk_context_last_error(nullptr);
    std::string there;
    std::thread([&] { there = gpk_context_last_error(nullptr); }).join();
    CHECK(here.find("nope") != std::string::npos);
    CHECK(there.find("nope") == std::string::npos);
    gpk_context_destroy(a);
    gpk_context_destroy(b);
}

} // namespace

int main() {
    int count = -1;
    gpk_status s = gpk_device_count(&count);
    CHECK(s == GPK_OK || s == GPK_ERR_NO_DEVICE);
    bool have_gpu = s == GPK_OK && count > 0;
    std::printf("devices: %d (%s)\n", count, have_gpu ? "CUDA" : gpk_context_last_error(nullptr));
    test_devices(have_gpu, count);
    test_backend_choice(have_gpu);
    test_message_homes();
    return check::finish("test_context");
}
