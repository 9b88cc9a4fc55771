"""Smooths a synthetic 8-bit image, takes its Laplacian and counts the grey levels, then runs heat on a
cylinder with a hot top row; on a GPU the same calls take CuPy or PyTorch arrays in place."""
import numpy as np

import gpk

y, x = np.mgrid[0:480, 0:640]
image = ((x * 4) ^ (y * 5)).astype(np.uint8)

smoothed = gpk.convolve(image, "smooth5", normalize="sum")  # uint8 in, uint8 out, clamped borders
edges = gpk.convolve(smoothed, "lp3", border="zero", normalize="minmax")
counts = gpk.histogram(edges)  # 256 uint64 counts over [0, 256)
print(f"gpk {gpk.__version__} on the {gpk.current_context().backend}: grey level {counts.argmax()} is the "
      f"commonest ({counts.max()} pixels)")

tinit = np.zeros((100, 150))
tinit[0] = 100.0
grid, reports = gpk.heat(tinit, 0.5, maxiter=5000, threshold=1e-3, period=1000)
for r in reports:
    print(f"{r.niter:5d} iterations: mean {r.tavg:.4f}, max {r.tmax:.4f}{' (final)' if r.final else ''}")

try:
    import cupy  # with a GPU: the image stays on the device, the result is a cupy.ndarray
    if gpk.devices():
        on_device = gpk.convolve(cupy.asarray(image), "smooth5", normalize="sum")
        print("cupy:", type(on_device).__name__, bool((cupy.asnumpy(on_device) == smoothed).all()))
except ImportError:
    pass
