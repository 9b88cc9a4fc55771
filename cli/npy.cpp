// The .npy reader and writer. The header is a Python dict literal with exactly the keys 'descr',
// 'fortran_order' and 'shape'; it is parsed here by a small recursive reader that takes what NumPy's own
// writer produces (and what its reader accepts for these dtypes): quoted strings, True/False, tuples of
// whole numbers (Python 2's "3L" too), a trailing comma, whitespace and padding.
#include "npy.hpp"

#include "image_io.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace gpkcli {

namespace {

const char kMagic[] = "\x93NUMPY";
const size_t kMagicSize = 6;

[[noreturn]] void bad(const std::string &name, const std::string &what) {
    throw_file_error(name, what);
}

// What a dtype the library cannot take is, for the message that refuses it ("" when unknown).
std::string dtype_description(char kind, size_t size, bool sized) {
    switch (kind) {
    case 'b':
        return "bool";
    case 'i':
        return sized ? "int" + std::to_string(size * 8) : "";
    case 'u':
        return sized ? "uint" + std::to_string(size * 8) : "";
    case 'f':
        return sized ? "float" + std::to_string(size * 8) : "";
    case 'c':
        return sized ? "complex" + std::to_string(size * 8) : "";
    case 'S':
        return "byte strings";
    case 'U':
        return "unicode strings";
    case 'O':
        return "Python objects";
    case 'V':
        return "raw bytes";
    case 'M':
        return "datetimes";
    case 'm':
        return "timedeltas";
    default:
        return "";
    }
}

// Sets the header's dtype from a descr such as "<f8", "|u1" or ">u2".
void parse_descr(const std::string &descr, NpyHeader &h, const std::string &name) {
    size_t at = 0;
    char order = '=';
    if (!descr.empty() && std::strchr("<>|=", descr[0])) order = descr[at++];
    char kind = at < descr.size() ? descr[at++] : '?';
    size_t size = 0;
    bool digits = at < descr.size();
    for (; at < descr.size() && digits; ++at) {
        digits = std::isdigit(static_cast<unsigned char>(descr[at])) && size < 1000;
        size = size * 10 + size_t(descr[at] - '0');
    }
    const struct {
        char kind;
        size_t size;
        gpk_dtype dtype;
    } kSupported[] = {{'u', 1, GPK_U8},  {'u', 2, GPK_U16}, {'u', 4, GPK_U32},
                      {'i', 4, GPK_I32}, {'f', 4, GPK_F32}, {'f', 8, GPK_F64}};
    for (const auto &s : kSupported) {
        if (digits && s.kind == kind && s.size == size) {
            h.dtype = s.dtype;
            h.item_size = size;
            bool little = order == '<' || (order != '>' && host_is_little_endian());
            h.swap_bytes = size > 1 && little != host_is_little_endian();
            return;
        }
    }
    std::string what = dtype_description(kind, size, digits);
    bad(name, "unsupported dtype '" + descr + "'" + (what.empty() ? "" : " (" + what + ")") +
                  "; gpk reads uint8, uint16, uint32, int32, float32 and float64 arrays");
}

// Reads the header's dict: {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
class HeaderReader {
public:
    HeaderReader(const char *text, size_t size, bool python2_ints, const std::string &name)
        : p_(text), end_(text + size), python2_ints_(python2_ints), name_(name) {}

    void read(NpyHeader &h);

private:
    [[noreturn]] void fail(const std::string &what) const { bad(name_, "bad .npy header: " + what); }
    void skip_space() {
        while (p_ < end_ && std::strchr(" \t\r\n", *p_) && *p_) ++p_;
    }
    bool take(char c) {
        skip_space();
        if (p_ < end_ && *p_ == c) return ++p_, true;
        return false;
    }
    void expect(char c, const char *where) {
        if (!take(c)) fail(std::string("expected '") + c + "' " + where);
    }
    std::string string_literal(const char *what);
    bool boolean();
    std::vector<size_t> shape();
    size_t whole_number();

