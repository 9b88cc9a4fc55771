#!/bin/bash
# Issues 12 (part 2) and 13 on the GPU machine, in ONE call of at most 8 minutes (from the repository root):
#   build       release, sm_90 (build-perf/): the library, every GPU test target (tests/gpu/*, including
#               test_gpu_convolve_sweep), bench_heat, bench_histogram, bench_convolve (ninja on those only)
#   sass        (background, no GPU) register use of every kernel and the SASS of the default heat pass
#               kernel and the fused separable kernel of 17 taps
#   bench_heat  gpk beside the naive peer, every pass kernel, a call's fixed cost (device and pageable
#               pointers, beside the pageable transfer floor)
#   bench_histogram, bench_convolve (u8, separable: fused and two passes)
#   test        every test of the GPU suite, one by one, GPK_TEST_QUICK=1, each with its own time limit
#   racecheck   test_gpu_heat's kernels group in small mode (GPK_TEST_SMALL=1, every pass kernel), 80 s cap;
#               then memcheck of the whole test_gpu_heat in small mode
#   ncu_heat    (as time allows) Nsight Compute on one plain pass of the default heat kernel at 16384x16384:
#               the 3rd launch of heat::pass_kernel (checking pass, the first batch's recomputation check
#               that returns at once, then the second batch's first pass)
#   more sanitizer runs on the other tests, as long as the budget lasts
# Every stage has a time limit, cut to what is left of BUDGET; a stage that cannot start is "skipped". Logs
# (8 files at most) go to $OUT (default ./perf-logs); a summary table ends the output.
set -u -o pipefail
OUT=${OUT:-perf-logs}
mkdir -p "$OUT"
B=${B:-build-perf}
START=$(date +%s)
BUDGET=${BUDGET:-460} # seconds for everything, leaving room for the summary and the copy back
SUMMARY=()

# left, stage (tools/gpu/stage.sh)
. "$(dirname "$0")/stage.sh"

have() { command -v "$1" >/dev/null 2>&1; }

export PATH=/usr/local/cuda/bin:$PATH
nproc_=$(nproc)

# ---- build: the library, every target under tests/gpu/ (the GPU suite) and the benchmarks
if [ ! -f $B/build.ninja ]; then
    meson setup $B -Dgpu_archs=90 -Dbench=true -Dtests=true -Dbuildtype=release -Dcli=disabled \
        -Dbindings=disabled -Dpython=disabled >"$OUT/build.log" 2>&1 || {
        tail -30 "$OUT/build.log"
        echo "meson setup failed"
        exit 1
    }
fi
targets=$(ninja -C $B -t targets all 2>/dev/null | cut -d: -f1 |
    grep -E '^(lib/libgpk\.so[.0-9]*|tests/gpu/[^/.]+|bench/bench_(heat|histogram|convolve))$' | sort -u)
stage build 230 build.log ninja -C $B -j "$nproc_" -k 0 $targets
tail -3 "$OUT/build.log"
gpu_tests=$(ls $B/tests/gpu/ 2>/dev/null | grep -E '^test_gpu_[a-z0-9_]+$' | sort)
echo "GPU tests built: $gpu_tests"

# ---- SASS and register use (background: costs no GPU time)
(
    lib=$(ls $B/lib/libgpk.so.* 2>/dev/null | head -1)
    if have cuobjdump && [ -n "$lib" ]; then
        echo "=== register use, stack, shared memory of every kernel"
        kernel_resources $B Function
        for f in '_ZN3gpk4cuda4heat11pass_kernelILi6ELi256ELi2ELb0ELb1EEEvNS1_5ViewsEPKdPNS1_11DeviceStateENS1_9PassShapeEibbPd' \
            '_ZN3gpk4cuda4conv22separable_fused_kernelILi17EEEvNS1_10SourceRowsENS1_5ShapeENS1_6OutputENS1_4TapsIfLi129EEES7_i'; do
            echo "=== SASS of $f"
            cuobjdump -sass -fun "$f" "$lib" 2>&1 | grep -vE "^\s+/\* [0-9a-fx]+ \*/\s*$" | head -6000
        done
    else
        echo "cuobjdump or the library missing"
    fi
) >"$OUT/sass.txt" 2>&1 &
sass_pid=$!

# ---- benchmarks
bench() { # name limit [args...]
    local name=$1 limit=$2
    shift 2
    if [ -x $B/bench/$name ]; then
        stage $name "$limit" $name.log $B/bench/$name "$@"
    else
        SUMMARY+=("$(printf '%-34s %7s %6s' "$name" missing -)")
    fi
}
bench bench_heat 90
bench bench_histogram 60
bench bench_convolve 60 u8 separable

# ---- the GPU suite, test by test, quick mode (a test missing from the build fails alone)
tlimit() {
    case $1 in test_gpu_heat | test_gpu_convolve) echo 60 ;; test_gpu_histogram | test_gpu_convolve_sweep) echo 40 ;; *) echo 25 ;; esac
}
done_tests=
for t in test_gpu_heat test_gpu_histogram test_gpu_convolve test_gpu_convolve_sweep test_gpu_context \
    test_gpu_faults $gpu_tests; do
    case " $done_tests " in *" $t "*) continue ;; esac
    done_tests="$done_tests $t"
    if [ ! -x $B/tests/gpu/$t ]; then
        SUMMARY+=("$(printf '%-34s %7s %6s' "test $t" missing -)")
        continue
    fi
    stage "test $t" "$(tlimit $t)" tests.log env GPK_TEST_QUICK=1 meson test -C $B --no-rebuild --print-errorlogs "$t"
