// The CPU backend's operations; each runs on the context's thread pool.
#pragma once

#include "engine/heat_slab.hpp"
#include "engine/thread_pool.hpp"
#include "cpu/host_memory.hpp"
#include "engine/jobs.hpp"

#include <memory>

namespace gpk::cpu {

void heat_run(ThreadPool &pool, Workspace &workspace, const HeatJob &job);
void histogram(ThreadPool &pool, const HistogramJob &job);
void convolve(ThreadPool &pool, const ConvolveJob &job);
// Iterations per pass of a CPU heat slab (and its halo depth under libgpk_mpi).
constexpr unsigned kHeatSlabLevels = 4;
std::unique_ptr<HeatSlab> heat_slab(ThreadPool &pool, const HeatSlabJob &job);

} // namespace gpk::cpu
