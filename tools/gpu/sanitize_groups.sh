#!/usr/bin/env bash
# compute-sanitizer on the GPU tests one group at a time, several processes at once, on the GPU machine from
# the repository root: each (tool, test, group) is its own process (GPK_TEST_ONLY=group, small and quick
# mode), so that a slow tool (racecheck) on one group neither hides nor holds up the others, and the whole
# test gets checked within a call. A test's groups are the names its main() passes to wanted(); a test
# without groups runs whole.
#   tools/gpu/sanitize_groups.sh [TEST...]          (default: every test_gpu_* program built in $B)
# Environment: B (build directory, default build-check), OUT (logs, default sanitize-logs), TOOLS (default
# "racecheck memcheck initcheck synccheck"), JOBS (processes at once, default 8), LIMIT (seconds a process at
# most, default 300), BUDGET (seconds for the whole run, default 560: no process starts, or runs, past it).
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
fi

# The groups of a test: wanted("name") in its source, or "all" (no GPK_TEST_ONLY) where it has none.
groups_of() {
    local src=tests/gpu/$1.cpp g
    g=$(grep -o 'wanted("[a-z0-9_]*")' "$src" 2>/dev/null | sed 's/wanted("//; s/")//' | tr '\n' ' ')
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
    [ "$group" != all ] && only=$group
    local t0
    t0=$(date +%s)
    env GPK_TEST_SMALL=1 GPK_TEST_QUICK=1 GPK_TEST_NO_LEAK_CHECK=1 ${only:+GPK_TEST_ONLY=$only} \
        timeout -k 5 "$limit" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 3 "$B/tests/gpu/$test" \
        >"$log" 2>&1
    echo "$tool $test $group $? $(($(date +%s) - t0))" >"$log.row"
}
export -f one
export B OUT LIMIT BUDGET START

rm -f "$OUT"/sanitize/*.row
# shellcheck disable=SC2016 # the single-quoted command is expanded by the bash that xargs starts
for tool in $TOOLS; do
    for t in "${tests[@]}"; do
        for g in $(groups_of "$t"); do echo "$tool $t $g"; done
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
