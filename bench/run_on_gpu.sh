#!/bin/bash
# Builds gpk on a GPU machine and runs the stages named on the command line, appending every stage's output
# to $LOGS/stages.log (one file, so that it comes back from a lease whole):
#   build      configure build-gpu (release, sm_90, benchmarks) and build the library, GPU tests, benchmarks
#   test       meson test --suite gpu
#   memcheck   compute-sanitizer --tool memcheck on the histogram, convolution and context tests (quick sizes)
#   racecheck  compute-sanitizer --tool racecheck on the same
#   large      the histogram test with GPK_TEST_LARGE=1 (more than 2^32 samples, device and pageable)
#   bench      bench_histogram and bench_convolve
# Usage: bench/run_on_gpu.sh build test bench   (from the repository root; LOGS defaults to ./gpu-logs)
set -u -o pipefail
LOGS=${LOGS:-gpu-logs}
mkdir -p "$LOGS"
TESTS="test_gpu_histogram test_gpu_convolve test_gpu_context"
status=0

stage() { # name, time limit in seconds, command...
    local name=$1 limit=$2
    shift 2
    echo "== $name"
    timeout "$limit" "$@" >/tmp/stage.log 2>&1
    local rc=$?
    { echo "== $name: exit $rc"; cat /tmp/stage.log; } >>"$LOGS/stages.log"
    tail -n "${TAIL:-25}" /tmp/stage.log
    echo "== $name: exit $rc"
    [ $rc -eq 0 ] || status=1
}

for s in "$@"; do
    case $s in
    build)
        [ -d build-gpu ] || meson setup build-gpu -Dgpu_archs=90 -Dbench=true -Dbuildtype=release >/tmp/setup.log 2>&1 ||
            { tail -n 30 /tmp/setup.log; exit 1; }
        targets="lib/libgpk.so.0.1.0"
        for t in $TESTS test_gpu_heat; do [ -f tests/gpu/$t.cpp ] && targets="$targets tests/gpu/$t"; done
        for b in bench_histogram bench_convolve bench_heat; do [ -f bench/$b.cu ] && targets="$targets bench/$b"; done
        stage build 420 ninja -C build-gpu $targets
        ;;
    test)
        stage test 420 meson test -C build-gpu --suite gpu --no-rebuild --print-errorlogs
        ;;
    memcheck | racecheck)
        for t in $TESTS; do
            stage "$s-$t" "${SANITIZER_LIMIT:-240}" env GPK_TEST_QUICK=1 compute-sanitizer --tool "$s" --error-exitcode 1 build-gpu/tests/gpu/$t
        done
        ;;
    large)
        stage large 300 env GPK_TEST_LARGE=1 build-gpu/tests/gpu/test_gpu_histogram
        ;;
    bench)
        stage bench_histogram 300 build-gpu/bench/bench_histogram
        [ -x build-gpu/bench/bench_convolve ] && stage bench_convolve 300 build-gpu/bench/bench_convolve
        ;;
    esac
done
exit $status
