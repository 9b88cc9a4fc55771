// Internal errors: thrown anywhere inside the library, turned into statuses at the C boundary (capi.cpp).
#pragma once

#include "gpk.h"

#include <stdexcept>
#include <string>

namespace gpk {

class Error : public std::runtime_error {
public:
    Error(gpk_status status, const std::string &message) : std::runtime_error(message), status_(status) {}
    gpk_status status() const { return status_; }

private:
    gpk_status status_;
};

[[noreturn]] inline void fail(gpk_status status, const std::string &message) {
    throw Error(status, message);
}
[[noreturn]] inline void invalid(const std::string &message) {
    fail(GPK_ERR_INVALID_ARGUMENT, message);
}

} // namespace gpk
