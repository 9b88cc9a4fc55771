#!/usr/bin/env bash
# Issue 14 on the GPU machine (one H100, Open MPI 4.1.6 without CUDA support), from the repository root,
# within 8 minutes; logs (at most 8 files) under $OUT, a summary table on stdout:
#   build     release, sm_90, -Dmpi=enabled (build-mpi-gpu/): the library, libgpk_mpi, the gpk command, the
#             GPU heat test, the MPI GPU test and the heat benchmark only
#   ranks     test_mpi_gpu on 2 (then 4) ranks sharing the GPU: heat 4096^2 (reports, convergence inside a
#             pass, a resumed checkpoint, a launch failing on the last rank mid-run), six convolutions, three
#             histograms, each rank's part bit-identical to the single-process CUDA result
#   bench     bench_mpi_heat 16384^2 f64 on 1 process (gpk_heat_run, and gpk_mpi_heat_run on 1 rank), then 2
#             (then 4) ranks on the one GPU, each overlapped and not (GPK_TEST_MPI_OVERLAP=0): ms per iteration
#             from runs of 100 and 200 iterations, and one halo exchange of 4 rows of 16384 doubles
#   mps       where nvidia-cuda-mps-control exists: the MPS server started for this script only (its pipes
#             under /tmp/gpk-mps), gpk info on 2 ranks (its GPU sharing line: the daemon found), test_mpi_gpu and bench_mpi_heat
#             on 2 and 4 ranks under it, the server stopped
#   cli       gpk heat on the course pattern, one process against mpirun -np 2 and 3 (--backend cuda)
#   gpuheat   test_gpu_heat's groups that the checkpoint and row-mean changes touch (awkward sizes,
#             convergence, cancellation, determinism, checkpoints, pat1): the CUDA solver against the CPU
# In that order (ranks 2, bench 1 and 2, ranks 4, bench 4, cli, gpuheat); stages are cut to the time left.
set -u -o pipefail
OUT=${OUT:-mpi-logs}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
B=${B:-build-mpi-gpu}
START=$(date +%s)
BUDGET=${BUDGET:-460}
MPIRUN="mpirun --allow-run-as-root --oversubscribe"
ROWS=()
row() { ROWS+=("$(printf '%-58s %s' "$1" "$2")"); }
left() { echo $((BUDGET - ($(date +%s) - START))); }
for d in shared/data ../shared/data; do [ -f $d/pat1_100x150.pgm ] && export GPK_TEST_DATA=$(cd $d && pwd) && break; done

# run NAME LIMIT LOG COMMAND...: COMMAND with a time limit (cut to the time left), its output appended to LOG.
run() {
    local name=$1 limit=$2 log=$3
    shift 3
    local l=$(left)
    [ "$l" -lt "$limit" ] && limit=$l
    if [ "$limit" -le 5 ]; then
        row "$name" "skipped (no time left)"
        return 1
    fi
    echo "== $name (limit ${limit}s)" >>"$OUT/$log"
    timeout "$limit" "$@" >>"$OUT/$log" 2>&1
    local rc=$?
    echo "== $name: exit $rc" >>"$OUT/$log"
    return $rc
}

# build
[ -d $B ] || meson setup $B -Dgpu_archs=90 -Dbuildtype=release -Dbindings=disabled -Dmpi=enabled >"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
run build 330 build.log ninja -C $B lib/libgpk.so.0.1.0 lib/mpi/libgpk_mpi.so.0.1.0 cli/gpk tests/gpu/test_gpu_heat \
    tests/mpi/test_mpi_gpu tests/mpi/bench_mpi_heat
rc=$?
row "build ($(($(date +%s) - START)) s)" "exit $rc"
[ $rc -eq 0 ] || { tail -40 "$OUT/build.log"; printf '%s\n' "${ROWS[@]}"; exit 1; }

ranks() { # NP: test_mpi_gpu on NP ranks
    run "ranks$1" 120 ranks.log $MPIRUN -np $1 $B/tests/mpi/test_mpi_gpu
    row "test_mpi_gpu on $1 ranks of one H100, exit $?" "$(grep -E 'test_mpi_gpu on' "$OUT/ranks.log" | tail -1)"
}
bench() { # NP REPS [LOG]: bench_mpi_heat on NP ranks
    local log=${3:-bench.log}
    run "bench np$1" 150 $log $MPIRUN -np $1 $B/tests/mpi/bench_mpi_heat $N $ITER $2 ||
        row "bench_mpi_heat -np $1" "exit $? (see $log)"
}
N=${N:-16384}
ITER=${ITER:-100}
$B/cli/gpk info >>"$OUT/bench.log" 2>&1

