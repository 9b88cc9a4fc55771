#include "image_io.hpp"

#include <png.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpkcli {

bool host_is_little_endian() {
    const uint16_t one = 1;
    uint8_t first;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

void throw_file_error(const std::string &name, const std::string &what) {
    throw ImageError(name + ": " + what);
}

namespace {

[[noreturn]] void bad(const std::string &name, const std::string &what) {
    throw_file_error(name, what);
}

// Bytes of samples for a shape, or an error when the product overflows or passes the limit.
size_t pixel_bytes(const std::string &name, size_t width, size_t height, size_t channels,
                   size_t bytes_per_sample, const ReadLimits &limits) {
    uint64_t total = bytes_per_sample * channels;
    if (width > limits.max_pixel_bytes / total)
        bad(name, "image too large (" + std::to_string(width) + " pixels wide)");
    total *= width;
    if (height > limits.max_pixel_bytes / total)
        bad(name, "image too large (" + std::to_string(width) + "x" + std::to_string(height) +
                      " pixels, over " + std::to_string(limits.max_pixel_bytes >> 20) + " MiB of samples)");
    return size_t(total * height);
}

// ---------------------------------------------------------------------------------------------------
// PGM

// Reads a PGM (P2 or P5) from memory; positions and numbers are checked before they are used.
class PgmReader {
public:
    PgmReader(const uint8_t *data, size_t size, const std::string &name)
        : data_(data), size_(size), name_(name) {}

    Image read(const ReadLimits &limits);

private:
    void skip_space_and_comments();
    unsigned header_number(const char *what, unsigned max);
    void read_binary(Image &image);
    void read_ascii(Image &image);
    unsigned ascii_sample(size_t index, size_t count);
    void check_sample(const Image &image, size_t index, unsigned value) const;

    const uint8_t *data_;
    size_t size_;
    size_t pos_ = 0;
    const std::string &name_;
};

void PgmReader::skip_space_and_comments() {
    while (pos_ < size_) {
        if (std::isspace(data_[pos_])) {
            ++pos_;
        } else if (data_[pos_] == '#') {
            while (pos_ < size_ && data_[pos_] != '\n' && data_[pos_] != '\r') ++pos_;
        } else {
            break;
        }
    }
}

unsigned PgmReader::header_number(const char *what, unsigned max) {
    skip_space_and_comments();
    if (pos_ >= size_) bad(name_, std::string("truncated PGM header: the ") + what + " is missing");
    if (!std::isdigit(data_[pos_]))
        bad(name_, std::string("bad PGM header: the ") + what + " is not a number");
    uint64_t value = 0;
    while (pos_ < size_ && std::isdigit(data_[pos_])) {
        value = value * 10 + unsigned(data_[pos_++] - '0');
        if (value > max)
            bad(name_, std::string("bad PGM header: the ") + what + " is above " + std::to_string(max));
    }
    if (pos_ >= size_) bad(name_, std::string("truncated PGM: the file ends after the ") + what);
    if (!std::isspace(data_[pos_]) && data_[pos_] != '#')
        bad(name_, std::string("bad PGM header: unexpected character after the ") + what);
    return unsigned(value);
}

Image PgmReader::read(const ReadLimits &limits) {
    bool ascii = data_[1] == '2';
    pos_ = 2;
    if (pos_ >= size_ || !std::isspace(data_[pos_]))
        bad(name_, "bad PGM header: no space after the magic number");
    Image image;
    image.width = header_number("width", 1u << 30);
    image.height = header_number("height", 1u << 30);
    image.maxval = header_number("maxval", 65535);
    if (image.width == 0 || image.height == 0)
        bad(name_, "bad PGM header: the width and height must be at least 1");
    if (image.maxval == 0) bad(name_, "bad PGM header: maxval is 0; it must be in 1..65535");
    image.channels = 1;
    image.bit_depth = image.maxval > 255 ? 16 : 8;
    pixel_bytes(name_, image.width, image.height, 1, image.bytes_per_sample(), limits);
    ascii ? read_ascii(image) : read_binary(image);
    return image;
}

void PgmReader::check_sample(const Image &image, size_t index, unsigned value) const {
    if (value > image.maxval)
        bad(name_, "sample " + std::to_string(index) + " (row " + std::to_string(index / image.width) +
                       ", column " + std::to_string(index % image.width) + ") is " + std::to_string(value) +
                       ", above maxval " + std::to_string(image.maxval));
}

void PgmReader::read_binary(Image &image) {
    if (!std::isspace(data_[pos_]))
        bad(name_, "bad P5 header: maxval must be followed by one whitespace byte");
    ++pos_;
    size_t count = image.width * image.height;
    size_t wide = image.bit_depth == 16 ? 2 : 1;
    size_t available = size_ - pos_;
    if (available / wide < count)
        bad(name_, "truncated P5 data: " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                       " samples need " + std::to_string(count * wide) + " bytes, the file has " +
                       std::to_string(available));
    if (available > count * wide)
        bad(name_, std::to_string(available - count * wide) + " unexpected bytes after the P5 image data");
    image.pixels.resize(count * wide);
    for (size_t i = 0; i < count; ++i) {
        const uint8_t *p = data_ + pos_ + i * wide;
        unsigned v = wide == 2 ? (unsigned(p[0]) << 8 | p[1]) : p[0]; // P5 16-bit samples are big-endian
        check_sample(image, i, v);
        image.set_sample(i, v);
    }
}

unsigned PgmReader::ascii_sample(size_t index, size_t count) {
    skip_space_and_comments();
    if (pos_ >= size_)
        bad(name_, "truncated P2 data: found " + std::to_string(index) + " of " + std::to_string(count) +
                       " samples");
    if (!std::isdigit(data_[pos_]))
        bad(name_, "bad P2 data: sample " + std::to_string(index) + " is not a number");
    unsigned value = 0;
    while (pos_ < size_ && std::isdigit(data_[pos_])) {
        value = value * 10 + unsigned(data_[pos_++] - '0');
        if (value > 65535) bad(name_, "bad P2 data: sample " + std::to_string(index) + " is above 65535");
    }
    if (pos_ < size_ && !std::isspace(data_[pos_]) && data_[pos_] != '#')
        bad(name_, "bad P2 data: unexpected character after sample " + std::to_string(index));
    return value;
}

void PgmReader::read_ascii(Image &image) {
    size_t count = image.width * image.height;
    // Each sample takes a digit and a separator: a short file is caught before anything is allocated.
    if ((size_ - pos_ + 1) / 2 < count)
        bad(name_, "truncated P2 data: " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                       " samples cannot fit in the " + std::to_string(size_ - pos_) + " bytes left");
    image.pixels.resize(count * image.bytes_per_sample());
    for (size_t i = 0; i < count; ++i) {
        unsigned v = ascii_sample(i, count);
        check_sample(image, i, v);
        image.set_sample(i, v);
    }
    skip_space_and_comments();
    if (pos_ < size_) bad(name_, "unexpected data after the " + std::to_string(count) + " P2 samples");
}

// ---------------------------------------------------------------------------------------------------
// PNG (libpng reports errors by longjmp: the functions that call setjmp hold no C++ objects)

struct PngIo {
    const uint8_t *data = nullptr;
    size_t size = 0;
    size_t pos = 0;
    std::vector<uint8_t> *out = nullptr;
    char message[256] = {0};
};

void on_png_error(png_structp png, png_const_charp message) {
    auto *io = static_cast<PngIo *>(png_get_error_ptr(png));
    std::snprintf(io->message, sizeof io->message, "%s", message);
    png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

void png_read_from_memory(png_structp png, png_bytep dst, size_t n) {
    auto *io = static_cast<PngIo *>(png_get_io_ptr(png));
    if (n > io->size - io->pos) png_error(png, "the file ends early (truncated)");
    std::memcpy(dst, io->data + io->pos, n);
    io->pos += n;
}

void png_write_to_memory(png_structp png, png_bytep src, size_t n) {
    auto *io = static_cast<PngIo *>(png_get_io_ptr(png));
    try {
        io->out->insert(io->out->end(), src, src + n);
    } catch (...) {
        png_error(png, "out of memory");
    }
}

void png_flush_nothing(png_structp) {}

struct PngShape {
    png_uint_32 width = 0, height = 0;
    int channels = 0, bit_depth = 0;
};

// Reads the header and sets the transforms: palette → RGB, gray 1/2/4 → 8 bits, tRNS → alpha, 16-bit
// samples in host order. Returns false after a libpng error (message in the PngIo).
bool png_read_header(png_structp png, png_infop info, PngShape *shape) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_read_info(png, info);
    int color = png_get_color_type(png, info);
    int depth = png_get_bit_depth(png, info);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (depth == 16 && host_is_little_endian()) png_set_swap(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    shape->width = png_get_image_width(png, info);
    shape->height = png_get_image_height(png, info);
    shape->channels = png_get_channels(png, info);
    shape->bit_depth = png_get_bit_depth(png, info);
    return true;
}

bool png_read_pixels(png_structp png, png_infop info, png_bytep *rows) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_read_image(png, rows);
    png_read_end(png, info); // checks the chunks after the image data, their CRCs, and IEND
    return true;
}

struct PngReadHandles {
    png_structp png = nullptr;
    png_infop info = nullptr;
    ~PngReadHandles() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

Image decode_png(const uint8_t *data, size_t size, const std::string &name, const ReadLimits &limits) {
    PngIo io;
    io.data = data;
    io.size = size;
    PngReadHandles h;
    h.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &io, on_png_error, on_png_warning);
    if (h.png) h.info = png_create_info_struct(h.png);
    if (!h.png || !h.info) bad(name, "out of memory starting libpng");
    png_set_read_fn(h.png, &io, png_read_from_memory);
    PngShape shape;
    if (!png_read_header(h.png, h.info, &shape)) bad(name, std::string("bad PNG: ") + io.message);
    if (shape.bit_depth != 8 && shape.bit_depth != 16)
        bad(name, "unsupported PNG bit depth " + std::to_string(shape.bit_depth));
    Image image;
    image.width = shape.width;
    image.height = shape.height;
    image.channels = unsigned(shape.channels);
    image.bit_depth = unsigned(shape.bit_depth);
    image.maxval = shape.bit_depth == 16 ? 65535 : 255;
    image.pixels.resize(
        pixel_bytes(name, image.width, image.height, image.channels, image.bytes_per_sample(), limits));
    std::vector<png_bytep> rows(image.height);
    size_t row_bytes = image.width * image.channels * image.bytes_per_sample();
    for (size_t y = 0; y < image.height; ++y) rows[y] = image.pixels.data() + y * row_bytes;
    if (!png_read_pixels(h.png, h.info, rows.data())) bad(name, std::string("bad PNG: ") + io.message);
    return image;
}

struct PngWriteHandles {
    png_structp png = nullptr;
    png_infop info = nullptr;
    ~PngWriteHandles() { png_destroy_write_struct(&png, info ? &info : nullptr); }
};

int png_color_type(unsigned channels) {
    static const int types[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                PNG_COLOR_TYPE_RGB_ALPHA};
    return types[channels - 1];
}

bool png_write_all(png_structp png, png_infop info, const Image &image, png_bytep *rows) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_set_IHDR(png, info, png_uint_32(image.width), png_uint_32(image.height), int(image.bit_depth),
                 png_color_type(image.channels), PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    if (image.bit_depth == 16 && host_is_little_endian()) png_set_swap(png);
    png_write_image(png, rows);
    png_write_end(png, nullptr);
    return true;
}

void check_encodable(const Image &image) {
    if (image.width == 0 || image.height == 0 || image.channels < 1 || image.channels > 4 ||
        (image.bit_depth != 8 && image.bit_depth != 16) ||
        image.pixels.size() != image.sample_count() * image.bytes_per_sample())
        throw std::invalid_argument("encode: inconsistent image");
}

std::string lower_extension(const std::string &path) {
    size_t slash = path.find_last_of('/');
    size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
    std::string ext = path.substr(dot);
    for (auto &c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
    return ext;
}

} // namespace

unsigned Image::sample(size_t i) const {
    if (bit_depth == 16) {
        uint16_t v;
        std::memcpy(&v, pixels.data() + 2 * i, 2);
        return v;
    }
    return pixels[i];
}

void Image::set_sample(size_t i, unsigned value) {
    if (bit_depth == 16) {
        auto v = uint16_t(value);
        std::memcpy(pixels.data() + 2 * i, &v, 2);
    } else {
        pixels[i] = uint8_t(value);
    }
}

std::vector<uint8_t> read_file(const std::string &path) {
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) bad(path, std::string("cannot open: ") + std::strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        std::fclose(f);
        bad(path, "is a directory, not a file");
    }
    std::vector<uint8_t> bytes;
    uint8_t buffer[1 << 16];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) bytes.insert(bytes.end(), buffer, buffer + n);
    bool failed = std::ferror(f);
    int err = errno;
    std::fclose(f);
    if (failed) bad(path, std::string("cannot read: ") + std::strerror(err));
    return bytes;
}

