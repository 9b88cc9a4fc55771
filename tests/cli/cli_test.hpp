// Shared helpers of the CLI test sections: running the gpk binary, a scratch directory, and checks of
// exit codes and messages.
#pragma once

#include "check.hpp"
#include "process.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace cli {

// Set by main: the gpk binary and a scratch directory for this run.
std::string &gpk_path();
std::string &scratch();

inline std::string tmp(const std::string &name) {
    return scratch() + "/" + name;
}

// Skips the whole section (exit 77) after removing the scratch directory.
[[noreturn]] void skip_section(const char *why);

inline proc::Result gpk(std::vector<std::string> args, const proc::Options &opt = {}) {
    args.insert(args.begin(), gpk_path());
    return proc::run(args, opt);
}

inline bool contains(const std::string &text, const std::string &part) {
    return text.find(part) != std::string::npos;
}

inline std::string joined(const std::vector<std::string> &args) {
    std::string s = "gpk";
    for (const auto &a : args) s += " " + a;
    return s;
}

// Runs gpk and checks that it succeeds.
inline proc::Result expect_ok(const std::vector<std::string> &args, const proc::Options &opt = {}) {
    proc::Result r = gpk(args, opt);
    CHECK_MSG(r.exited && r.code == 0, joined(args) + " -> exit " + std::to_string(r.code) + ": " + r.err);
    return r;
}

// Runs gpk and checks a failure: the exit code, one line on stderr, and each part in that line.
inline proc::Result expect_failure(const std::vector<std::string> &args, int code,
                                   const std::vector<std::string> &parts) {
    proc::Result r = gpk(args);
    std::string what = joined(args) + " -> exit " + std::to_string(r.code) + ", stderr: " + r.err;
    CHECK_MSG(r.exited && r.code == code, what);
    size_t newlines = 0;
    for (char c : r.err) newlines += c == '\n';
    CHECK_MSG(newlines == 1 && r.err.back() == '\n', "one line expected: " + what);
    for (const auto &part : parts) CHECK_MSG(contains(r.err, part), "'" + part + "' expected: " + what);
    return r;
}

inline std::vector<std::string> lines_of(const std::string &text) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

// Deterministic pseudo-random values in [0, modulo).
inline std::vector<unsigned> random_values(size_t count, unsigned modulo, uint64_t seed) {
    std::vector<unsigned> out(count);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (auto &v : out) {
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        v = unsigned((x * 0x2545F4914F6CDD1Dull) >> 33) % modulo;
    }
    return out;
}

// Histogram output taken apart.
// The counts column `column` (0-based after bin,lower,upper) of CSV output.
inline std::vector<uint64_t> csv_counts(const std::string &csv, size_t column) {
    std::vector<uint64_t> counts;
    std::vector<std::string> lines = lines_of(csv);
    for (size_t k = 1; k < lines.size(); ++k) {
        const char *p = lines[k].c_str();
        for (size_t skip = 0; skip < column + 3; ++skip) p = std::strchr(p, ',') + 1;
        counts.push_back(std::strtoull(p, nullptr, 10));
    }
    return counts;
}

// The "counts" array of the channel named `name` in JSON output.
inline std::vector<uint64_t> json_counts(const std::string &json, const std::string &name) {
    std::vector<uint64_t> counts;
    size_t at = json.find("\"name\": \"" + name + "\"");
    if (at == std::string::npos) return counts;
    const char *p = json.c_str() + json.find("\"counts\": [", at) + 11;
    while (*p != ']') {
        char *end;
        counts.push_back(std::strtoull(p, &end, 10));
        p = end;
        while (*p == ',' || *p == ' ') ++p;
    }
    return counts;
}

inline uint64_t json_uncounted(const std::string &json, const std::string &name) {
    size_t at = json.find("\"name\": \"" + name + "\"");
    size_t u = json.find("\"uncounted\": ", at);
    return at == std::string::npos || u == std::string::npos
               ? ~0ull
               : std::strtoull(json.c_str() + u + 13, nullptr, 10);
}
template <class T> std::vector<T> read_raw(const std::string &path) {
    std::vector<T> out;
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) return out;
    T v;
    while (std::fread(&v, sizeof v, 1, f) == 1) out.push_back(v);
    std::fclose(f);
    return out;
}

void section_usage();
void section_heat_check();
void section_heat_default();
void section_heat_interrupt();
void section_heat_checkpoint();
void section_images();
void section_histogram();
void section_convolve();
void section_bad_input();
void section_plots();
void section_npy();
void section_npy_bad();
void section_npy_large();

} // namespace cli
