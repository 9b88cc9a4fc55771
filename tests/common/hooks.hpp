// Test hooks (lib/engine/test_hooks.hpp) are set only through Hook: it sets the variable for its scope and
// restores the value it found when the scope ends, and each time has the library read its hooks again
// (a bad value, which some tests set on purpose, then fails the next call of the library, named).
#pragma once

#include "gpk.h"

#include <cstdlib>
#include <string>

// libgpk's internal entry point (lib/gpk_internal.h, which tests do not include).
extern "C" gpk_status gpk_internal_reload_test_hooks(void);

namespace hooks {

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
