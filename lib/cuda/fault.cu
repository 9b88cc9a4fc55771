// Test-only fault injection behind GPK_TEST_FAULT (see check.cuh). Costs one getenv per allocation,
// launch, copy and context creation; the variable is unset outside tests.
#include "cuda/check.cuh"

#include <atomic>
#include <cstdlib>
#include <mutex>

namespace gpk::cuda::fault {
namespace {

struct Plan {
    std::string spec;           // the variable's value when the counters were last reset
    Point point = Point::alloc; // which kind of call fails
    unsigned long long nth = 0; // 0: none
    unsigned long long seen[4] = {0, 0, 0, 0};
};

std::mutex g_mutex;
Plan g_plan;

void parse(const char *spec, Plan &plan) {
    plan = Plan{};
    plan.spec = spec;
    static const char *names[] = {"alloc:", "launch:", "copy:", "create:"};
    for (int k = 0; k < 4; ++k) {
        size_t len = std::strlen(names[k]);
        if (std::strncmp(spec, names[k], len) == 0) {
            plan.point = Point(k);
            plan.nth = std::strtoull(spec + len, nullptr, 10);
        }
    }
}

const char *spec_now() {
    const char *spec = std::getenv("GPK_TEST_FAULT");
    return spec && *spec ? spec : nullptr;
}

} // namespace

thread_local bool t_creating = false;

Creation::Creation() : previous_(t_creating) {
    const char *spec = spec_now();
    t_creating = spec && std::strncmp(spec, "create:", 7) == 0;
    if (!t_creating) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_plan.spec != spec) parse(spec, g_plan);
    g_plan.seen[int(Point::create)] = 0;
}

bool inject(Point point) {
    const char *spec = spec_now();
    if (!spec) return false;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_plan.spec != spec) parse(spec, g_plan);
    unsigned long long n = ++g_plan.seen[int(point)];
    return point == g_plan.point && n == g_plan.nth;
}

} // namespace gpk::cuda::fault
