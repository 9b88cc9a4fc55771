#!/bin/bash
# Builds and runs the emulated-device checks (README.md) from the repository root: the heat solver at
# 64-thread blocks (about 10 minutes on two cores), then the fused separable kernel (about a minute).
# Prints "N checks, M failed" for each; exits non-zero on a failure.
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$here/transform.py" "$root/lib" "$work/cuda"
flags=(-std=c++20 -O1 -ffp-contract=off -pthread -I"$here/include" -I"$work" -I"$root/lib" -I"$root/include"
    -DGPK_BUILDING_LIBRARY)
g++ "${flags[@]}" -o "$work/heat_check" "$here/heat_check.cpp" "$here/emu.cpp" "$work"/cuda/{heat,heat_pass,heat_slab,device_context,memory,fault}.cpp \
    "$root"/lib/engine/{fault,validate}.cpp "$root/lib/engine/thread_pool.cpp"
g++ "${flags[@]}" -o "$work/fused_check" "$here/fused_check.cpp" "$here/emu.cpp"
status=0
"$work/heat_check" || status=1
"$work/fused_check" || status=1
exit $status
