"""gpk: GPU image and grid kernels — histograms, 2D convolution and heat dissipation — on NumPy arrays and
on CUDA device arrays (CuPy, PyTorch, Numba, JAX) without copies.

    >>> import gpk, numpy as np
    >>> img = np.arange(64 * 48, dtype=np.uint8).reshape(48, 64)
    >>> gpk.histogram(img)[:3]                         # 256 bins over [0, 256), uint64 counts
    array([12, 12, 12], dtype=uint64)
    >>> edges = gpk.convolve(img, "lp3", border="zero", normalize="minmax")

Every function runs on a `gpk.Context` (the GPU when one is usable, else every CPU core); without
``context=`` it is the thread's default one (`gpk.current_context`). Failures raise `gpk.Error` subclasses,
one per status of the C library, carrying its message. Calls release the GIL.

The package calls the shared library libgpk through ctypes. It loads the library named by the environment
variable GPK_LIBRARY if set, else its own copy (inside the package when pip installed it, in the prefix after
``meson install``), else ``libgpk.so.0`` from the loader's search path. `gpk.mpi` (with mpi4py) runs the
operations over MPI ranks.
"""
from . import _lib
from ._context import Context, current_context
from ._errors import (CancelledError, DeviceError, Error, InternalError, InvalidArgumentError, NoDeviceError,
                      OutOfMemoryError, UnsupportedError)
from ._filter import Filter
from ._ops import HeatReport, HeatResult, convolve, heat, histogram
from ._devices import DeviceInfo, devices

__version__ = _lib.lib.gpk_version_string().decode()
library_path = _lib.path
"""The path libgpk was loaded from."""

__all__ = ["Context", "current_context", "Filter", "histogram", "convolve", "heat", "HeatReport", "HeatResult",
           "devices", "DeviceInfo", "Error", "InvalidArgumentError", "OutOfMemoryError", "NoDeviceError",
           "UnsupportedError", "DeviceError", "CancelledError", "InternalError", "__version__", "library_path"]
