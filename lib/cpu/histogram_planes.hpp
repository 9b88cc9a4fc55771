// u8 samples counted by bit planes (AVX-512 with GFNI, VBMI and VPOPCNTDQ; NOTES.md, CPU histogram).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpk::cpu {

// Whether count_u8_planes may run: the active level is avx512 (GPK_TEST_CPU_ISA lowers it) and this CPU
// also has GFNI, AVX512-VBMI and AVX512-VPOPCNTDQ.
bool u8_planes_available();

// Adds to counts[v] the number of the `samples` bytes from p equal to v, for every v in 0..255.
void count_u8_planes(const unsigned char *p, size_t samples, uint64_t *counts);

} // namespace gpk::cpu
