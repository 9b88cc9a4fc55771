#!/usr/bin/env bash
# The whole tree on the GPU machine, from the repository root, within one call of at most 10 minutes:
#   build     configure $B where needed (release, sm_90, test hooks, MPI, the Python package, benchmarks; the
#             torch venv's python3, which has NumPy, CuPy and PyTorch, first on PATH) and build every target; where the
#             other stages chosen are only mpi, mpiinfo and python, cli/gpk and test_mpi_gpu alone (python
#             builds in build-pip, not $B)
#   gpu       the Meson suite gpu (every GPU test, the convolution sweep included), one test at a time
#   others    the suites api, cli, mpi and python, 8 at a time
#   mpi       tests/mpi/test_mpi_gpu on each count of NPS (default "2 4": ranks sharing the GPU; "1 2" or
#             "1 2 4" on as many GPUs, one a rank), halo paths automatic (CUDA IPC between GPUs) and host
#             staging forced (GPK_TEST_MPI_HALO=host): heat, convolution and histograms equal to one process,
#             host and device blocks, a launch failing on the last rank returned by every rank; then on 2 ranks
#             under the MPS server where it exists (started for this part only)
#   mpiinfo   gpk info on the largest count of NPS: the heat halo path of each link, with its reason
#   cli       the command on the CUDA backend: the course check on pat1, the same under mpirun -np 2 and 3,
#             a heat map and a histogram plot (kept under $OUT)
#   large     test_gpu_histogram with GPK_TEST_LARGE=1: more than 2^32 samples, on the device and pageable
#   sanitize  compute-sanitizer, every tool on every group of every GPU test (tools/gpu/sanitize_groups.sh;
#             SANITIZE_TESTS="test_gpu_heat ..." picks the programs), in the time left
#   python    the Python package with its CUDA backend as pip users get it (tools/pip_check.sh with the torch
#             venv's python3, in build-pip, not $B): the wheel's build (sm_90) by `pip install
#             --no-build-isolation` into a fresh venv, the Python suite from outside the checkout against
#             the installed package, gpk.mpi's suite on 2 ranks (mpi4py), `python3 -m build --wheel` (else
#             `pip wheel`) in the same build folder, the wheel into a second venv with --no-index --no-deps
#             and its checks; then bindings/python/tests/test_gpu.py (CuPy and PyTorch arrays in place) from
#             the installed wheel. The wheel, pip_check.log, test_gpu_from_wheel.log and
#             python-environment.txt go to $OUT. meson-python is needed: where `import mesonpy` fails, the
#             stage takes the pure-Python copy in .whl/pydeps, made on the development machine and carried
#             (carry: [".whl"]):
#               mkdir -p .whl/pydeps && cp -r /usr/lib/python3/dist-packages/{mesonpy,pyproject_metadata} .whl/pydeps/
#             tools/pip_check.sh has at most 540 s: run the stage alone, STAGES=python tools/gpu/check.sh
# Environment: STAGES (default every stage but large and python), B (build folder, default build-check), OUT
# (logs, default check-logs), BUDGET (seconds for the whole call, default 560): each command's time limit is
# cut to what is left; NPS (rank counts of mpi and mpiinfo, default "2 4"). The MPI GPU tests on 1, 2 and 4
# GPUs: NPS="1 2 4" STAGES="build mpi mpiinfo" tools/gpu/check.sh. Ends with a summary table, also in
# $OUT/summary.log.
#
# tools/gpu/bench.sh and tools/gpu/profile.sh source this file for the helpers above the line that returns.
set -u -o pipefail
shopt -s lastpipe # "... | while read -r l; do row ...; done" adds its rows to this shell's ROWS

# gpu_setup NAME STAGES: the settings every GPU script shares (OUT, B, BUDGET, STAGES where unset; START,
# ROWS, PATH, Open MPI as root, GPK_TEST_DATA where the course pattern is found beside the checkout).
gpu_setup() {
    OUT=${OUT:-$1-logs}
    B=${B:-build-check}
    BUDGET=${BUDGET:-560}
    STAGES=${STAGES:-$2}
    START=$(date +%s)
    ROWS=()
    MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
    mkdir -p "$OUT"
    export PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
    local d
    for d in shared/data ../shared/data; do
        if [ -f "$d/pat1_100x150.pgm" ]; then
            GPK_TEST_DATA=$(cd "$d" && pwd)
            export GPK_TEST_DATA
            break
        fi
    done
}

row() { ROWS+=("$(printf '%-48s %s' "$1" "$2")"); }
left() { echo $((BUDGET - ($(date +%s) - START))); }
want() { [[ " $STAGES " == *" $1 "* ]]; }

