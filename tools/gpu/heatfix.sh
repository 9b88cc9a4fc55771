#!/usr/bin/env bash
# Heat's fixed cost (issue 12 part 2) and 4096^2 throughput (issue 13) on the GPU machine, from the
# repository root, in one call of at most 7 minutes (BUDGET seconds, default 400). Stages, most telling
# first, each cut to the time left; logs (8 files at most) under $OUT; a summary table at the end.
#   build     release, sm_90 (build-heatfix/): the library, test_gpu_heat, test_gpu_faults, bench_heat;
#             then (background, no GPU) cuobjdump -res-usage of the heat kernels (registers, stack)
#   quick     test_gpu_heat, GPK_TEST_QUICK=1 (every group; bad-input positions on every pass kernel)
#   bench     bench/bench_heat: 4096^2 and 16384^2 beside the naive peer, every pass kernel at its planned
#             block height (and 6/2 with PDL), a call's fixed cost on device pointers (as built; with PDL,
#             GPK_TEST_HEAT_PDL=1; shorter passes in general steps, GPK_TEST_HEAT_PARTIAL=0), on
#             pageable host pointers at 4096^2
#   sweep     bench_heat sweep 4096: kernels 6/2 12/1 4/4 8/1 4/2 x block heights (GPK_TEST_HEAT_ROWS:
#             planned, 64..1024), PDL on; each kernel's planned height as built and with a finishing
#             kernel after each pass (GPK_TEST_HEAT_FINISH=kernel); the fixed cost
#   ncu       Nsight Compute, every kernel's duration (gpu__time_duration.sum) in two calls of
#             bench_heat profile 16384 8 and of bench_heat profile 4096 100 (the second call is the steady
#             state: halo rows, checking pass, finish, passes, recomputation, row statistics)
#   full      test_gpu_heat, every group at full size
#   faults    test_gpu_faults, GPK_TEST_QUICK=1 (injected launch and allocation failures)
#   memcheck  compute-sanitizer memcheck of test_gpu_heat, small mode (GPK_TEST_SMALL=1 GPK_TEST_QUICK=1)
#   racecheck compute-sanitizer racecheck of test_gpu_heat's kernels and invalid groups, small mode
set -u -o pipefail
for d in shared/data ../shared/data; do [ -f $d/pat1_100x150.pgm ] && export GPK_TEST_DATA=$(cd $d && pwd) && break; done

# left, stage (tools/gpu/stage.sh): stage NAME LIMIT LOG COMMAND...
. "$(dirname "$0")/stage.sh"
stage_setup heatfix 400

# ---- build
if [ ! -f $B/build.ninja ]; then
    meson setup $B -Dgpu_archs=90 -Dbuildtype=release -Dbench=true -Dtests=true -Dcli=disabled \
        -Dbindings=disabled -Dpython=disabled -Dmpi=disabled >"$OUT/build.log" 2>&1 || {
        tail -30 "$OUT/build.log"
        echo "meson setup failed"
        exit 1
    }
fi
stage build 240 build.log ninja -C $B -j "$(nproc)" tests/gpu/test_gpu_heat tests/gpu/test_gpu_faults \
    bench/bench_heat || {
    tail -40 "$OUT/build.log"
    printf '%s\n' "${SUMMARY[@]}"
    exit 1
}
(
    echo "=== registers, stack of the heat kernels ($(ls $B/lib/libgpk.so.*.*.* 2>/dev/null | head -1))"
    kernel_resources $B heat |
        sed -E 's/.*pass_kernelILi([0-9]+)ELi([0-9]+)ELi([0-9])ELb([01])ELb([01])[^ ]*/pass_kernel<\1,\2,\3,check=\4,lean=\5>/' |
        sed -E 's/Function (_ZN3gpk4cuda4heat[0-9]+)?([a-z_]+)[^ ]*/\2/' | sort -u
) >"$OUT/resources.txt" 2>&1 &
res_pid=$!