MappedFile::MappedFile(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) bad(path, std::string("cannot open: ") + std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        bad(path, "is a directory, not a file");
    }
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *p = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            madvise(p, size_t(st.st_size), MADV_SEQUENTIAL);
            data_ = static_cast<const uint8_t *>(p);
            size_ = size_t(st.st_size);
            mapped_ = true;
        }
    }
    close(fd);
    if (!mapped_) {
        bytes_ = read_file(path);
        data_ = bytes_.data();
        size_ = bytes_.size();
    }
}

MappedFile::MappedFile(MappedFile &&other) noexcept
    : data_(other.data_), size_(other.size_), mapped_(other.mapped_), bytes_(std::move(other.bytes_)) {
    if (!mapped_) data_ = bytes_.data();
    other.data_ = nullptr, other.size_ = 0, other.mapped_ = false;
}

MappedFile::~MappedFile() {
    if (mapped_) munmap(const_cast<uint8_t *>(data_), size_);
}

Image decode_image(const uint8_t *data, size_t size, const std::string &name, const ReadLimits &limits) {
    if (size == 0) bad(name, "the file is empty");
    if (size >= 8 && png_sig_cmp(data, 0, 8) == 0) return decode_png(data, size, name, limits);
    if (size >= 2 && data[0] == 'P' && (data[1] == '2' || data[1] == '5'))
        return PgmReader(data, size, name).read(limits);
    if (size >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '7')
        bad(name, std::string("a Netpbm P") + char(data[1]) + " file; only PGM (P2, P5) is read");
    if (size < 8 && png_sig_cmp(data, 0, size) == 0) bad(name, "bad PNG: the file ends early (truncated)");
    bad(name, "not a PNG, PGM or .npy file");
}

