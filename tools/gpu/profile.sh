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
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,launch__registers_per_thread,launch__grid_size,launch__block_size,dram__bytes_read.sum,dram__bytes_write.sum
M=$M,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_mio_throttle.ratio
M=$M,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_lg_throttle.ratio
M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active
prof() { # NAME BENCH ARGS...
    local name=$1
    shift
    timeout 200 ncu --csv --page raw --print-units base --kernel-name-base demangled --kernel-name "regex:gpk::" --launch-count 300 \
        --metrics $M "$@" >"$OUT/ncu-$name.csv" 2>"$OUT/ncu-$name.err"
    echo "ncu $name: exit $?"
}
prof hist $B/bench/bench_histogram u8image
prof conv $B/bench/bench_convolve f32 separable
python3 - "$OUT" <<'PY'
import csv, sys, statistics, glob, re
for path in sorted(glob.glob(sys.argv[1] + "/ncu-*.csv")):
    rows = [r for r in csv.reader(open(path)) if r]
    hdr = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if hdr is None:
        print(path, "no rows"); continue
    h = rows[hdr]; data = [r for r in rows[hdr + 2:] if len(r) == len(h)]
    col = {k: h.index(k) for k in h}
    groups = {}
    for r in data:
        name = re.sub(r"\(.*", "", r[col["Kernel Name"]])[:70]
        key = (name, r[col["launch__grid_size"]], r[col["launch__block_size"]])
        groups.setdefault(key, []).append(r)
    print("==", path)
    def med(rs, k):
        try: return statistics.median(float(x[col[k]].replace(",", "")) for x in rs)
        except Exception: return float("nan")
    for (name, grid, block), rs in groups.items():
        print(f"{name} grid {grid} block {block} n={len(rs)}: {med(rs,'gpu__time_duration.sum')/1e3:.1f} us, "
              f"dram {med(rs,'dram__throughput.avg.pct_of_peak_sustained_elapsed'):.0f}%, "
              f"sm {med(rs,'sm__throughput.avg.pct_of_peak_sustained_elapsed'):.0f}%, "
              f"l1 {med(rs,'l1tex__throughput.avg.pct_of_peak_sustained_elapsed'):.0f}%, "
              f"issue {med(rs,'smsp__issue_active.avg.pct_of_peak_sustained_active'):.0f}%, "
              f"warps {med(rs,'sm__warps_active.avg.pct_of_peak_sustained_active'):.0f}%, "
              f"regs {med(rs,'launch__registers_per_thread'):.0f}, "
              f"MB r/w {med(rs,'dram__bytes_read.sum')/1e6:.0f}/{med(rs,'dram__bytes_write.sum')/1e6:.0f}, "
              f"stall lsb/mio/bar/lg {med(rs,'smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio'):.1f}/"
              f"{med(rs,'smsp__average_warp_latency_issue_stalled_mio_throttle.ratio'):.1f}/"
              f"{med(rs,'smsp__average_warp_latency_issue_stalled_barrier.ratio'):.1f}/"
              f"{med(rs,'smsp__average_warp_latency_issue_stalled_lg_throttle.ratio'):.1f}")
PY
