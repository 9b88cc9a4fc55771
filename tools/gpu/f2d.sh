#!/usr/bin/env bash
# Issue 13, f32 3x3 / 9x9 2D convolution (the sliding-window kernel, lib/cuda/convolve_slide.cuh), on the GPU
# machine in one call from the repository root, about 7 minutes:
#   build     release, sm_90 (build-f2d/): the library, test_gpu_convolve, test_gpu_convolve_sweep,
#             bench_convolve; then the registers of the f32 kernels (cuobjdump -res-usage, into build.log)
#   bench     bench_convolve f32: gpk's default beside NPP (the table), then every form of the f32 2D kernels
#             in one run (GPK_BENCH_F32_FORMS): "off" = the kernels of before (A/B), the default, the other
#             built forms (rows ahead, shuffled or loaded halo, register caps, plain stores) and strip heights
#             (GPK_TEST_CONV_F32_ROWS), each with its bits compared to "off"
#   tests     test_gpu_convolve slide (every K 1..9, widths, heights and strips around the kernel's tiles,
#             every border and form, bit-identical to the kernels of before), the sweep in quick mode, every
#             group of test_gpu_convolve in quick mode, then the full sweep as time allows
#   sanitize  compute-sanitizer memcheck (leak check), racecheck, initcheck on test_gpu_convolve slide in
#             quick mode (GPK_TEST_QUICK=1)
#   ncu       Nsight Compute (tools/gpu/ncu_metrics.sh, summary by ncu_summary.py) on the old and new f32
#             kernels (bench_convolve f32forms, off and default, 3x3 and 9x9)
# Every stage has a time limit cut to what is left of BUDGET (seconds); logs under $OUT; a summary at the end.
set -u -o pipefail
. tools/gpu/stage.sh # stage, build_convolution
stage_setup f2d 410

# ---- build
build_convolution $B 230
(
    echo "== registers of the f32 2D kernels (cuobjdump -res-usage)"
    kernel_resources $B conv2d_f32 |
        sed -E 's/.*(conv2d_f32[a-z0-9_]*)(ILi[0-9]+ELi[0-9]+(ELb[01]ELi[0-9]+)?)?.*(REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+).*/regs \1\2 \4/' |
        sort -u
) >>"$OUT/build.log" 2>&1

T=$B/tests/gpu
BC=$B/bench/bench_convolve
# ---- benchmarks: 8192^2 device images, clamp border, box taps, median of CUDA-event timings
FORMS="off,default,3:1sb12,3:2s,3:4sb8,3:2lb12,3:2sb12p,9:1s,9:2sb6,9:1sb8,9:1sb8p"
FORMS="$FORMS,default@16,default@32,default@64,default@256,off"
stage "bench f32 (NPP, forms A/B)" 70 bench.log env GPK_BENCH_F32_FORMS="$FORMS" $BC f32

# ---- tests
stage "test_gpu_convolve slide (full)" 60 tests.log env GPK_TEST_ONLY=slide $T/test_gpu_convolve
stage "test_gpu_convolve_sweep (quick)" 45 tests.log env GPK_TEST_QUICK=1 $T/test_gpu_convolve_sweep

# ---- sanitizers, quick
Q="env GPK_TEST_QUICK=1 GPK_TEST_ONLY=slide"
stage "memcheck slide (quick)" 45 sanitize.log $Q compute-sanitizer --tool memcheck --leak-check full \
    --error-exitcode 1 $T/test_gpu_convolve
stage "racecheck slide (quick)" 40 sanitize.log $Q compute-sanitizer --tool racecheck --error-exitcode 1 \
    $T/test_gpu_convolve
stage "initcheck slide (quick)" 40 sanitize.log $Q compute-sanitizer --tool initcheck --error-exitcode 1 \
    $T/test_gpu_convolve

# ---- Nsight Compute on the f32 kernels of before and the new one (bench_convolve f32forms: off, then the
# default, 3 timed runs each after one warm-up, 3x3 then 9x9)
. tools/gpu/ncu_metrics.sh # M: the metrics
stage "ncu f32 kernels" 70 ncu.log env GPK_BENCH_F32_FORMS=off,default GPK_BENCH_F32_REPS=3 \
    ncu --csv --page raw --print-units base --kernel-name-base demangled --kernel-name "regex:conv2d_f32" \
    --launch-count 40 --metrics "$M" --log-file "$OUT/ncu.err" $BC f32forms
grep -hE '^"' "$OUT/ncu.log" "$OUT/ncu.err" >"$OUT/ncu-f32.csv" 2>/dev/null

# ---- the rest as time allows
stage "test_gpu_convolve (quick, every group)" 60 tests.log env GPK_TEST_QUICK=1 $T/test_gpu_convolve
stage "test_gpu_convolve_sweep (full)" 120 tests.log $T/test_gpu_convolve_sweep

# ---- summary
echo
echo "== bench table and forms (bench.log)"
grep -E "^\| *(case|f32|---)|^f32 [0-9]x[0-9] form" "$OUT/bench.log" | head -60
echo "== fastest form per size (bits = off)"
grep -E "^f32 [0-9]x[0-9] form .* bits = off" "$OUT/bench.log" | sort -k2,2 -k7,7g |
    awk '!seen[$2]++ {print}'
echo "== test tallies"
grep -hE "cases|checks, [0-9]+ failed|ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/tests.log" "$OUT/sanitize.log" |
    head -40
grep -h "CHECK failed" "$OUT/tests.log" "$OUT/sanitize.log" | head -10 | cut -c1-300
echo "== ncu (ncu-f32.csv: the 3x3 kernels first, old then new, then 9x9)"
python3 tools/gpu/ncu_summary.py "$OUT/ncu-f32.csv" 2>&1 | cut -c1-330 | head -20
echo "== registers (build.log)"
grep -E "^regs " "$OUT/build.log" | head -20
echo "== stages"
printf '%s\n' "${SUMMARY[@]}"
