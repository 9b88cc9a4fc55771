// The CUDA backend: one DeviceContext per gpk_context; each operation makes the context's device current
// for the call and hands the job to its dispatcher.
#include "cuda/convolve/convolve.cuh"
#include "cuda/device_context.cuh"
#include "cuda/heat/heat.cuh"
#include "cuda/heat/slab.cuh"
#include "cuda/histogram/histogram.cuh"
#include "cuda/pointer.cuh"
#include "engine/cuda_api.hpp"

#include <map>
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
            allocations_.clear();
            host_scratch_.release();
            aside_.reset();
            aside_order_.reset();
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

    bool on_device(const void *p) const override {
        DeviceScope scope(device_);
        return cuda::on_device(p);
    }

    void copy_rows(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width,
                   size_t rows) override {
        if (!rows || !width) return;
        DeviceScope scope(device_);
        check(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows, cudaMemcpyDefault, ctx_->main()),
              "cudaMemcpy2DAsync (rows)");
        ctx_->synchronize_main();
    }

    void copy_rows_queued(bool aside, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                          size_t width, size_t rows) override {
        if (!rows || !width) return;
        DeviceScope scope(device_);
        check(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows, cudaMemcpyDefault,
                                aside ? aside_stream() : ctx_->main()),
              "cudaMemcpy2DAsync (rows)");
    }

    void aside(Aside how) override {
        DeviceScope scope(device_);
        cudaStream_t s = aside_stream();
        switch (how) {
        case Aside::fork:
            aside_order_->record(ctx_->main());
            aside_order_->make_wait(s);
            break;
        case Aside::join:
            aside_order_->record(s);
            aside_order_->make_wait(ctx_->main());
            break;
        case Aside::wait:
            check(cudaStreamSynchronize(s), "cudaStreamSynchronize (aside)");
            break;
        }
    }

    void *host_scratch(size_t bytes) override {
        DeviceScope scope(device_);
        if (host_scratch_.capacity() < bytes || !host_scratch_.get()) {
            synchronize(); // queued copies may still use it
            host_scratch_.reserve(bytes ? bytes : 1);
        }
        return host_scratch_.get();
    }

    void *device_alloc(size_t bytes) override {
        DeviceScope scope(device_);
        auto buffer = std::make_unique<DeviceBuffer>();
        buffer->reserve(bytes ? bytes : 1);
        void *p = buffer->get();
        allocations_.emplace(p, std::move(buffer));
        return p;
    }

    void device_free(void *p) override {
        DeviceScope scope(device_);
        allocations_.erase(p);
    }

    void *device_scratch(size_t bytes) override {
        DeviceScope scope(device_);
        scratch_.reserve(bytes ? bytes : 1);
        return scratch_.get();
    }

    void check_heat_block(const double *tinit, const double *conductivity, size_t rows, size_t cols,
                          size_t first_row) override {
        cuda::check_heat_block(*ctx_, tinit, conductivity, rows, cols, first_row);
    }

    void set_stream(void *stream) override {
        DeviceScope scope(device_);
        ctx_->set_caller_stream(stream);
    }

    void synchronize() override {
        DeviceScope scope(device_);
        ctx_->synchronize();
        if (aside_) check(cudaStreamSynchronize(aside_->get()), "cudaStreamSynchronize (aside)");
    }

private:
    // The stream of the aside copies and the event that orders it, made at the first use (on the device).
    cudaStream_t aside_stream() {
        if (!aside_) {
            aside_order_ = std::make_unique<Event>();
            aside_ = std::make_unique<Stream>();
        }
        return aside_->get();
    }

    int device_;
    std::unique_ptr<DeviceContext> ctx_;
    std::map<void *, std::unique_ptr<DeviceBuffer>> allocations_; // device_alloc's, freed with the context
    DeviceBuffer scratch_;                                        // device_scratch's
    PinnedBuffer host_scratch_;                                   // host_scratch's
    std::unique_ptr<Stream> aside_;                               // the aside copies' stream
    std::unique_ptr<Event> aside_order_;                          // what aside() orders the streams by
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
