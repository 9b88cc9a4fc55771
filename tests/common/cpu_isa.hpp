// Runs a test body once per instruction set of the CPU kernels (the internal knob GPK_TEST_CPU_ISA,
// NOTES.md): avx512, avx2, baseline; a level the machine lacks runs its widest instead. Where the variable
// is set already (a CI job, a bisection), only that level runs. A library without test hooks runs the
// machine's level alone ("machine").
#pragma once

#include <cstdio>
#include "hooks.hpp"
#include <cstdlib>
#include <string>

template <class Body> void for_each_cpu_isa(Body &&body) {
    if (hooks::skip_part("GPK_TEST_CPU_ISA levels other than the machine's")) {
        body(std::string("machine"));
        return;
    }
    const char *fixed = std::getenv("GPK_TEST_CPU_ISA");
    if (fixed && *fixed) {
        std::printf("GPK_TEST_CPU_ISA=%s (from the environment)\n", fixed);
        body(std::string(fixed));
        return;
    }
    hooks::Hook hook("GPK_TEST_CPU_ISA", nullptr);
    for (const std::string isa : {"avx512", "avx2", "baseline"}) {
        hook.set(isa);
        std::printf("GPK_TEST_CPU_ISA=%s\n", isa.c_str());
        body(isa);
    }
}
