// Out-of-memory checks: run one call with the process's address space capped a little above what it
// uses now (Linux RLIMIT_AS). Sanitizer allocators abort on out-of-memory instead of throwing, so the
// cap is only available to plain builds: GPK_TEST_CAN_CAP_MEMORY says whether it is.
#pragma once

#include "check.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define GPK_TEST_CAN_CAP_MEMORY 1
#include <sys/resource.h>
#include <unistd.h>

// Calls `call` with the address space capped 16 MiB above the current size and returns its result;
// `fallback` if the current size cannot be read (a failed check is recorded).
template <class F, class R> R with_capped_memory(F call, R fallback) {
    long pages = 0;
    if (FILE *f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
        std::fclose(f);
    }
    rlimit saved;
    CHECK(pages > 0 && getrlimit(RLIMIT_AS, &saved) == 0);
    if (pages <= 0) return fallback;
    rlimit capped = saved;
    capped.rlim_cur = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + (rlim_t(16) << 20);
    CHECK(setrlimit(RLIMIT_AS, &capped) == 0);
    R result = call();
    CHECK(setrlimit(RLIMIT_AS, &saved) == 0);
    return result;
}
#else
#define GPK_TEST_CAN_CAP_MEMORY 0
#endif

// The byte count an out-of-memory message names after "allocating ", or 0.
inline unsigned long long bytes_named(const std::string &message) {
    size_t at = message.find("allocating ");
    return at == std::string::npos ? 0 : std::strtoull(message.c_str() + at + 11, nullptr, 10);
}
