#!/usr/bin/env python3
"""Host data beyond the GPU from Python: gpk.convolve (u8 3x3 box, sum, clamp) of a NumPy image of
--conv-gib GiB into an output made with np.empty_like right before the first call (then later calls into the
same output, then a new np.empty_like output and the array gpk.convolve returns, on the context that has
run), and gpk.histogram (u8, 256 bins) of --hist-gib GiB: the first call on a fresh CUDA context,
then the later ones. Wall clock per call; GB/s count bytes in + bytes out. The context is made before the
clock starts (creating one initialises CUDA).

Checks: every histogram count; the first call's output at --check-gib (default 2) against the CPU backend,
every sample; at full size the first two, last two and every 997th row against NumPy.

Usage: bench/bench_stream.py [--conv-gib 4] [--hist-gib 8] [--check-gib 2]
gpk is imported from PYTHONPATH (bindings/python with GPK_LIBRARY=<build>/lib/libgpk.so, or an install).
"""
import argparse
import sys
import time

import numpy as np

WIDTH = 65536
TILE_ROWS = 251  # a prime: rows repeat with a period no band size shares


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def expected_rows(tile, height, ys):
    """The exact outputs of rows ys: 3x3 box sums with clamped borders, divided by 9 rounding to nearest
    (no ties: 9 is odd)."""
    out = []
    for y in ys:
        rows = [tile[min(max(y + a, 0), height - 1) % TILE_ROWS].astype(np.int64) for a in (-1, 0, 1)]
        v = rows[0] + rows[1] + rows[2]
        s = v + np.concatenate(([v[0]], v[:-1])) + np.concatenate((v[1:], [v[-1]]))
        out.append(((2 * s + 9) // 18).astype(np.uint8))
    return out


def convolve_case(gpk, gib, full_check):
    height = (gib << 30) // WIDTH
    rng = np.random.default_rng(1)
    tile = rng.integers(0, 256, (TILE_ROWS, WIDTH), dtype=np.uint8)
    t0 = time.perf_counter()
    img = np.empty((height, WIDTH), np.uint8)
    for r in range(0, height, TILE_ROWS):
        n = min(TILE_ROWS, height - r)
        img[r:r + n] = tile[:n]
    print(f"convolve u8 3x3 box (sum, clamp), {WIDTH}x{height}: {img.nbytes >> 30} GiB in + {img.nbytes >> 30} "
          f"GiB out, NumPy (filled in {time.perf_counter() - t0:.1f} s):", flush=True)
    box3 = gpk.Filter(np.ones((3, 3)))
    moved = 2 * img.nbytes
    reference = None
    if full_check:
        with gpk.Context(backend="cpu") as cpu:
            reference = gpk.convolve(img, box3, normalize="sum", context=cpu)
    ys = sorted(set([0, 1, height - 2, height - 1] + list(range(0, height, 997))))
    want = None if full_check else expected_rows(tile, height, ys)
    ctx = gpk.Context(backend="cuda")

    def verdict(a):
        if full_check:
            return "exact (every sample, vs the CPU backend)" if np.array_equal(a, reference) else "WRONG"
        bad = [y for y, w in zip(ys, want) if not np.array_equal(a[y], w)]
        return f"exact ({len(ys)} rows checked)" if not bad else f"WRONG (row {bad[0]} and {len(bad) - 1} more)"

    out = np.empty_like(img)  # a new output, as a caller makes one right before the call
    first = timed(lambda: gpk.convolve(img, box3, normalize="sum", out=out, context=ctx))
    first_verdict = verdict(out)
    later = sorted(timed(lambda: gpk.convolve(img, box3, normalize="sum", out=out, context=ctx)) for _ in range(2))
    print(f"  Python convolve {gib}+{gib} GiB: first (fresh np.empty_like out) "
          f"{moved / first / 1e9:5.1f} GB/s {first:.2f} s | later {moved / later[1] / 1e9:5.1f} GB/s | out {first_verdict}",
          flush=True)
    del out
    # A new output on the context that has run (the fresh pages without the context's first use): as an
    # np.empty_like output, and as the array gpk.convolve returns.
    out = np.empty_like(img)
    fresh = timed(lambda: gpk.convolve(img, box3, normalize="sum", out=out, context=ctx))
    fresh_verdict = verdict(out)
    del out
    returned = []
    fresh_returned = timed(lambda: returned.append(gpk.convolve(img, box3, normalize="sum", context=ctx)))
    returned_verdict = verdict(returned[0])
    del returned
    print(f"  Python convolve {gib}+{gib} GiB: context used before, fresh np.empty_like out "
          f"{moved / fresh / 1e9:5.1f} GB/s {fresh:.2f} s, out {fresh_verdict} | returned array "
          f"{moved / fresh_returned / 1e9:5.1f} GB/s {fresh_returned:.2f} s, out {returned_verdict}", flush=True)
    ctx.close()


def histogram_case(gpk, gib):
    n = gib << 30
    rng = np.random.default_rng(2)
    tile = rng.integers(0, 256, 16 << 20, dtype=np.uint8)
    t0 = time.perf_counter()
    data = np.empty(n, np.uint8)
    for at in range(0, n, tile.size):
        m = min(tile.size, n - at)
        data[at:at + m] = tile[:m]
    whole, rest = divmod(n, tile.size)
    want = np.bincount(tile, minlength=256).astype(np.uint64) * np.uint64(whole)
    want += np.bincount(tile[:rest], minlength=256).astype(np.uint64)
    print(f"histogram u8 256 bins of {gib} GiB, NumPy (filled in {time.perf_counter() - t0:.1f} s):", flush=True)
    ctx = gpk.Context(backend="cuda")
    counts = []
    times = [timed(lambda: counts.append(gpk.histogram(data, context=ctx))) for _ in range(3)]
    exact = all(np.array_equal(c.ravel(), want) for c in counts)
    print(f"  Python histogram {gib} GiB: first {n / times[0] / 1e9:5.1f} GB/s {times[0]:.2f} s | "
          f"later {n / sorted(times[1:])[1] / 1e9:5.1f} GB/s | counts {'exact' if exact else 'WRONG'}", flush=True)
    ctx.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conv-gib", type=int, default=4)
    parser.add_argument("--hist-gib", type=int, default=8)
    parser.add_argument("--check-gib", type=int, default=2)
    args = parser.parse_args()
    import gpk

    if not gpk.devices():
        sys.exit("gpk found no usable GPU")
    print(f"gpk {gpk.__version__} from Python, NumPy {np.__version__}; {gpk.devices()[0].name}", flush=True)
    if args.check_gib and args.conv_gib > args.check_gib:
        convolve_case(gpk, args.check_gib, True)
    if args.conv_gib:
        convolve_case(gpk, args.conv_gib, args.conv_gib <= args.check_gib)
    if args.hist_gib:
        histogram_case(gpk, args.hist_gib)


if __name__ == "__main__":
    main()