Image read_image(const std::string &path, const ReadLimits &limits) {
    MappedFile file(path);
    return decode_image(file.data(), file.size(), path, limits);
}

std::vector<uint8_t> encode_png(const Image &image) {
    check_encodable(image);
    std::vector<uint8_t> out;
    PngIo io;
    io.out = &out;
    PngWriteHandles h;
    h.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &io, on_png_error, on_png_warning);
    if (h.png) h.info = png_create_info_struct(h.png);
    if (!h.png || !h.info) throw std::bad_alloc();
    png_set_write_fn(h.png, &io, png_write_to_memory, png_flush_nothing);
    std::vector<png_bytep> rows(image.height);
    size_t row_bytes = image.width * image.channels * image.bytes_per_sample();
    for (size_t y = 0; y < image.height; ++y)
        rows[y] = const_cast<png_bytep>(image.pixels.data() + y * row_bytes);
    if (!png_write_all(h.png, h.info, image, rows.data()))
        throw std::runtime_error(std::string("PNG encoding failed: ") + io.message);
    return out;
}

std::vector<uint8_t> encode_pgm(const Image &image, bool ascii) {
    check_encodable(image);
    if (image.channels != 1) throw std::invalid_argument("encode_pgm: PGM holds one channel");
    std::string header = std::string(ascii ? "P2" : "P5") + "\n" + std::to_string(image.width) + " " +
                         std::to_string(image.height) + "\n" + std::to_string(image.maxval) + "\n";
    std::vector<uint8_t> out(header.begin(), header.end());
    size_t count = image.sample_count();
    if (!ascii) {
        bool wide = image.maxval > 255;
        for (size_t i = 0; i < count; ++i) {
            unsigned v = image.sample(i);
            if (wide) out.push_back(uint8_t(v >> 8));
            out.push_back(uint8_t(v & 0xff));
        }
        return out;
    }
    size_t line = 0;
    for (size_t i = 0; i < count; ++i) {
        std::string v = std::to_string(image.sample(i));
        bool row_end = (i + 1) % image.width == 0;
        if (line > 0 && line + 1 + v.size() > 70) { // plain PGM lines stay within 70 characters
            out.push_back('\n');
            line = 0;
        }
        if (line > 0) out.push_back(' ');
        out.insert(out.end(), v.begin(), v.end());
        line += v.size() + (line > 0);
        if (row_end) {
            out.push_back('\n');
            line = 0;
        }
    }
    return out;
}

