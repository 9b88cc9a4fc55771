"""gpk.Filter: named, 2D and separable convolution filters."""
import ctypes
import functools
from ctypes import POINTER, byref, c_double, c_void_p

import numpy as np

from . import _lib
from ._errors import InvalidArgumentError

MAX_2D = 63  # GPK_FILTER_MAX_2D
MAX_SEPARABLE = 129  # GPK_FILTER_MAX_SEPARABLE


def _taps(values, what, ndim):
    try:
        taps = np.ascontiguousarray(values, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{what}: not an array of numbers ({e})") from None
    if taps.ndim != ndim:
        raise InvalidArgumentError(f"{what} has shape {taps.shape}; expected {ndim} dimension(s)"
                                   + ("; separable filters: gpk.Filter.separable(row, col)" if ndim == 2 else ""))
    return taps


class Filter:
    """A convolution filter: gpk computes correlation (no flip) with these taps. Immutable; one filter may
    be shared by threads and contexts.

    ``Filter(name)`` makes a named filter: 'identity' (1x1), 'lp3' (3x3 Laplacian), 'lp5' (5x5, -1 around
    24), 'log9' (9x9 Laplacian of Gaussian), 'smooth5' (5x5 smoothing, sum 35), 'box:K' (separable, K
    ones, K odd) or 'gauss:SIGMA' (separable Gaussian, radius ceil(3*SIGMA) capped at 64, taps summing to
    1). ``Filter(taps)`` makes a 2D filter of a (kh, kw) array-like of taps (odd sizes, 1..63 each way;
    finite values); ``Filter.separable(row, col)`` a separable pair: `row` along x first, then `col`
    along y (odd lengths 1..129). Integer taps on u8/u16 images take gpk's exact integer path.
    """

    def __init__(self, spec):
        self._handle = None
        handle = c_void_p()
        if isinstance(spec, Filter):
            spec = spec.taps if not spec.is_separable else None
            if spec is None:
                raise InvalidArgumentError("copy a separable filter with Filter.separable(f.row, f.col)")
        if isinstance(spec, str):
            self._name = spec
            status = _lib.lib.gpk_filter_create_named(byref(handle), spec.encode())
        else:
            self._name = None
            taps = _taps(spec, "filter taps", 2)
            kh, kw = taps.shape
            status = _lib.lib.gpk_filter_create_2d(byref(handle), kh, kw,
                                                   taps.ctypes.data_as(POINTER(c_double)))
        _lib.check(status, None)
        self._handle = handle.value
        self._read_info()

    @classmethod
    def named(cls, name):
        """The named filter `name` (see the class docstring)."""
        return cls(str(name))

    @classmethod
    def separable(cls, row, col):
        """A separable filter: `row` taps applied along x, then `col` taps along y (1-D array-likes)."""
        row_taps, col_taps = _taps(row, "row taps", 1), _taps(col, "column taps", 1)
        handle = c_void_p()
        status = _lib.lib.gpk_filter_create_separable(byref(handle), row_taps.size,
                                                      row_taps.ctypes.data_as(POINTER(c_double)), col_taps.size,
                                                      col_taps.ctypes.data_as(POINTER(c_double)))
        _lib.check(status, None)
        self = cls.__new__(cls)
        self._handle, self._name = handle.value, None
        self._read_info()
        return self

    def _read_info(self):
        info = _lib.FilterInfo_C()
        info.struct_size = ctypes.sizeof(info)
        _lib.check(_lib.lib.gpk_filter_get_info(byref(info), self._handle), None)
        self._separable = bool(info.separable)
        self._shape = (info.kh, info.kw)
        self._sum = info.sum
        self._integer = bool(info.integer_taps)
        n = info.kh + info.kw if self._separable else info.kh * info.kw
        taps = np.empty(n, np.float64)
        _lib.check(_lib.lib.gpk_filter_get_taps(taps.ctypes.data_as(POINTER(c_double)), n, self._handle), None)
        taps.flags.writeable = False
        if self._separable:
            self._row, self._col = taps[:info.kw], taps[info.kw:]
        else:
            self._row = self._col = None
            self._taps = taps.reshape(self._shape)

    def __del__(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            _lib.lib.gpk_filter_destroy(handle)

    @property
    def name(self):
        """The name it was made from, or None."""
        return self._name

    @property
    def is_separable(self):
        """True for a (row, column) pair."""
        return self._separable

    @property
    def shape(self):
        """(kh, kw): rows and columns of the kernel (for a separable pair: column and row lengths)."""
        return self._shape

    @property
    def sum(self):
        """The sum of the taps (separable: sum(row) * sum(col)); what normalize='sum' divides by."""
        return self._sum

    @property
    def integer_taps(self):
        """True if every tap is an integer (u8/u16 images then take the exact integer path)."""
        return self._integer

    @property
    def taps(self):
        """The 2D kernel as a read-only (kh, kw) float64 array (separable: the outer product col x row)."""
        if self._separable:
            return np.outer(self._col, self._row)
        return self._taps

    @property
    def row(self):
        """The row taps of a separable filter (read-only), or None."""
        return self._row

    @property
    def col(self):
        """The column taps of a separable filter (read-only), or None."""
        return self._col

    def __repr__(self):
        kind = "separable" if self._separable else "2d"
        name = f"{self._name!r}, " if self._name else ""
        return f"<gpk.Filter {name}{kind} {self._shape[0]}x{self._shape[1]} sum={self._sum:g}>"


@functools.lru_cache(maxsize=64)
def _named(name):
    """The Filter of a name, made once: Filters are immutable, and making one costs a few library calls."""
    return Filter(name)


def as_filter(spec):
    """A Filter from a Filter, a name or 2D taps."""
    if isinstance(spec, Filter):
        return spec
    return _named(spec) if isinstance(spec, str) else Filter(spec)