# rows_from PATTERN LOG: the lines of $OUT/LOG that match PATTERN (an extended regex) as summary rows.
rows_from() {
    grep -E "$1" "$OUT/$2" 2>/dev/null | cut -c1-160 | while read -r l; do row "  $l" ""; done
}

# run NAME LIMIT LOG COMMAND...: COMMAND under a time limit cut to the time left, its output appended to
# $OUT/LOG, a row in the summary. Returns the command's status (124: out of time, or no time left).
run() {
    local name=$1 limit=$2 log=$3 l t0 rc
    shift 3
    l=$(left)
    [ "$l" -lt "$limit" ] && limit=$l
    if [ "$limit" -le 5 ]; then
        row "$name" "skipped (no time left)"
        return 124
    fi
    echo "== $name (limit ${limit}s)" >>"$OUT/$log"
    t0=$(date +%s)
    timeout -k 5 "$limit" "$@" >>"$OUT/$log" 2>&1
    rc=$?
    echo "== $name: exit $rc after $(($(date +%s) - t0)) s" >>"$OUT/$log"
    row "$name" "exit $rc ($(($(date +%s) - t0)) s)"
    return $rc
}

summary() {
    echo
    echo "== summary ($(($(date +%s) - START)) s, logs in $OUT)"
    printf '%s\n' "${ROWS[@]}"
}

# build TARGET...: configures $B where it has no build.ninja, then builds the targets (`all` for every
# one) as the stage "build"; a failure ends the script with the log's tail and the summary.
build() {
    if [ ! -f "$B/build.ninja" ]; then
        meson setup "$B" -Dgpu_archs=90 -Dbuildtype=release -Dtest_hooks=true -Dbindings=disabled -Dmpi=enabled -Dpython=enabled \
            -Dbench=true >>"$OUT/build.log" 2>&1 || {
            tail -30 "$OUT/build.log"
            exit 1
        }
    fi
    run build 330 build.log ninja -C "$B" "$@" || {
        tail -40 "$OUT/build.log"
        summary
        exit 1
    }
}

# mps_start / mps_stop: NVIDIA's MPS server for this script only (its pipes under /tmp/gpk-mps); mps_start
# fails where the control program is missing or will not start.
mps_start() {
    command -v nvidia-cuda-mps-control >/dev/null || return 1
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/gpk-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/gpk-mps/log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d
}
mps_stop() {
    echo quit | nvidia-cuda-mps-control
    sleep 1
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
}

[[ ${BASH_SOURCE[0]} != "$0" ]] && return 0

