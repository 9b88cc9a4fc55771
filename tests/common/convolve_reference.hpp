// The naive convolution reference of the tests, written from README's "What gpk computes" and NOTES.md: per
// pixel and per tap, with its own border mapping, in __int128 (exact path) or long double, and how a library
// result is compared with it (bit for bit on the exact path, the accumulation's tolerance on the float path).
// Shared by test_convolve and the dispatch sweep (CPU and CUDA).
#pragma once

#include "check.hpp"
#include "convolve_params.hpp"
#include "gpk.h"
#include "periodic_image.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace convref {

__extension__ typedef __int128 Int128;

inline const gpk_dtype kTypes[] = {GPK_U8, GPK_U16, GPK_F32, GPK_F64};
inline const gpk_border kBorders[] = {GPK_BORDER_ZERO, GPK_BORDER_CLAMP, GPK_BORDER_MIRROR,
                                      GPK_BORDER_REFLECT, GPK_BORDER_WRAP};
inline const gpk_normalize kNorms[] = {GPK_NORMALIZE_NONE, GPK_NORMALIZE_SUM, GPK_NORMALIZE_MINMAX};

inline bool is_integer_type(gpk_dtype t) {
    return t == GPK_U8 || t == GPK_U16;
}
inline double type_max(gpk_dtype t) {
    return t == GPK_U8 ? 255.0 : 65535.0;
}
inline const unsigned char kGarbage = 0xFF; // NaN in every float type: a padding byte read shows up

// An image with padded rows; the padding holds garbage.
struct Image {
    gpk_image desc{};
    std::vector<unsigned char> bytes;

    Image(gpk_dtype dtype, size_t width, size_t height, unsigned channels, size_t pad_bytes) {
        gpk_image_init(&desc, dtype, width, height, channels);
        desc.stride = width * channels * gpk_dtype_size(dtype) + pad_bytes;
        bytes.assign(desc.stride * height, kGarbage);
    }
    size_t row_bytes() const { return desc.width * desc.channels * gpk_dtype_size(desc.dtype); }
    unsigned char *at(size_t x, size_t y, unsigned c) {
        return bytes.data() + y * desc.stride + (x * desc.channels + c) * gpk_dtype_size(desc.dtype);
    }
    const unsigned char *at(size_t x, size_t y, unsigned c) const {
        return const_cast<Image *>(this)->at(x, y, c);
    }
    long double get(size_t x, size_t y, unsigned c) const {
        const unsigned char *p = at(x, y, c);
        switch (desc.dtype) {
        case GPK_U8:
            return *p;
        case GPK_U16: {
            uint16_t v;
            std::memcpy(&v, p, 2);
            return v;
        }
        case GPK_F32: {
            float v;
            std::memcpy(&v, p, 4);
            return v;
        }
        default: {
            double v;
            std::memcpy(&v, p, 8);
            return v;
        }
        }
    }
    void set(size_t x, size_t y, unsigned c, long double v) {
        unsigned char *p = at(x, y, c);
        switch (desc.dtype) {
        case GPK_U8:
            *p = (uint8_t)v;
            break;
        case GPK_U16: {
            uint16_t s = (uint16_t)v;
            std::memcpy(p, &s, 2);
            break;
        }
        case GPK_F32: {
            float s = (float)v;
            std::memcpy(p, &s, 4);
            break;
        }
        default: {
            double s = (double)v;
            std::memcpy(p, &s, 8);
            break;
        }
        }
    }
    bool padding_is_garbage() const {
        for (size_t y = 0; y < desc.height; ++y)
            for (size_t i = row_bytes(); i < desc.stride; ++i)
                if (bytes[y * desc.stride + i] != kGarbage) return false;
        return true;
    }
};

// Random samples over the type's range (integers) or [-50, 150) (floats).
inline Image random_image(std::mt19937_64 &rng, gpk_dtype dtype, size_t width, size_t height,
                          unsigned channels, size_t pad) {
    Image img(dtype, width, height, channels, pad);
    std::uniform_int_distribution<long long> integer(0,
                                                     is_integer_type(dtype) ? (long long)type_max(dtype) : 0);
    std::uniform_real_distribution<double> real(-50, 150);
    for (size_t y = 0; y < height; ++y)
        for (size_t x = 0; x < width; ++x)
            for (unsigned c = 0; c < channels; ++c)
                img.set(x, y, c, is_integer_type(dtype) ? (long double)integer(rng) : (long double)real(rng));
    return img;
}

