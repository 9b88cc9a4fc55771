// Image files for the gpk command: PNG through libpng, PGM (P2 ASCII and P5 binary), and writing any
// file through a temporary file that is renamed into place, so that a failure leaves no half-written
// output. Every reader validates strictly and reports errors naming the file; none crashes on any input
// (tests/fuzz runs them under libFuzzer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpkcli {

// A bad, unreadable or unwritable file (image, array); the message starts with the file's name.
struct ImageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Throws ImageError("name: what").
[[noreturn]] void throw_file_error(const std::string &name, const std::string &what);

bool host_is_little_endian();

// Decoded pixels: packed rows of interleaved channels, 8- or 16-bit unsigned samples (16-bit ones in
// host byte order).
struct Image {
    size_t width = 0;
    size_t height = 0;
    unsigned channels = 1;  // 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA
    unsigned bit_depth = 8; // 8 or 16
    unsigned maxval = 255;  // the largest value the file allows: PGM's header value, 2^depth - 1 for PNG
    std::vector<uint8_t> pixels;

    size_t sample_count() const { return width * height * channels; }
    size_t bytes_per_sample() const { return bit_depth == 16 ? 2 : 1; }
    // Sample i (of sample_count()) as an integer.
    unsigned sample(size_t i) const;
    void set_sample(size_t i, unsigned value);
};

enum class ImageFormat { Png, PgmAscii, PgmBinary };

// Bounds on what a reader allocates, so that a small corrupt header cannot ask for gigabytes.
struct ReadLimits {
    uint64_t max_pixel_bytes = uint64_t(1) << 34; // 16 GiB of decoded samples
};

// Reads a whole file; ImageError names the file and the system's reason.
std::vector<uint8_t> read_file(const std::string &path);

// A whole file in memory without copying it: mapped read-only where it can be (a regular file), read
// otherwise (a pipe). Large inputs are used in place through this, so that they take no heap memory.
class MappedFile {
public:
    explicit MappedFile(const std::string &path); // ImageError names the file and the reason
    ~MappedFile();
    MappedFile(MappedFile &&other) noexcept;
    MappedFile(const MappedFile &) = delete;
    MappedFile &operator=(const MappedFile &) = delete;
    MappedFile &operator=(MappedFile &&) = delete;

    const uint8_t *data() const { return data_; }
    size_t size() const { return size_; }

private:
    const uint8_t *data_ = nullptr;
    size_t size_ = 0;
    bool mapped_ = false;
    std::vector<uint8_t> bytes_; // when the file could not be mapped
};

// Decodes a PNG or PGM held in memory; `name` starts every error message.
Image decode_image(const uint8_t *data, size_t size, const std::string &name, const ReadLimits &limits = {});

// Reads and decodes an image file (PNG or PGM, recognised by its first bytes).
Image read_image(const std::string &path, const ReadLimits &limits = {});

// Encodes an image; PGM takes one channel only.
std::vector<uint8_t> encode_png(const Image &image);
std::vector<uint8_t> encode_pgm(const Image &image, bool ascii);

// The format an output path asks for: ".png" → PNG, ".pgm" → P5 (P2 when ascii is set). Others throw.
ImageFormat format_for_path(const std::string &path, bool ascii);

// Encodes and writes through write_file_atomically.
void write_image(const std::string &path, const Image &image, ImageFormat format);

// Writes `bytes` to a temporary file in path's directory, then renames it over `path`. On any failure
// the temporary file is removed, `path` is untouched, and ImageError names `path` and the reason.
void write_file_atomically(const std::string &path, const std::vector<uint8_t> &bytes);

// The same for a file made of several pieces, written one after the other (no copy joins them).
struct ByteSpan {
    const void *data;
    size_t size;
};
void write_file_atomically(const std::string &path, const std::vector<ByteSpan> &pieces);

} // namespace gpkcli
