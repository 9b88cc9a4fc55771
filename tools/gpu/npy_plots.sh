#!/usr/bin/env bash
# On the GPU machine (libpng, no Cairo): builds the gpk command (release, sm_90) and runs its test suite,
# NumPy cross-check included; draws the heat map and histogram with the CUDA backend; counts a 1e9-sample
# u32 .npy (4 GB) in both byte orders with the command's data memory limited to 1 GiB; times the heat
# map of a 4096 x 4096 grid. Logs and the two pictures under $OUT; a summary table on stdout.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
b=build-npy-gpu
t0=$(date +%s)
[ -d $b ] || meson setup $b -Dgpu_archs=90 -Dbuildtype=release -Dbindings=disabled > "$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
ninja -C $b cli/gpk tests/cli/test_cli > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
g=$b/cli/gpk
# An interpreter with NumPy to write the inputs (Debian/Ubuntu's own may lack it; the torch venv has it).
PYN=$(for p in /usr/bin/python3 /opt/torch/.venv/bin/python3 python3; do $p -c 'import numpy' 2>/dev/null && { echo $p; break; }; done)
rows=()
row() { rows+=("$(printf '%-50s %s' "$1" "$2")"); }
since() { echo "$(( ($(date +%s%N) - $1) / 1000000 )) ms"; } # milliseconds since a $(date +%s%N)

$g --version > "$OUT/info.txt" 2>&1; $g info >> "$OUT/info.txt" 2>&1
row "cairo linked" "$(ldd $g | grep -c cairo)"

meson test -C $b --no-rebuild --suite cli --print-errorlogs > "$OUT/cli-tests.log" 2>&1
row "cli suite (rc)" "$? ($(grep -E '^(Ok|Fail|Skipped):' "$OUT/cli-tests.log" | tr -s ' ' | tr '\n' ' '))"
row "numpy for /usr/bin/python3" "$(/usr/bin/python3 -c 'import numpy; print(numpy.__version__)' 2>&1 | tail -1)"

$g heat --backend cuda -o "$OUT/heat.png" > "$OUT/heat.txt" 2>&1
row "heat -o heat.png, cuda (rc)" "$?"
$g histogram --backend cuda --range 0:255 --bins 255 --plot "$OUT/histogram.png" "$OUT/heat.png" > /dev/null 2>> "$OUT/heat.txt"
row "histogram --plot, cuda (rc)" "$?"

# 1e9 random u32 below 1024, little- and big-endian, written in chunks by NumPy.
d=$(mktemp -d /tmp/npy-big.XXXXXX)
$PYN - "$d" > "$OUT/big.txt" 2>&1 <<'EOF'
import sys, numpy as np
d = sys.argv[1]; n = 10**9; chunk = 1 << 26
rng = np.random.default_rng(1); counts = np.zeros(1024, dtype=np.int64)
files = {o: open(f"{d}/{o}.npy", "wb") for o in "<>"}
for o, f in files.items():
    np.lib.format.write_array_header_1_0(f, {"descr": o + "u4", "fortran_order": False, "shape": (n,)})
for start in range(0, n, chunk):
    v = rng.integers(0, 1024, size=min(chunk, n - start), dtype=np.uint32)
    counts += np.bincount(v, minlength=1024)
    for o, f in files.items():
        v.astype(o + "u4").tofile(f)
np.savetxt(f"{d}/want.txt", counts, fmt="%d")
print("written", n, "samples")
EOF
for o in "<" ">"; do
  name=$([ "$o" = "<" ] && echo little || echo big)
  for limit in unlimited 1048576; do
    s=$(date +%s%N)
    ( ulimit -d $limit; $g histogram --backend cuda --bins 1024 --csv "$d/$o.npy" ) > "$d/got.csv" 2> "$OUT/big-$name-$limit.err"
    rc=$?; e=$(since $s)
    ok=$(tail -n +2 "$d/got.csv" | cut -d, -f4 | diff -q - "$d/want.txt" > /dev/null && echo counts-equal || echo COUNTS-DIFFER)
    row "1e9 u32 .npy $name-endian, data limit $limit" "rc $rc, $ok, $e"
  done
done
rm -rf "$d"

# Drawing cost: the same 4096^2 run with and without the heat map (conductivity 1: one iteration).
d=$(mktemp -d /tmp/npy-map.XXXXXX)
$PYN -c "
import numpy as np; i, j = np.mgrid[0:4096, 0:4096]
np.save('$d/t.npy', np.sin(i / 300.0) * np.cos(j / 200.0) * 100); np.save('$d/c.npy', np.ones((4096, 4096)))"
for o in "" "-o map.png" "--save final.npy"; do
  s=$(date +%s%N); $g heat --backend cuda -n 4096 -m 4096 -t $d/t.npy -c $d/c.npy ${o:+${o%% *} $d/${o#* }} > /dev/null 2>&1
  row "heat 4096^2 cuda ${o:-(no picture, no file)}" "rc $?, $(since $s)"
done
rm -rf "$d"

echo; printf '%s\n' "${rows[@]}"; echo "total: $(( $(date +%s) - t0 )) s"
