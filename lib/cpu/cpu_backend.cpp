#include "engine/cpu_api.hpp"

#include "cpu/host_memory.hpp"
#include "cpu/isa.hpp"
#include "cpu/kernels.hpp"

namespace gpk::cpu {
namespace {

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(unsigned threads) : pool_(threads) {}
    gpk_backend kind() const override { return GPK_BACKEND_CPU; }
    void heat_run(const HeatJob &job) override {
        select_isa();
        cpu::heat_run(pool_, workspace_, job);
    }
    void histogram(const HistogramJob &job) override {
        select_isa();
        cpu::histogram(pool_, job);
    }
    void convolve(const ConvolveJob &job) override {
        select_isa();
        cpu::convolve(pool_, job);
    }
    unsigned heat_slab_levels() const override { return cpu::kHeatSlabLevels; }
    std::unique_ptr<HeatSlab> heat_slab(const HeatSlabJob &job) override {
        select_isa();
        return cpu::heat_slab(pool_, job);
    }
    void *host_scratch(size_t bytes) override {
        if (host_scratch_.size() < bytes)
            host_scratch_ = host_array<unsigned char>(bytes, "host scratch", "rows kept between calls", false);
        return host_scratch_.get();
    }
    void set_stream(void *) override {}
    void synchronize() override {}

private:
    ThreadPool pool_;
    Workspace workspace_;
    HostArray<unsigned char> host_scratch_;
};

} // namespace

std::unique_ptr<Backend> make_backend(unsigned threads) {
    return std::make_unique<CpuBackend>(threads);
}

} // namespace gpk::cpu
