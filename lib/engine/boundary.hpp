// What the C boundaries (lib/capi.cpp, lib/internal.cpp) share: exceptions become a status and a message
// in the context (or, without one, in the thread's slot), and the checked job of a convolution.
#pragma once

#include "gpk.h"

#include "engine/context.hpp"
#include "engine/error.hpp"
#include "engine/jobs.hpp"

#include <exception>
#include <new>
#include <string>
#include <utility>

namespace gpk {

// The calling thread's message of failures outside a context: gpk_context_last_error(NULL).
std::string &thread_error();

// Runs `body`, turning every exception into a status and a message stored in `slot`.
template <class F> gpk_status guarded(std::string &slot, F &&body) {
    try {
        body();
        return GPK_OK;
    } catch (const gpk::Error &e) {
        slot = e.what();
        return e.status();
    } catch (const std::bad_alloc &) {
        slot = "out of host memory";
        return GPK_ERR_OUT_OF_MEMORY;
    } catch (const std::exception &e) {
        slot = std::string("internal error: ") + e.what();
        return GPK_ERR_INTERNAL;
    } catch (...) {
        slot = "internal error: unknown exception";
        return GPK_ERR_INTERNAL;
    }
}

template <class F> gpk_status with_context(gpk_context *ctx, F &&body) {
    if (!ctx) {
        thread_error() = "ctx is NULL";
        return GPK_ERR_INVALID_ARGUMENT;
    }
    return guarded(ctx->last_error, std::forward<F>(body));
}

// The checked job of gpk_convolve (and of gpk_internal_convolve): every argument validated.
ConvolveJob convolve_job(const gpk_convolve_params *params, const gpk_image *in, const void *in_data,
                         const gpk_image *out, void *out_data);

} // namespace gpk
