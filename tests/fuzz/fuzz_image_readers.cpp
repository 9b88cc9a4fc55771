// libFuzzer target for the gpk command's file readers (PNG through libpng, PGM P2 and P5, NumPy .npy).
// Any input is either decoded into a consistent image or array or rejected with an ImageError whose
// message names the input; nothing may crash, leak or read out of bounds (ASan, UBSan). A decoded image
// is encoded again (PNG, and PGM for gray images) and must decode to the same samples; an .npy array is
// written again by gpk's writer (C order, host byte order) and must read back as the same samples.
#include "image_io.hpp"
#include "npy.hpp"

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

void check_npy(const uint8_t *data, size_t size) {
    gpkcli::NpyArray array = gpkcli::parse_npy(data, size, kName);
    const gpkcli::NpyHeader &h = array.header;
    size_t count = 1;
    for (size_t dim : h.shape) count *= dim;
    if (count != h.count || h.data_offset + h.data_bytes() != size || array.data != data + h.data_offset)
        std::abort();
    std::vector<uint8_t> samples = gpkcli::npy_c_order_samples(array);
    if (samples.size() != h.data_bytes()) std::abort();
    std::vector<uint8_t> again = gpkcli::npy_header_bytes(h.dtype, h.shape);
    again.insert(again.end(), samples.begin(), samples.end());
    gpkcli::NpyArray back = gpkcli::parse_npy(again.data(), again.size(), "re-encoded .npy");
    if (back.header.shape != h.shape || back.header.dtype != h.dtype || back.header.fortran_order ||
        back.header.swap_bytes || back.header.data_offset % 64 != 0 ||
        (count && std::memcmp(back.data, samples.data(), samples.size()) != 0))
        std::abort();
    if (gpkcli::npy_c_order_doubles(back).size() != count) std::abort();
    gpkcli::npy_checked_doubles(back, kName, 0, 1, "values"); // throws ImageError for values outside
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpkcli::ReadLimits limits;
    limits.max_pixel_bytes = 64u << 20; // a tiny header may not make the fuzzer allocate gigabytes
    try {
        if (gpkcli::is_npy(data, size))
            check_npy(data, size);
        else
            check_round_trips(gpkcli::decode_image(data, size, kName, limits));
    } catch (const gpkcli::ImageError &e) {
        if (std::strncmp(e.what(), kName, std::strlen(kName)) != 0 || !std::strchr(e.what(), ':'))
            std::abort();
    }
    return 0;
}
