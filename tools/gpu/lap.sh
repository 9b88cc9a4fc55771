#!/usr/bin/env bash
# Issue 13, Laplacian lp3 + min/max on u8 (8192^2, zero border) against the plain lp3, on the GPU machine in
# one call from the repository root (about 4 minutes):
#   build     release, sm_90 (build-lap/): the library, test_gpu_convolve, test_gpu_convolve_sweep,
#             bench_convolve (ninja on those only)
#   bench     bench_convolve minmax: lp3 + min/max beside the plain lp3; the first pass's kernels side by
#             side in the same run (GPK_TEST_CONV_FOLD=off: the strip kernel's fold, the path before; 16,
#             32, 32f, 64, 128: the fold kernel's rows per block, f top to bottom), each checked against the
#             default's bits, the default against the CPU backend
#   tests     test_gpu_convolve fold,strip,laplacian (full); test_gpu_convolve_sweep quick, then in full as
#             time allows
#   sanitize  compute-sanitizer memcheck and racecheck on test_gpu_convolve fold, small and quick
# Logs (at most 4 files) under $OUT: build.log, bench.log, tests.log, sanitize.log; a summary at the end.
set -u -o pipefail
OUT=${OUT:-lap-logs}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
B=${B:-build-lap}
START=$(date +%s)
BUDGET=${BUDGET:-290}
SUMMARY=()
. tools/gpu/stage.sh # stage, build_convolution
run() { stage "$@"; } # stage NAME LIMIT LOG COMMAND... (tools/gpu/stage.sh)

# ---- build
build_convolution $B 200

T=$B/tests/gpu
BC=$B/bench/bench_convolve
# ---- benchmark (device images, 8192^2, median of CUDA-event runs)
run "bench minmax (fold kernels A/B)" 45 bench.log $BC minmax

# ---- tests
run "test_gpu_convolve fold,strip,laplacian" 60 tests.log env GPK_TEST_ONLY=fold,strip,laplacian \
    $T/test_gpu_convolve
run "test_gpu_convolve_sweep (quick)" 30 tests.log env GPK_TEST_QUICK=1 $T/test_gpu_convolve_sweep

# ---- sanitizers, small and quick
S="env GPK_TEST_SMALL=1 GPK_TEST_QUICK=1 GPK_TEST_ONLY=fold"
run "memcheck test_gpu_convolve fold" 40 sanitize.log $S \
    compute-sanitizer --tool memcheck --error-exitcode 1 $T/test_gpu_convolve
run "racecheck test_gpu_convolve fold" 40 sanitize.log $S \
    compute-sanitizer --tool racecheck --error-exitcode 1 $T/test_gpu_convolve
run "test_gpu_convolve_sweep (full)" 90 tests.log $T/test_gpu_convolve_sweep

# ---- summary
echo
echo "== bench (bench.log)"
grep -E "^lp3 \+ min/max|^\| *(case|u8 lp3|---)" "$OUT/bench.log" | head -20
echo "== test tallies"
grep -hE "cases|checks, [0-9]+ failed|ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/tests.log" "$OUT/sanitize.log" |
    head -20
grep -h "CHECK failed" "$OUT/tests.log" "$OUT/sanitize.log" | head -20 | cut -c1-300
echo "== stages"
printf '%s\n' "${SUMMARY[@]}"
