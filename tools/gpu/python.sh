#!/usr/bin/env bash
# The Python package on the GPU machine (run from the repository root; logs under $OUT):
#   1. builds libgpk (release, sm_90) in build-python with /opt/torch/.venv/bin/python3 (NumPy 2, CuPy,
#      PyTorch, SciPy, pytest) first on PATH, so that Meson picks it for the package;
#   2. runs the meson suite 'python': the CPU-backend suites, the GPU suite on CuPy and PyTorch device
#      arrays (results against the CPU backend, zero-copy pointers, streams), the example, a staged install;
#   3. runs bench/bench_python.py (gpk vs cupyx.scipy.ndimage and cupy.bincount/histogram, 8192x8192).
# Files: $OUT/python-build.log, $OUT/python-tests.log (meson's full test log), $OUT/python-bench.log,
# $OUT/bench_python.json. Ends with a summary table on stdout. Steps are capped at 45+255+120+60 s.
set -u -o pipefail
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
PY=${GPK_PYTHON:-/opt/torch/.venv/bin/python3}
export PATH="$(dirname "$PY"):/usr/local/cuda/bin:$PATH"
BUILD=build-python
declare -A result

step() { # name, limit in seconds, log file, command...
    local name=$1 limit=$2 log=$3
    shift 3
    echo "== $name ($(date -u +%H:%M:%S))"
    timeout "$limit" "$@" >>"$log" 2>&1
    local rc=$?
    result[$name]=$rc
    tail -n 15 "$log"
    echo "== $name: exit $rc"
    return $rc
}

"$PY" -c 'import numpy, scipy, pytest, cupy, torch; print("numpy", numpy.__version__, "cupy", cupy.__version__,
"torch", torch.__version__, "cuda", torch.cuda.is_available())' >"$OUT/python-build.log" 2>&1
rm -rf "$BUILD"
step setup 45 "$OUT/python-build.log" meson setup "$BUILD" -Dgpu_archs=90 -Dbuildtype=release -Dcli=disabled \
    -Dbindings=disabled -Dpython=enabled &&
    step build 255 "$OUT/python-build.log" ninja -C "$BUILD" lib/libgpk.so.0.1.0 &&
    {
        step tests 120 "$OUT/python-tests-stdout.log" meson test -C "$BUILD" --suite python --no-rebuild \
            --print-errorlogs
        cp "$BUILD/meson-logs/testlog.txt" "$OUT/python-tests.log"
        step bench 60 "$OUT/python-bench.log" env GPK_LIBRARY="$PWD/$BUILD/lib/libgpk.so.0.1.0" \
            PYTHONPATH="$PWD/bindings/python" "$PY" bench/bench_python.py --json "$OUT/bench_python.json"
    }

echo
echo "== summary"
printf '%-8s %s\n' step "exit status"
for s in setup build tests bench; do printf '%-8s %s\n' "$s" "${result[$s]:-not run}"; done
if [ -f "$BUILD/meson-logs/testlog.txt" ]; then
    echo
    grep -E '^ *[0-9]+/[0-9]+ gpk:python' "$OUT/python-tests-stdout.log" | sed 's/^ *//'
fi
if [ -f "$OUT/python-bench.log" ]; then
    echo
    grep -E 'x$|^gpk |^case|largest' "$OUT/python-bench.log"
fi
