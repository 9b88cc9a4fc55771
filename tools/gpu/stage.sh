# Stages for the tools/gpu scripts (sourced): each command runs within a time limit cut to what is left of
# BUDGET seconds since START, its output appended to a log under $OUT, and a row for the summary table in
# SUMMARY. The caller sets OUT, START, BUDGET and SUMMARY=(), or has stage_setup set them.

# stage_setup NAME BUDGET: OUT (default NAME-logs, created), B (default build-NAME) and BUDGET (default the
# given seconds) where the caller has not set them; START now; SUMMARY empty; the CUDA tools first on PATH.
stage_setup() {
    OUT=${OUT:-$1-logs}
    mkdir -p "$OUT"
    B=${B:-build-$1}
    BUDGET=${BUDGET:-$2}
    START=$(date +%s)
    SUMMARY=()
    export PATH=/usr/local/cuda/bin:$PATH
}

left() { echo $((BUDGET - ($(date +%s) - START))); }

# kernel_resources DIR PATTERN: a line for each kernel of DIR's libgpk whose line in cuobjdump -res-usage matches
# PATTERN (an extended regex): "Function NAME: REG:n STACK:n SHARED:n LOCAL:n ...", sorted; where cuobjdump or
# the library is missing, a line saying so (status 1).
kernel_resources() {
    local lib
    lib=$(ls "$1"/lib/libgpk.so.* 2>/dev/null | head -1)
    if ! command -v cuobjdump >/dev/null || [ -z "$lib" ]; then
        echo "cuobjdump or the library missing"
        return 1
    fi
    cuobjdump -res-usage "$lib" 2>&1 | grep -A1 -E "$2" | grep -vE "^--$" | paste - - | sed -E 's/\s+/ /g' |
        sort -u
}

# stage NAME LIMIT LOG COMMAND...: runs COMMAND with a time limit (cut to the time left), appending to LOG.
# Returns the command's status; 125 when skipped (under 15 s left, or NAME's first word in $SKIP, a list of
# stage names separated by spaces).
stage() {
    local name=$1 limit=$2 log=$3
    shift 3
    local l
    l=$(left)
    if [ "$l" -lt 15 ] || [[ " ${SKIP:-} " == *" ${name%% *} "* ]]; then
        SUMMARY+=("$(printf '%-34s %7s %6s' "$name" skipped -)")
        echo "== $name: skipped (${l}s left, SKIP '${SKIP:-}')" >>"$OUT/$log"
        return 125
    fi
    [ "$limit" -gt "$l" ] && limit=$l
    echo "== $name (limit ${limit}s)" | tee -a "$OUT/$log"
    local t0
    t0=$(date +%s)
    timeout -k 5 "$limit" "$@" >>"$OUT/$log" 2>&1
    local rc=$?
    local dt=$(($(date +%s) - t0))
    echo "== $name: exit $rc after ${dt}s" | tee -a "$OUT/$log"
    SUMMARY+=("$(printf '%-34s %7s %6s' "$name" "$rc" "${dt}s")")
    return $rc
}

# build_convolution DIR LIMIT: configures DIR if needed (release, sm_90, benchmarks and tests; no command,
# bindings, Python or MPI) and builds the convolution tests and bench_convolve as stage "build" into
# build.log; on failure prints the log's tail and the summary so far, and exits.
build_convolution() {
    local dir=$1 limit=$2
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" -Dgpu_archs=90 -Dbuildtype=release -Dbench=true -Dtests=true -Dcli=disabled \
            -Dbindings=disabled -Dpython=disabled -Dmpi=disabled >"$OUT/build.log" 2>&1 || {
            tail -30 "$OUT/build.log"
            exit 1
        }
    fi
    stage build "$limit" build.log ninja -C "$dir" tests/gpu/test_gpu_convolve tests/gpu/test_gpu_convolve_sweep \
        bench/bench_convolve || {
        tail -40 "$OUT/build.log"
        printf '%s\n' "${SUMMARY[@]}"
        exit 1
    }
}
