"""gpk.heat from Python on device arrays against the same call through the C API with no callbacks, in one
process on one GPU: medians of REPS synchronised calls at 4096^2 and 16384^2 (threshold 0), and the ratio.
Progress never shortens a pass, so the two should be within a few percent. A stop from the progress
callback is shown too: the iteration it asked at and the one the run ended at (the end of the batch in
flight).

    GPK_LIBRARY=build/lib/libgpk.so PYTHONPATH=bindings/python python3 tools/gpu/heat_python.py [REPS]
"""
import ctypes
import statistics
import sys
import time

import cupy as cp
import gpk
from gpk import _lib


def c_call(ctx, t, c, out, maxiter):
    p = _lib.new_params(_lib.HeatParams_C, "gpk_heat_params_init")
    p.rows, p.cols = t.shape
    p.maxiter, p.threshold = maxiter, 0.0
    with ctx._call() as handle:
        status = _lib.lib.gpk_heat_run(handle, ctypes.byref(p), t.data.ptr, c.data.ptr, out.data.ptr, None)
    assert status == 0, _lib.last_error(handle)


def median_ms(fn, reps):
    times = []
    for _ in range(reps):
        cp.cuda.Device().synchronize()
        begin = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - begin)
    return 1e3 * statistics.median(times)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    ctx = gpk.Context(backend="cuda")
    print(f"device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    for n, iters in ((4096, (30, 200)), (16384, (30, 200))):
        rng = cp.random.default_rng(1)
        t, c = rng.random((n, n)) * 100, rng.random((n, n))
        out = cp.empty_like(t)
        for maxiter in iters:
            py = median_ms(lambda: gpk.heat(t, c, maxiter=maxiter, threshold=0, out=out, context=ctx), reps)
            capi = median_ms(lambda: c_call(ctx, t, c, out, maxiter), reps)
            cells = n * n * maxiter / 1e9
            print(f"heat {n}^2 maxiter {maxiter}: python {py:.3f} ms ({cells / py * 1e3:.0f} GCells/s), "
                  f"C API {capi:.3f} ms ({cells / capi * 1e3:.0f} GCells/s), ratio {py / capi:.3f}")
        seen = []
        try:
            gpk.heat(t, c, maxiter=10**6, threshold=0, context=ctx,
                     on_progress=lambda it, d, s: seen.append(it) or it >= 500, progress_interval=1)
        except gpk.CancelledError as e:
            print(f"heat {n}^2 stop asked at {seen[-1]}, ended at {e.result.niter}; progress calls at {seen}")


if __name__ == "__main__":
    main()
