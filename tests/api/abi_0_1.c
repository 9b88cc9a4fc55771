/* A program built against gpk 0.1's header (the frozen copy in tests/api/gpk_0_1), run on this library: every
 * init function and every operation, with canary bytes after each struct, and each struct also alone in an
 * allocation of its own size (AddressSanitizer builds catch a byte read or written past it). The init
 * functions must write 0.1's layout and no more, and the operations must read no more of it. */
#include <gpk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if GPK_VERSION_MINOR != 1 || GPK_VERSION_MAJOR != 0
#error "compile against tests/api/gpk_0_1/gpk.h"
#endif

#define CANARY 0xA5
#define ROOM 64

static int failures;
static int checks;

#define CHECK(cond, what)                                                                                    \
    do {                                                                                                     \
        ++checks;                                                                                            \
        if (!(cond)) {                                                                                       \
            ++failures;                                                                                      \
            fprintf(stderr, "%s:%d: %s (%s)\n", __FILE__, __LINE__, what, #cond);                            \
        }                                                                                                    \
    } while (0)

/* `size` bytes for a struct followed by ROOM canary bytes. */
static unsigned char *guarded(size_t size) {
    unsigned char *p = malloc(size + ROOM);
    if (!p) abort();
    memset(p, CANARY, size + ROOM);
    return p;
}

static int intact(const unsigned char *p, size_t from, size_t to) {
    for (size_t k = from; k < to; ++k)
        if (p[k] != CANARY) return 0;
    return 1;
}

/* A struct of exactly `size` bytes, alone in its allocation, with the bytes of `from`. */
static void *alone(const void *from, size_t size) {
    void *p = malloc(size);
    if (!p) abort();
    memcpy(p, from, size);
    return p;
}

/* Runs one init call on a struct of type T followed by canaries: OK, struct_size of 0.1, nothing past it. */
#define CHECK_INIT(T, call)                                                                                  \
    do {                                                                                                     \
        unsigned char *b = guarded(sizeof(T));                                                               \
        T *p = (T *)b;                                                                                       \
        CHECK((call) == GPK_OK, #call);                                                                      \
        CHECK(p->struct_size == sizeof(T), #T ": struct_size of 0.1");                                       \
        CHECK(intact(b, sizeof(T), sizeof(T) + ROOM), #T ": written past 0.1's layout");                     \
        free(b);                                                                                             \
    } while (0)

static void test_inits(void) {
    CHECK_INIT(gpk_heat_params, gpk_heat_params_init(p));
    CHECK_INIT(gpk_histogram_params, gpk_histogram_params_init(p));
    CHECK_INIT(gpk_convolve_params, gpk_convolve_params_init(p));
    CHECK_INIT(gpk_context_options, gpk_context_options_init(p));
    CHECK_INIT(gpk_image, gpk_image_init(p, GPK_U8, 4, 3, 1));
}

static int reports;
static int on_report(const gpk_heat_report *r, int is_final, void *user) {
    (void)r;
    (void)is_final;
    ++*(int *)user;
    return 0;
}

static void test_operations(void) {
    gpk_context_options o;
    gpk_context_options_init(&o);
    o.backend = GPK_BACKEND_CPU;
    gpk_context_options *opts = alone(&o, sizeof o);
    gpk_context *ctx = NULL;
    CHECK(gpk_context_create(&ctx, opts) == GPK_OK, gpk_context_last_error(NULL));
    free(opts);
    if (!ctx) return;

    /* Heat: the 0.1 struct, alone in its allocation; the run reads none of the fields 0.1 lacks. */
    enum { N = 10, M = 12 };
    static double t[N * M], c[N * M], out1[N * M], out2[N * M];
    for (int k = 0; k < N * M; ++k) {
        t[k] = (double)((k * 37) % 11);
        c[k] = (double)(k % 5) / 4.0;
    }
    gpk_heat_params h;
    gpk_heat_params_init(&h);
    h.rows = N;
    h.cols = M;
    h.maxiter = 30;
    h.period = 10;
    h.on_report = on_report;
    h.user_data = &reports;
    gpk_heat_params *hp = alone(&h, sizeof h);
    gpk_heat_report final1, final2;
    CHECK(gpk_heat_run(ctx, hp, t, c, out1, &final1) == GPK_OK, gpk_context_last_error(ctx));
    CHECK(final1.niter == 30 && reports == 4, "heat: 30 iterations, 3 periodic reports and the final one");
    CHECK(gpk_heat_run(ctx, hp, t, c, out2, &final2) == GPK_OK, gpk_context_last_error(ctx));
    CHECK(memcmp(out1, out2, sizeof out1) == 0 && final1.tavg == final2.tavg, "heat: deterministic");
    free(hp);

    /* Histogram. */
    static unsigned char img[N * M];
    for (int k = 0; k < N * M; ++k) img[k] = (unsigned char)(k * 7);
    gpk_histogram_params hi;
    gpk_histogram_params_init(&hi);
    hi.width = M;
    hi.height = N;
    gpk_histogram_params *hip = alone(&hi, sizeof hi);
    uint64_t hist[256], total = 0;
    CHECK(gpk_histogram(ctx, hip, img, hist, NULL) == GPK_OK, gpk_context_last_error(ctx));
    for (int b = 0; b < 256; ++b) total += hist[b];
    CHECK(total == N * M, "histogram: every sample counted");
    free(hip);

    /* Convolution, and the filter's info (a struct the caller sizes). */
    gpk_filter *f = NULL;
    CHECK(gpk_filter_create_named(&f, "lp3") == GPK_OK, gpk_context_last_error(NULL));
    unsigned char *ib = guarded(sizeof(gpk_filter_info));
    ((gpk_filter_info *)ib)->struct_size = sizeof(gpk_filter_info);
    CHECK(gpk_filter_get_info((gpk_filter_info *)ib, f) == GPK_OK, gpk_context_last_error(NULL));
    CHECK(((gpk_filter_info *)ib)->kh == 3 &&
              intact(ib, sizeof(gpk_filter_info), sizeof(gpk_filter_info) + ROOM),
          "filter info");
    free(ib);
    gpk_convolve_params cp;
    gpk_convolve_params_init(&cp);
    cp.filter = f;
    cp.normalize = GPK_NORMALIZE_MINMAX;
    gpk_image in, outi;
    gpk_image_init(&in, GPK_U8, M, N, 1);
    gpk_image_init(&outi, GPK_U8, M, N, 1);
    gpk_convolve_params *cpp = alone(&cp, sizeof cp);
    gpk_image *inp = alone(&in, sizeof in), *outp = alone(&outi, sizeof outi);
    static unsigned char res[N * M];
    CHECK(gpk_convolve(ctx, cpp, inp, img, outp, res) == GPK_OK, gpk_context_last_error(ctx));
    free(cpp);
    free(inp);
    free(outp);
    gpk_filter_destroy(f);

    /* A device query with the caller's struct (no GPU here is fine: then NO_DEVICE, and nothing written). */
    unsigned char *db = guarded(sizeof(gpk_device_info));
    ((gpk_device_info *)db)->struct_size = sizeof(gpk_device_info);
    gpk_status s = gpk_device_get_info((gpk_device_info *)db, 0);
    CHECK(s == GPK_OK || s == GPK_ERR_NO_DEVICE, gpk_context_last_error(NULL));
    CHECK(intact(db, sizeof(gpk_device_info), sizeof(gpk_device_info) + ROOM), "device info");
    free(db);
    gpk_context_destroy(ctx);
}

int main(void) {
    test_inits();
    test_operations();
    printf("abi_0_1: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
