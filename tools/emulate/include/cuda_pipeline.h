// Asynchronous copies of the emulator: done at once (tools/emulate/README.md).
#pragma once
#include <cstring>
inline void __pipeline_memcpy_async(void *d, const void *s, size_t n) {
    std::memcpy(d, s, n);
}
inline void __pipeline_commit() {}
inline void __pipeline_wait_prior(int) {}
