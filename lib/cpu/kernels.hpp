// The CPU backend's operations; each runs on the context's thread pool.
#pragma once

#include "engine/thread_pool.hpp"
#include "cpu/host_memory.hpp"
#include "engine/jobs.hpp"

namespace gpk::cpu {

void heat_run(ThreadPool &pool, Workspace &workspace, const HeatJob &job);
void histogram(ThreadPool &pool, const HistogramJob &job);
void convolve(ThreadPool &pool, const ConvolveJob &job);

} // namespace gpk::cpu
