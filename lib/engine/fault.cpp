#include "engine/fault.hpp"

#include "engine/test_hooks.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace gpk::fault {
namespace {

constexpr const char *kNames[] = {"alloc:", "launch:", "copy:", "create:", "host:"};
constexpr int kPoints = int(sizeof kNames / sizeof kNames[0]);

struct Plan {
    std::string spec;           // the variable's value when the counters were last reset
    Point point = Point::alloc; // which kind of call fails
    unsigned long long nth = 0; // 0: none
    unsigned long long seen[kPoints] = {};
};

std::mutex g_mutex;
Plan g_plan;
std::atomic<bool> g_planned{false}; // g_plan holds a value of the variable

const char *spec_now() {
    const std::string &spec = test_hooks().fault; // GPK_TEST_FAULT
    return spec.empty() ? nullptr : spec.c_str();
}

// The plan for `spec`, parsed again (counters at zero) when the value differs from the last one seen.
Plan &plan_for(const char *spec) {
    if (g_plan.spec == spec) return g_plan;
    g_plan = Plan{};
    g_plan.spec = spec;
    for (int k = 0; k < kPoints; ++k) {
        size_t len = std::strlen(kNames[k]);
        if (std::strncmp(spec, kNames[k], len) == 0) {
            g_plan.point = Point(k);
            g_plan.nth = std::strtoull(spec + len, nullptr, 10);
        }
    }
    g_planned = true;
    return g_plan;
}

} // namespace

bool inject(Point point) {
    if (!kTestHooks) return false;
    const char *spec = spec_now();
    if (!spec) {
        if (g_planned.load(std::memory_order_relaxed)) { // forget the last value: setting it again restarts
            std::lock_guard<std::mutex> lock(g_mutex);
            g_plan = Plan{};
            g_planned = false;
        }
        return false;
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    Plan &plan = plan_for(spec);
    unsigned long long n = ++plan.seen[int(point)];
    return point == plan.point && n == plan.nth;
}

bool restart(Point point) {
    if (!kTestHooks) return false;
    const char *spec = spec_now();
    if (!spec || std::strncmp(spec, kNames[int(point)], std::strlen(kNames[int(point)])) != 0) return false;
    std::lock_guard<std::mutex> lock(g_mutex);
    plan_for(spec).seen[int(point)] = 0;
    return true;
}

} // namespace gpk::fault
