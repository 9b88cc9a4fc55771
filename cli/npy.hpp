// NumPy .npy files: format versions 1.0, 2.0 and 3.0, the six sample types of the library (u1, u2, u4,
// i4, f4, f8) in either byte order, C or Fortran order. The reader checks the whole header and that the
// file holds exactly the array's bytes; every error names the file (ImageError). Arrays are read in
// place from a file in memory (a MappedFile), so a large one is never copied to be counted.
#pragma once

#include "gpk.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpkcli {

// True when `data` starts with the .npy magic string ("\x93NUMPY").
bool is_npy(const uint8_t *data, size_t size);

struct NpyHeader {
    unsigned version = 1; // the format's major version: 1, 2 or 3
    std::string descr;    // the dtype as written ("<f8"), for messages
    gpk_dtype dtype = GPK_U8;
    size_t item_size = 1;
    bool swap_bytes = false; // multi-byte samples stored in the other byte order than the host's
    bool fortran_order = false;
    std::vector<size_t> shape;
    size_t count = 1;       // samples: the product of the shape
    size_t data_offset = 0; // where the samples start in the file

    size_t data_bytes() const { return count * item_size; }
    std::string shape_text() const; // "(3, 4)" as NumPy writes it
};

// An .npy file held in memory: its header and its samples as stored.
struct NpyArray {
    NpyHeader header;
    const uint8_t *data = nullptr; // header.data_bytes() bytes
};

// Parses and checks a whole .npy file in memory (`size` must be the header plus the samples, no more).
// Throws ImageError starting with `name` for a bad or truncated header, an unsupported dtype or version,
// and a file that is shorter or longer than the array.
NpyArray parse_npy(const uint8_t *data, size_t size, const std::string &name);

// Copies samples [first, first + count) in the file's order (C or Fortran, as stored) to `out`, in host
// byte order. `out` needs count * item_size bytes.
void npy_copy_samples(const NpyArray &array, size_t first, size_t count, uint8_t *out);

// All samples in host byte order and C order (row-major, last axis fastest), copied.
std::vector<uint8_t> npy_c_order_samples(const NpyArray &array);

// All samples in C order as doubles (integers and f32 convert exactly).
std::vector<double> npy_c_order_doubles(const NpyArray &array);

// All samples in C order as doubles, each of which must be finite and in [lo, hi]: otherwise ImageError
// naming `name`, the first bad element's place and value, and `what` the values are ("temperatures").
std::vector<double> npy_checked_doubles(const NpyArray &array, const std::string &name, double lo, double hi,
                                        const std::string &what);

// The header of an .npy file (version 1.0, or 2.0 when the header needs more than 65535 bytes) for
// samples of `dtype` in host byte order, C order, with `shape`; the samples follow it.
std::vector<uint8_t> npy_header_bytes(gpk_dtype dtype, const std::vector<size_t> &shape);

// Writes an .npy file through write_file_atomically: the header, then `data` (host order, C order).
void write_npy(const std::string &path, gpk_dtype dtype, const std::vector<size_t> &shape, const void *data);

} // namespace gpkcli
