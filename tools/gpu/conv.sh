#!/usr/bin/env bash
# Issue 13, convolution rows, on the GPU machine in one call (from the repository root, about 6 minutes):
#   build     release, sm_90 (build-conv/): the library, tests/gpu/test_gpu_convolve, test_gpu_convolve_sweep,
#             bench/bench_convolve (ninja on those only)
#   regs      (background, no GPU) register use, stack and spills of the strip kernels (3x3 and rank-1)
#   bench     bench_convolve u8 minmax: u8 box 3x3/5x5/7x7/9x9 beside NPP, lp3 + min/max beside the plain
#             lp3; then the same with the rank-1 strip kernel off (GPK_TEST_CONV_RANK1=off: the kernels of
#             before) and on for 3x3 too (=all); lp3 + min/max with 16-row strips (GPK_TEST_CONV_STRIP=16)
#   tests     test_gpu_convolve: the rank1 and strip groups in full, then every group in quick mode;
#             test_gpu_convolve_sweep quick, then in full as time allows
#   sanitize  compute-sanitizer memcheck (leak check), racecheck, initcheck on test_gpu_convolve's rank1,
#             strip and laplacian groups and memcheck on the sweep, small and quick (GPK_TEST_SMALL=1
#             GPK_TEST_QUICK=1)
# Every stage has a time limit cut to what is left of BUDGET (seconds); logs under $OUT; a summary at the end.
set -u -o pipefail
. tools/gpu/stage.sh # stage, build_convolution
stage_setup conv 350
run() { stage "$@"; } # stage NAME LIMIT LOG COMMAND... (tools/gpu/stage.sh)

# ---- build
build_convolution $B 240

# ---- register use of the strip kernels (no GPU)
kernel_resources $B strip_kernel >"$OUT/regs.txt" 2>&1 &

# ---- benchmarks (device images, 8192^2, median of CUDA-event runs; each row also checked against the CPU)
T=$B/tests/gpu
BC=$B/bench/bench_convolve
run "bench u8 minmax (rank-1 default)" 75 bench.log $BC u8 minmax
run "bench u8 minmax, GPK_TEST_CONV_RANK1=off" 60 bench.log env GPK_TEST_CONV_RANK1=off $BC u8 minmax
run "bench u8, GPK_TEST_CONV_RANK1=all" 50 bench.log env GPK_TEST_CONV_RANK1=all $BC u8
run "bench minmax, GPK_TEST_CONV_STRIP=16" 30 bench.log env GPK_TEST_CONV_STRIP=16 $BC minmax

# ---- tests
run "test_gpu_convolve rank1,strip (full)" 90 tests.log env GPK_TEST_ONLY=rank1,strip $T/test_gpu_convolve
run "test_gpu_convolve (quick, every group)" 70 tests.log env GPK_TEST_QUICK=1 $T/test_gpu_convolve
run "test_gpu_convolve_sweep (quick)" 40 tests.log env GPK_TEST_QUICK=1 $T/test_gpu_convolve_sweep

# ---- sanitizers, small and quick
S="env GPK_TEST_SMALL=1 GPK_TEST_QUICK=1"
run "memcheck test_gpu_convolve rank1,strip,laplacian" 60 sanitize.log $S GPK_TEST_ONLY=rank1,strip,laplacian \
    compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 $T/test_gpu_convolve
run "racecheck test_gpu_convolve rank1,strip" 50 sanitize.log $S GPK_TEST_ONLY=rank1,strip \
    compute-sanitizer --tool racecheck --error-exitcode 1 $T/test_gpu_convolve
run "initcheck test_gpu_convolve rank1,strip" 50 sanitize.log $S GPK_TEST_ONLY=rank1,strip \
    compute-sanitizer --tool initcheck --error-exitcode 1 $T/test_gpu_convolve
run "memcheck test_gpu_convolve_sweep" 60 sanitize.log $S \
    compute-sanitizer --tool memcheck --error-exitcode 1 $T/test_gpu_convolve_sweep
run "test_gpu_convolve_sweep (full)" 120 tests.log $T/test_gpu_convolve_sweep
wait

# ---- summary
echo
echo "== tables (bench.log)"
grep -E "^\| *(case|u8|---)" "$OUT/bench.log" | head -40
echo "== test tallies"
grep -hE "cases|checks, [0-9]+ failed|ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/tests.log" "$OUT/sanitize.log" | head -40
grep -h "CHECK failed" "$OUT/tests.log" | head -10 | cut -c1-300
echo "== registers (regs.txt)"
cut -c1-220 "$OUT/regs.txt" | head -30
echo "== stages"
printf '%s\n' "${SUMMARY[@]}"
