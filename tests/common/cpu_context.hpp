// gpk contexts for the tests: new_context makes one of a backend (threads, a caller stream) and exits
// where the library cannot make it, since no test can run then; cpu_context(threads) is the unit tests'
// CPU context.
#pragma once

#include "gpk.h"

#include <cstdio>
#include <cstdlib>

inline gpk_context *new_context(gpk_backend backend, unsigned threads = 0, void *stream = nullptr) {
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = backend;
    o.threads = threads;
    o.stream = stream;
    gpk_context *ctx = nullptr;
    if (gpk_context_create(&ctx, &o) != GPK_OK) {
        std::fprintf(stderr, "gpk_context_create(%s): %s\n", gpk_backend_name(backend),
                     gpk_context_last_error(nullptr));
        std::exit(1);
    }
    return ctx;
}

inline gpk_context *cpu_context(unsigned threads) {
    return new_context(GPK_BACKEND_CPU, threads);
}
