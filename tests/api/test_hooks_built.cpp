// Test hooks exist only where the build asks for them (-Dtest_hooks, NOTES.md "Test hooks"): the library
// says which build it is (gpk_internal_test_hooks, what `gpk info` prints), and that is the truth. A build
// with hooks reads them: a bad GPK_TEST_CPU_ISA fails context creation naming it, GPK_TEST_FAULT=host:1
// fails a call. A build without them ignores both, and no hook's name is in the library file.
#include "check.hpp"
#include "hooks.hpp"
#include "gpk.h"

#include <dlfcn.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#ifndef GPK_EXPECT_TEST_HOOKS
#error "meson passes GPK_EXPECT_TEST_HOOKS, the value of -Dtest_hooks"
#endif

namespace {

gpk_status cpu_context(gpk_context **ctx) {
    gpk_context_options o = GPK_CONTEXT_OPTIONS_INIT;
    o.backend = GPK_BACKEND_CPU;
    o.threads = 1;
    return gpk_context_create(ctx, &o);
}

gpk_status heat(gpk_context *ctx, std::vector<double> &out) {
    std::vector<double> t(6 * 5, 1.0), c(6 * 5, 0.5);
    t[12] = 9.0;
    gpk_heat_params p = GPK_HEAT_PARAMS_INIT;
    p.rows = 6;
    p.cols = 5;
    p.maxiter = 4;
    out.assign(t.size(), -1.0);
    return gpk_heat_run(ctx, &p, t.data(), c.data(), out.data(), nullptr);
}

// The bytes of the libgpk file this process runs on.
std::string library_file() {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void *>(&gpk_version_string), &info) || !info.dli_fname) return {};
    std::ifstream in(info.dli_fname, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void test_report(bool built) {
    CHECK_MSG(built == bool(GPK_EXPECT_TEST_HOOKS),
              std::string("gpk_internal_test_hooks() says ") + (built ? "1" : "0"));
    const std::string file = library_file();
    CHECK_MSG(!file.empty(), "libgpk's file not found");
    const bool names = file.find("GPK_TEST_") != std::string::npos;
    CHECK_MSG(names == built, built ? "no hook name in a library with hooks" : "a hook name in the library");
}

void test_bad_isa(bool built) {
    hooks::Hook isa("GPK_TEST_CPU_ISA", "no-such-isa");
    gpk_context *ctx = nullptr;
    const gpk_status s = cpu_context(&ctx);
    if (built) {
        CHECK_STATUS(nullptr, s, GPK_ERR_INVALID_ARGUMENT);
        CHECK(std::string(gpk_context_last_error(nullptr)).find("GPK_TEST_CPU_ISA") != std::string::npos);
    } else {
        CHECK_OK(nullptr, s);
        std::vector<double> out;
        if (ctx) CHECK_OK(ctx, heat(ctx, out));
    }
    gpk_context_destroy(ctx);
}

// The first call of a fresh context allocates its buffers (later calls reuse them): the first of those
// allocations fails where the hook is read.
void test_fault(bool built) {
    gpk_context *reference = nullptr, *ctx = nullptr;
    CHECK_OK(nullptr, cpu_context(&reference));
    CHECK_OK(nullptr, cpu_context(&ctx));
    if (!reference || !ctx) return;
    std::vector<double> want, got;
    CHECK_OK(reference, heat(reference, want));
    {
        hooks::Hook fault("GPK_TEST_FAULT", "host:1");
        const gpk_status s = heat(ctx, got);
        CHECK_STATUS(ctx, s, built ? GPK_ERR_OUT_OF_MEMORY : GPK_OK);
        CHECK(built ? got == std::vector<double>(got.size(), -1.0) : got == want);
    }
    CHECK_OK(ctx, heat(ctx, got)); // and the context works after
    CHECK(got == want);
    gpk_context_destroy(ctx);
    gpk_context_destroy(reference);
}

} // namespace

int main() {
    const bool built = hooks::available();
    std::printf("this libgpk %s test hooks\n", built ? "has" : "has no");
    test_report(built);
    test_bad_isa(built);
    test_fault(built);
    return check::finish("test_hooks_built");
}
