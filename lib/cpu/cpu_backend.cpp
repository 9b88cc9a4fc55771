#include "cpu/cpu_backend.hpp"

#include "cpu/kernels.hpp"

namespace gpk::cpu {
namespace {

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(unsigned threads) : pool_(threads) {}
    gpk_backend kind() const override { return GPK_BACKEND_CPU; }
    void heat_run(const HeatJob &job) override { cpu::heat_run(pool_, job); }
    void histogram(const HistogramJob &job) override { cpu::histogram(pool_, job); }
    void convolve(const ConvolveJob &job) override { cpu::convolve(pool_, job); }
    unsigned heat_slab_levels() const override { return cpu::kHeatSlabLevels; }
    std::unique_ptr<HeatSlab> heat_slab(const HeatSlabJob &job) override {
        return cpu::heat_slab(pool_, job);
    }
    void set_stream(void *) override {}
    void synchronize() override {}

private:
    ThreadPool pool_;
};

} // namespace

std::unique_ptr<Backend> make_backend(unsigned threads) {
    return std::make_unique<CpuBackend>(threads);
}

} // namespace gpk::cpu
