/* Counts the grey levels of a small 8-bit image with gpk. */
#include <gpk.h>
#include <stdio.h>

int main(void) {
    const uint8_t image[2][4] = {{0, 1, 1, 255}, {7, 7, 7, 255}};
    gpk_context *ctx = NULL;
    if (gpk_context_create(&ctx, NULL) != GPK_OK) {
        fprintf(stderr, "gpk: %s\n", gpk_context_last_error(NULL));
        return 1;
    }
    gpk_histogram_params params;
    gpk_histogram_params_init(&params); /* u8 samples, 256 bins over [0, 256) */
    params.width = 4;
    params.height = 2;
    uint64_t hist[256];
    gpk_status status = gpk_histogram(ctx, &params, image, hist, NULL);
    if (status == GPK_OK)
        printf("gpk %s (%s): bin 7 holds %llu, bin 255 holds %llu\n", gpk_version_string(),
               gpk_backend_name(gpk_context_backend(ctx)), (unsigned long long)hist[7],
               (unsigned long long)hist[255]);
    else
        fprintf(stderr, "gpk_histogram: %s: %s\n", gpk_status_string(status), gpk_context_last_error(ctx));
    gpk_context_destroy(ctx);
    return status == GPK_OK && hist[7] == 3 && hist[255] == 2 ? 0 : 1;
}
