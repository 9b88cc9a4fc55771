#!/usr/bin/env bash
# Issue 13, separable f32 rows (radius 8 and 32, 8192^2, clamp), on the GPU machine in one call from the
# repository root (about 6 minutes):
#   build     release, sm_90 (build-sep/): the library, test_gpu_convolve, test_gpu_convolve_sweep,
#             bench_convolve (ninja on those only)
#   regs      (background, no GPU) registers, stack and spills of the fused kernels (cuobjdump)
#   bench     bench_convolve separable: the default kernel (the streaming kernel, 256x8), the two passes and
#             NPP in the same run, then each fused kernel by GPK_TEST_CONV_FUSED_KERNEL (ring = the kernel of
#             before; 256x8, 256x16, 128x8, 256x8b4 = the streaming kernel's shapes), each checked bit for bit
#             against the default
#   tests     test_gpu_convolve fused,fit (every kernel against the two passes bit for bit, the default
#             against the CPU backend); test_gpu_convolve_sweep quick, then in full as time allows
#   sanitize  compute-sanitizer memcheck and racecheck on test_gpu_convolve fused, quick (GPK_TEST_QUICK=1)
#   ncu       Nsight Compute on one call of each fused kernel at radius 8 and 32 (bench_convolve sepprofile),
#             profile.sh's metrics
# Every stage has a time limit cut to what is left of BUDGET (seconds); logs under $OUT; a summary at the end.
set -u -o pipefail
. tools/gpu/stage.sh # stage, build_convolution
stage_setup sep 410
run() { stage "$@"; } # stage NAME LIMIT LOG COMMAND... (tools/gpu/stage.sh)

# ---- build
build_convolution $B 230

# ---- register use of the fused kernels (no GPU)
kernel_resources $B "separable_(stream|fused)_kernel" 2>&1 | while read -r line; do
    name=$(echo "$line" | grep -oE "_Z[A-Za-z0-9_]+" | head -1)
    if [ -z "$name" ]; then # cuobjdump or the library missing
        echo "$line"
        continue
    fi
    echo "$(echo "$name" | c++filt | sed -E 's/\(.*//; s/gpk::cuda::conv:://') |" \
        "$(echo "$line" | grep -oE "REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+ LOCAL:[0-9]+")"
done >"$OUT/regs.txt" 2>&1 &

T=$B/tests/gpu
BC=$B/bench/bench_convolve
# ---- benchmark (device images, 8192^2, median of CUDA-event runs; the default also against NPP and CPU)
run "bench separable" 70 bench.log $BC separable

# ---- tests
run "test_gpu_convolve fused,fit (full)" 75 tests.log env GPK_TEST_ONLY=fused,fit $T/test_gpu_convolve
run "test_gpu_convolve_sweep (quick)" 30 tests.log env GPK_TEST_QUICK=1 $T/test_gpu_convolve_sweep

# ---- sanitizers, quick
S="env GPK_TEST_QUICK=1 GPK_TEST_ONLY=fused"
run "memcheck test_gpu_convolve fused" 45 sanitize.log $S \
    compute-sanitizer --tool memcheck --error-exitcode 1 $T/test_gpu_convolve
run "racecheck test_gpu_convolve fused" 60 sanitize.log $S \
    compute-sanitizer --tool racecheck --error-exitcode 1 $T/test_gpu_convolve

# ---- Nsight Compute: one call of each fused kernel, radius 8 and 32
. tools/gpu/ncu_metrics.sh # M: the metrics
run "ncu fused kernels" 70 ncu.log ncu --csv --page raw --print-units base --kernel-name-base demangled \
    --kernel-name "regex:separable_(stream|fused)_kernel" --launch-count 20 --metrics "$M" \
    --log-file "$OUT/ncu.err" $BC sepprofile
grep -hE '^"' "$OUT/ncu.log" "$OUT/ncu.err" >"$OUT/ncu-sep.csv" 2>/dev/null
run "test_gpu_convolve_sweep (full)" 120 tests.log $T/test_gpu_convolve_sweep
wait

# ---- summary
echo
echo "== bench (bench.log)"
grep -E "^f32 separable radius|^\| *(case|f32 sep|---)" "$OUT/bench.log" | head -30
echo "== test tallies"
grep -hE "cases|checks, [0-9]+ failed|ERROR SUMMARY|RACECHECK SUMMARY|shared-memory limit" "$OUT/tests.log" \
    "$OUT/sanitize.log" | head -40
grep -h "CHECK failed" "$OUT/tests.log" "$OUT/sanitize.log" | head -10 | cut -c1-300
echo "== ncu (ncu-sep.csv; one call each: ring first, then 256x8, 256x16, 128x8, 256x8b4; radius 8 then 32)"
python3 tools/gpu/ncu_summary.py "$OUT/ncu-sep.csv" 2>&1 | cut -c1-330 | head -20
echo "== registers (regs.txt)"
cut -c1-160 "$OUT/regs.txt" | grep -E "<(17|65)," | head -20
echo "== stages"
printf '%s\n' "${SUMMARY[@]}"