ImageFormat format_for_path(const std::string &path, bool ascii) {
    std::string ext = lower_extension(path);
    if (ext == ".png") {
        if (ascii) bad(path, "--ascii applies to .pgm output only");
        return ImageFormat::Png;
    }
    if (ext == ".pgm") return ascii ? ImageFormat::PgmAscii : ImageFormat::PgmBinary;
    bad(path, "unknown output format; the name must end in .png or .pgm");
}

void write_image(const std::string &path, const Image &image, ImageFormat format) {
    if (format != ImageFormat::Png) {
        if (image.channels != 1)
            bad(path, "PGM holds one gray channel and this image has " + std::to_string(image.channels) +
                          "; write a .png instead");
        write_file_atomically(path, encode_pgm(image, format == ImageFormat::PgmAscii));
    } else {
        write_file_atomically(path, encode_png(image));
    }
}

void write_file_atomically(const std::string &path, const std::vector<uint8_t> &bytes) {
    write_file_atomically(path, std::vector<ByteSpan>{{bytes.data(), bytes.size()}});
}

void write_file_atomically(const std::string &path, const std::vector<ByteSpan> &pieces) {
    std::string temp = path + ".tmp-XXXXXX";
    int fd = mkstemp(&temp[0]);
    if (fd < 0) bad(path, std::string("cannot write: ") + std::strerror(errno));
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask); // mkstemp makes 0600; give the file the usual permissions
    int err = 0;
    for (const ByteSpan &piece : pieces) {
        const auto *bytes = static_cast<const uint8_t *>(piece.data);
        size_t done = 0;
        while (done < piece.size && err == 0) {
            ssize_t n = write(fd, bytes + done, piece.size - done);
            if (n < 0 && errno != EINTR) err = errno;
            if (n > 0) done += size_t(n);
        }
    }
    if (close(fd) != 0 && err == 0) err = errno;
    if (err == 0 && std::rename(temp.c_str(), path.c_str()) != 0) err = errno;
    if (err != 0) {
        unlink(temp.c_str());
        bad(path, std::string("cannot write: ") + std::strerror(err));
    }
}

} // namespace gpkcli
