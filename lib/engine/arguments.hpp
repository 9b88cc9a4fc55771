// Argument checks of the C boundaries (lib/capi.cpp, and libgpk_mpi's lib/mpi/capi.cpp): a NULL pointer,
// named in the message. Struct sizes: engine/abi.hpp.
#pragma once

#include "engine/error.hpp"

#include <string>

namespace gpk {

template <class T> void require(const T *p, const char *name) {
    if (!p) invalid(std::string(name) + " is NULL");
}

} // namespace gpk
