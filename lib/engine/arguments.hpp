// Argument checks of the C boundaries (lib/capi.cpp, and libgpk_mpi's lib/mpi/capi.cpp): a NULL pointer and
// a struct_size that is not the struct's, named in the message.
#pragma once

#include "engine/error.hpp"

#include <string>

namespace gpk {

template <class T> void require(const T *p, const char *name) {
    if (!p) invalid(std::string(name) + " is NULL");
}

template <class S> void check_struct_size(const S *s, const char *name) {
    if (s->struct_size != sizeof(S))
        invalid(std::string(name) + "->struct_size is " + std::to_string(s->struct_size) + "; expected " +
                std::to_string(sizeof(S)) + " (initialise it with its init function)");
}

} // namespace gpk
