// What the CUDA backend does to caller host memory that it streams and faults in ahead of its copies
// (lib/engine/host_pages.hpp), seen from the CPU, on outputs that are fresh mappings (no page resident, as
// a new malloc or np.empty_like gives): rejected arguments and a min/max call cancelled by its range
// callback leave every page of the output unpopulated; a call that fails in the middle (each copy failing
// in turn) leaves every output byte either untouched (0) or the CPU backend's value, and the padding between
// rows untouched; a call that succeeds gives the CPU backend's output; after any call returns, no page
// of the output changes any more (the background threads have stopped). A fresh, never-touched source is
// counted exactly.
#include "gpu_common.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <thread>

extern "C" {
typedef int (*gpk_internal_range_fn)(void *user, unsigned channels, int exact, double *lo, double *hi,
                                     long long *ilo, long long *ihi);
gpk_status gpk_internal_convolve(gpk_context *ctx, const gpk_convolve_params *params, const gpk_image *in,
                                 const void *in_data, const gpk_image *out, void *out_data,
                                 size_t range_begin, size_t range_end, gpk_internal_range_fn range_fn,
                                 void *user);
}

namespace {

const size_t kPage = size_t(sysconf(_SC_PAGESIZE));
// Above the size from which the backend prefetches (64 MiB), in several bands.
constexpr size_t kWidth = 8192, kHeight = 12288, kPad = 64, kStride = kWidth + kPad;

// A fresh private anonymous mapping: reads as zeros, no page resident until something touches it.
struct Fresh {
    unsigned char *p = nullptr;
    size_t bytes;
    explicit Fresh(size_t n) : bytes(n) {
        void *m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) check::skip("mmap failed");
        p = static_cast<unsigned char *>(m);
    }
    ~Fresh() { munmap(p, bytes); }
    size_t resident() const {
        std::vector<unsigned char> v((bytes + kPage - 1) / kPage);
        if (mincore(p, bytes, v.data()) != 0) return ~size_t(0);
        size_t n = 0;
        for (unsigned char c : v) n += c & 1;
        return n;
    }
};

gpk_image image(size_t stride) {
    gpk_image im;
    gpk_image_init(&im, GPK_U8, kWidth, kHeight, 1);
    im.stride = stride;
    return im;
}

// The pages of `out` stay as they are once the call has returned.
void check_settled(const Fresh &out, const std::string &where) {
    const size_t before = out.resident();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK_MSG(out.resident() == before, where + ": output pages faulted in after the call returned");
}

int cancel_range(void *, unsigned, int, double *, double *, long long *, long long *) {
    return 1;
}

void check_convolve(gpk_context *cuda, gpk_context *cpu) {
    std::vector<unsigned char> in(kStride * kHeight);
    for (size_t i = 0; i < in.size(); ++i) in[i] = (unsigned char)((i * 2654435761u) >> 13);
    const gpk_image in_im = image(kStride), out_im = image(kStride);
    gpk_filter *box = nullptr;
    const double taps[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_OK(nullptr, gpk_filter_create_2d(&box, 3, 3, taps));
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = box;
    p.normalize = GPK_NORMALIZE_SUM;
    std::vector<unsigned char> want(kStride * kHeight, 0);
    CHECK_OK(cpu, gpk_convolve(cpu, &p, &in_im, in.data(), &out_im, want.data()));

    { // rejected: an unknown border
        Fresh out(kStride * kHeight);
        gpk_convolve_params bad = p;
        bad.border = gpk_border(99);
        CHECK_STATUS(cuda, gpk_convolve(cuda, &bad, &in_im, in.data(), &out_im, out.p),
                     GPK_ERR_INVALID_ARGUMENT);
        CHECK_EQ(out.resident(), size_t(0));
    }
    { // min/max cancelled by its range callback before the output is written
        Fresh out(kStride * kHeight);
        gpk_convolve_params mm = p;
        mm.normalize = GPK_NORMALIZE_MINMAX;
        CHECK_STATUS(cuda,
                     gpk_internal_convolve(cuda, &mm, &in_im, in.data(), &out_im, out.p, 0, kHeight,
                                           cancel_range, nullptr),
                     GPK_ERR_CANCELLED);
        check_settled(out, "cancelled");
        CHECK_EQ(out.resident(), size_t(0));
    }
    { // complete: the CPU backend's bytes, the padding untouched
        Fresh out(kStride * kHeight);
        CHECK_OK(cuda, gpk_convolve(cuda, &p, &in_im, in.data(), &out_im, out.p));
        check_settled(out, "complete");
        CHECK(std::memcmp(out.p, want.data(), want.size()) == 0);
    }
    // Each copy failing in turn, until the call has fewer copies than that.
    const bool faults = !hooks::skip_part("copies failing in turn (GPK_TEST_FAULT=copy:N)");
    for (int n = 1; faults && n <= 200; ++n) {
        Fresh out(kStride * kHeight);
        hooks::Hook fault("GPK_TEST_FAULT", "copy:" + std::to_string(n));
        const gpk_status s = gpk_convolve(cuda, &p, &in_im, in.data(), &out_im, out.p);
        fault.set(nullptr);
        const std::string where = "copy " + std::to_string(n) + " failing";
        check_settled(out, where);
        size_t wrong = 0;
        for (size_t i = 0; i < want.size(); ++i) wrong += out.p[i] != 0 && out.p[i] != want[i];
        CHECK_MSG(wrong == 0,
                  where + ": " + std::to_string(wrong) + " bytes neither untouched nor the result");
        if (s == GPK_OK) {
            CHECK(std::memcmp(out.p, want.data(), want.size()) == 0);
            break;
        }
    }
    gpk_filter_destroy(box);
}

void check_histogram(gpk_context *cuda) {
    Fresh data(size_t(96) << 20); // never touched: all zeros, no page mapped
    gpk_histogram_params p;
    gpk_histogram_params_init(&p);
    p.width = data.bytes;
    p.height = 1;
    std::vector<uint64_t> hist(256, 1);
    CHECK_OK(cuda, gpk_histogram(cuda, &p, data.p, hist.data(), nullptr));
    CHECK_EQ(hist[0], uint64_t(data.bytes));
    size_t others = 0;
    for (size_t b = 1; b < 256; ++b) others += hist[b];
    CHECK_EQ(others, size_t(0));
}

} // namespace

int main() {
    gpu::require_device();
    gpk_context *cuda = gpu::make_context(GPK_BACKEND_CUDA);
    gpk_context *cpu = gpu::make_context(GPK_BACKEND_CPU);
    check_convolve(cuda, cpu);
    check_histogram(cuda);
    gpk_context_destroy(cpu);
    gpk_context_destroy(cuda);
    return check::finish("test_gpu_host_pages");
}
