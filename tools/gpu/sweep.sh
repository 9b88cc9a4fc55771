#!/usr/bin/env bash
# On the GPU machine: builds the CUDA backend (release, sm_90) and runs the convolution sweep on it, in full,
# then under compute-sanitizer (memcheck, quick sizes). Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
b=build-gpu
[ -d $b ] || meson setup $b -Dgpu_archs=90 -Dbuildtype=release -Dbindings=disabled > "$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
ninja -C $b tests/gpu/test_gpu_convolve_sweep > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
t0=$(date +%s)
$b/tests/gpu/test_gpu_convolve_sweep > "$OUT/sweep.log" 2>&1; rc=$?
echo "sweep rc $rc ($(( $(date +%s) - t0 )) s)"; grep -v "CHECK failed" "$OUT/sweep.log" | tail -12
grep "CHECK failed" "$OUT/sweep.log" | head -30 | cut -c1-330
t0=$(date +%s)
GPK_TEST_QUICK=1 compute-sanitizer --tool memcheck --error-exitcode 1 $b/tests/gpu/test_gpu_convolve_sweep > "$OUT/memcheck.log" 2>&1
echo "memcheck rc $? ($(( $(date +%s) - t0 )) s)"; tail -4 "$OUT/memcheck.log"