gpu_setup check "build gpu others mpi mpiinfo cli sanitize"
NPS=${NPS:-2 4}
most=${NPS##* }

if want build; then
    if want gpu || want others || want cli || want large || want sanitize; then
        build all
    elif want mpi || want mpiinfo; then
        build cli/gpk tests/mpi/test_mpi_gpu
    fi
fi
if want gpu; then
    run "suite gpu" 300 gpu.log meson test -C "$B" --suite gpu --no-rebuild --num-processes 1 --print-errorlogs
    cp "$B/meson-logs/testlog.txt" "$OUT/gpu-testlog.txt" 2>/dev/null
    rows_from '^ *[0-9]+/[0-9]+ ' gpu.log
fi
if want others; then
    run "suites api cli mpi python" 200 others.log meson test -C "$B" --suite api --suite cli --suite mpi \
        --suite python --no-rebuild --num-processes 8 --print-errorlogs
    grep -E '^(Ok|Fail|Skipped|Timeout):' "$OUT/others.log" | tr '\n' ' ' | while read -r l; do row "  $l" ""; done
    rows_from '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT|SKIP)' others.log
fi
if want mpi; then
    for np in $NPS; do
        run "test_mpi_gpu -np $np" 120 mpi.log "${MPIRUN[@]}" -np "$np" "$B/tests/mpi/test_mpi_gpu"
        run "test_mpi_gpu -np $np, host staging" 120 mpi.log "${MPIRUN[@]}" -np "$np" -x GPK_TEST_MPI_HALO=host \
            "$B/tests/mpi/test_mpi_gpu"
    done
    if [ "$(left)" -gt 60 ] && mps_start >>"$OUT/mpi.log" 2>&1; then
        run "test_mpi_gpu -np 2 under MPS" 120 mpi.log "${MPIRUN[@]}" -np 2 "$B/tests/mpi/test_mpi_gpu"
        "${MPIRUN[@]}" -np 2 "$B/cli/gpk" info >>"$OUT/mpi.log" 2>&1
        mps_stop
    fi
    rows_from 'test_mpi_gpu on|GPU sharing|<->|FAIL' mpi.log
fi
if want mpiinfo; then
    run "gpk info -np $most" 60 mpiinfo.log "${MPIRUN[@]}" -np "$most" "$B/cli/gpk" info
    rows_from '<->|MPI:' mpiinfo.log
fi
if want cli; then
    g=$B/cli/gpk
    if [ -n "${GPK_TEST_DATA:-}" ]; then
        p=$GPK_TEST_DATA/pat1_100x150.pgm
        heat=(heat -n 150 -m 100 -i 5000 -k 500 -e 0.001 -L -100 -H 100 -c "$p" -t "$p" --backend cuda)
        want_line="5000 -6.818562e+00 2.687404e+01 4.175908e-03 8.652341e+00"
        for np in 1 2 3; do
            launcher=()
            [ "$np" -gt 1 ] && launcher=("${MPIRUN[@]}" -np "$np")
            run "gpk heat pat1, $np process(es)" 60 cli.log "${launcher[@]}" "$g" "${heat[@]}"
            got=$(grep -E '^5000 ' "$OUT/cli.log" | tail -1 | awk '{print $1, $2, $3, $4, $5}')
            if [ "$got" = "$want_line" ]; then
                row "  course check, $np process(es)" "ok"
            else
                row "  course check, $np process(es)" "WRONG: '$got'"
            fi
        done
    fi
    run "gpk heat -o heat.png" 60 cli.log "$g" heat --backend cuda -o "$OUT/heat.png"
    run "gpk histogram --plot" 60 cli.log "$g" histogram --backend cuda --bins 255 --range 0:255 \
        --plot "$OUT/histogram.png" "$OUT/heat.png"
fi
if want large; then
    run "test_gpu_histogram, GPK_TEST_LARGE=1" 300 large.log env GPK_TEST_LARGE=1 "$B/tests/gpu/test_gpu_histogram"
    rows_from 'checks' large.log
fi
if want sanitize; then
    l=$(left)
    if [ "$l" -gt 30 ]; then
        # shellcheck disable=SC2086 # SANITIZE_TESTS is a list of program names
        B=$B OUT=$OUT BUDGET=$l bash tools/gpu/sanitize_groups.sh ${SANITIZE_TESTS:-} >"$OUT/sanitize.log" 2>&1
        row "compute-sanitizer by group" "exit $? ($(grep -cE ' (0|77) +[0-9]+ ' "$OUT/sanitize.log") clean)"
        grep -vE ' (0|77) +[0-9]+ |^tool |^== ' "$OUT/sanitize.log" | while read -r l; do row "  $l" ""; done
    else
        row "compute-sanitizer by group" "skipped (no time left)"
    fi
fi
if want python; then
    PYTHON=$(command -v python3)
    backend=""
    if ! "$PYTHON" -c "import mesonpy" 2>/dev/null && [ -d .whl/pydeps/mesonpy ]; then
        backend="$PWD/.whl/pydeps"
    fi
    {
        echo "python: $PYTHON ($("$PYTHON" --version 2>&1))"
        PYTHONPATH=$backend "$PYTHON" -c "import mesonpy; print('meson-python', mesonpy.__version__, mesonpy.__file__)" 2>&1
        "$PYTHON" -c "import build; print('build', build.__version__)" 2>&1 | tail -n 1
        echo "meson $(meson --version), nvcc: $(nvcc --version | tail -n 1)"
        nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    } >"$OUT/python-environment.txt" 2>&1
    rows_from '^(python:|meson-python|meson) ' python-environment.txt
    site=$("$PYTHON" -c 'import site; print(site.getsitepackages()[0])')
    if run "tools/pip_check.sh (CUDA, sm_90)" 540 pip_check.log env BACKEND_PATH="$backend" PYTHON="$PYTHON" \
        EXTRA_SITE="$site" SETUP_ARG=-Dgpu_archs=90 WORK="$PWD/build-pip" bash tools/pip_check.sh; then
        rows_from '[0-9]+ (passed|failed|skipped|errors?)[ ,].*in [0-9.]+s|^wheel ' pip_check.log
        # shellcheck disable=SC2016 # expanded by the sh that run starts
        run "test_gpu.py from the wheel" 300 test_gpu_from_wheel.log sh -c 'cd "$1" &&
            GPK_TEST_PACKAGE_UNDER="$1/venv-wheel" venv-wheel/bin/python -m pytest -v -p no:cacheprovider -rs "$2"' \
            sh "$PWD/build-pip" "$PWD/bindings/python/tests/test_gpu.py"
        rows_from '[0-9]+ (passed|failed|skipped|errors?)[ ,].*in [0-9.]+s' test_gpu_from_wheel.log
        cp build-pip/dist/*.whl "$OUT/" 2>/dev/null
    else
        tail -n 30 "$OUT/pip_check.log" | cut -c1-160 | while read -r l; do row "  $l" ""; done
    fi
fi
summary | tee "$OUT/summary.log"
