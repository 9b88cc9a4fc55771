// libFuzzer target for the gpk command's image readers (PNG through libpng, PGM P2 and P5). Any input
// is either decoded into a consistent image or rejected with an ImageError whose message names the
// input; nothing may crash, leak or read out of bounds (ASan, UBSan). A decoded image is encoded again
// (PNG, and PGM for gray images) and must decode to the same samples.
#include "image_io.hpp"

#include <cstdlib>
#include <cstring>

namespace {

const char *kName = "fuzz-input";

void same_or_abort(const gpkcli::Image &a, const gpkcli::Image &b) {
    if (a.width != b.width || a.height != b.height || a.channels != b.channels ||
        a.bit_depth != b.bit_depth || a.pixels != b.pixels)
        std::abort();
}

void check_round_trips(const gpkcli::Image &image) {
    if (image.pixels.size() != image.sample_count() * image.bytes_per_sample()) std::abort();
    if (image.pixels.size() > (1u << 20)) return; // keep the fuzzer fast; large images add nothing
    std::vector<uint8_t> png = gpkcli::encode_png(image);
    same_or_abort(image, gpkcli::decode_image(png.data(), png.size(), "re-encoded PNG"));
    if (image.channels != 1) return;
    for (bool ascii : {false, true}) {
        std::vector<uint8_t> pgm = gpkcli::encode_pgm(image, ascii);
        gpkcli::Image again = gpkcli::decode_image(pgm.data(), pgm.size(), "re-encoded PGM");
        same_or_abort(image, again);
        if (again.maxval != image.maxval) std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpkcli::ReadLimits limits;
    limits.max_pixel_bytes = 64u << 20; // a tiny header may not make the fuzzer allocate gigabytes
    try {
        check_round_trips(gpkcli::decode_image(data, size, kName, limits));
    } catch (const gpkcli::ImageError &e) {
        if (std::strncmp(e.what(), kName, std::strlen(kName)) != 0 || !std::strchr(e.what(), ':'))
            std::abort();
    }
    return 0;
}
