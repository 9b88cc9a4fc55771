// The interface every backend implements. The engine (context.cpp) owns one backend per context.
#pragma once

#include "engine/heat_slab.hpp"
#include "engine/jobs.hpp"

#include <memory>

namespace gpk {

class Backend {
public:
    virtual ~Backend() = default;
    virtual gpk_backend kind() const = 0;
    virtual void heat_run(const HeatJob &job) = 0;
    virtual void histogram(const HistogramJob &job) = 0;
    virtual void convolve(const ConvolveJob &job) = 0;
    // A slab of a heat grid kept between calls (libgpk_mpi); the job's data is copied.
    // heat_slab_levels() is its max_levels(), known before a slab exists.
    virtual unsigned heat_slab_levels() const = 0;
    virtual std::unique_ptr<HeatSlab> heat_slab(const HeatSlabJob &job) = 0;
    virtual void set_stream(void *stream) = 0;
    virtual void synchronize() = 0;
};

} // namespace gpk
