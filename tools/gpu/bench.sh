#!/usr/bin/env bash
# Every benchmark of bench/RESULTS.md on the GPU machine, from the repository root, within one call of at
# most 10 minutes; each program prints gpk beside its peer, measured in the same run:
#   build      configure $B where needed (as tools/gpu/check.sh does) and build the benchmarks
#   heat       bench_heat (gpk beside the naive peer, a call's fixed cost), then bench_heat fixed 4096 3 and
#              bench_heat fixed 16384 3 (least-squares fits of calls of 6 to 96 iterations)
#   histogram  bench_histogram (CUB beside; the 8192^2 image alone, back to back, through the API and a bare
#              read of the same bytes)
#   convolve   bench_convolve (NPP beside)
#   stream     bench_stream: host data beyond the GPU, 8 GiB and 4 + 4 GiB of pageable memory; with LARGE=1
#              bench_stream --large (90 GiB, 44 + 44 GiB: a host with about 200 GiB of memory)
#   mpi        tests/mpi/bench_mpi_heat 16384^2 on 1, 2 and 4 ranks sharing the GPU, then on 2 and 4 ranks
#              under the MPS server where it exists
#   python     bench/bench_python.py: gpk from Python beside cupyx.scipy.ndimage and cupy (JSON under $OUT)
#   cpu        bench_cpu (the CPU backend beside OpenCV and OpenMP) where it was built
#   first      first calls into fresh host memory and the later calls, C (bench_stream) and Python
#              (bench/bench_stream.py): the 44 + 44 GiB u8 3x3 convolution into a new output (malloc,
#              np.empty_like), then the 90 GiB histogram, one after the other (a host of 128 GiB holds one
#              at a time), every output and count checked, and the fault-in rate of fresh memory without
#              gpk (the ceiling of a first call); the convolution again in a new process once the host's
#              free memory was touched (a VM backs its memory at the first touch, once a boot). Not in the
#              default stages: STAGES="build first" (about 5 minutes, 100 GiB of host memory)
# One GPU a rank, on the GPUs of one host (rank counts NPS, default "1 2"; Open MPI need not be CUDA-aware),
# not in the default stages: NPS="1 2 4" STAGES="build mpiheat mpiweak mpiops" tools/gpu/bench.sh
#   mpiheat    tests/mpi/bench_mpi_heat at 8192^2, 16384^2 and 32768^2 (SIDES) on each count of NPS, both halo
#              paths (CUDA IPC, host staging) in each run of several ranks (ms an iteration, µs a halo
#              exchange; each rank's block alone and what a pass costs beyond it)
#   mpiweak    bench_mpi_heat with a block of 16384^2 a rank (WEAK), (16384 ranks) x 16384 on each count of NPS
#   mpiops     tests/mpi/bench_mpi_ops: u8 3x3 and f32 separable radius-8 convolutions of device blocks (SIDE^2,
#              default 65536), a u32 65536-bin histogram (SAMPLES, default 1e10), on each count of NPS, medians
#              of REPS (default 10): each GPU alone on its block beside the ranks together
# Environment: STAGES (default every stage but first, cpu, mpiheat, mpiweak and mpiops), B (default
# build-check), OUT (default bench-logs), BUDGET (seconds, default 560), LARGE, NPS, SIDES, WEAK, SIDE,
# SAMPLES, REPS. Each program's output is kept whole in $OUT/STAGE.log; the summary repeats its table rows
# and is kept in $OUT/summary.log; the logs are tarred into $OUT/logs.tar.gz at the end.
# shellcheck source=tools/gpu/check.sh
. "$(dirname "$0")/check.sh"
gpu_setup bench "build heat histogram convolve stream mpi python"

targets=(bench/bench_stream)
want heat && targets+=(bench/bench_heat)
want histogram && targets+=(bench/bench_histogram)
want convolve && targets+=(bench/bench_convolve)
{ want mpi || want mpiheat || want mpiweak; } && targets+=(tests/mpi/bench_mpi_heat)
want mpiops && targets+=(tests/mpi/bench_mpi_ops)
NPS=${NPS:-1 2}
want build && build "${targets[@]}"
if want heat; then
    run bench_heat 120 heat.log "$B/bench/bench_heat"
    for n in 4096 16384; do run "bench_heat fixed $n 3" 120 heat.log "$B/bench/bench_heat" fixed "$n" 3; done
    rows_from '^heat f64|^device' heat.log
fi
if want histogram; then
    run bench_histogram 90 histogram.log "$B/bench/bench_histogram"
    rows_from '^\|' histogram.log
fi
if want convolve; then
    run bench_convolve 120 convolve.log "$B/bench/bench_convolve"
    rows_from '^\|' convolve.log
