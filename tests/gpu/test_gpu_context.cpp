// The CUDA backend as a whole: automatic and explicit choice, GPK_BACKEND, device queries, managed memory,
// work pending at destruction, ordering after the legacy default stream. Exits 77 where no CUDA device
// exists.
#include "gpu_common.hpp"
#include "hooks.hpp"

#include <cstdint>
#include <vector>

namespace {

void test_choice() {
    gpk_context *ctx = nullptr;
    hooks::Hook backend("GPK_BACKEND", nullptr);
    CHECK_OK(nullptr, gpk_context_create(&ctx, nullptr));
    CHECK_EQ(int(gpk_context_backend(ctx)), int(GPK_BACKEND_CUDA));
    gpk_context_destroy(ctx);
    backend.set("cpu");
    CHECK_OK(nullptr, gpk_context_create(&ctx, nullptr));
    CHECK_EQ(int(gpk_context_backend(ctx)), int(GPK_BACKEND_CPU));
    gpk_context_destroy(ctx);
    backend.set("cuda");
    CHECK_OK(nullptr, gpk_context_create(&ctx, nullptr));
    CHECK_EQ(int(gpk_context_backend(ctx)), int(GPK_BACKEND_CUDA));
    gpk_context_destroy(ctx);
    backend.set(nullptr);
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = GPK_BACKEND_CUDA;
    o.device = 4096;
    CHECK_STATUS(nullptr, gpk_context_create(&ctx, &o), GPK_ERR_INVALID_ARGUMENT);
}

void test_device_info() {
    gpk_device_info info;
    info.struct_size = sizeof info;
    CHECK_OK(nullptr, gpk_device_get_info(&info, 0));
    CHECK(info.name[0] != '\0');
    CHECK(info.multiprocessors > 0);
    CHECK(info.total_memory >= info.free_memory && info.free_memory > 0);
    std::printf("device 0: %s, cc %d.%d, %d SMs\n", info.name, info.compute_major, info.compute_minor,
                info.multiprocessors);
}

// Managed memory is used in place, like device memory.
void test_managed(gpu::Contexts &ctxs) {
    const size_t n = 1 << 20;
    uint8_t *data = nullptr;
    uint64_t *hist = nullptr;
    gpu::cuda_ok(cudaMallocManaged(&data, n), "cudaMallocManaged");
    gpu::cuda_ok(cudaMallocManaged(&hist, 256 * sizeof(uint64_t)), "cudaMallocManaged");
    for (size_t i = 0; i < n; ++i) data[i] = uint8_t(i * 7 % 251);
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.width = n;
    std::vector<uint64_t> want(256);
    CHECK_OK(ctxs.cpu, gpk_histogram(ctxs.cpu, &p, data, want.data(), nullptr));
    CHECK_OK(ctxs.cuda, gpk_histogram(ctxs.cuda, &p, data, hist, nullptr));
    CHECK(std::vector<uint64_t>(hist, hist + 256) == want);
    cudaFree(data);
    cudaFree(hist);
}

// Work left on a caller stream when the context goes: destroy waits for it; the results arrive.
void test_pending_at_destroy(gpu::Contexts &ctxs) {
    const size_t n = 64 << 20;
    gpu::Block data(gpu::Memory::device, n), hist(gpu::Memory::device, 256 * sizeof(uint64_t));
    gpu::cuda_ok(cudaMemset(data.get(), 3, n), "cudaMemset");
    gpu::cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    gpk_context *ctx = gpu::make_context(GPK_BACKEND_CUDA, ctxs.stream);
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.width = n;
    CHECK_OK(ctx, gpk_histogram(ctx, &p, data.get(), static_cast<uint64_t *>(hist.get()), nullptr));
    gpk_context_destroy(ctx);
    std::vector<uint64_t> got(256);
    gpu::cuda_ok(cudaStreamSynchronize(ctxs.stream), "cudaStreamSynchronize");
    hist.download(got.data());
    CHECK_EQ(got[3], uint64_t(n));
}

// Without a caller stream gpk behaves like a synchronous library call: work the caller left on the legacy
// default stream (here an asynchronous memset of 1 GiB) is done before gpk reads the data.
void test_after_legacy_stream_work(gpu::Contexts &ctxs) {
    const size_t n = size_t(1) << 30;
    gpu::Block data(gpu::Memory::device, n);
    std::vector<uint64_t> hist(256);
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.width = n;
    for (int value : {5, 6}) {
        gpu::cuda_ok(cudaMemsetAsync(data.get(), value, n, 0), "cudaMemsetAsync");
        CHECK_OK(ctxs.cuda, gpk_histogram(ctxs.cuda, &p, data.get(), hist.data(), nullptr));
        CHECK_EQ(hist[value], uint64_t(n));
    }
}

} // namespace

int main() {
    gpu::require_device();
    test_choice();
    test_device_info();
    gpu::Contexts ctxs;
    test_managed(ctxs);
    test_pending_at_destroy(ctxs);
    test_after_legacy_stream_work(ctxs);
    return check::finish("test_gpu_context");
}
