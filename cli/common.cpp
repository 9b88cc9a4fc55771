#include "common.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace gpkcli {

gpk_backend parse_backend(const std::string &text) {
    if (text == "auto") return GPK_BACKEND_AUTO;
    if (text == "cpu") return GPK_BACKEND_CPU;
    if (text == "cuda") return GPK_BACKEND_CUDA;
    throw UsageError("--backend is '" + text + "'; expected auto, cpu or cuda");
}

Context open_context(gpk_backend backend) {
    gpk_context_options opts;
    gpk_context_options_init(&opts);
    opts.backend = backend;
    gpk_context *ctx = nullptr;
    gpk_status status = gpk_context_create(&ctx, &opts);
    if (status != GPK_OK)
        throw Failure(std::string("cannot start the ") + gpk_backend_name(backend) +
                      " backend: " + gpk_context_last_error(nullptr));
    return Context(ctx);
}

void check_status(gpk_status status, const gpk_context *ctx, const std::string &what) {
    if (status == GPK_OK) return;
    throw Failure(what + ": " + gpk_status_string(status) + ": " + gpk_context_last_error(ctx));
}

std::string json_string(const std::string &text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", c);
            out += esc;
        } else {
            out += char(c);
        }
    }
    return out + "\"";
}

std::string json_number(double value) {
    if (!std::isfinite(value)) return "null";
    char text[40];
    if (value == std::floor(value) &&
        std::fabs(value) < 1e15) { // whole numbers as integers: "200", not "2e+02"
        std::snprintf(text, sizeof text, "%.0f", value);
        return text;
    }
    // 17 significant digits round-trip every double; %.17g keeps integers short ("42").
    std::snprintf(text, sizeof text, "%.17g", value);
    double back = std::strtod(text, nullptr);
    for (int digits = 1; digits < 17; ++digits) {
        char shorter[40];
        std::snprintf(shorter, sizeof shorter, "%.*g", digits, value);
        if (std::strtod(shorter, nullptr) == back) return shorter;
    }
    return text;
}

void check_png_output_path(const std::string &path, const std::string &option) {
    check_output_path(path, ".png", option);
}

void check_output_path(const std::string &path, const std::string &extension, const std::string &option) {
    std::string ext = path.size() >= extension.size() ? path.substr(path.size() - extension.size()) : "";
    for (auto &c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (ext != extension)
        throw UsageError(option + " is '" + path + "'; give a file name ending in " + extension);
    size_t slash = path.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    if (access(dir.c_str(), W_OK) != 0)
        throw Failure(path + ": cannot write: " + dir + ": " + std::strerror(errno));
}

} // namespace gpkcli
