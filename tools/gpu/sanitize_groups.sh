#!/usr/bin/env bash
# compute-sanitizer on the GPU tests one group at a time, several processes at once, on the GPU machine from
# the repository root: each (tool, test, group) is its own process (GPK_TEST_ONLY=group, small and quick
# mode), so that a slow tool (racecheck) on one group neither hides nor holds up the others, and the whole
# test gets checked within a call. A test's groups are the names its main() passes to wanted(); a test
# without groups runs whole. test_mpi_gpu (libgpk_mpi's CUDA ranks) runs on 2 ranks under mpirun, a
# sanitizer a rank (CUDA IPC between them), each heat group also with host staging forced (heat_runs:host
# and so on), the path between ranks whose GPUs cannot reach each other.
# Under racecheck its six heat runs take minutes each and slow one another down (each rank is a sanitized
# context taking turns on the GPU): give them a call of their own, two or three at once
# (TOOLS=racecheck ONLY="heat_runs heat_device" JOBS=2 ...; RELIABILITY.md has the times).
#   tools/gpu/sanitize_groups.sh [TEST...]          (default: every test_gpu_* program built in $B, and
#                                                     test_mpi_gpu where it was built and mpirun exists)
# Environment: B (build directory, with the test hooks as tools/gpu/check.sh configures it; default
# build-check), OUT (logs, default sanitize-logs), TOOLS (default "racecheck memcheck initcheck synccheck"),
# ONLY (the groups to run, default every one), JOBS (processes at once, default 8), LIMIT (seconds a process
# at most, default 300), BUDGET (seconds for the whole run, default 560: no process starts, or runs, past it).
# Prints a row per process (tool, test, group, exit status, seconds, the test's tally, the tool's summary)
# and exits 1 if any process failed or ran out of time, 0 otherwise.
set -u -o pipefail
B=${B:-build-check}
OUT=${OUT:-sanitize-logs}
TOOLS=${TOOLS:-racecheck memcheck initcheck synccheck}
JOBS=${JOBS:-8}
LIMIT=${LIMIT:-300}
BUDGET=${BUDGET:-560}
START=$(date +%s)
mkdir -p "$OUT/sanitize"
export PATH=/usr/local/cuda/bin:$PATH
for d in shared/data ../shared/data; do
    if [ -f $d/pat1_100x150.pgm ]; then
        GPK_TEST_DATA=$(cd $d && pwd)
        export GPK_TEST_DATA
        break
    fi
done

tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
    for f in "$B"/tests/gpu/test_gpu_*; do
        [[ -x $f && ! -d $f && $(basename "$f") =~ ^test_gpu_[a-z_]+$ ]] && tests+=("$(basename "$f")")
    done
    [ -x "$B/tests/mpi/test_mpi_gpu" ] && command -v mpirun >/dev/null && tests+=(test_mpi_gpu)
fi

# The groups of a test: wanted("name") in its source, or "all" (no GPK_TEST_ONLY) where it has none.
groups_of() {
    local src=tests/gpu/$1.cpp g
    [[ $1 == test_mpi_* ]] && src=tests/mpi/$1.cpp
    g=$(grep -o 'wanted("[a-z0-9_]*")' "$src" 2>/dev/null | sed 's/wanted("//; s/")//' | tr '\n' ' ')
    if [ "$1" = test_mpi_gpu ]; then
        for x in $g; do [[ $x == heat* ]] && g="$g $x:host"; done
    fi
    echo "${g:-all}"
}

# One process: tool $1, test $2, group $3; its log, then a line "tool test group status seconds" in .row.
# (Run by xargs through bash -c.)
# shellcheck disable=SC2317
one() {
    local tool=$1 test=$2 group=$3 log="$OUT/sanitize/$1-$2-$3.log"
    local left=$((BUDGET - ($(date +%s) - START))) limit=$LIMIT only=''
    [ "$left" -lt "$limit" ] && limit=$left
    if [ "$limit" -lt 20 ]; then
        echo "$tool $test $group skipped 0" >"$log.row"
        return
    fi
    local extra=()
    [ "$tool" = memcheck ] && extra=(--leak-check full)
    [ "$group" != all ] && only=${group%:host}
    local t0 launch=() program=$B/tests/gpu/$test ompi_tmp=''
    if [[ $test == test_mpi_* ]]; then
        program=$B/tests/mpi/$test
        # An Open MPI temporary folder of its own: mpiruns starting together race to create the shared one.
        ompi_tmp=$(mktemp -d /tmp/gpk-ompi.XXXXXX)
        launch=(mpirun --allow-run-as-root --oversubscribe --mca orte_tmpdir_base "$ompi_tmp" -np 2 -x GPK_TEST_SMALL
            -x GPK_TEST_QUICK -x GPK_TEST_NO_LEAK_CHECK ${only:+-x GPK_TEST_ONLY})
        [[ $group == *:host ]] && launch+=(-x GPK_TEST_MPI_HALO=host)
        # racecheck spends seconds on every launch of the heat kernels, whatever the grid's size: the MPI
        # heat groups run on 64² under it (test_gpu_heat racechecks the same kernels over many blocks).
        [[ $tool == racecheck && $group == heat* ]] && launch+=(-x GPK_TEST_MPI_GPU_N=64)
    fi
    t0=$(date +%s)
    env GPK_TEST_SMALL=1 GPK_TEST_QUICK=1 GPK_TEST_NO_LEAK_CHECK=1 ${only:+GPK_TEST_ONLY=$only} \
        timeout -k 5 "$limit" "${launch[@]}" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 3 \
        "$program" >"$log" 2>&1
    echo "$tool $test $group $? $(($(date +%s) - t0))" >"$log.row"
    if [ -n "$ompi_tmp" ]; then rm -rf "$ompi_tmp"; fi
}
export -f one
export B OUT LIMIT BUDGET START

rm -f "$OUT"/sanitize/*.row
# shellcheck disable=SC2016 # the single-quoted command is expanded by the bash that xargs starts
for tool in $TOOLS; do
    for t in "${tests[@]}"; do
        for g in $(groups_of "$t"); do
            [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $g "* ]] && echo "$tool $t $g"
        done
    done
done | xargs -P "$JOBS" -L 1 bash -c 'one "$0" "$1" "$2"'

bad=0
printf '%-10s %-24s %-14s %-7s %5s  %s\n' tool test group status s "tally | tool summary"
for row in "$OUT"/sanitize/*.row; do
    read -r tool test group status secs <"$row"
    log=${row%.row}
    tally=$(grep -hoE '[0-9]+ checks, [0-9]+ failed' "$log" 2>/dev/null | tail -1)
    summary=$(grep -hoE '(ERROR|RACECHECK|LEAK) SUMMARY: .*' "$log" 2>/dev/null | tail -1)
    [ "$status" = 0 ] || [ "$status" = 77 ] || bad=1
    printf '%-10s %-24s %-14s %-7s %5s  %s | %s\n' "$tool" "$test" "$group" "$status" "$secs" "${tally:--}" \
        "${summary:--}"
done
echo "== $(($(date +%s) - START)) s"
exit $bad