    const char *p_, *end_;
    bool python2_ints_;
    const std::string &name_;
};

std::string HeaderReader::string_literal(const char *what) {
    skip_space();
    if (p_ >= end_ || (*p_ != '\'' && *p_ != '"')) fail(std::string("expected a quoted ") + what);
    char quote = *p_++;
    const char *start = p_;
    while (p_ < end_ && *p_ != quote && *p_ != '\\') ++p_;
    if (p_ >= end_ || *p_ != quote) fail(std::string("the ") + what + " string is not closed");
    return std::string(start, size_t(p_++ - start));
}

bool HeaderReader::boolean() {
    skip_space();
    for (const char *word : {"True", "False"}) {
        size_t n = std::strlen(word);
        if (size_t(end_ - p_) >= n && std::memcmp(p_, word, n) == 0) {
            p_ += n;
            return word[0] == 'T';
        }
    }
    fail("'fortran_order' is not True or False");
}

size_t HeaderReader::whole_number() {
    skip_space();
    if (p_ >= end_ || !std::isdigit(static_cast<unsigned char>(*p_)))
        fail("the shape holds something other than whole numbers");
    size_t v = 0;
    for (; p_ < end_ && std::isdigit(static_cast<unsigned char>(*p_)); ++p_) {
        if (v > (SIZE_MAX - 9) / 10) fail("a dimension of the shape is too large");
        v = v * 10 + size_t(*p_ - '0');
    }
    if (python2_ints_ && p_ < end_ && *p_ == 'L') ++p_;
    return v;
}

std::vector<size_t> HeaderReader::shape() {
    expect('(', "to open the shape");
    std::vector<size_t> dims;
    bool trailing_comma = false;
    while (!take(')')) {
        if (!dims.empty() && !trailing_comma) fail("expected ',' or ')' in the shape");
        if (dims.size() == 64) fail("the shape has more than 64 dimensions");
        dims.push_back(whole_number());
        trailing_comma = take(',');
    }
    if (dims.size() == 1 && !trailing_comma) fail("the shape is not a tuple (a 1-D shape is written '(n,)')");
    return dims;
}

void HeaderReader::read(NpyHeader &h) {
    expect('{', "at the start of the header");
    bool seen[3] = {false, false, false};
    while (!take('}')) {
        std::string key = string_literal("key");
        expect(':', "after a key");
        int k = key == "descr" ? 0 : key == "fortran_order" ? 1 : key == "shape" ? 2 : -1;
        if (k < 0) fail("unexpected key '" + key + "'");
        if (seen[k]) fail("the key '" + key + "' appears twice");
        seen[k] = true;
        if (k == 0) {
            skip_space();
            if (p_ < end_ && *p_ == '[')
                bad(name_,
                    "unsupported dtype: a structured array (a list of fields); gpk reads plain arrays");
            h.descr = string_literal("descr");
            parse_descr(h.descr, h, name_);
        } else if (k == 1) {
            h.fortran_order = boolean();
        } else {
            h.shape = shape();
        }
        if (!take(',')) {
            expect('}', "at the end of the header");
            break;
        }
    }
    skip_space();
    if (p_ != end_) fail("unexpected text after the header's closing '}'");
    for (int k = 0; k < 3; ++k)
        if (!seen[k])
            fail(std::string("no '") + (k == 0 ? "descr" : k == 1 ? "fortran_order" : "shape") + "' key");
}

void swap_in_place(uint8_t *data, size_t count, size_t item_size) {
    for (size_t i = 0; i < count; ++i, data += item_size) std::reverse(data, data + item_size);
}

std::string host_descr(gpk_dtype dtype) {
    const char *kinds[] = {"u1", "u2", "u4", "i4", "f4", "f8"};
    return (dtype == GPK_U8 ? "|" : host_is_little_endian() ? "<" : ">") + std::string(kinds[dtype]);
}

std::string format_number(double v) {
    char text[40];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
}

std::string shape_text(const std::vector<size_t> &shape) {
    std::string text = "(";
    for (size_t d = 0; d < shape.size(); ++d) text += (d ? ", " : "") + std::to_string(shape[d]);
    return text + (shape.size() == 1 ? ",)" : ")");
}

} // namespace

std::string NpyHeader::shape_text() const {
    return gpkcli::shape_text(shape);
}

bool is_npy(const uint8_t *data, size_t size) {
    return size >= kMagicSize && std::memcmp(data, kMagic, kMagicSize) == 0;
}

NpyArray parse_npy(const uint8_t *data, size_t size, const std::string &name) {
    if (!is_npy(data, size)) bad(name, "not an .npy file (no \\x93NUMPY at the start)");
    if (size < 8) bad(name, "truncated .npy header: the file ends after the magic string");
    NpyArray array;
    NpyHeader &h = array.header;
    h.version = data[6];
    if (h.version < 1 || h.version > 3 || data[7] != 0)
        bad(name, "unsupported .npy format version " + std::to_string(data[6]) + "." +
                      std::to_string(data[7]) + " (gpk reads 1.0, 2.0 and 3.0)");
    size_t length_bytes = h.version == 1 ? 2 : 4;
    if (size < 8 + length_bytes) bad(name, "truncated .npy header: the file ends in the header length");
    size_t length = 0;
    for (size_t b = length_bytes; b-- > 0;) length = length << 8 | data[8 + b]; // little-endian
    h.data_offset = 8 + length_bytes + length;
    if (length > size - 8 - length_bytes)
        bad(name, "truncated .npy header: it is " + std::to_string(length) + " bytes long, the file has " +
                      std::to_string(size - 8 - length_bytes) + " after the length");
    HeaderReader(reinterpret_cast<const char *>(data) + 8 + length_bytes, length, h.version < 3, name)
        .read(h);
    for (size_t dim : h.shape) {
        if (dim != 0 && h.count > SIZE_MAX / h.item_size / dim)
            bad(name, "the array " + h.shape_text() + " is too large");
        h.count *= dim;
    }
    size_t available = size - h.data_offset;
    if (available < h.data_bytes())
        bad(name, "truncated .npy data: shape " + h.shape_text() + " of '" + h.descr + "' needs " +
                      std::to_string(h.data_bytes()) + " bytes, the file has " + std::to_string(available));
    if (available > h.data_bytes())
        bad(name, std::to_string(available - h.data_bytes()) + " unexpected bytes after the .npy array data");
    array.data = data + h.data_offset;
    return array;
}

