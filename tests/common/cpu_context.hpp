// A CPU-backend context with a given number of threads (0: every core), for the unit tests; exits if
// the library cannot make one, since no test can run then.
#pragma once

#include "gpk.h"

#include <cstdio>
#include <cstdlib>

inline gpk_context *make_context(unsigned threads) {
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = GPK_BACKEND_CPU;
    o.threads = threads;
    gpk_context *ctx = nullptr;
    if (gpk_context_create(&ctx, &o) != GPK_OK) {
        std::fprintf(stderr, "cannot create a CPU context: %s\n", gpk_context_last_error(nullptr));
        std::exit(1);
    }
    return ctx;
}
