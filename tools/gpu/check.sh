#!/usr/bin/env bash
# The whole tree on the GPU machine, from the repository root, in one call of at most 10 minutes:
#   build    release, sm_90, MPI and the Python package (the torch venv's python3, which has NumPy, CuPy
#            and PyTorch, first on PATH), every target (build-check/)
#   gpu      the Meson suite gpu (every GPU test, the convolution sweep included), one test at a time
#   heatbench bench/bench_heat (gpk beside the naive peer, every pass kernel, a call's fixed cost)
#   others   the suites api, cli, mpi (on CUDA ranks where a device is found) and python, 8 at a time
#   mpi      tests/mpi/test_mpi_gpu on 2 ranks sharing the GPU, and bench_mpi_heat 16384^2 on 1, 2 and 4 ranks
#            (BENCH_RANKS), runs of 1000 and 2000 iterations (BENCH_ITER)
#   pybench  bench/bench_python.py: gpk from Python beside cupyx.scipy.ndimage and cupy.bincount/histogram
#   sanitize compute-sanitizer memcheck, racecheck, initcheck and synccheck on every group of every GPU test
#            program in its small mode, one process each, 8 at a time (tools/gpu/sanitize_groups.sh;
#            SANITIZE_TESTS="test_gpu_heat ..." picks the programs), as time allows
# Stages are cut to the time left (BUDGET seconds, default 560); logs under $OUT; a summary at the end.
# STAGES="build gpu others mpi sanitize" picks stages (a warm machine keeps build-check/ between calls).
set -u -o pipefail
shopt -s lastpipe # "... | while read -r l; do row ...; done" adds its rows to this shell's ROWS
OUT=${OUT:-check-logs}
mkdir -p "$OUT"
export PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
B=${B:-build-check}
START=$(date +%s)
BUDGET=${BUDGET:-560}
STAGES=${STAGES:-build gpu heatbench others mpi pybench sanitize}
ROWS=()
row() { ROWS+=("$(printf '%-44s %s' "$1" "$2")"); }
left() { echo $((BUDGET - ($(date +%s) - START))); }
want() { [[ " $STAGES " == *" $1 "* ]]; }
for d in shared/data ../shared/data; do [ -f $d/pat1_100x150.pgm ] && export GPK_TEST_DATA=$(cd $d && pwd) && break; done

# run NAME LIMIT LOG COMMAND...: COMMAND under a time limit cut to the time left, output appended to LOG.
run() {
    local name=$1 limit=$2 log=$3
    shift 3
    local l=$(left)
    [ "$l" -lt "$limit" ] && limit=$l
    if [ "$limit" -le 5 ]; then
        row "$name" "skipped (no time left)"
        return 124
    fi
    echo "== $name (limit ${limit}s)" >>"$OUT/$log"
    local t0=$(date +%s)
    timeout "$limit" "$@" >>"$OUT/$log" 2>&1
    local rc=$?
    echo "== $name: exit $rc after $(($(date +%s) - t0)) s" >>"$OUT/$log"
    row "$name" "exit $rc ($(($(date +%s) - t0)) s)"
    return $rc
}

if want build; then
    [ -d $B ] || meson setup $B -Dgpu_archs=90 -Dbuildtype=release -Dbindings=disabled -Dmpi=enabled \
        -Dpython=enabled -Dbench=true >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
    run build 330 build.log ninja -C $B || { tail -40 "$OUT/build.log"; printf '%s\n' "${ROWS[@]}"; exit 1; }
fi
if want gpu; then
    run "suite gpu" 300 gpu.log meson test -C $B --suite gpu --no-rebuild --num-processes 1 --print-errorlogs
    cp $B/meson-logs/testlog.txt "$OUT/gpu-testlog.txt" 2>/dev/null
    grep -E '^ *[0-9]+/[0-9]+ ' "$OUT/gpu.log" | sed 's/^ */  /' | while read -r l; do row "$l" ""; done
fi
if want heatbench; then
    run "bench_heat" 90 heatbench.log $B/bench/bench_heat
    grep -E 'gpk |kernel 6/2|fixed cost' "$OUT/heatbench.log" | cut -c1-150 | while read -r l; do row "  $l" ""; done
fi
if want others; then
    run "suites api cli mpi python" 200 others.log meson test -C $B --suite api --suite cli --suite mpi \
        --suite python --no-rebuild --num-processes 8 --print-errorlogs
    grep -E '^(Ok|Fail|Skipped|Timeout):' "$OUT/others.log" | tr '\n' ' ' | while read -r l; do row "  $l" ""; done
    grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT|SKIP)' "$OUT/others.log" | sed 's/^ */  /' | while read -r l; do row "$l" ""; done
fi
if want mpi; then
    M="mpirun --allow-run-as-root --oversubscribe"
    run "test_mpi_gpu -np 2" 120 mpi.log $M -np 2 $B/tests/mpi/test_mpi_gpu
    for np in ${BENCH_RANKS:-1 2 4}; do
        run "bench_mpi_heat 16384 -np $np" 150 mpi.log $M -np $np $B/tests/mpi/bench_mpi_heat 16384 ${BENCH_ITER:-1000} 3
    done
    grep -E '^(one|ranks|plain|halo) ' "$OUT/mpi.log" | while read -r l; do row "  $l" ""; done
fi
if want pybench; then
    run "bench_python.py" 90 pybench.log env GPK_LIBRARY="$PWD/$B/lib/libgpk.so.0.1.0" PYTHONPATH="$PWD/bindings/python" \
        python3 bench/bench_python.py
    grep -E 'x$|^gpk |^case|largest' "$OUT/pybench.log" | while read -r l; do row "  $l" ""; done
fi
if want sanitize; then
    # One process per tool, test and group, 8 at a time (tools/gpu/sanitize_groups.sh), in the time left.
    l=$(left)
    if [ "$l" -gt 30 ]; then
        B=$B OUT=$OUT BUDGET=$l bash tools/gpu/sanitize_groups.sh ${SANITIZE_TESTS:-} >"$OUT/sanitize.log" 2>&1
        row "compute-sanitizer by group" "exit $? ($(grep -cE ' (0|77) +[0-9]+ ' "$OUT/sanitize.log") clean)"
        grep -vE ' (0|77) +[0-9]+ |^tool |^== ' "$OUT/sanitize.log" | while read -r l; do row "  $l" ""; done
    else
        row "compute-sanitizer by group" "skipped (no time left)"
    fi
fi
echo
echo "== summary ($(($(date +%s) - START)) s)"
printf '%s\n' "${ROWS[@]}"
