// The filter constructors behind gpk_filter_create_*: taps checked, derived fields filled in.
#include "engine/filter.hpp"

#include "engine/arguments.hpp"
#include "engine/error.hpp"
#include "engine/validate.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace gpk {
namespace {

gpk_filter *filter_2d(size_t kh, size_t kw, const double *taps) {
    auto side = [](size_t k, const char *name) {
        if (k < 1 || k > GPK_FILTER_MAX_2D || k % 2 == 0)
            invalid(std::string(name) + " is " + std::to_string(k) + "; it must be odd and in 1.." +
                    std::to_string(GPK_FILTER_MAX_2D));
    };
    side(kh, "kh");
    side(kw, "kw");
    require(taps, "taps");
    auto *f = new gpk_filter;
    f->separable = false;
    f->kh = int(kh);
    f->kw = int(kw);
    f->taps.assign(taps, taps + kh * kw);
    return f;
}

void check_taps(const std::vector<double> &taps, const char *name) {
    for (size_t i = 0; i < taps.size(); ++i)
        if (!std::isfinite(taps[i]))
            invalid(std::string(name) + "[" + std::to_string(i) + "] is " + format_value(taps[i]) +
                    "; taps must be finite");
}

bool all_integer(const std::vector<double> &v) {
    for (double t : v)
        if (t != std::floor(t)) return false;
    return true;
}

double sum_of(const std::vector<double> &v, bool absolute) {
    double s = 0;
    for (double t : v) s += absolute ? std::fabs(t) : t;
    return s;
}

// Checks the taps and fills in the derived fields; deletes the filter and rethrows on failure.
gpk_filter *finished(gpk_filter *f) {
    try {
        if (f->separable) {
            check_taps(f->row, "row");
            check_taps(f->col, "col");
            f->sum = sum_of(f->row, false) * sum_of(f->col, false);
            f->abs_sum = sum_of(f->row, true) * sum_of(f->col, true);
            f->integer_taps = all_integer(f->row) && all_integer(f->col);
        } else {
            check_taps(f->taps, "taps");
            f->sum = sum_of(f->taps, false);
            f->abs_sum = sum_of(f->taps, true);
            f->integer_taps = all_integer(f->taps);
        }
        if (!std::isfinite(f->abs_sum)) invalid("the sum of the filter's absolute taps is not finite");
    } catch (...) {
        delete f;
        throw;
    }
    return f;
}

gpk_filter *filter_separable(size_t row_len, const double *row, size_t col_len, const double *col) {
    auto len = [](size_t k, const char *name) {
        if (k < 1 || k > GPK_FILTER_MAX_SEPARABLE || k % 2 == 0)
            invalid(std::string(name) + " is " + std::to_string(k) + "; it must be odd and in 1.." +
                    std::to_string(GPK_FILTER_MAX_SEPARABLE));
    };
    len(row_len, "row_len");
    len(col_len, "col_len");
    require(row, "row");
    require(col, "col");
    auto *f = new gpk_filter;
    f->separable = true;
    f->kw = int(row_len);
    f->kh = int(col_len);
    f->row.assign(row, row + row_len);
    f->col.assign(col, col + col_len);
    return f;
}

// Parses the whole of `text` as a number; false on anything else.
bool parse_number(const char *text, double *out) {
    if (!*text) return false;
    char *end = nullptr;
    double v = std::strtod(text, &end);
    if (*end != '\0' || !std::isfinite(v)) return false;
    *out = v;
    return true;
}

gpk_filter *named(const char *name) {
    require(name, "name");
    static const double lp3[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
    static const double smooth5[25] = {1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 2, 3,
                                       2, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1};
    static const double log9_top[5][9] = {{0, 1, 1, 2, 2, 2, 1, 1, 0},
                                          {1, 2, 4, 5, 5, 5, 4, 2, 1},
                                          {1, 4, 5, 3, 0, 3, 5, 4, 1},
                                          {2, 5, 3, -12, -24, -12, 3, 5, 2},
                                          {2, 5, 0, -24, -40, -24, 0, 5, 2}};
    if (std::strcmp(name, "identity") == 0) {
        const double one = 1;
        return filter_2d(1, 1, &one);
    }
    if (std::strcmp(name, "lp3") == 0) return filter_2d(3, 3, lp3);
    if (std::strcmp(name, "lp5") == 0) {
        double t[25];
        for (double &v : t) v = -1;
        t[12] = 24;
        return filter_2d(5, 5, t);
    }
    if (std::strcmp(name, "log9") == 0) {
        double t[81];
        for (int r = 0; r < 9; ++r)
            for (int c = 0; c < 9; ++c) t[r * 9 + c] = log9_top[r < 5 ? r : 8 - r][c];
        return filter_2d(9, 9, t);
    }
    if (std::strcmp(name, "smooth5") == 0) return filter_2d(5, 5, smooth5);
    if (std::strncmp(name, "box:", 4) == 0) {
        double k;
        if (!parse_number(name + 4, &k) || k != std::floor(k) || k < 1 || k > GPK_FILTER_MAX_SEPARABLE ||
            std::fmod(k, 2) == 0)
            invalid(std::string("filter \"") + name + "\": K must be an odd integer in 1.." +
                    std::to_string(GPK_FILTER_MAX_SEPARABLE));
        std::vector<double> ones(size_t(k), 1.0);
        return filter_separable(ones.size(), ones.data(), ones.size(), ones.data());
    }
    if (std::strncmp(name, "gauss:", 6) == 0) {
        double sigma;
        if (!parse_number(name + 6, &sigma) || !(sigma > 0) || sigma > 1000)
            invalid(std::string("filter \"") + name + "\": SIGMA must be a number in (0, 1000]");
        int radius = int(std::ceil(3 * sigma));
        if (radius > (GPK_FILTER_MAX_SEPARABLE - 1) / 2) radius = (GPK_FILTER_MAX_SEPARABLE - 1) / 2;
        std::vector<double> g(size_t(2 * radius + 1));
        double s = 0;
        for (int i = -radius; i <= radius; ++i)
            s += g[size_t(i + radius)] = std::exp(-0.5 * i * i / (sigma * sigma));
        for (double &v : g) v /= s;
        return filter_separable(g.size(), g.data(), g.size(), g.data());
    }
    invalid(std::string("unknown filter \"") + name +
            "\"; expected identity, lp3, lp5, log9, smooth5, box:K or gauss:SIGMA");
}

} // namespace

gpk_filter *new_named_filter(const char *name) {
    return finished(named(name));
}

gpk_filter *new_filter_2d(size_t kh, size_t kw, const double *taps) {
    return finished(filter_2d(kh, kw, taps));
}

gpk_filter *new_filter_separable(size_t row_len, const double *row, size_t col_len, const double *col) {
    return finished(filter_separable(row_len, row, col_len, col));
}

} // namespace gpk
