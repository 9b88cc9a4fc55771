#!/usr/bin/env python3
"""gpk from Python beside CuPy on the same device arrays: gpk.convolve against cupyx.scipy.ndimage (correlate
and uniform_filter) and gpk.histogram against cupy.bincount and cupy.histogram.

Every case is timed with CUDA events on CuPy's current stream (which gpk uses for CuPy arrays): the median
of --runs runs after warm-up, each run one call as a Python user makes it (argument handling, output
allocation and, for gpk.histogram, the copy of the counts to a NumPy array included). Prints one line per
case: gpk, the peer, peer / gpk; --json FILE writes the same as JSON.

With --calls: the wall time of one call on small device arrays (64², 256², 1024² u8), synchronised before
and after, medians of 200: gpk.convolve (3x3 box divided by its sum) on PyTorch tensors and CuPy arrays
beside torch.nn.functional.conv2d on float tensors, gpk.histogram beside torch.bincount (needs PyTorch).

Usage: bench/bench_python.py [--size 8192] [--runs 50] [--json FILE] | --calls
gpk is imported from PYTHONPATH (bindings/python with GPK_LIBRARY=<build>/lib/libgpk.so, or an install).
"""
import argparse
import json
import statistics
import sys

import numpy as np


def median_ms(cp, fn, runs, warmup=5):
    stream = cp.cuda.get_current_stream()
    for _ in range(warmup):
        fn()
    stream.synchronize()
    times = []
    for _ in range(runs):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        fn()
        end.record(stream)
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def small_calls():
    """A call's wall time on small images: what a data pipeline pays per image."""
    import time

    import cupy as cp
    import torch
    import torch.nn.functional as F

    import gpk

    ctx = gpk.Context(backend="cuda")

    def wall_us(fn, reps=200):
        times = []
        for _ in range(reps):
            torch.cuda.synchronize()
            begin = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - begin)
        return 1e6 * statistics.median(times)

    print(f"gpk {gpk.__version__}, PyTorch {torch.__version__}, CuPy {cp.__version__}; "
          f"{torch.cuda.get_device_name()}; µs a synchronised call, medians of 200")
    for size in (64, 256, 1024):
        xt = torch.randint(0, 256, (size, size), dtype=torch.uint8, device="cuda")
        xc = cp.asarray(xt)
        xf, w = xt.float()[None, None], torch.ones(1, 1, 3, 3, device="cuda") / 9
        row = {"gpk.convolve torch": wall_us(lambda: gpk.convolve(xt, "box:3", normalize="sum", context=ctx)),
               "gpk.convolve cupy": wall_us(lambda: gpk.convolve(xc, "box:3", normalize="sum", context=ctx)),
               "F.conv2d": wall_us(lambda: F.conv2d(xf, w, padding=1)),
               "gpk.histogram torch": wall_us(lambda: gpk.histogram(xt, context=ctx)),
               "torch.bincount": wall_us(lambda: torch.bincount(xt.flatten(), minlength=256))}
        print(f"{size}^2: " + ", ".join(f"{k} {v:.1f}" for k, v in row.items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--calls", action="store_true", help="a call's wall time on small arrays instead")
    args = parser.parse_args()
    if args.calls:
        return small_calls()

    import cupy as cp
    import cupyx.scipy.ndimage as ndi

    import gpk

    n = args.size
    ctx = gpk.current_context(0)
    if ctx.backend != "cuda":
        sys.exit("gpk found no usable GPU")
    dev = gpk.devices()[0]
    cp.random.seed(1)
    u8 = cp.random.randint(0, 256, (n, n), dtype=cp.uint8)
    f32 = cp.random.random((n, n), dtype=cp.float32)
    box3, box9 = gpk.Filter(np.ones((3, 3))), gpk.Filter(np.ones((9, 9)))
    box3_f = gpk.Filter(np.full((3, 3), 1 / 9))

    cases = [  # (name, gpk call, peer name, peer call)
        ("u8 3x3 box, sum, clamp", lambda: gpk.convolve(u8, box3, normalize="sum"),
         "cupyx correlate", lambda: ndi.correlate(u8, cp.full((3, 3), 1 / 9, cp.float32), mode="nearest")),
        ("u8 3x3 box, sum, clamp", lambda: gpk.convolve(u8, box3, normalize="sum"),
         "cupyx uniform_filter", lambda: ndi.uniform_filter(u8, 3, mode="nearest")),
        ("u8 9x9 box, sum, clamp", lambda: gpk.convolve(u8, box9, normalize="sum"),
         "cupyx correlate", lambda: ndi.correlate(u8, cp.full((9, 9), 1 / 81, cp.float32), mode="nearest")),
        ("u8 9x9 box, sum, clamp", lambda: gpk.convolve(u8, box9, normalize="sum"),
         "cupyx uniform_filter", lambda: ndi.uniform_filter(u8, 9, mode="nearest")),
        ("f32 3x3 box, clamp", lambda: gpk.convolve(f32, box3_f),
         "cupyx correlate", lambda: ndi.correlate(f32, cp.full((3, 3), 1 / 9, cp.float32), mode="nearest")),
        ("f32 3x3 box, clamp", lambda: gpk.convolve(f32, box3_f),
         "cupyx uniform_filter", lambda: ndi.uniform_filter(f32, 3, mode="nearest")),
        ("histogram u8 256 bins", lambda: gpk.histogram(u8),
         "cupy.bincount", lambda: cp.bincount(u8.ravel(), minlength=256)),
        ("histogram u8 256 bins", lambda: gpk.histogram(u8),
         "cupy.histogram", lambda: cp.histogram(u8, bins=256, range=(0, 256))),
    ]

    # The results agree before anything is timed.
    counts = gpk.histogram(u8)
    assert (counts == cp.asnumpy(cp.bincount(u8.ravel(), minlength=256))).all(), "histograms differ"
    agree = {}
    for name, ours, _, theirs in cases[:6:2]:
        a, b = ours().astype(cp.float64), theirs().astype(cp.float64)
        agree[name] = float(cp.abs(a - b).max())

    print(f"gpk {gpk.__version__} from Python, CuPy {cp.__version__}; {dev.name}; {n}x{n}; median of {args.runs} "
          "CUDA-event runs")
    print(f"{'case':<26} {'gpk ms':>9}  {'peer':<22} {'peer ms':>9} {'peer/gpk':>9}")
    rows = []
    for name, ours, peer, theirs in cases:
        t_ours, t_theirs = median_ms(cp, ours, args.runs), median_ms(cp, theirs, args.runs)
        rows.append(dict(case=name, gpk_ms=t_ours, peer=peer, peer_ms=t_theirs, ratio=t_theirs / t_ours))
        print(f"{name:<26} {t_ours:9.3f}  {peer:<22} {t_theirs:9.3f} {t_theirs / t_ours:8.2f}x")
    for name, diff in agree.items():
        print(f"largest |gpk - cupyx correlate| for {name}: {diff:g}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=dev.name, size=n, runs=args.runs, cupy=cp.__version__, gpk=gpk.__version__,
                           rows=rows, max_abs_difference=agree), f, indent=1)


if __name__ == "__main__":
    main()
