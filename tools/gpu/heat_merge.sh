#!/usr/bin/env bash
# The merged CUDA heat design (h-gpu's solver with h-mpi's checkpoints, fixed rows, row-sum means and slabs)
# on the GPU machine, from the repository root, within 8 minutes; logs under $OUT, a summary on stdout.
#   build     release, sm_90, -Dmpi=enabled (build-heat-merge/): the library, libgpk_mpi, test_gpu_heat and
#             test_mpi_gpu only
#   mpi2      test_mpi_gpu on 2 ranks sharing the GPU (each rank's slab bit-identical to single-process CUDA;
#             main at fee0151 failed every slab launch here with cudaErrorInvalidValue)
#   heat      test_gpu_heat, every group (checkpoints included), against the CPU backend
#   mpi4      test_mpi_gpu on 4 ranks
#   race      compute-sanitizer racecheck of test_gpu_heat's kernels and checkpoints groups in small mode
#   memcheck  compute-sanitizer memcheck of test_mpi_gpu on 2 ranks (each rank under the sanitizer)
# Stages are cut to the time left (budget 460 s).
set -u -o pipefail
OUT=${OUT:-heat-merge-logs}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
B=build-heat-merge
START=$(date +%s)
BUDGET=460
MPIRUN="mpirun --allow-run-as-root --oversubscribe"
SUMMARY=()
for d in shared/data ../shared/data; do [ -f $d/pat1_100x150.pgm ] && export GPK_TEST_DATA=$(cd $d && pwd) && break; done

# stage NAME LIMIT COMMAND...: runs COMMAND (output to $OUT/NAME.log) within LIMIT seconds or the time left.
stage() {
    local name=$1 limit=$2
    shift 2
    local left=$((BUDGET - ($(date +%s) - START)))
    [ "$left" -lt "$limit" ] && limit=$left
    if [ "$limit" -le 5 ]; then
        SUMMARY+=("$(printf '%-10s skipped (no time left)' "$name")")
        return
    fi
    local t0=$(date +%s)
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    SUMMARY+=("$(printf '%-10s exit %-3s %4s s  %s' "$name" "$rc" "$(($(date +%s) - t0))" \
        "$(grep -E 'checks|passed|failed|FAIL|ERROR SUMMARY|heat pass_kernel' "$OUT/$name.log" | tail -1 | cut -c1-90)")")
}

[ -d $B ] || meson setup $B -Dgpu_archs=90 -Dbuildtype=release -Dbindings=disabled -Dmpi=enabled >"$OUT/build.log" 2>&1
stage build 330 ninja -C $B lib/libgpk.so.0.1.0 lib/mpi/libgpk_mpi.so.0.1.0 tests/gpu/test_gpu_heat \
    tests/mpi/test_mpi_gpu
stage mpi2 90 $MPIRUN -np 2 $B/tests/mpi/test_mpi_gpu
stage heat 120 $B/tests/gpu/test_gpu_heat
stage mpi4 90 $MPIRUN -np 4 $B/tests/mpi/test_mpi_gpu
stage race 80 env GPK_TEST_SMALL=1 GPK_TEST_ONLY=kernels,checkpoints compute-sanitizer --tool racecheck \
    --error-exitcode 1 $B/tests/gpu/test_gpu_heat
stage memcheck 80 $MPIRUN -np 2 compute-sanitizer --tool memcheck --error-exitcode 1 $B/tests/mpi/test_mpi_gpu
printf '%s\n' "${SUMMARY[@]}"