// The filter's taps as the test sees them.
struct Taps {
    bool separable = false;
    int kh = 1, kw = 1;
    std::vector<double> taps, row, col;
    double sum = 0;
};

inline Taps taps_of(const gpk_filter *f) {
    gpk_filter_info info{};
    info.struct_size = sizeof info;
    gpk_filter_get_info(&info, f);
    Taps t;
    t.separable = info.separable != 0;
    t.kh = int(info.kh);
    t.kw = int(info.kw);
    std::vector<double> all(info.kh * info.kw + info.kh + info.kw);
    gpk_filter_get_taps(all.data(), all.size(), f);
    if (t.separable) {
        t.row.assign(all.begin(), all.begin() + t.kw);
        t.col.assign(all.begin() + t.kw, all.begin() + t.kw + t.kh);
    } else {
        t.taps.assign(all.begin(), all.begin() + t.kh * t.kw);
    }
    t.sum = info.sum;
    return t;
}

using periodic::map_index;

// Filtered values of every sample (before normalisation), in the number type V.
template <class V> struct Filtered {
    size_t width, height;
    unsigned channels;
    std::vector<V> v;
    V &at(size_t x, size_t y, unsigned c) { return v[(y * width + x) * channels + c]; }
};

template <class V> V sample_as(const Image &img, long long x, long long y, unsigned c, gpk_border b) {
    long long sx = map_index(x, (long long)img.desc.width, b),
              sy = map_index(y, (long long)img.desc.height, b);
    if (sx < 0 || sy < 0) return V(0);
    return V(img.get(size_t(sx), size_t(sy), c));
}

template <class V> Filtered<V> reference_filter(const Image &in, const Taps &t, gpk_border b) {
    const size_t w = in.desc.width, h = in.desc.height;
    const unsigned ch = in.desc.channels;
    Filtered<V> out{w, h, ch, std::vector<V>(w * h * ch)};
    const long long rh = t.kh / 2, rw = t.kw / 2;
    Filtered<V> rows{w, h, ch, std::vector<V>(w * h * ch)}; // separable: the row pass
    if (t.separable)
        for (size_t y = 0; y < h; ++y)
            for (size_t x = 0; x < w; ++x)
                for (unsigned c = 0; c < ch; ++c)
                    for (int j = 0; j < t.kw; ++j)
                        rows.at(x, y, c) +=
                            sample_as<V>(in, (long long)x + j - rw, (long long)y, c, b) * V(t.row[j]);
    for (size_t y = 0; y < h; ++y)
        for (size_t x = 0; x < w; ++x)
            for (unsigned c = 0; c < ch; ++c) {
                V acc = 0;
                for (int i = 0; i < t.kh; ++i) {
                    long long yy = (long long)y + i - rh;
                    if (t.separable) {
                        long long sy = map_index(yy, (long long)h, b);
                        if (sy >= 0) acc += rows.at(x, size_t(sy), c) * V(t.col[i]);
                        continue;
                    }
                    for (int j = 0; j < t.kw; ++j)
                        acc += sample_as<V>(in, (long long)x + j - rw, yy, c, b) *
                               V(t.taps[size_t(i * t.kw + j)]);
                }
                out.at(x, y, c) = acc;
            }
    return out;
}

struct Case {
    gpk_dtype in_type, out_type;
    unsigned channels;
    gpk_border border;
    gpk_normalize norm;
    gpk_accumulate acc;
    size_t width, height;
};

inline std::string describe(const Case &k, const std::string &filter) {
    return filter + " " + gpk_dtype_name(k.in_type) + "->" + gpk_dtype_name(k.out_type) + " c" +
           std::to_string(k.channels) + " border " + std::to_string(k.border) + " norm " +
           std::to_string(k.norm) + " acc " + std::to_string(k.acc) + " " + std::to_string(k.width) + "x" +
           std::to_string(k.height);
}

