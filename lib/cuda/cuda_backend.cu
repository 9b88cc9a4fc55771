// The CUDA backend: one DeviceContext per gpk_context; each operation makes the context's device current
// for the call and hands the job to its dispatcher.
#include "cuda/convolve/convolve.cuh"
#include "cuda/device_context.cuh"
#include "cuda/heat/heat.cuh"
#include "cuda/heat/slab.cuh"
#include "cuda/histogram/histogram.cuh"
#include "engine/cuda_api.hpp"

#include <memory>
#include <string>

namespace gpk::cuda {
namespace {

class CudaBackend final : public Backend {
public:
    CudaBackend(int device, void *stream, unsigned cpu_threads) : device_(device) {
        DeviceScope scope(device);
        check_create([] { return cudaFree(nullptr); }, "cudaFree (context initialisation)");
        ctx_ = std::make_unique<DeviceContext>(device, stream, cpu_threads);
    }
    ~CudaBackend() override {
        try {
            DeviceScope scope(device_);
            ctx_.reset();
        } catch (...) {
            ctx_.reset(); // the device is gone; free what can be freed
        }
    }

    gpk_backend kind() const override { return GPK_BACKEND_CUDA; }

    void heat_run(const HeatJob &job) override {
        DeviceScope scope(device_);
        cuda::heat_run(*ctx_, job);
    }

    void histogram(const HistogramJob &job) override {
        DeviceScope scope(device_);
        histogram_run(*ctx_, job);
    }

    void convolve(const ConvolveJob &job) override {
        DeviceScope scope(device_);
        convolve_run(*ctx_, job);
    }

    unsigned heat_slab_levels() const override { return cuda::heat_slab_levels(*ctx_); }

    std::unique_ptr<HeatSlab> heat_slab(const HeatSlabJob &job) override {
        DeviceScope scope(device_);
        return make_heat_slab(*ctx_, job);
    }

    void set_stream(void *stream) override {
        DeviceScope scope(device_);
        ctx_->set_caller_stream(stream);
    }

    void synchronize() override {
        DeviceScope scope(device_);
        ctx_->synchronize();
    }

private:
    int device_;
    std::unique_ptr<DeviceContext> ctx_;
};

} // namespace

// A failure releases what was created so far (members and locals unwind) and names the device and the call.
std::unique_ptr<Backend> make_backend(int device, void *stream, unsigned cpu_threads) {
    fault::Creation creation;
    try {
        return std::make_unique<CudaBackend>(device, stream, cpu_threads);
    } catch (const Error &e) {
        throw Error(e.status(),
                    "creating the CUDA context on device " + std::to_string(device) + ": " + e.what());
    }
}

} // namespace gpk::cuda
