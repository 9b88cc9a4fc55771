#!/usr/bin/env python3
"""Summary of ncu --csv --page raw files (tools/gpu/profile.sh's metrics): per kernel and grid, medians of
duration, DRAM / SM / L1 throughput, issue, warps active, registers, DRAM bytes and stall reasons.
Usage: ncu_summary.py FILE.csv..."""
import csv, sys, statistics, glob, re
for path in sys.argv[1:]:
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