T=$B/tests/gpu
# ---- tests, benchmarks, profiles
stage quick 90 tests.log env GPK_TEST_QUICK=1 $T/test_gpu_heat
stage bench 150 bench.log $B/bench/bench_heat
stage sweep 60 sweep.log $B/bench/bench_heat sweep 4096
if command -v ncu >/dev/null 2>&1; then
    for call in "16384 8" "4096 100"; do
        stage "ncu ${call% *}" 60 ncu.csv ncu --metrics gpu__time_duration.sum --csv --page raw \
            --kernel-name-base demangled $B/bench/bench_heat profile $call
    done
else
    SUMMARY+=("$(printf '%-34s %7s %6s' ncu missing -)")
fi
stage full 150 tests.log $T/test_gpu_heat
stage faults 40 tests.log env GPK_TEST_QUICK=1 $T/test_gpu_faults
if command -v compute-sanitizer >/dev/null 2>&1; then
    stage memcheck 120 sanitizer.log env GPK_TEST_SMALL=1 GPK_TEST_QUICK=1 GPK_TEST_NO_LEAK_CHECK=1 \
        compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 $T/test_gpu_heat
    stage racecheck 120 sanitizer.log env GPK_TEST_SMALL=1 GPK_TEST_QUICK=1 GPK_TEST_ONLY=kernels,invalid \
        compute-sanitizer --tool racecheck --error-exitcode 3 $T/test_gpu_heat
else
    SUMMARY+=("$(printf '%-34s %7s %6s' compute-sanitizer missing -)")
fi
wait $res_pid 2>/dev/null

# ---- summary
echo
echo "=== bench_heat: gpk beside the peer, fixed costs"
grep -hE "gpk |fixed cost|transfer floor" "$OUT/bench.log" "$OUT/sweep.log" 2>/dev/null | cut -c1-210
echo "=== kernels at their planned heights (bench), as built, PDL on, finishing kernel"
grep -hE "kernel .* rows planned" "$OUT/bench.log" 2>/dev/null
echo "=== 4096^2 sweep: the ten fastest, then each kernel's planned height"
grep -hE "kernel .* GCells/s" "$OUT/sweep.log" 2>/dev/null | sort -k12 -g -r | head -10
grep -hE "kernel .* rows planned" "$OUT/sweep.log" 2>/dev/null
echo "=== ncu: every kernel of each profiled call (us)"
python3 - "$OUT/ncu.csv" <<'EOF' 2>&1 | head -150
import csv, sys, re
rows = []
with open(sys.argv[1], errors="replace") as f:
    lines = [l for l in f if l.startswith('"')]
# Each ncu run writes its own header and units rows; the header starts with "ID".
header = units = None
for rec in csv.reader(lines):
    if rec and rec[0] == "ID":
        header, units = rec, None
        print("--- run")
        continue
    if header is None:
        continue
    if units is None:
        units = rec
        continue
    d = dict(zip(header, rec))
    u = dict(zip(header, units)).get("gpu__time_duration.sum", "")
    v = float(d.get("gpu__time_duration.sum", "nan").replace(",", ""))
    v *= {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}.get(u, 1.0)
    name = re.sub(r"\(.*", "", d.get("Kernel Name", "?")).replace("gpk::cuda::heat::", "")
    name = re.sub(r"\s+", "", re.sub(r"^void ", "", name))
    print(f'{d.get("ID", "?"):>4} {name[:48]:48} grid {d.get("Grid Size", "?"):>14} {v:11.1f}')
EOF
echo "=== tests"
grep -hE "checks, [0-9]+ failed|SKIP|FAIL|Segmentation|error" "$OUT/tests.log" 2>/dev/null | head -20
echo "=== sanitizers"
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|checks, [0-9]+ failed|^== (memcheck|racecheck)" \
    "$OUT/sanitizer.log" 2>/dev/null | head -20
echo "=== heat kernel resources"
grep -E "pass_kernel<6,256,2|row_stats|first_bad|finish" "$OUT/resources.txt" 2>/dev/null | cut -c1-160 | head -12
echo
printf '%-34s %7s %6s\n' stage exit time
printf '%s\n' "${SUMMARY[@]}"
echo "total $(($(date +%s) - START))s; logs in $OUT: $(ls "$OUT" | tr '\n' ' ')"
