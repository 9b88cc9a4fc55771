#!/usr/bin/env bash
# libgpk_mpi on the GPUs of one host, from the repository root, within one call of at most 10 minutes
# (rank counts NPS, default "1 2"; Open MPI need not be CUDA-aware):
#   build  configure $B where needed (as tools/gpu/check.sh does) and build libgpk, libgpk_mpi, the gpk
#          command, test_mpi_gpu, bench_mpi_heat and bench_mpi_ops
#   test   test_mpi_gpu on each count of NPS, halo paths automatic (CUDA IPC between the GPUs) and host staging
#          forced (GPK_TEST_MPI_HALO=host): heat, convolution and histograms equal to one process, host and
#          device blocks, a launch failing on the last rank returned by every rank
#   info   gpk info on the largest count of NPS: the heat halo path of each link, with its reason
#   heat   bench_mpi_heat at 8192^2, 16384^2 and 32768^2 (SIDES) on each count of NPS, both paths in each
#          run of several ranks (ms an iteration, µs a halo exchange; each rank's block alone and what a
#          pass costs beyond it)
#   weak   bench_mpi_heat with a block of 16384^2 a rank (WEAK), (16384 ranks) x 16384 on each count of NPS
#   ops    bench_mpi_ops: u8 3x3 and f32 separable radius-8 convolutions of device blocks (SIDE^2, default
#          65536), a u32 65536-bin histogram (SAMPLES, default 1e10), on each count of NPS, medians of REPS
#          (default 10): each GPU alone on its block beside the ranks together
# Environment: STAGES (default all), B (default build-mpi), OUT (default mpi-logs), BUDGET (default 530),
# NPS, SIDES, WEAK, SIDE, SAMPLES, REPS. The logs are tarred into $OUT/mpi-logs.tar.gz at the end.
# shellcheck source=tools/gpu/check.sh
. "$(dirname "$0")/check.sh"
B=${B:-build-mpi}
BUDGET=${BUDGET:-530}
gpu_setup mpi "build test info heat weak ops"
NPS=${NPS:-1 2}
most=${NPS##* }

want build && build cli/gpk tests/mpi/test_mpi_gpu tests/mpi/bench_mpi_heat \
    tests/mpi/bench_mpi_ops
if want test; then
    for np in $NPS; do
        run "test_mpi_gpu -np $np" 90 test.log "${MPIRUN[@]}" -np "$np" "$B/tests/mpi/test_mpi_gpu"
        run "test_mpi_gpu -np $np, host staging" 90 test.log "${MPIRUN[@]}" -np "$np" -x GPK_TEST_MPI_HALO=host \
            "$B/tests/mpi/test_mpi_gpu"
    done
    rows_from 'test_mpi_gpu on|<->|FAIL' test.log
fi
if want info; then
    run "gpk info -np $most" 60 info.log "${MPIRUN[@]}" -np "$most" "$B/cli/gpk" info
    rows_from '<->|MPI:' info.log
fi
if want heat; then
    for n in ${SIDES:-8192 16384 32768}; do
        it=120
        [ "$n" = 32768 ] && it=30
        for np in $NPS; do
            run "bench_mpi_heat $n -np $np" 90 heat.log "${MPIRUN[@]}" -np "$np" "$B/tests/mpi/bench_mpi_heat" "$n" "$it" 3
        done
    done
    rows_from '^(one|block|ranks-|halo-|pass-|rank )' heat.log
fi
if want weak; then
    w=${WEAK:-16384}
    for np in $NPS; do
        run "bench_mpi_heat $((w * np))x$w -np $np" 90 weak.log "${MPIRUN[@]}" -np "$np" \
            "$B/tests/mpi/bench_mpi_heat" "$((w * np))x$w" 120 3 auto
    done
    rows_from '^(one|block|ranks-|halo-|pass-)' weak.log
fi
if want ops; then
    side=${SIDE:-65536}
    reps=${REPS:-10}
    for np in $NPS; do
        for op in conv-u8 conv-f32; do
            run "bench_mpi_ops $op $side -np $np" 60 ops.log "${MPIRUN[@]}" -np "$np" "$B/tests/mpi/bench_mpi_ops" \
                "$op" "$side" "$side" "$reps"
        done
        run "bench_mpi_ops hist ${SAMPLES:-1e10} -np $np" 60 ops.log "${MPIRUN[@]}" -np "$np" \
            "$B/tests/mpi/bench_mpi_ops" hist "${SAMPLES:-1e10}" "$reps"
    done
    rows_from '^(alone|ranks) ' ops.log
fi
summary | tee "$OUT/summary.log"
tar -czf "$OUT/mpi-logs.tar.gz" -C "$OUT" --exclude mpi-logs.tar.gz . 2>/dev/null
