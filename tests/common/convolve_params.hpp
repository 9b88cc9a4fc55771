// The convolution parameters of a test case: the defaults of gpk_convolve_params_init, then the case's
// filter, border, normalisation and accumulation.
#pragma once

#include "gpk.h"

inline gpk_convolve_params convolve_params(const gpk_filter *f, gpk_border border, gpk_normalize normalize,
                                           gpk_accumulate accumulate = GPK_ACCUMULATE_AUTO) {
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = f;
    p.border = border;
    p.normalize = normalize;
    p.accumulate = accumulate;
    return p;
}
