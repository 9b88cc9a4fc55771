// The gpk command end to end: `test_cli GPK_BINARY SECTION` runs one section (meson registers one test
// per section) in a fresh scratch directory that is removed when the section passes.
#include "cli_test.hpp"

#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace cli {

std::string &gpk_path() {
    static std::string path;
    return path;
}

std::string &scratch() {
    static std::string dir;
    return dir;
}

void skip_section(const char *why) {
    std::filesystem::remove_all(scratch());
    check::skip(why);
}

// Usage, help, version, and exit code 2 for command-line mistakes.
void section_usage() {
    proc::Result r = gpk({});
    CHECK(r.exited && r.code == 2 && contains(r.err, "Usage: gpk"));
    r = expect_ok({"--help"});
    CHECK(contains(r.out, "Usage: gpk COMMAND") && contains(r.out, "histogram"));
    r = expect_ok({"--version"});
    CHECK_MSG(r.out.rfind(std::string("gpk ") + GPK_CLI_TEST_VERSION, 0) == 0, r.out);
    CHECK(contains(r.out, "libpng"));
    for (const char *cmd : {"info", "heat", "histogram", "convolve", "bench"}) {
        r = expect_ok({cmd, "--help"});
        CHECK_MSG(contains(r.out, std::string("Usage: gpk ") + cmd), r.out);
    }
    expect_failure({"frobnicate"}, 2, {"unknown command 'frobnicate'"});
    expect_failure({"heat", "-x"}, 2, {"unknown option '-x'"});
    expect_failure({"heat", "-n", "abc"}, 2, {"-n", "'abc'", "whole number"});
    expect_failure({"heat", "-n"}, 2, {"-n needs a value"});
    expect_failure({"heat", "-e", "-1"}, 2, {"-e"});
    expect_failure({"heat", "--backend", "gpu"}, 2, {"--backend", "'gpu'"});
    expect_failure({"histogram"}, 2, {"IMAGE"});
    expect_failure({"convolve", "a.png"}, 2, {"IN and OUT"});
    expect_failure({"bench", "--runs", "0"}, 2, {"--runs"});
    r = expect_ok({"bench", "--size", "64", "--runs", "1", "--json"});
    for (const char *name : {"heat f64", "histogram u8", "histogram u32", "lp3", "log9", "gauss:2.5",
                             "heat_fit", "fixed_s", "per_iteration_s"})
        CHECK_MSG(contains(r.out, name), r.out);
    r = expect_ok({"bench", "--size", "64", "--runs", "1"});
    CHECK_MSG(contains(r.out, "a call costs") && contains(r.out, "per iteration"), r.out);
    r = expect_ok({"info"});
    CHECK(contains(r.out, "backend: cpu") || contains(r.out, "backend: cuda"));
    CHECK(contains(r.out, "CUDA devices: "));
}

} // namespace cli

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: test_cli GPK_BINARY SECTION\n");
        return 2;
    }
    const struct {
        const char *name;
        void (*run)();
    } sections[] = {
        {"usage", cli::section_usage},
        {"heat_check", cli::section_heat_check},
        {"heat_default", cli::section_heat_default},
        {"heat_interrupt", cli::section_heat_interrupt},
        {"heat_checkpoint", cli::section_heat_checkpoint},
        {"images", cli::section_images},
        {"histogram", cli::section_histogram},
        {"convolve", cli::section_convolve},
        {"bad_input", cli::section_bad_input},
        {"plots", cli::section_plots},
        {"npy", cli::section_npy},
        {"npy_bad", cli::section_npy_bad},
        {"npy_large", cli::section_npy_large},
    };
    cli::gpk_path() = std::filesystem::absolute(argv[1]).string();
    std::string base = std::filesystem::temp_directory_path().string() + "/gpk-cli-XXXXXX";
    if (!mkdtemp(&base[0])) {
        std::perror("mkdtemp");
        return 1;
    }
    cli::scratch() = base;
    for (const auto &s : sections) {
        if (std::strcmp(s.name, argv[2]) != 0) continue;
        s.run();
        int rc = check::finish(s.name);
        if (rc == 0)
            std::filesystem::remove_all(base);
        else
            std::printf("scratch files kept in %s\n", base.c_str());
        return rc;
    }
    std::fprintf(stderr, "unknown section %s\n", argv[2]);
    return 2;
}
