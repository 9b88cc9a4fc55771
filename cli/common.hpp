// What every subcommand shares: the two kinds of failure and their exit codes, a context that frees
// itself, library-status checks, and small output helpers (JSON strings and numbers).
#pragma once

#include "gpk.h"

#include <memory>
#include <stdexcept>
#include <string>

namespace gpkcli {

enum ExitCode { kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitInterrupted = 130 };

// A mistake on the command line (unknown option, bad value): exit code 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The command was well formed but could not be done (bad file, library failure): exit code 1.
struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct ContextDeleter {
    void operator()(gpk_context *ctx) const { gpk_context_destroy(ctx); }
};
using Context = std::unique_ptr<gpk_context, ContextDeleter>;

struct FilterDeleter {
    void operator()(gpk_filter *f) const { gpk_filter_destroy(f); }
};
using Filter = std::unique_ptr<gpk_filter, FilterDeleter>;

// "auto", "cpu" or "cuda" (the --backend option) → the enum; throws UsageError otherwise.
gpk_backend parse_backend(const std::string &text);

// Creates a context on `backend`; throws Failure with the library's message.
Context open_context(gpk_backend backend);

// Throws Failure("what: status: message") unless status is GPK_OK.
void check_status(gpk_status status, const gpk_context *ctx, const std::string &what);

// A JSON string literal with quotes and escapes.
std::string json_string(const std::string &text);

// A JSON number: shortest round-tripping form; non-finite values become null.
std::string json_number(double value);

// Before a long run: checks that `path` ends in `extension` (".npy"; UsageError naming `option`
// otherwise) and is in a directory that exists and can be written (Failure naming the path otherwise).
void check_output_path(const std::string &path, const std::string &extension, const std::string &option);

// check_output_path for a .png.
void check_png_output_path(const std::string &path, const std::string &option);

} // namespace gpkcli