inline bool takes_exact_path(const Case &k, const Taps &t) {
    if (!is_integer_type(k.in_type)) return false;
    auto all_int = [](const std::vector<double> &v) {
        return std::all_of(v.begin(), v.end(), [](double d) { return d == std::floor(d); });
    };
    auto abs_sum = [](const std::vector<double> &v) {
        long double s = 0;
        for (double d : v) s += std::fabs(d);
        return s;
    };
    if (t.separable)
        return all_int(t.row) && all_int(t.col) &&
               abs_sum(t.row) * abs_sum(t.col) * type_max(k.in_type) < 18014398509481984.0L;
    return all_int(t.taps) && abs_sum(t.taps) * type_max(k.in_type) < 18014398509481984.0L;
}

// Round to nearest, ties away from zero, saturated; NaN gives 0 (written apart from the library's).
inline long double round_half_away(long double v, long double hi) {
    if (std::isnan(v)) return 0;
    long double r = v < 0 ? -std::floor(-v + 0.5L) : std::floor(v + 0.5L);
    return std::min(std::max(r, 0.0L), hi);
}

// Integer division rounding half away from zero.
inline Int128 divide_rounded(Int128 n, Int128 d) {
    Int128 q = n / d, r = n % d;
    Int128 twice_r = r < 0 ? -2 * r : 2 * r, abs_d = d < 0 ? -d : d;
    if (twice_r >= abs_d) q += ((n < 0) != (d < 0)) ? -1 : 1;
    return q;
}

// Exact path: every output sample as the library must store it.
inline Image expected_exact(const Case &k, const Taps &t, const Image &in, size_t out_pad) {
    Filtered<Int128> f = reference_filter<Int128>(in, t, k.border);
    Image out(k.out_type, k.width, k.height, k.channels, out_pad);
    for (unsigned c = 0; c < k.channels; ++c) {
        Int128 lo = 0, hi = 0;
        for (size_t i = c; i < f.v.size(); i += k.channels) {
            if (i == c || f.v[i] < lo) lo = f.v[i];
            if (i == c || f.v[i] > hi) hi = f.v[i];
        }
        const bool float_out = !is_integer_type(k.out_type);
        for (size_t y = 0; y < k.height; ++y)
            for (size_t x = 0; x < k.width; ++x) {
                Int128 v = f.at(x, y, c);
                long double r;
                if (k.norm == GPK_NORMALIZE_NONE)
                    r = float_out ? (long double)(double)(long long)v : (long double)v;
                else if (k.norm == GPK_NORMALIZE_SUM)
                    r = float_out ? (long double)((double)(long long)v / t.sum)
                                  : (long double)divide_rounded(v, (Int128)(long long)t.sum);
                else if (hi == lo)
                    r = 0;
                else
                    r = float_out ? (long double)((double)(long long)(v - lo) * 255.0 /
                                                  (double)(long long)(hi - lo))
                                  : (long double)((v - lo) * 255 / (hi - lo));
                if (!float_out) r = std::min(std::max(r, 0.0L), (long double)type_max(k.out_type));
                out.set(x, y, c, r);
            }
    }
    return out;
}

// Float path: reference values after normalisation, and the scale of their rounding errors: the sums of
// |tap * sample| (which bound what any summation order can lose) carried through the normalisation. Where
// the taps cancel (a zero-sum filter on a flat image) or min/max spans only rounding noise, the scale is far
// above the values and only it says how close a float result can be.
struct FloatReference {
    Filtered<long double> value, scale;
};

inline Image absolute(const Image &in) {
    Image a = in;
    for (size_t y = 0; y < in.desc.height; ++y)
        for (size_t x = 0; x < in.desc.width; ++x)
            for (unsigned c = 0; c < in.desc.channels; ++c) a.set(x, y, c, std::fabs(in.get(x, y, c)));
    return a;
}

inline Taps absolute(Taps t) {
    for (auto *v : {&t.taps, &t.row, &t.col})
        for (double &d : *v) d = std::fabs(d);
    return t;
}

