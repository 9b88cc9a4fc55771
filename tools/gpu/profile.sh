#!/usr/bin/env bash
# Nsight Compute and register use of gpk's kernels on the GPU machine, from the repository root, within one
# call of at most 10 minutes:
#   build      configure $B where needed (as tools/gpu/check.sh does) and build the benchmarks
#   regs       (no GPU) registers, stack, shared and local memory of every kernel in the library
#              (cuobjdump -res-usage) into $OUT/regs.txt; a kernel with STACK or LOCAL above 0 spills
#   heat       every kernel of a 4096^2 call of 12 iterations (bench_heat profile 4096 12)
#   histogram  every kernel of bench_histogram u8image (u8 256 bins, 8192^2)
#   convolve   every kernel of bench_convolve u8 small3 minmax f32 separable (8192^2)
#   summary    per kernel and grid, medians over its launches: duration, DRAM / SM / L1 throughput and issue
#              as % of peak, warps active, registers, DRAM bytes, the leading stall reasons
# Each profile stage writes ncu's raw CSV to $OUT/ncu-STAGE.csv (at most 300 launches). Environment: STAGES
# (default every stage), B (default build-check), OUT (default profile-logs), BUDGET (seconds, default 560).
# shellcheck source=tools/gpu/check.sh
. "$(dirname "$0")/check.sh"
gpu_setup profile "build regs heat histogram convolve summary"

M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,launch__registers_per_thread,launch__grid_size,launch__block_size,dram__bytes_read.sum,dram__bytes_write.sum
M=$M,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio
M=$M,smsp__average_warp_latency_issue_stalled_mio_throttle.ratio
M=$M,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_lg_throttle.ratio

# ncu_stage NAME COMMAND...: every gpk kernel COMMAND launches, into $OUT/ncu-NAME.csv.
ncu_stage() {
    local name=$1
    shift
    # shellcheck disable=SC2016 # expanded by the sh that run starts
    run "ncu $name" 150 "ncu-$name.log" sh -c 'out=$1; shift; exec "$@" >"$out"' sh "$OUT/ncu-$name.csv" \
        ncu --csv --page raw --print-units base --kernel-name-base demangled --kernel-name "regex:gpk::" \
        --launch-count 300 --metrics "$M" "$@"
}

want build && build bench/bench_heat bench/bench_histogram bench/bench_convolve
if want regs; then
    libs=("$B"/lib/libgpk.so.*.*.*)
    # shellcheck disable=SC2016 # expanded by the sh that run starts
    run regs 60 regs.log sh -c 'cuobjdump -res-usage "$1" | grep -A1 Function | grep -v "^--$" | paste - - |
        sed -E "s/[[:space:]]+/ /g" | sort -u >"$2"' sh "${libs[0]}" "$OUT/regs.txt"
    row "  kernels with stack or local memory" "$(grep -cE 'STACK:[1-9]|LOCAL:[1-9]' "$OUT/regs.txt")"
fi
want heat && ncu_stage heat "$B/bench/bench_heat" profile 4096 12
want histogram && ncu_stage histogram "$B/bench/bench_histogram" u8image
want convolve && ncu_stage convolve "$B/bench/bench_convolve" u8 small3 minmax f32 separable
csvs=("$OUT"/ncu-*.csv)
if want summary && [ -e "${csvs[0]}" ]; then
    python3 - "${csvs[@]}" >"$OUT/summary.txt" 2>&1 <<'PY'
"""Per kernel and grid of ncu --csv --page raw files: medians of the metrics profile.sh asks for."""
import csv, re, statistics, sys

COLUMNS = [("us", "gpu__time_duration.sum", 1e-3), ("dram%", "dram__throughput.avg.pct_of_peak_sustained_elapsed", 1),
           ("sm%", "sm__throughput.avg.pct_of_peak_sustained_elapsed", 1),
           ("l1%", "l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 1),
           ("issue%", "smsp__issue_active.avg.pct_of_peak_sustained_active", 1),
           ("warps%", "sm__warps_active.avg.pct_of_peak_sustained_active", 1),
           ("regs", "launch__registers_per_thread", 1), ("MB read", "dram__bytes_read.sum", 1e-6),
           ("MB written", "dram__bytes_write.sum", 1e-6),
           ("stall lsb", "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio", 1),
           ("mio", "smsp__average_warp_latency_issue_stalled_mio_throttle.ratio", 1),
           ("barrier", "smsp__average_warp_latency_issue_stalled_barrier.ratio", 1),
           ("lg", "smsp__average_warp_latency_issue_stalled_lg_throttle.ratio", 1)]

def median(rows, index, scale):
    try:
        return statistics.median(float(r[index].replace(",", "")) for r in rows) * scale
    except (ValueError, statistics.StatisticsError):
        return float("nan")

for path in sys.argv[1:]:
    rows = [r for r in csv.reader(open(path)) if r]
    head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    print("==", path)
    if head is None:
        print("no kernels")
        continue
    names = rows[head]
    col = {n: i for i, n in enumerate(names)}
    groups = {}
    for r in rows[head + 2:]:
        if len(r) == len(names):
            kernel = re.sub(r"\(.*", "", r[col["Kernel Name"]])[:70]
            groups.setdefault((kernel, r[col["launch__grid_size"]], r[col["launch__block_size"]]), []).append(r)
    for (kernel, grid, block), rs in groups.items():
        figures = ", ".join(f"{label} {median(rs, col[m], s):.1f}" for label, m, s in COLUMNS if m in col)
        print(f"{kernel} grid {grid} block {block} n={len(rs)}: {figures}")
PY
    row summary "$OUT/summary.txt"
    cat "$OUT/summary.txt"
fi
summary
