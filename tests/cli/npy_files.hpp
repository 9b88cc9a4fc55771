// .npy files built by hand for the CLI tests, byte by byte as NumPy's format document describes them
// (independently of the CLI's own reader and writer), and gpk's .npy output taken apart the same way.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace npyfile {

// The header's dict as NumPy writes it: "{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }".
inline std::string dict(const std::string &descr, bool fortran, const std::string &shape) {
    return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
           ", 'shape': " + shape + ", }";
}

// A whole file: the magic string, the version, the header length (2 bytes little-endian for 1.0, 4 for
// 2.0 and 3.0), the header padded with spaces and ended by a newline so that the data starts at a
// multiple of `align` bytes, then `data`.
inline std::string file(const std::string &header, const std::string &data, int version = 1,
                        size_t align = 64) {
    size_t preamble = version == 1 ? 10 : 12;
    std::string text = header;
    text.append((align - (preamble + text.size() + 1) % align) % align, ' ');
    text += '\n';
    std::string out = "\x93NUMPY";
    out += char(version);
    out += '\0';
    for (size_t b = 0; b < preamble - 8; ++b) out += char((text.size() >> (8 * b)) & 0xff);
    return out + text + data;
}

inline bool host_big_endian() {
    uint16_t one = 1;
    uint8_t first;
    std::memcpy(&first, &one, 1);
    return first == 0;
}

// Samples as bytes, little- or big-endian.
template <class T> std::string bytes(const std::vector<T> &values, bool big_endian) {
    std::string out;
    for (const T &v : values) {
        char b[sizeof(T)];
        std::memcpy(b, &v, sizeof v);
        for (size_t k = 0; k < sizeof(T); ++k)
            out += b[host_big_endian() != big_endian ? sizeof(T) - 1 - k : k];
    }
    return out;
}

// A file gpk wrote, taken apart: version 1.0 as gpk writes, the dict without its padding, the data.
struct Parsed {
    bool ok = false;
    std::string dict, data;
    size_t data_offset = 0;
};

inline Parsed parse(const std::string &file) {
    Parsed p;
    if (file.size() < 10 || file.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) != 0) return p;
    size_t length = uint8_t(file[8]) | size_t(uint8_t(file[9])) << 8;
    p.data_offset = 10 + length;
    if (p.data_offset > file.size() || file[p.data_offset - 1] != '\n') return p;
    p.dict = file.substr(10, length - 1);
    p.dict.erase(p.dict.find_last_not_of(' ') + 1);
    p.data = file.substr(p.data_offset);
    p.ok = true;
    return p;
}

// The descr of samples of `size` bytes of `kind` in host byte order, as gpk writes it.
inline std::string host_descr(char kind, size_t size) {
    return std::string(size == 1 ? "|" : host_big_endian() ? ">" : "<") + kind + std::to_string(size);
}

} // namespace npyfile