inline FloatReference expected_float(const Case &k, const Taps &t, const Image &in) {
    FloatReference r{reference_filter<long double>(in, t, k.border),
                     reference_filter<long double>(absolute(in), absolute(t), k.border)};
    for (unsigned c = 0; c < k.channels; ++c) {
        long double lo = INFINITY, hi = -INFINITY, top = 0;
        for (size_t i = c; i < r.value.v.size(); i += k.channels)
            lo = std::min(lo, r.value.v[i]), hi = std::max(hi, r.value.v[i]),
            top = std::max(top, r.scale.v[i]);
        for (size_t i = c; i < r.value.v.size(); i += k.channels) {
            long double &v = r.value.v[i], &s = r.scale.v[i];
            if (k.norm == GPK_NORMALIZE_SUM) v /= t.sum, s /= std::fabs(t.sum);
            if (k.norm == GPK_NORMALIZE_MINMAX) {
                v = hi == lo ? 0 : (v - lo) * 255 / (hi - lo);
                s = hi == lo ? INFINITY : (s + 2 * top) * 255 / (hi - lo);
            }
        }
    }
    return r;
}

inline bool accumulates_f64(const Case &k) {
    return k.acc == GPK_ACCUMULATE_F64 ||
           (k.acc == GPK_ACCUMULATE_AUTO && (k.in_type == GPK_F64 || k.out_type == GPK_F64));
}

// Compares a float-path result with the accumulation's tolerance (relative L2 1e-5 for f32, 1e-12 for f64,
// plus the rounding of an f32 output): float outputs in relative L2 of the reference (of the error scale
// where that is larger), integer outputs within 1 of the rounded reference (plus the tolerance of the scale).
inline bool matches_float(const Case &k, const FloatReference &ref, const Image &out, std::string &why) {
    const bool int_out = is_integer_type(k.out_type);
    const double tol = (accumulates_f64(k) ? 1e-12 : 1e-5) + (k.out_type == GPK_F32 ? 2.4e-7 : 0);
    long double err2 = 0, ref2 = 0, scale2 = 0, worst = 0;
    for (size_t y = 0; y < k.height; ++y)
        for (size_t x = 0; x < k.width; ++x)
            for (unsigned c = 0; c < k.channels; ++c) {
                const size_t i = (y * k.width + x) * k.channels + c;
                const long double r = ref.value.v[i], s = ref.scale.v[i], o = out.get(x, y, c);
                if (int_out)
                    worst =
                        std::max(worst, std::fabs(o - round_half_away(r, type_max(k.out_type))) - tol * s);
                err2 += (o - r) * (o - r);
                ref2 += r * r;
                scale2 += s * s;
            }
    if (int_out) {
        why = "max |diff| beyond the error scale " + std::to_string((double)worst);
        return worst <= 1;
    }
    double rel = (double)(std::sqrt(err2) / std::max({std::sqrt(ref2), std::sqrt(scale2), 1e-300L}));
    why = "relative L2 " + std::to_string(rel);
    return rel <= tol;
}

// Compares a successful call's output with the reference: the exact path bit for bit (padding included),
// the float path within the accumulation's tolerance; the row padding must be untouched. Records a failure
// naming `what` and returns false where the output differs.
inline bool check_output(const Case &k, const Taps &t, const Image &in, const Image &out,
                         const std::string &what) {
    CHECK_MSG(out.padding_is_garbage(), what + ": output padding written");
    bool ok;
    std::string why;
    if (takes_exact_path(k, t)) {
        const Image want = expected_exact(k, t, in, out.desc.stride - out.row_bytes());
        ok = want.bytes == out.bytes;
        why = "not bit-identical";
        if (!ok)
            for (size_t i = 0; i < want.bytes.size(); ++i)
                if (want.bytes[i] != out.bytes[i]) {
                    const size_t y = i / out.desc.stride,
                                 col = i % out.desc.stride / gpk_dtype_size(k.out_type);
                    why += ", first at x " + std::to_string(col / k.channels) + " y " + std::to_string(y) +
                           " channel " + std::to_string(col % k.channels) + ": " +
                           std::to_string((double)out.get(col / k.channels, y, unsigned(col % k.channels))) +
                           " instead of " +
                           std::to_string((double)want.get(col / k.channels, y, unsigned(col % k.channels)));
                    break;
                }
    } else {
        ok = matches_float(k, expected_float(k, t, in), out, why);
    }
    CHECK_MSG(ok, what + ": " + why);
    return ok;
}

} // namespace convref
