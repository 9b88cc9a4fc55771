// The variables that steer the GPU test programs themselves (never read by the library): quick mode,
// groups, large cases.
#pragma once

#include <cstdlib>
#include <cstring>

namespace testenv {

// Sanitizer runs set GPK_TEST_QUICK=1: fewer and smaller cases.
inline bool quick() {
    const char *q = std::getenv("GPK_TEST_QUICK");
    return q && *q && std::strcmp(q, "0") != 0;
}

// GPK_TEST_ONLY=name,name runs only the groups named (sanitizer runs take one group a process:
// tools/gpu/sanitize_groups.sh finds a test's groups as the names it passes to wanted()).
inline bool wanted(const char *group) {
    const char *only = std::getenv("GPK_TEST_ONLY");
    return !only || std::strstr(only, group) != nullptr;
}

// GPK_TEST_LARGE=1 adds the cases of several GiB (beyond 2^32 samples).
inline bool large() {
    const char *q = std::getenv("GPK_TEST_LARGE");
    return q && *q && std::strcmp(q, "0") != 0;
}

} // namespace testenv