done
[ -f $B/meson-logs/testlog.txt ] && tail -c 3000000 $B/meson-logs/testlog.txt >>"$OUT/tests.log"

# ---- sanitizers in the small/quick modes, most telling first
sanitize() { # tool test [env assignments...]
    local tool=$1 t=$2
    shift 2
    [ -x $B/tests/gpu/$t ] || {
        SUMMARY+=("$(printf '%-34s %7s %6s' "$tool $t" missing -)")
        return
    }
    stage "$tool $t${1:+ $*}" 80 sanitizer.log env GPK_TEST_QUICK=1 GPK_TEST_SMALL=1 "$@" \
        compute-sanitizer --tool "$tool" --error-exitcode 1 $B/tests/gpu/$t
}
if have compute-sanitizer; then
    sanitize racecheck test_gpu_heat GPK_TEST_ONLY=kernels # every pass kernel (round 1's whole test outlasted 100 s)
    sanitize memcheck test_gpu_heat
fi
# ---- the aimed profile, then further sanitizer runs, as long as the budget lasts
[ -x $B/bench/bench_heat ] && {
    if have ncu; then
        stage ncu_heat 60 ncu.txt ncu --kernel-name-base demangled --kernel-name "regex:heat::pass_kernel<" --launch-skip 2 --launch-count 1 \
            --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
            --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
            --section InstructionStats \
            --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__inst_executed_pipe_fp64.sum,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__sass_inst_executed_op_local_ld.sum,smsp__sass_inst_executed_op_local_st.sum,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warp_latency_issue_stalled_mio_throttle.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__average_warp_latency_issue_stalled_not_selected.ratio,smsp__average_warp_latency_issue_stalled_selected.ratio,smsp__average_warp_latency_issue_stalled_dispatch_stall.ratio,smsp__average_warp_latency_issue_stalled_no_instruction.ratio \
            $B/bench/bench_heat profile 16384 18
    else
        SUMMARY+=("$(printf '%-34s %7s %6s' ncu_heat no-ncu -)")
    fi
}
if have compute-sanitizer; then
    sanitize racecheck test_gpu_convolve GPK_TEST_ONLY=fused,fit,strip
    sanitize memcheck test_gpu_histogram
    sanitize memcheck test_gpu_convolve GPK_TEST_ONLY=fused,fit,strip,kernels
    sanitize synccheck test_gpu_heat GPK_TEST_ONLY=kernels
    sanitize racecheck test_gpu_histogram
    sanitize racecheck test_gpu_heat GPK_TEST_ONLY=awkward,convergence,cancellation,placements,determinism,invalid
else
    SUMMARY+=("$(printf '%-34s %7s %6s' sanitizers no-tool -)")
fi

wait $sass_pid 2>/dev/null

# ---- summary
echo
echo "=== key lines"
grep -hE "^(call floor|device:)" "$OUT"/bench_*.log 2>/dev/null | sort -u
grep -hE "^heat f64" "$OUT/bench_heat.log" 2>/dev/null
grep -hE "^f32 separable radius" "$OUT/bench_convolve.log" 2>/dev/null
grep -hE "^\| (u8 256 bins, 8192|u8 256 bins, 1 GiB random|u32 65536|u8 3x3|u8 5x5|f32 separable)" \
    "$OUT"/bench_histogram.log "$OUT"/bench_convolve.log 2>/dev/null
echo "--- tests"
grep -hE "checks, [0-9]+ failed|cases, [0-9]+ failed|fused kernel runs from|Ok:|Fail:|Timeout:|Skipped:" \
    "$OUT/tests.log" 2>/dev/null | grep -v "^\s*$" | head -30
echo "--- sanitizers"
grep -hE "RACECHECK SUMMARY|ERROR SUMMARY|checks, [0-9]+ failed|^== (racecheck|synccheck|initcheck|memcheck)" \
    "$OUT/sanitizer.log" 2>/dev/null | head -60
echo "--- ncu (heat pass kernel, 16384x16384)"
grep -hE "pass_kernel<|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Executed Ipc|Issue Slots|L1/TEX Hit|L2 Hit|dram__bytes|pipe_fp64|inst_executed|op_shared|op_local|wavefronts_mem_shared|issue_stalled|issue_active|warps_active|sector_hit" \
    "$OUT/ncu.txt" 2>/dev/null | head -50
echo "--- registers of the heat pass kernels (sass.txt)"
grep -E "pass_kernel" "$OUT/sass.txt" 2>/dev/null | grep -oE "pass_kernelILi[0-9]+ELi[0-9]+ELi[0-9]ELb[01]ELb[01].*REG:[0-9]+ STACK:[0-9]+" |
    sed -E 's/pass_kernelILi([0-9]+)ELi([0-9]+)ELi([0-9])ELb([01])ELb([01]).*(REG:[0-9]+ STACK:[0-9]+)/pass_kernel<\1,\2,\3,check=\4,lean=\5> \6/' | sort -u
echo
printf '%-34s %7s %6s\n' stage exit time
for l in "${SUMMARY[@]}"; do echo "$l"; done
echo "total $(($(date +%s) - START))s; logs in $OUT: $(ls "$OUT" | tr '\n' ' ')"
