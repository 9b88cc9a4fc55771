// Threads of this process, for tests that check a failed context creation keeps no thread (Linux).
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <thread>

inline size_t thread_count() {
    size_t n = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/self/task");
         it != std::filesystem::directory_iterator(); ++it)
        ++n;
    return n;
}

// A joined thread may linger in /proc/self/task for a moment after join() returns: wait up to 2 s for the
// count to come down to `limit`.
inline size_t thread_count_settled(size_t limit) {
    size_t n = thread_count();
    for (int i = 0; i < 200 && n > limit; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        n = thread_count();
    }
    return n;
}
