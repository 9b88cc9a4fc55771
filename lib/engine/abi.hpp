// The layouts of the public structs. A struct only ever grows at the end, and its struct_size tells which
// layout the caller was compiled with: gpk reads a caller's struct only up to that size (the fields an older
// layout lacks take their defaults) and writes only up to it. Each struct lists the sizes it has had, the
// first release's first; a size that is none of them is refused.
#pragma once

#include "gpk.h"

#include "engine/arguments.hpp"
#include "engine/error.hpp"

#include <cstddef>
#include <cstring>
#include <iterator>
#include <string>

namespace gpk::abi {

template <class S> struct Layout;

template <> struct Layout<gpk_context_options> {
    static constexpr const char *name = "gpk_context_options";
    static constexpr size_t sizes[] = {sizeof(gpk_context_options)};
    static gpk_context_options defaults() { return GPK_CONTEXT_OPTIONS_INIT; }
};

template <> struct Layout<gpk_heat_params> {
    static constexpr const char *name = "gpk_heat_params";
    // gpk 0.1 ended at user_data; 0.2 added resuming and checkpoints.
    static constexpr size_t sizes[] = {offsetof(gpk_heat_params, start_iteration), sizeof(gpk_heat_params)};
    static gpk_heat_params defaults() { return GPK_HEAT_PARAMS_INIT; }
};

template <> struct Layout<gpk_histogram_params> {
    static constexpr const char *name = "gpk_histogram_params";
    static constexpr size_t sizes[] = {sizeof(gpk_histogram_params)};
    static gpk_histogram_params defaults() { return GPK_HISTOGRAM_PARAMS_INIT; }
};

template <> struct Layout<gpk_convolve_params> {
    static constexpr const char *name = "gpk_convolve_params";
    static constexpr size_t sizes[] = {sizeof(gpk_convolve_params)};
    static gpk_convolve_params defaults() { return GPK_CONVOLVE_PARAMS_INIT; }
};

template <> struct Layout<gpk_image> {
    static constexpr const char *name = "gpk_image";
    static constexpr size_t sizes[] = {sizeof(gpk_image)};
    static gpk_image defaults() { return {sizeof(gpk_image), GPK_U8, 0, 0, 1, 0}; }
};

template <> struct Layout<gpk_device_info> {
    static constexpr const char *name = "gpk_device_info";
    static constexpr size_t sizes[] = {sizeof(gpk_device_info)};
    static gpk_device_info defaults() {
        gpk_device_info i{};
        i.struct_size = sizeof i;
        return i;
    }
};

template <> struct Layout<gpk_filter_info> {
    static constexpr const char *name = "gpk_filter_info";
    static constexpr size_t sizes[] = {sizeof(gpk_filter_info)};
    static gpk_filter_info defaults() { return {sizeof(gpk_filter_info), 0, 0, 0, 0.0, 0}; }
};

// The size of the struct in gpk's first release: what the init functions of that release write.
template <class S> constexpr size_t first_size() {
    return Layout<S>::sizes[0];
}

// Refuses a size that is not one of the struct's layouts, naming `what` (the argument), the struct and its
// first and current sizes.
template <class S> void check_size(size_t size, const std::string &what) {
    static_assert(Layout<S>::sizes[std::size(Layout<S>::sizes) - 1] == sizeof(S),
                  "the last layout is this one");
    for (size_t known : Layout<S>::sizes)
        if (size == known) return;
    invalid(what + " is " + std::to_string(size) + "; " + Layout<S>::name + " has " +
            std::to_string(first_size<S>()) + " bytes in gpk's first release and " +
            std::to_string(sizeof(S)) + " in this one (initialise it with its init function)");
}

// The size of a caller's struct, checked (a NULL struct is refused too).
template <class S> size_t caller_size(const S *caller, const char *name) {
    require(caller, name);
    check_size<S>(caller->struct_size, std::string(name) + "->struct_size");
    return caller->struct_size;
}

// The caller's struct as this library's layout: read up to its struct_size, the rest at the defaults.
template <class S> S read(const S *caller, const char *name) {
    caller_size(caller, name);
    S s = Layout<S>::defaults();
    std::memcpy(&s, caller, caller->struct_size);
    s.struct_size = sizeof(S);
    return s;
}

// Writes `value` into a caller's struct of `size` bytes (a checked layout), struct_size set to `size`.
template <class S> void write(S *caller, S value, size_t size) {
    value.struct_size = size;
    std::memcpy(static_cast<void *>(caller), &value, size);
}

// `value` (the defaults unless given), written into a caller's struct of `size` bytes, the size checked first
// (what the init functions do).
template <class S> void init(S *caller, size_t size, const char *name, S value = Layout<S>::defaults()) {
    require(caller, name);
    check_size<S>(size, "struct_size");
    write(caller, value, size);
}

} // namespace gpk::abi