# The results that matter most first; later stages run as time allows.
ranks 2
bench 1 3
bench 2 3
ranks 4
bench 4 2

# mps
if command -v nvidia-cuda-mps-control >/dev/null && [ "$(left)" -gt 120 ]; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/gpk-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/gpk-mps/log
    mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
    if nvidia-cuda-mps-control -d; then
        $MPIRUN -np 2 $B/cli/gpk info >/tmp/gpk-info.txt 2>&1
        row "gpk info on 2 ranks under MPS" "$(grep -o 'GPU sharing.*' /tmp/gpk-info.txt | cut -c1-90)"
        cat /tmp/gpk-info.txt >>"$OUT/info.txt"
        run "ranks2 mps" 120 ranks.log $MPIRUN -np 2 $B/tests/mpi/test_mpi_gpu
        row "test_mpi_gpu on 2 ranks under MPS, exit $?" "$(grep -E 'test_mpi_gpu on' "$OUT/ranks.log" | tail -1)"
        bench 2 3 bench-mps.log
        bench 4 2 bench-mps.log
        echo quit | nvidia-cuda-mps-control
        sleep 1
    else
        row "MPS" "nvidia-cuda-mps-control -d failed"
    fi
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
fi
$MPIRUN -np 2 $B/cli/gpk info >/tmp/gpk-info.txt 2>&1
row "gpk info on 2 ranks, no MPS" "$(grep -o 'GPU sharing.*' /tmp/gpk-info.txt | cut -c1-90)"
cat /tmp/gpk-info.txt >>"$OUT/info.txt"

# cli
if [ -n "${GPK_TEST_DATA:-}" ]; then
    p=$GPK_TEST_DATA/pat1_100x150.pgm
    args="heat -n 150 -m 100 -i 5000 -k 500 -e 0.001 -L -100 -H 100 -c $p -t $p -r --backend cuda"
    $B/cli/gpk $args 2>>"$OUT/cli.log" | cut -c1-70 >"$OUT/cli-one.txt"
    for np in 2 3; do
        run "cli$np" 60 cli.log sh -c "$MPIRUN -np $np $B/cli/gpk $args | cut -c1-70 > $OUT/cli-np.txt"
        if cmp -s "$OUT/cli-one.txt" "$OUT/cli-np.txt" && [ -s "$OUT/cli-one.txt" ]; then same=identical; else same=DIFFERENT; fi
        row "gpk heat pat1 cuda: mpirun -np $np vs one process" "$same ($(tail -1 "$OUT/cli-np.txt" | tr -s ' '))"
    done
    rm -f "$OUT/cli-np.txt"
fi

# gpuheat
GPK_TEST_ONLY=awkward,convergence,cancellation,determinism,checkpoints,pat1 \
    run gpuheat 90 gpuheat.log $B/tests/gpu/test_gpu_heat
row "test_gpu_heat (CUDA vs CPU, checkpoints), exit $?" "$(grep -E 'checks' "$OUT/gpuheat.log" | tail -1)"

one=$(awk '$1 == "one" {print $5}' "$OUT/bench.log" | tail -1)
row "heat f64 ${N}^2, ms per iteration (GCells/s)" "variant ranks: time, throughput vs one process"
throughput() { # LOG LABEL
    [ -f "$OUT/$1" ] || return 0
    while read -r what ranks n iter ms gcells _; do
        ratio=$(awk -v a="$one" -v b="$ms" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a / b; else print "-" }')
        row "  $what, $ranks rank(s)$2" "$ms ms ($gcells GCells/s), throughput x$ratio of one process"
    done < <(awk '$1 == "one" || $1 == "ranks" || $1 == "plain"' "$OUT/$1")
    while read -r _ ranks n k secs _ bytes; do
        row "  halo exchange, $ranks ranks, $k rows x $n doubles$2" "$(awk -v s="$secs" 'BEGIN { printf "%.1f us", s * 1e6 }') ($bytes bytes per neighbour)"
    done < <(awk '$1 == "halo" && $2 > 1' "$OUT/$1")
}
throughput bench.log ""
throughput bench-mps.log ", MPS"

echo
echo "== summary ($(($(date +%s) - START)) s)"
printf '%s\n' "${ROWS[@]}"