void npy_copy_samples(const NpyArray &array, size_t first, size_t count, uint8_t *out) {
    size_t item = array.header.item_size;
    if (count == 0) return;
    std::memcpy(out, array.data + first * item, count * item);
    if (array.header.swap_bytes) swap_in_place(out, count, item);
}

std::vector<uint8_t> npy_c_order_samples(const NpyArray &array) {
    const NpyHeader &h = array.header;
    std::vector<uint8_t> out(h.data_bytes());
    if (!h.fortran_order || h.shape.size() < 2) {
        npy_copy_samples(array, 0, h.count, out.data());
        return out;
    }
    // Walk the C-order index with the offset of the same element in Fortran order (first axis fastest).
    size_t dims = h.shape.size();
    std::vector<size_t> index(dims, 0), stride(dims, 1);
    for (size_t d = 1; d < dims; ++d) stride[d] = stride[d - 1] * h.shape[d - 1];
    size_t offset = 0;
    for (size_t k = 0; k < h.count; ++k) {
        std::memcpy(&out[k * h.item_size], array.data + offset * h.item_size, h.item_size);
        for (size_t d = dims; d-- > 0;) {
            offset += stride[d];
            if (++index[d] < h.shape[d]) break;
            offset -= stride[d] * h.shape[d];
            index[d] = 0;
        }
    }
    if (h.swap_bytes) swap_in_place(out.data(), h.count, h.item_size);
    return out;
}

std::vector<double> npy_c_order_doubles(const NpyArray &array) {
    std::vector<uint8_t> bytes = npy_c_order_samples(array);
    std::vector<double> out(array.header.count);
    for (size_t i = 0; i < out.size(); ++i) {
        const uint8_t *p = &bytes[i * array.header.item_size];
        auto as = [p](auto v) {
            std::memcpy(&v, p, sizeof v);
            return double(v);
        };
        switch (array.header.dtype) {
        case GPK_U8:
            out[i] = *p;
            break;
        case GPK_U16:
            out[i] = as(uint16_t());
            break;
        case GPK_U32:
            out[i] = as(uint32_t());
            break;
        case GPK_I32:
            out[i] = as(int32_t());
            break;
        case GPK_F32:
            out[i] = as(float());
            break;
        default:
            out[i] = as(double());
            break;
        }
    }
    return out;
}

std::vector<double> npy_checked_doubles(const NpyArray &array, const std::string &name, double lo, double hi,
                                        const std::string &what) {
    std::vector<double> values = npy_c_order_doubles(array);
    const std::vector<size_t> &shape = array.header.shape;
    for (size_t i = 0; i < values.size(); ++i) {
        if (std::isfinite(values[i]) && values[i] >= lo && values[i] <= hi) continue;
        std::string place;
        for (size_t d = shape.size(), rest = i; d-- > 0; rest /= shape[d])
            place = std::to_string(rest % shape[d]) + (place.empty() ? "" : ", ") + place;
        char value[40];
        std::snprintf(value, sizeof value, "%.17g", values[i]);
        bad(name, "the value at [" + place + "] is " + value + "; " + what + " must be " +
                      (std::isinf(lo) && std::isinf(hi)
                           ? std::string("finite")
                           : "in [" + format_number(lo) + ", " + format_number(hi) + "]"));
    }
    return values;
}

std::vector<uint8_t> npy_header_bytes(gpk_dtype dtype, const std::vector<size_t> &shape) {
    std::string dict = "{'descr': '" + host_descr(dtype) +
                       "', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
    // Padded with spaces and a newline so that the samples start at a multiple of 64 bytes.
    size_t preamble = dict.size() + 1 + 10 > 65535 ? 12 : 10;
    dict.append((64 - (preamble + dict.size() + 1) % 64) % 64, ' ');
    dict += '\n';
    std::vector<uint8_t> out(kMagic, kMagic + kMagicSize);
    out.push_back(preamble == 10 ? 1 : 2);
    out.push_back(0);
    for (size_t b = 0; b < preamble - 8; ++b) out.push_back(uint8_t(dict.size() >> (8 * b)));
    out.insert(out.end(), dict.begin(), dict.end());
    return out;
}

void write_npy(const std::string &path, gpk_dtype dtype, const std::vector<size_t> &shape, const void *data) {
    std::vector<uint8_t> header = npy_header_bytes(dtype, shape);
    size_t bytes = dtype == GPK_U8 ? 1 : dtype == GPK_U16 ? 2 : dtype == GPK_F64 ? 8 : 4;
    for (size_t dim : shape) bytes *= dim;
    write_file_atomically(path, {{header.data(), header.size()}, {data, bytes}});
}

} // namespace gpkcli
