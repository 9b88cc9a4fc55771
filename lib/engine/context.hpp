// The object behind gpk_context: one backend and the message of the last failure.
#pragma once

#include "engine/backend.hpp"

#include <memory>
#include <string>

struct gpk_context {
    std::unique_ptr<gpk::Backend> backend;
    std::string last_error;
};

namespace gpk {

// Chooses and creates the backend for `opts` (GPK_BACKEND in the environment overrides AUTO).
std::unique_ptr<Backend> create_backend(const gpk_context_options &opts);

} // namespace gpk