fi
if want stream; then
    mode=()
    [ "${LARGE:-0}" = 1 ] && mode=(--large)
    run "bench_stream ${mode[*]}" 300 stream.log "$B/bench/bench_stream" "${mode[@]}"
    rows_from 'GB/s' stream.log
fi
if want mpi; then
    for np in 1 2 4; do
        run "bench_mpi_heat 16384 -np $np" 120 mpi.log "${MPIRUN[@]}" -np "$np" "$B/tests/mpi/bench_mpi_heat" 16384 120 3
    done
    if [ "$(left)" -gt 120 ] && mps_start >>"$OUT/mpi.log" 2>&1; then
        for np in 2 4; do
            run "bench_mpi_heat 16384 -np $np under MPS" 120 mpi.log "${MPIRUN[@]}" -np "$np" \
                "$B/tests/mpi/bench_mpi_heat" 16384 120 3
        done
        mps_stop
    fi
    rows_from '^(one|ranks|plain|halo) ' mpi.log
fi
if want python; then
    libs=("$PWD/$B"/lib/libgpk.so.*.*.*)
    run bench_python.py 120 python.log env GPK_LIBRARY="${libs[0]}" PYTHONPATH="$PWD/bindings/python" \
        python3 bench/bench_python.py --json "$OUT/bench_python.json"
    rows_from 'x$|^case|largest' python.log
fi
if want first; then
    run "bench_stream convolve 44+44 GiB" 150 first.log "$B/bench/bench_stream" --no-ceilings --conv-gib 44 \
        --hist-gib 0 --fault-gib 8
    # The same once the VM has backed its memory: what a host that has run a while gives a new process.
    touch=$(($(awk '/MemAvailable/ {print int($2 / 1048576)}' /proc/meminfo) - 4))
    run "bench_stream convolve 44+44 GiB, memory touched before" 150 first.log "$B/bench/bench_stream" \
        --no-ceilings --conv-gib 44 --hist-gib 0 --touch-gib "$touch"
    run "bench_stream histogram 90 GiB" 60 first.log "$B/bench/bench_stream" --no-ceilings --conv-gib 0 \
        --hist-gib 90
    libs=("$PWD/$B"/lib/libgpk.so.*.*.*)
    py=(env GPK_LIBRARY="${libs[0]}" PYTHONPATH="$PWD/bindings/python" PYTHONUNBUFFERED=1
        python3 bench/bench_stream.py)
    run "bench_stream.py convolve 44+44 GiB" 150 first.log "${py[@]}" --conv-gib 44 --hist-gib 0
    run "bench_stream.py histogram 90 GiB" 90 first.log "${py[@]}" --conv-gib 0 --hist-gib 90
    rows_from 'GB/s|WRONG' first.log
fi
if want cpu; then
    if [ -x "$B/bench/bench_cpu" ]; then
        run bench_cpu 300 cpu.log "$B/bench/bench_cpu"
        rows_from '^\|' cpu.log
    else
        row bench_cpu "not built (OpenCV or OpenMP missing)"
    fi
fi
if want mpiheat; then
    for n in ${SIDES:-8192 16384 32768}; do
        it=120
        [ "$n" = 32768 ] && it=30
        for np in $NPS; do
            run "bench_mpi_heat $n -np $np" 90 mpiheat.log "${MPIRUN[@]}" -np "$np" "$B/tests/mpi/bench_mpi_heat" \
                "$n" "$it" 3
        done
    done
    rows_from '^(one|block|ranks-|halo-|pass-|rank )' mpiheat.log
fi
if want mpiweak; then
    w=${WEAK:-16384}
    for np in $NPS; do
        run "bench_mpi_heat $((w * np))x$w -np $np" 90 mpiweak.log "${MPIRUN[@]}" -np "$np" \
            "$B/tests/mpi/bench_mpi_heat" "$((w * np))x$w" 120 3 auto
    done
    rows_from '^(one|block|ranks-|halo-|pass-)' mpiweak.log
fi
if want mpiops; then
    side=${SIDE:-65536}
    reps=${REPS:-10}
    for np in $NPS; do
        for op in conv-u8 conv-f32; do
            run "bench_mpi_ops $op $side -np $np" 60 mpiops.log "${MPIRUN[@]}" -np "$np" \
                "$B/tests/mpi/bench_mpi_ops" "$op" "$side" "$side" "$reps"
        done
        run "bench_mpi_ops hist ${SAMPLES:-1e10} -np $np" 60 mpiops.log "${MPIRUN[@]}" -np "$np" \
            "$B/tests/mpi/bench_mpi_ops" hist "${SAMPLES:-1e10}" "$reps"
    done
    rows_from '^(alone|block|ranks) ' mpiops.log
fi
summary | tee "$OUT/summary.log"
tar -czf "$OUT/logs.tar.gz" -C "$OUT" --exclude logs.tar.gz . 2>/dev/null
