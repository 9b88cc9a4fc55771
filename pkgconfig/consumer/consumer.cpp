// Smooths a small float image with gpk's named 5x5 filter, from C++ with RAII handles.
#include <gpk.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

using ContextPtr = std::unique_ptr<gpk_context, decltype(&gpk_context_destroy)>;
using FilterPtr = std::unique_ptr<gpk_filter, decltype(&gpk_filter_destroy)>;

int main() {
    gpk_context *raw_ctx = nullptr;
    gpk_filter *raw_filter = nullptr;
    if (gpk_context_create(&raw_ctx, nullptr) != GPK_OK ||
        gpk_filter_create_named(&raw_filter, "smooth5") != GPK_OK) {
        std::fprintf(stderr, "gpk: %s\n", gpk_context_last_error(nullptr));
        gpk_context_destroy(raw_ctx);
        return 1;
    }
    ContextPtr ctx(raw_ctx, gpk_context_destroy);
    FilterPtr filter(raw_filter, gpk_filter_destroy);

    const size_t width = 8, height = 6;
    std::vector<float> in(width * height, 10.0f), out(width * height, 0.0f);
    gpk_image image;
    gpk_image_init(&image, GPK_F32, width, height, 1);
    gpk_convolve_params params;
    gpk_convolve_params_init(&params); // clamped borders
    params.filter = filter.get();
    params.normalize = GPK_NORMALIZE_SUM;
    gpk_status status = gpk_convolve(ctx.get(), &params, &image, in.data(), &image, out.data());
    if (status != GPK_OK) {
        std::fprintf(stderr, "gpk_convolve: %s: %s\n", gpk_status_string(status),
                     gpk_context_last_error(ctx.get()));
        return 1;
    }
    // A constant image stays constant under a normalised filter with clamped borders.
    for (float v : out)
        if (std::fabs(v - 10.0f) > 1e-5f) return 1;
    std::printf("gpk %s: smoothed %zux%zu image, out[0] = %g\n", gpk_version_string(), width, height, out[0]);
    return 0;
}
