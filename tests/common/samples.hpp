// Reading and writing one sample of any gpk_dtype at a byte address (any alignment), for the tests'
// image builders and references. Writes convert with a plain C++ cast: callers pass values in range.
#pragma once

#include "gpk.h"

#include <cstdint>
#include <cstring>

template <class T> inline T load_as(const unsigned char *p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class T> inline void store_as(unsigned char *p, T v) {
    std::memcpy(p, &v, sizeof v);
}

inline double read_sample(gpk_dtype t, const unsigned char *p) {
    switch (t) {
    case GPK_U8:
        return *p;
    case GPK_U16:
        return load_as<uint16_t>(p);
    case GPK_U32:
        return load_as<uint32_t>(p);
    case GPK_I32:
        return load_as<int32_t>(p);
    case GPK_F32:
        return load_as<float>(p);
    default:
        return load_as<double>(p);
    }
}

inline void write_sample(gpk_dtype t, unsigned char *p, double v) {
    switch (t) {
    case GPK_U8:
        *p = uint8_t(v);
        break;
    case GPK_U16:
        store_as(p, uint16_t(v));
        break;
    case GPK_U32:
        store_as(p, uint32_t(v));
        break;
    case GPK_I32:
        store_as(p, int32_t(v));
        break;
    case GPK_F32:
        store_as(p, float(v));
        break;
    default:
        store_as(p, v);
        break;
    }
}
