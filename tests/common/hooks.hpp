// Test hooks (lib/engine/test_hooks.hpp) are set only through Hook: it sets the variable for its scope and
// restores the value it found when the scope ends, and each time has the library read its hooks again
// (a bad value, which some tests set on purpose, then fails the next call of the library, named).
// A library built without test hooks (-Dtest_hooks=false) ignores them: a test that needs one asks
// available() and skips, saying so (skip_part for a part of a program, require for the whole program).
#pragma once

#include "gpk.h"

#include <cstdio>
#include <cstdlib>
#include <string>

// libgpk's internal entry points (lib/gpk_internal.h, which tests do not include).
extern "C" gpk_status gpk_internal_reload_test_hooks(void);
extern "C" int gpk_internal_test_hooks(void);

namespace hooks {

// Whether the library reads its test hooks.
inline bool available() {
    return gpk_internal_test_hooks() != 0;
}

// True, after printing that `what` is skipped, where the library has no test hooks; false where it has.
inline bool skip_part(const char *what) {
    if (available()) return false;
    std::printf("skipped: %s (this libgpk has no test hooks: -Dtest_hooks=true)\n", what);
    return true;
}

// Ends the program as skipped (exit 77) where the library has no test hooks.
inline void require(const char *program) {
    if (available()) return;
    std::printf("%s skipped: it needs the test hooks, and this libgpk has none (-Dtest_hooks=true)\n",
                program);
    std::exit(77);
}

class Hook {
public:
    // value nullptr: the variable unset for the scope.
    Hook(const char *name, const char *value) : name_(name) {
        const char *was = std::getenv(name);
        had_ = was != nullptr;
        if (had_) was_ = was;
        set(value);
    }
    Hook(const char *name, const std::string &value) : Hook(name, value.c_str()) {}
    Hook(const Hook &) = delete;
    Hook &operator=(const Hook &) = delete;
    ~Hook() { set(had_ ? was_.c_str() : nullptr); }

    // A new value within the scope (nullptr: unset).
    void set(const char *value) {
        if (value)
            setenv(name_.c_str(), value, 1);
        else
            unsetenv(name_.c_str());
        gpk_internal_reload_test_hooks(); // a bad value fails the library's next call, named
    }
    void set(const std::string &value) { set(value.c_str()); }

private:
    std::string name_;
    std::string was_;
    bool had_ = false;
};

} // namespace hooks
