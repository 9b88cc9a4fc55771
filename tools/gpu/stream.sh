#!/usr/bin/env bash
# On the GPU machine: builds bench_stream (release, sm_90) and runs it at the default sizes and with --large
# (PERF.md's beyond-GPU rows: 90 GiB histogram, 44 + 44 GiB convolution); arguments: the modes to run
# ("default", "--large"; default: both). Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
b=build-stream
[ -d $b ] || meson setup $b -Dgpu_archs=90 -Dbuildtype=release -Dbench=true -Dcli=disabled -Dbindings=disabled \
  -Dpython=disabled -Dtests=false > "$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
ninja -C $b bench/bench_stream > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
free -g | head -2; nproc
modes=("$@"); [ ${#modes[@]} -eq 0 ] && modes=(default --large)
for mode in "${modes[@]}"; do
  [ "$mode" = default ] && mode=""
  echo "== bench_stream $mode"; timeout 300 $b/bench/bench_stream $mode 2>&1 | tee -a "$OUT/stream.log"
done
