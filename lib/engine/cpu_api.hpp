// What the engine asks of the CPU backend (lib/cpu/): the twin of engine/cuda_api.hpp, so that the engine
// includes no backend header.
#pragma once

#include "engine/backend.hpp"

#include <memory>

namespace gpk::cpu {

// The CPU backend: host memory only, every core through a per-context thread pool of `threads` (0 = one
// per hardware thread); throws gpk::Error.
std::unique_ptr<Backend> make_backend(unsigned threads);

} // namespace gpk::cpu
