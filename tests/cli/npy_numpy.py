#!/usr/bin/env python3
"""The gpk command against NumPy itself: arrays written by NumPy (every dtype gpk reads, both byte orders,
format versions 1.0, 2.0 and 3.0, C and Fortran order, 1 to 4 channels) are counted and filtered by gpk
and the results compared with NumPy's own; the files gpk writes are read back with numpy.load; a heat run
is compared with the heat stencil (README, "What gpk computes") written in NumPy.

Usage: npy_numpy.py GPK_BINARY. Exits 77 (skipped) where NumPy is not installed."""

import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy is not installed for", sys.executable)
    sys.exit(77)

GPK = sys.argv[1]
FAILURES = []
CHECKS = 0


def check(ok, what):
    global CHECKS
    CHECKS += 1
    if not ok:
        FAILURES.append(what)
        print("FAILED:", what, file=sys.stderr)


def gpk(*args):
    r = subprocess.run([GPK, *map(str, args)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"gpk {' '.join(map(str, args))}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def save(path, array, version):
    with open(path, "wb") as f:
        np.lib.format.write_array(f, array, version=version)


def csv_counts(text, channels):
    rows = [line.split(",") for line in text.strip().splitlines()[1:]]
    return np.array([[int(r[3 + c]) for r in rows] for c in range(channels)])


def histograms(tmp, rng):
    """Counts of NumPy-written arrays against np.bincount, channel by channel."""
    dtypes = ["u1", "u2", "u4", "i4", "f4", "f8"]
    case = 0
    for kind in dtypes:
        for order in "<>":
            for fortran in (False, True):
                for shape in [(7, 9), (5, 6, 3), (3, 4, 2, 4), (11,)]:
                    values = rng.integers(0, 32, size=shape)
                    data = values + 0.5 if kind[0] == "f" else values
                    array = data.astype(order + kind)
                    if fortran:
                        array = np.asfortranarray(array)
                    version = [(1, 0), (2, 0), (3, 0)][case % 3]
                    case += 1
                    path = os.path.join(tmp, "h.npy")
                    save(path, array, version)
                    channels = shape[-1] if len(shape) >= 3 else 1
                    got = csv_counts(gpk("histogram", "--csv", "--bins", 32, "--range", "0:32", path), channels)
                    per_channel = values.reshape(-1, channels)
                    want = np.array([np.bincount(per_channel[:, c], minlength=32) for c in range(channels)])
                    check(np.array_equal(got, want),
                          f"histogram of {array.dtype.str} {shape} fortran={fortran} version={version}")


def pad_mode(border):
    return {"clamp": "edge", "wrap": "wrap", "mirror": "reflect", "reflect": "symmetric"}[border]


def correlate(image, taps, border):
    """Reference correlation, in float64, of an (H, W, C) image with a 2-D filter."""
    kh, kw = taps.shape
    ry, rx = kh // 2, kw // 2
    if border == "zero":
        padded = np.pad(image, ((ry, ry), (rx, rx), (0, 0)))
    else:
        padded = np.pad(image, ((ry, ry), (rx, rx), (0, 0)), mode=pad_mode(border))
    h, w = image.shape[:2]
    out = np.zeros(image.shape, dtype=np.float64)
    for dy in range(kh):
        for dx in range(kw):
            out += taps[dy, dx] * padded[dy:dy + h, dx:dx + w]
    return out


def convolutions(tmp, rng):
    """gpk convolve IN.npy OUT.npy against the reference: every input dtype and border, 1 to 4 channels,
    with a 3 x 5 filter of unequal integer taps from a file (so that its orientation shows)."""
    taps = rng.integers(-3, 4, size=(3, 5)).astype(np.float64)
    taps[1, 2] = 5
    filter_path = os.path.join(tmp, "taps.txt")
    with open(filter_path, "w") as f:
        f.write("\n".join(" ".join(str(int(v)) for v in row) for row in taps) + "\n")
    borders = ["zero", "clamp", "mirror", "reflect", "wrap"]
    case = 0
    for kind, top in [("u1", 256), ("u2", 65536), ("f4", 4096), ("f8", 1 << 20)]:
        for channels in (1, 2, 3, 4):
            for fortran in (False, True):
                border = borders[case % len(borders)]
                order = "<>"[case % 2]
                case += 1
                shape = (13, 17) if channels == 1 and case % 4 == 0 else (13, 17, channels)
                array = rng.integers(0, top, size=shape).astype(order + kind)
                if fortran:
                    array = np.asfortranarray(array)
                src, dst = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
                save(src, array, (1, 0))
                gpk("convolve", "-f", filter_path, "-b", border, "--out-type", "f64", src, dst)
                out = np.load(dst)
                image = array.astype(np.float64).reshape(13, 17, -1)
                want = correlate(image, taps, border).reshape(shape)
                what = f"convolve {border} of {array.dtype.str} {shape} fortran={fortran}"
                check(out.dtype == np.float64 and out.shape == shape, what + f": got {out.dtype} {out.shape}")
                check(out.shape == shape and np.array_equal(out, want), what)
                # The input's own type: identity gives the array back, in C order and host byte order.
                gpk("convolve", "-f", "identity", src, dst)
                back = np.load(dst)
                check(back.dtype == array.dtype.newbyteorder("=") and np.array_equal(back, array),
                      f"identity of {array.dtype.str} {shape} fortran={fortran}")
                check(back.flags.c_contiguous, f"identity of {array.dtype.str}: C order")


def heat_reference(t, c, iterations):
    """The heat contract in NumPy: halo rows fixed, halo columns wrapped, the reference order of operations."""
    n, m = t.shape
    cdir = 0.25 * np.sqrt(2) / (np.sqrt(2) + 1)
    cdiag = 0.25 / (np.sqrt(2) + 1)
    src = np.zeros((n + 2, m + 2))
    src[1:-1, 1:-1] = t
    src[0, 1:-1], src[-1, 1:-1] = t[0], t[-1]
    for _ in range(iterations):
        src[:, -1], src[:, 0] = src[:, 1], src[:, -2]
        w = c
        r = 1 - w
        dst = src.copy()
        dst[1:-1, 1:-1] = (w * src[1:-1, 1:-1]
                           + (src[2:, 1:-1] + src[:-2, 1:-1] + src[1:-1, 2:] + src[1:-1, :-2]) * (r * cdir)
                           + (src[:-2, :-2] + src[:-2, 2:] + src[2:, :-2] + src[2:, 2:]) * (r * cdiag))
        src = dst
    return src[1:-1, 1:-1]


def heat(tmp, rng):
    """gpk heat -t T.npy -c C.npy --save OUT.npy against the NumPy stencil."""
    n, m, iterations = 10, 14, 30
    t = rng.uniform(-100, 100, size=(n, m))
    c = rng.uniform(0, 1, size=(n, m)).astype(">f4")
    tp, cp, out = (os.path.join(tmp, name) for name in ("t.npy", "c.npy", "final.npy"))
    save(tp, np.asfortranarray(t), (2, 0))
    save(cp, c, (3, 0))
    gpk("heat", "-n", n, "-m", m, "-i", iterations, "-e", 0, "-t", tp, "-c", cp, "--save", out)
    final = np.load(out)
    want = heat_reference(t, c.astype(np.float64), iterations)
    check(final.dtype == np.float64 and final.shape == (n, m), f"heat --save: {final.dtype} {final.shape}")
    check(np.allclose(final, want, rtol=1e-9, atol=1e-12), f"heat: max error {np.abs(final - want).max()}")
    mm = np.load(out, mmap_mode="r")  # gpk's file also maps as NumPy expects (aligned data)
    check(np.array_equal(mm, final), "heat --save read with mmap_mode")


def main():
    rng = np.random.default_rng(2026)
    with tempfile.TemporaryDirectory() as tmp:
        histograms(tmp, rng)
        convolutions(tmp, rng)
        heat(tmp, rng)
    print(f"npy_numpy: {CHECKS} checks, {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
