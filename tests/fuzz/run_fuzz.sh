#!/bin/sh
# Runs a libFuzzer target for a bounded time: new inputs go to WORK_DIR, the committed seeds
# in SEED_DIR are read only, and a crashing input is saved in WORK_DIR (crash-*) and fails the run.
# Usage: run_fuzz.sh FUZZER SEED_DIR WORK_DIR [SECONDS]   (SECONDS: default $GPK_FUZZ_SECONDS or 60)
set -eu
fuzzer=$1
seeds=$2
work=$3
secs=${4:-${GPK_FUZZ_SECONDS:-60}}
mkdir -p "$work/corpus"
exec "$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" "$seeds"
