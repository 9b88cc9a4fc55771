// The interface every backend implements. The engine (context.cpp) owns one backend per context.
#pragma once

#include "engine/jobs.hpp"

namespace gpk {

class Backend {
public:
    virtual ~Backend() = default;
    virtual gpk_backend kind() const = 0;
    virtual void heat_run(const HeatJob &job) = 0;
    virtual void histogram(const HistogramJob &job) = 0;
    virtual void convolve(const ConvolveJob &job) = 0;
    virtual void set_stream(void *stream) = 0;
    virtual void synchronize() = 0;
};

} // namespace gpk
