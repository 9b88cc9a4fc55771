// gpk: the command-line face of the library. Dispatches to one subcommand and turns failures into one
// line on stderr and an exit code: 0 ok, 1 failure, 2 usage error, 130 interrupted (Ctrl-C).
#include "commands.hpp"
#include "common.hpp"
#include "image_io.hpp"
#include "ranks.hpp"

#include "gpk.h"

#include <png.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

namespace {

struct Command {
    const char *name;
    int (*run)(const gpkcli::Args &);
    const char *summary;
};

const Command kCommands[] = {
    {"info", gpkcli::run_info, "version, the backend that would run, and every CUDA device"},
    {"heat", gpkcli::run_heat, "heat dissipation on a cylinder (the course program's flags and output)"},
    {"histogram", gpkcli::run_histogram, "per-channel histogram of a PNG, PGM or raw array"},
    {"convolve", gpkcli::run_convolve, "filter a PNG or PGM image with a named or custom filter"},
    {"bench", gpkcli::run_bench, "time the three operations on the current backend"},
};

void print_usage(FILE *out) {
    std::fprintf(out, "Usage: gpk COMMAND [OPTION]... [ARG]...\n"
                      "       gpk COMMAND --help\n"
                      "       gpk --version\n\nCommands:\n");
    for (const auto &c : kCommands) std::fprintf(out, "  %-11s %s\n", c.name, c.summary);
    std::fprintf(out, "\nExit codes: 0 ok, 1 failure, 2 usage error, 130 interrupted by Ctrl-C.\n"
                      "GPK_BACKEND=cpu|cuda in the environment overrides the automatic backend choice.\n");
}

void print_version() {
    std::printf("gpk %s (library %s, built against %d.%d.%d)\n", GPK_CLI_VERSION, gpk_version_string(),
                GPK_VERSION_MAJOR, GPK_VERSION_MINOR, GPK_VERSION_PATCH);
    std::printf("libpng %s\n", png_get_libpng_ver(nullptr));
    std::printf("plots: built in (gpk's own renderer and font, written with libpng)\n");
}

int run_command(const Command &command, const gpkcli::Args &args) {
    try {
        return command.run(args);
    } catch (const gpkcli::UsageError &e) {
        if (gpkcli::ranks::root()) // under mpirun every rank meets the same failure; rank 0 tells it
            std::fprintf(stderr, "gpk %s: %s (see 'gpk %s --help')\n", command.name, e.what(), command.name);
        return gpkcli::kExitUsage;
    } catch (const std::bad_alloc &) {
        std::fprintf(stderr, "gpk %s: out of memory\n", command.name);
    } catch (const std::exception &e) {
        if (gpkcli::ranks::root()) std::fprintf(stderr, "gpk %s: %s\n", command.name, e.what());
    }
    return gpkcli::kExitFailure;
}

// The command line to a subcommand; returns the exit code.
int dispatch(int argc, char **argv) {
    if (argc < 2) {
        print_usage(stderr);
        return gpkcli::kExitUsage;
    }
    const char *first = argv[1];
    if (!std::strcmp(first, "--help") || !std::strcmp(first, "-h") || !std::strcmp(first, "help")) {
        print_usage(stdout);
        return gpkcli::kExitOk;
    }
    if (!std::strcmp(first, "--version") || !std::strcmp(first, "-V")) {
        print_version();
        return gpkcli::kExitOk;
    }
    for (const auto &command : kCommands)
        if (!std::strcmp(first, command.name))
            return run_command(command, gpkcli::Args(argv + 2, argv + argc));
    std::fprintf(stderr, "gpk: unknown command '%s' (see 'gpk --help')\n", first);
    return gpkcli::kExitUsage;
}

} // namespace

int main(int argc, char **argv) {
    gpkcli::ranks::start(&argc, &argv);
    return gpkcli::ranks::finish(dispatch(argc, argv));
}
