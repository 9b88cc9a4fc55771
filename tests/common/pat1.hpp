// The heat check of the contract on the course's pattern (pat1_100x150.pgm in GPK_TEST_DATA): its PGM
// reader and the course's number format, shared by the CPU and GPU heat tests.
#pragma once

#include <cstddef>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

// Reads a P2 or P5 PGM: its size, maxval and raw pixel values.
inline bool read_pgm(const std::string &path, size_t &width, size_t &height, long &maxval,
                     std::vector<long> &values) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::string magic;
    in >> magic;
    auto next_number = [&](long &out) {
        for (;;) {
            in >> std::ws;
            if (in.peek() != '#') break;
            std::string comment;
            std::getline(in, comment);
        }
        return static_cast<bool>(in >> out);
    };
    long w, h;
    if ((magic != "P2" && magic != "P5") || !next_number(w) || !next_number(h) || !next_number(maxval))
        return false;
    if (w <= 0 || h <= 0 || maxval <= 0 || maxval > 65535) return false;
    width = size_t(w);
    height = size_t(h);
    values.resize(width * height);
    if (magic == "P2") {
        for (long &v : values)
            if (!next_number(v) || v < 0 || v > maxval) return false;
    } else {
        in.get(); // the single whitespace after maxval
        size_t bytes = maxval > 255 ? 2 : 1;
        std::vector<unsigned char> raw(values.size() * bytes);
        if (!in.read(reinterpret_cast<char *>(raw.data()), std::streamsize(raw.size()))) return false;
        for (size_t k = 0; k < values.size(); ++k) {
            values[k] = bytes == 2 ? (long(raw[2 * k]) << 8 | raw[2 * k + 1]) : raw[k];
        }
    }
    return true;
}

// A value as the course program prints it.
inline std::string e6(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6e", v);
    return buf;
}
