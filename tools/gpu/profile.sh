#!/usr/bin/env bash
# Nsight Compute figures for the issue-13 cases whose targets are not met, from the repository root on the
# GPU machine: every gpk kernel launched by `bench_histogram u8image` (u8 256 bins, 8192^2) and
# `bench_convolve f32 separable` (f32 3x3 / 9x9 box, separable f32 radius 8 / 32), a few metrics each
# (duration, DRAM / SM / L1 throughput as % of peak, occupancy, registers, DRAM bytes), grouped by kernel
# and grid: medians. B = build directory (release, sm_90, -Dbench=true; built here if missing), OUT = logs.
set -u -o pipefail
OUT=${OUT:-profile-logs}
B=${B:-build}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
[ -d $B ] || meson setup $B -Dgpu_archs=90 -Dbuildtype=release -Dbench=true >"$OUT/profile-build.log" 2>&1
ninja -C $B bench/bench_histogram bench/bench_convolve >>"$OUT/profile-build.log" 2>&1 ||
    { tail -30 "$OUT/profile-build.log"; exit 1; }
. tools/gpu/ncu_metrics.sh # M: the metrics
prof() { # NAME BENCH ARGS...
    local name=$1
    shift
    timeout 200 ncu --csv --page raw --print-units base --kernel-name-base demangled --kernel-name "regex:gpk::" --launch-count 300 \
        --metrics $M "$@" >"$OUT/ncu-$name.csv" 2>"$OUT/ncu-$name.err"
    echo "ncu $name: exit $?"
}
prof hist $B/bench/bench_histogram u8image
prof conv $B/bench/bench_convolve f32 separable
python3 tools/gpu/ncu_summary.py "$OUT"/ncu-*.csv
