#!/bin/bash
# Issue 13 / issue 12 part 2 on the GPU machine, in one call of at most 8 minutes (from the repository root):
#   build      release, sm_90, benchmarks (build-perf/), only the library, the GPU tests and the benchmarks
#   sass       SASS of the heat pass kernels and their register use (for the next round's reading)
#   test       meson test --suite gpu
#   bench      bench_heat (every pass kernel, a call's fixed cost), bench_histogram, then racecheck of
#              test_gpu_heat with GPK_TEST_SMALL=1, then bench_convolve (u8, separable); each bench prints
#              gpk beside its peer, the fraction of the ceiling and the API wall clock
#   ncu        Nsight Compute on one pass of the default heat kernel at 4096x4096
#   memcheck   compute-sanitizer memcheck on test_gpu_heat with GPK_TEST_SMALL=1, then racecheck on
#              test_gpu_convolve with GPK_TEST_QUICK=1 (the fused separable kernel), as time allows
# Stages after the test run are skipped once the time left would not cover them. Logs (8 files at most)
# go to $OUT (default ./perf-logs); a summary table ends the output.
set -u -o pipefail
OUT=${OUT:-perf-logs}
mkdir -p "$OUT"
B=${B:-build-perf}
START=$(date +%s)
BUDGET=${BUDGET:-465} # seconds for everything, leaving room for the summary and the copy back
SUMMARY=()

left() { echo $((BUDGET - ($(date +%s) - START))); }

# stage NAME LIMIT LOG COMMAND...: runs COMMAND with a time limit (cut to the time left), appending to LOG.
stage() {
    local name=$1 limit=$2 log=$3
    shift 3
    local l
    l=$(left)
    if [ "$l" -lt 20 ]; then
        SUMMARY+=("$(printf '%-22s %6s %6s' "$name" skipped -)")
        return 1
    fi
    [ "$limit" -gt "$l" ] && limit=$l
    echo "== $name (limit ${limit}s)" | tee -a "$OUT/$log"
    local t0=$(date +%s)
    timeout "$limit" "$@" >>"$OUT/$log" 2>&1
    local rc=$?
    local dt=$(($(date +%s) - t0))
    echo "== $name: exit $rc after ${dt}s" | tee -a "$OUT/$log"
    SUMMARY+=("$(printf '%-22s %6s %6s' "$name" "$rc" "${dt}s")")
    return $rc
}

export PATH=/usr/local/cuda/bin:$PATH
nproc_=$(nproc)

# ---- build
if [ ! -d $B ]; then
    meson setup $B -Dgpu_archs=90 -Dbench=true -Dbuildtype=release -Dcli=disabled -Dbindings=disabled \
        >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
fi
known=$(ninja -C $B -t targets all 2>/dev/null | cut -d: -f1)
targets=""
for t in lib/libgpk.so.0.1.0 $(ls tests/gpu/*.cpp | sed 's/\.cpp$//') bench/bench_heat bench/bench_histogram \
    bench/bench_convolve; do
    grep -qx "$t" <<<"$known" && targets="$targets $t"
done
stage build 300 build.log ninja -C $B -j "$nproc_" -k 0 $targets
tail -5 "$OUT/build.log"

# ---- SASS of the heat pass kernels (background: costs no GPU time)
(
    for k in '_ZN3gpk4cuda4heat11pass_kernelILi8ELi256ELi2ELb0E' '_ZN3gpk4cuda4heat11pass_kernelILi8ELi256ELi1ELb0E'; do
        echo "=== $k"
        cuobjdump -res-usage $B/lib/libgpk.so.0.1.0 2>&1 | grep -A1 "$k" | head -4
        cuobjdump -sass -fun "${k}EEvNS1_5ViewsEPKdPNS1_11DeviceStateENS1_9PassShapeEibbPd" \
            $B/lib/libgpk.so.0.1.0 2>&1 | head -4000
    done
) >"$OUT/sass.txt" 2>&1 &
sass_pid=$!

# ---- the GPU suite
stage test 240 tests.log meson test -C $B --suite gpu --no-rebuild --print-errorlogs --num-processes 1
[ -f $B/meson-logs/testlog.txt ] && tail -c 2000000 $B/meson-logs/testlog.txt >>"$OUT/tests.log"
grep -E "^ *[0-9]+/[0-9]+ |checks|faults in all" "$OUT/tests.log" | tail -12

# ---- benchmarks
stage bench_heat 150 bench_heat.log $B/bench/bench_heat
stage bench_histogram 90 bench_histogram.log $B/bench/bench_histogram

# ---- racecheck on the heat test's small mode (every pass kernel, every placement)
stage racecheck_heat 100 sanitizer.log env GPK_TEST_SMALL=1 \
    compute-sanitizer --tool racecheck --error-exitcode 1 $B/tests/gpu/test_gpu_heat

stage bench_convolve 80 bench_convolve.log $B/bench/bench_convolve u8 separable

# ---- Nsight Compute: the 3rd pass kernel launch of a 4096x4096 run of 24 iterations
stage ncu_heat 60 ncu.txt ncu --kernel-name regex:pass_kernel --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --metrics smsp__inst_executed.sum,smsp__inst_executed_pipe_fp64.sum,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,smsp__sass_inst_executed_op_local_ld.sum,smsp__sass_inst_executed_op_local_st.sum \
    $B/bench/bench_heat profile 4096 24

stage memcheck_heat 60 sanitizer.log env GPK_TEST_SMALL=1 \
    compute-sanitizer --tool memcheck --error-exitcode 1 $B/tests/gpu/test_gpu_heat

stage racecheck_convolve 90 sanitizer.log env GPK_TEST_QUICK=1 \
    compute-sanitizer --tool racecheck --error-exitcode 1 $B/tests/gpu/test_gpu_convolve

wait $sass_pid 2>/dev/null

# ---- summary
echo
echo "=== key lines"
grep -hE "^(call floor|device:)" "$OUT"/bench_*.log | sort -u
grep -hE "^heat f64" "$OUT/bench_heat.log"
grep -hE "^f32 separable radius" "$OUT/bench_convolve.log"
grep -hE "^\| (u8 256 bins, 8192|u8 256 bins, 1 GiB random|u32 65536|u8 3x3|u8 5x5|f32 separable)" \
    "$OUT"/bench_histogram.log "$OUT"/bench_convolve.log
grep -hE "RACECHECK SUMMARY|ERROR SUMMARY|checks, [0-9]+ failed|fused separable kernel:" "$OUT/sanitizer.log" \
    "$OUT/tests.log" | head -14
grep -hE "Duration|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|pipe_fp64_cycles|inst_executed_pipe_fp64|inst_executed.sum|local_(ld|st)" \
    "$OUT/ncu.txt" | head -14
echo
printf '%-22s %6s %6s\n' stage exit time
for l in "${SUMMARY[@]}"; do echo "$l"; done
echo "total $(($(date +%s) - START))s; logs in $OUT: $(ls "$OUT" | tr '\n' ' ')"
