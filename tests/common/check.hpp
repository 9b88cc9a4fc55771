// A minimal test harness: CHECK(...) records failures with file and line, test_main() returns the exit
// code (0 pass, 1 fail, 77 skip). Header-only so that every suite (CPU, GPU, CLI helpers) can use it.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace check {

// Atomic: tests may check from several threads.
inline std::atomic<int> &failures() {
    static std::atomic<int> n{0};
    return n;
}
inline std::atomic<int> &checks() {
    static std::atomic<int> n{0};
    return n;
}

inline void report(bool ok, const char *expr, const char *file, int line, const std::string &detail = {}) {
    ++checks();
    if (ok) return;
    ++failures();
    std::fprintf(stderr, "%s:%d: CHECK failed: %s%s%s\n", file, line, expr, detail.empty() ? "" : " -- ",
                 detail.c_str());
}

inline int finish(const char *name) {
    std::printf("%s: %d checks, %d failed\n", name, checks().load(), failures().load());
    return failures() == 0 ? 0 : 1;
}

// Exit code 77 tells meson the test was skipped.
[[noreturn]] inline void skip(const char *why) {
    std::printf("SKIP: %s\n", why);
    std::exit(77);
}

} // namespace check

#define CHECK(cond) ::check::report(static_cast<bool>(cond), #cond, __FILE__, __LINE__)
#define CHECK_MSG(cond, msg) ::check::report(static_cast<bool>(cond), #cond, __FILE__, __LINE__, (msg))
#define CHECK_EQ(a, b)                                                                                       \
    do {                                                                                                     \
        auto check_a_ = (a);                                                                                 \
        auto check_b_ = (b);                                                                                 \
        ::check::report(check_a_ == check_b_, #a " == " #b, __FILE__, __LINE__,                              \
                        std::to_string(check_a_) + " vs " + std::to_string(check_b_));                       \
    } while (0)
// gpk status checks: on failure print the status and the context's message.
#define CHECK_OK(ctx, expr)                                                                                  \
    do {                                                                                                     \
        gpk_status check_s_ = (expr);                                                                        \
        ::check::report(check_s_ == GPK_OK, #expr, __FILE__, __LINE__,                                       \
                        std::string(gpk_status_string(check_s_)) + ": " + gpk_context_last_error(ctx));      \
    } while (0)
#define CHECK_STATUS(ctx, expr, want)                                                                        \
    do {                                                                                                     \
        gpk_status check_s_ = (expr);                                                                        \
        ::check::report(check_s_ == (want), #expr " == " #want, __FILE__, __LINE__,                          \
                        std::string("got ") + gpk_status_string(check_s_) + ": " +                           \
                            gpk_context_last_error(ctx));                                                    \
    } while (0)
