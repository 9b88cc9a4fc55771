// The CPU backend: host memory only, every core through a per-context thread pool.
#pragma once

#include "cpu/thread_pool.hpp"
#include "engine/backend.hpp"

#include <memory>

namespace gpk::cpu {

std::unique_ptr<Backend> make_backend(unsigned threads);

} // namespace gpk::cpu
