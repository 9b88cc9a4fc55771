#include "engine/test_hooks.hpp"

#include "engine/error.hpp"

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

namespace gpk {

#if GPK_TEST_HOOKS

namespace {

// The variable's value, or nullptr where it is unset or empty.
const char *value_of(const char *name) {
    const char *text = std::getenv(name);
    return text && *text ? text : nullptr;
}

[[noreturn]] void bad(const char *name, const char *text, const char *expected) {
    invalid(std::string(name) + " is \"" + text + "\"; expected " + expected + " (a test hook: NOTES.md)");
}

// A decimal count in [1, max], or 0 where the variable is unset.
size_t count(const char *name, unsigned long long max, const char *what) {
    const char *text = value_of(name);
    if (!text) return 0;
    char *end = nullptr;
    const unsigned long long v = std::isdigit((unsigned char)text[0]) ? std::strtoull(text, &end, 10) : 0;
    if (!end || *end != '\0' || v < 1 || v > max) bad(name, text, what);
    return size_t(v);
}

// True where the variable is `word`, false where it is unset.
bool flag(const char *name, const char *word) {
    const char *text = value_of(name);
    if (!text) return false;
    if (std::strcmp(text, word) != 0) bad(name, text, word);
    return true;
}

std::string fault_spec() {
    const char *name = "GPK_TEST_FAULT";
    const char *text = value_of(name);
    if (!text) return {};
    for (const char *point : {"alloc:", "launch:", "copy:", "create:", "host:"}) {
        const size_t len = std::strlen(point);
        if (std::strncmp(text, point, len) != 0) continue;
        const char *n = text + len;
        char *end = nullptr;
        if (std::isdigit((unsigned char)*n) && (std::strtoull(n, &end, 10), *end == '\0')) return text;
    }
    bad(name, text, "alloc:N, launch:N, copy:N, create:N or host:N");
}

TestHooks parse() {
    TestHooks h;
    h.fault = fault_spec();
    if (const char *isa = value_of("GPK_TEST_CPU_ISA")) {
        if (std::strcmp(isa, "avx512") == 0)
            h.cpu_isa = TestHooks::Isa::avx512;
        else if (std::strcmp(isa, "avx2") == 0)
            h.cpu_isa = TestHooks::Isa::avx2;
        else if (std::strcmp(isa, "baseline") == 0)
            h.cpu_isa = TestHooks::Isa::baseline;
        else
            bad("GPK_TEST_CPU_ISA", isa, "avx512, avx2 or baseline");
    }
    h.conv_cpu_strip = count("GPK_TEST_CONV_CPU_STRIP", 1ull << 40, "a strip width in samples (1 to 2^40)");
    h.device_memory_limit = count("GPK_TEST_DEVICE_MEMORY_LIMIT", ~0ull, "a byte count");
    h.shared_limit = count("GPK_TEST_SHARED_LIMIT", ~0ull, "a byte count");
    h.heat_rows = count("GPK_TEST_HEAT_ROWS", 1ull << 31, "rows per block (1 to 2^31)");
    if (const char *fused = value_of("GPK_TEST_CONV_FUSED")) {
        if (std::strcmp(fused, "off") == 0)
            h.conv_fused = TestHooks::Fused::off;
        else if (std::strcmp(fused, "require") == 0)
            h.conv_fused = TestHooks::Fused::require;
        else
            bad("GPK_TEST_CONV_FUSED", fused, "off or require");
    }
    h.conv_fused_ring = flag("GPK_TEST_CONV_FUSED_KERNEL", "ring");
    h.conv_pair_twopass = flag("GPK_TEST_CONV_PAIR", "twopass");
    h.conv_f32_tiles = flag("GPK_TEST_CONV_F32", "off");
    h.halo_host = flag("GPK_TEST_MPI_HALO", "host");
    return h;
}

// Every set of hooks ever parsed stays alive, so a reference handed out never dangles; a test reloads a
// few hundred times at most.
std::mutex g_mutex;
std::deque<TestHooks> g_parsed;
std::atomic<const TestHooks *> g_current{nullptr};

const TestHooks &install(TestHooks h) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_parsed.push_back(std::move(h));
    g_current.store(&g_parsed.back(), std::memory_order_release);
    return g_parsed.back();
}

} // namespace

const TestHooks &test_hooks() {
    if (const TestHooks *h = g_current.load(std::memory_order_acquire)) return *h;
    return install(parse());
}

void reload_test_hooks() {
    g_current.store(nullptr, std::memory_order_release); // a bad value fails every use until it is mended
    install(parse());
}

#else // no hooks: nothing is read, and no hook's name is compiled in

const TestHooks &test_hooks() {
    static const TestHooks defaults;
    return defaults;
}

void reload_test_hooks() {}

#endif

} // namespace gpk
