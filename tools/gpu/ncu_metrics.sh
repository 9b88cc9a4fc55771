# The Nsight Compute metrics of tools/gpu/profile.sh and sep.sh (sourced): M, for ncu --metrics $M;
# tools/gpu/ncu_summary.py reads them.
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,launch__registers_per_thread,launch__grid_size,launch__block_size,dram__bytes_read.sum,dram__bytes_write.sum
M=$M,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_mio_throttle.ratio
M=$M,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_lg_throttle.ratio
M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active
