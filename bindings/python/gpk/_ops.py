"""gpk.histogram, gpk.convolve and gpk.heat."""
import contextlib
import operator
import signal
import threading
from ctypes import byref
from typing import NamedTuple

import numpy as np

from . import _arrays, _lib
from ._arrays import GPK_DTYPES, adapt, device_of
from ._context import resolve
from ._errors import CancelledError, InvalidArgumentError, error_for
from ._filter import as_filter

SIZE_MAX = 2**64 - 1


def _integer(value, what, lo, hi):
    try:
        v = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{what} is {value!r}; expected an integer") from None
    if not lo <= v <= hi:
        raise InvalidArgumentError(f"{what} is {v}; expected {lo}..{hi}")
    return v


def _real(value, what):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{what} is {value!r}; expected a real number") from None


def _choice(value, what, choices, aliases=None):
    key = "none" if value is None else value
    try:
        return choices[(aliases or {}).get(key, key)]
    except (KeyError, TypeError):
        raise InvalidArgumentError(f"{what} is {value!r}; expected one of {', '.join(map(repr, choices))}") from None


class _device_call:
    """Puts the context on the call's stream (device data only) and lets go of unknown streams after it."""

    __slots__ = ("ctx", "handle", "on_device")

    def __init__(self, ctx, handle, run_stream, keep, bufs):
        self.ctx, self.handle = ctx, handle
        self.on_device = any(b.device is not None for b in bufs)
        if self.on_device:
            ctx._prepare(handle, run_stream, keep, bufs)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.on_device:
            self.ctx._finish(self.handle)
        return False


def _begin(ctx, objs):
    """(run stream, its keeper) for a call on `objs`: the stream for device arrays, (None, True) for host."""
    first = next((o for o in objs if o is not None and device_of(o) is not None), None)
    if first is None:
        return None, True
    return ctx._run_stream(first)


def _stream_arg(run_stream):
    return _arrays.LEGACY_STREAM if run_stream is None else run_stream


# ---------------------------------------------------------------------------------------------------
# Histogram
# ---------------------------------------------------------------------------------------------------

def histogram(a, bins=256, range=(0, 256), saturate=0, *, channel_axis=None, return_uncounted=False,
              context=None):
    """Counts the samples of `a` into `bins` equal bins over ``range = (lower, upper)`` (lower inclusive,
    upper exclusive), exactly, in 64-bit counters.

    Parameters
    ----------
    a : array
        uint8, uint16, uint32, int32, float32 or float64 samples of any shape: a NumPy array (or
        anything ``numpy.asarray`` takes) or a CUDA device array (CuPy, PyTorch, Numba, JAX), read in
        place. NumPy arrays whose samples are not contiguous along the last axis (or whose rows cannot
        be described by one row pitch) are copied first; such device arrays are refused.
    bins : int
        Bins per channel, 1..2**40.
    range : (float, float)
        The bins' span. Integer samples with ``range == (0, bins)`` go to bin v; otherwise
        ``bin = floor((v - lower) * (bins / (upper - lower)))`` in double precision. Samples outside
        the range, equal to `upper`, and NaN are not counted.
    saturate : int
        Counts clamp at this value after exact counting (0 = no clamp; 255 gives 8-bit counters).
    channel_axis : int or None
        None counts every sample into one histogram. An axis (usually -1) of 1..4 interleaved channels
        gives one histogram per channel.
    return_uncounted : bool
        Also return the number of samples not counted (per channel).
    context : gpk.Context, optional
        The context to run on (default: `gpk.current_context`).

    Returns
    -------
    counts : numpy.ndarray of uint64
        Shape (bins,), or (channels, bins) with `channel_axis`. Always a NumPy array, also for device
        input.
    uncounted : int or numpy.ndarray of uint64
        Only with ``return_uncounted=True``: an int, or per channel with `channel_axis`.
    """
    bins, lower, upper, saturate = histogram_args(bins, range, saturate)
    a, channel_axis = histogram_input(a, channel_axis)
    ctx = resolve(context, [device_of(a)])
    with ctx._call() as handle:
        run_stream, keep = _begin(ctx, [a])
        buf, channels = histogram_buffer(a, channel_axis, run_stream)
        counts = _arrays.empty_host((channels, bins), np.uint64, "histogram")
        uncounted = np.zeros(channels, np.uint64)
        if buf.size == 0:
            counts[...] = 0
        else:
            buf, p = histogram_params(buf, channel_axis, channels, bins, lower, upper, saturate)
            with _device_call(ctx, handle, run_stream, keep, [buf]):
                _lib.traced("histogram", data=buf.ptr, stream=ctx._set)
                status = _lib.lib.gpk_histogram(handle, byref(p), buf.ptr, counts.ctypes.data,
                                                uncounted.ctypes.data)
            _lib.check(status, handle)
    if channel_axis is None:
        counts, uncounted = counts[0], int(uncounted[0])
    return (counts, uncounted) if return_uncounted else counts


def histogram_args(bins, range, saturate):
    """(bins, lower, upper, saturate) checked."""
    bins = _integer(bins, "bins", 1, 2**40)
    try:
        lower, upper = range
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"range is {range!r}; expected (lower, upper)") from None
    return bins, _real(lower, "range[0]"), _real(upper, "range[1]"), _integer(saturate, "saturate", 0, SIZE_MAX)


def histogram_input(a, channel_axis):
    """(a, channel_axis) with a NumPy input's channels moved last (a view), before the context is chosen."""
    if channel_axis is not None and device_of(a) is None:
        a = np.asarray(a)  # a NumPy view with the channels last (copied later only if it must be)
        if a.ndim == 0:
            raise InvalidArgumentError("gpk.histogram: a is a scalar; channel_axis needs an array")
        a = np.moveaxis(a, _integer(channel_axis, "channel_axis", -a.ndim, a.ndim - 1), -1)
        channel_axis = -1
    return a, channel_axis


def histogram_buffer(a, channel_axis, run_stream):
    """(Buffer of the samples with the channels last, channel count)."""
    buf = adapt(a, "gpk.histogram: a", _stream_arg(run_stream))
    _arrays.check_dtype(buf, "gpk.histogram: a", GPK_DTYPES)
    return buf, _move_channels_last(buf, channel_axis)


def histogram_params(buf, channel_axis, channels, bins, lower, upper, saturate):
    """(the Buffer the library reads, a copy where the samples are not in rows; its HistogramParams_C)."""
    layout = _histogram_layout(buf, channel_axis, channels)
    if layout is None:
        buf = _arrays.contiguous_copy(buf, "gpk.histogram: a", "samples are not in rows of contiguous pixels")
        if channel_axis is not None:
            _move_channels_last(buf, channel_axis)
        layout = _histogram_layout(buf, channel_axis, channels)
    height, width, stride = layout
    p = _lib.new_params(_lib.HistogramParams_C, "gpk_histogram_params_init")
    p.dtype, p.width, p.height, p.channels, p.stride = GPK_DTYPES[buf.dtype], width, height, channels, stride
    p.bins, p.lower, p.upper, p.saturate = bins, lower, upper, saturate
    return buf, p


def _move_channels_last(buf, channel_axis):
    """Puts the channel axis last (a view: shape and strides permuted); returns the channel count."""
    if channel_axis is None:
        return 1
    ndim = len(buf.shape)
    if ndim == 0:
        raise InvalidArgumentError("gpk.histogram: a is a scalar; channel_axis needs an array")
    axis = _integer(channel_axis, "channel_axis", -ndim, ndim - 1) % ndim
    _arrays.permute(buf, [i for i in range(ndim) if i != axis] + [axis])
    channels = buf.shape[-1]
    if not 1 <= channels <= 4:
        raise InvalidArgumentError(f"gpk.histogram: a has {channels} channels along axis {channel_axis}; "
                                   "gpk takes 1..4")
    return channels


def _histogram_layout(buf, channel_axis, channels):
    """(height, width, row stride) of the samples (channels last), or None where they must be copied."""
    item = buf.dtype.itemsize
    shape, strides = buf.shape, buf.strides
    if channel_axis is not None:
        if channels > 1 and strides[-1] != item:
            return None
        shape, strides = shape[:-1], strides[:-1]
    if buf.ptr % item:
        return None
    return _arrays.rows_layout(shape, strides, item, channels)


# ---------------------------------------------------------------------------------------------------
# Convolution
# ---------------------------------------------------------------------------------------------------

BORDERS = {"zero": 0, "clamp": 1, "mirror": 2, "reflect": 3, "wrap": 4}
BORDER_ALIASES = {"constant": "zero", "nearest": "clamp"}  # scipy.ndimage's names (constant with cval 0)
NORMALIZE = {"none": 0, "sum": 1, "minmax": 2}
ACCUMULATE = {"none": 0, "auto": 0, "f32": 1, "float32": 1, "f64": 2, "float64": 2}


def convolve(img, filter, border="clamp", normalize=None, out_dtype=None, accumulate=None, out=None, *,
             context=None):
    """Correlates an image with a filter: ``out[y, x] = sum_ab img[y + a - kh//2, x + b - kw//2] * f[a, b]``
    per channel (no flip, as ``scipy.ndimage.correlate``); a separable filter runs the row pass, then the
    column pass on its result.

    Parameters
    ----------
    img : array
        (height, width) or (height, width, channels) with 1..4 interleaved channels; uint8, uint16,
        float32 or float64. NumPy arrays (or what ``numpy.asarray`` takes) whose rows are not
        contiguous samples are copied first; device arrays (CuPy, PyTorch, Numba, JAX) are read in place
        and must have contiguous rows (any row pitch).
    filter : gpk.Filter, str or array-like
        A `gpk.Filter`, a filter name ('lp3', 'box:5', 'gauss:1.5', ...) or 2D taps.
    border : {'clamp', 'zero', 'mirror', 'reflect', 'wrap'}
        Pixels outside the image: nearest edge pixel (scipy 'nearest'), 0 (scipy 'constant' with
        cval=0), dcb|abcd|cba (scipy 'mirror'), cba|abcd|dcb (scipy 'reflect'), periodic. The scipy
        names 'nearest' and 'constant' are accepted too.
    normalize : {None, 'sum', 'minmax'}
        None: the weighted sum; 'sum': divided by the sum of the taps (a zero sum is refused); 'minmax':
        per channel, (v - min) * 255 / (max - min) of the filtered values (0 where max == min).
    out_dtype : dtype, optional
        uint8, uint16, float32 or float64; default the dtype of `out`, else of `img`. Integer outputs
        round to nearest (ties away from zero) and saturate.
    accumulate : {None, 'f32', 'f64'}
        Precision of sums with non-integer taps or images; None: f64 where the input or output is
        float64, else f32. Integer images with integer taps are always exact.
    out : array, optional
        The output, of img's shape: a writable NumPy array with contiguous rows, or a device array.
        Without it, the output is a new array where `img` lives: NumPy for host data, else an array of
        img's own library (CuPy, PyTorch; CuPy or PyTorch for other producers).
    context : gpk.Context, optional

    Returns
    -------
    The output array (`out` itself when given).

    Streams: device work runs on the context's stream if it has one, else on the input's own stream (the
    CAI ``stream`` of CuPy arrays, ``torch.cuda.current_stream()`` for PyTorch, the legacy default stream
    for other DLPack producers) and the call returns once it is enqueued there. Arrays whose producers
    named another stream are waited for first.
    """
    flt, border_v, normalize_v, accumulate_v = convolve_args(filter, border, normalize, accumulate, out)
    ctx = resolve(context, [device_of(img), None if out is None else device_of(out)])
    with ctx._call() as handle:
        run_stream, keep = _begin(ctx, [img, out])
        src, out, dst = convolve_buffers(img, out, out_dtype, run_stream)
        if src.size == 0:
            return out
        src, c_in, c_out = convolve_images(src, dst)
        p = convolve_params(flt, border_v, normalize_v, accumulate_v)
        with _device_call(ctx, handle, run_stream, keep, [src, dst]):
            _lib.traced("convolve", src=src.ptr, dst=dst.ptr, stream=ctx._set)
            status = _lib.lib.gpk_convolve(handle, byref(p), byref(c_in), src.ptr, byref(c_out), dst.ptr)
        _lib.check(status, handle)
    return out


def convolve_args(filter, border, normalize, accumulate, out):
    """(Filter, border, normalize, accumulate values) checked, and `out`'s kind."""
    flt = as_filter(filter)
    border_v = _choice(border, "border", BORDERS, BORDER_ALIASES)
    normalize_v = _choice(normalize, "normalize", NORMALIZE)
    accumulate_v = _choice(_dtype_key(accumulate), "accumulate", ACCUMULATE)
    if out is not None and not isinstance(out, np.ndarray) and device_of(out) is None:
        raise InvalidArgumentError(f"out is a {type(out).__name__}; expected a NumPy or a device array")
    return flt, border_v, normalize_v, accumulate_v


def convolve_buffers(img, out, out_dtype, run_stream):
    """(Buffer of img, the output array (made where img lives when `out` is None), its Buffer), checked."""
    src = adapt(img, "gpk.convolve: img", _stream_arg(run_stream))
    _arrays.check_dtype(src, "gpk.convolve: img", _arrays.CONVOLVE_DTYPES)
    _check_image_shape(src, "gpk.convolve: img")
    dst = None if out is None else adapt(out, "gpk.convolve: out", _stream_arg(run_stream))
    odt = _out_dtype(out_dtype) if out_dtype is not None else (dst.dtype if dst is not None else src.dtype)
    if dst is None:
        out = _arrays.allocate_like(src, src.shape, odt, "convolution output")
        dst = adapt(out, "gpk.convolve: out", _stream_arg(run_stream))
    else:
        _check_out(src, dst, odt)
    return src, out, dst


def convolve_images(src, dst):
    """(the Buffer the library reads, a copy where img's rows are not contiguous; Image_C of it and of out)."""
    layout = _arrays.image_layout(src)
    if layout is None:
        src = _arrays.contiguous_copy(src, "gpk.convolve: img", "rows are not contiguous samples")
        layout = _arrays.image_layout(src)
    out_layout = _arrays.image_layout(dst)
    if out_layout is None:
        raise InvalidArgumentError(f"gpk.convolve: out (shape {dst.shape}, strides {dst.strides} bytes) does not "
                                   "have rows of contiguous samples")
    height, width, channels, stride = layout
    c_in = _image(GPK_DTYPES[src.dtype], width, height, channels, stride)
    c_out = _image(GPK_DTYPES[dst.dtype], width, height, channels, out_layout[3])
    return src, c_in, c_out


def convolve_params(flt, border_v, normalize_v, accumulate_v):
    p = _lib.new_params(_lib.ConvolveParams_C, "gpk_convolve_params_init")
    p.filter, p.border, p.normalize, p.accumulate = flt._handle, border_v, normalize_v, accumulate_v
    return p


def _out_dtype(value):
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    if dtype is None or dtype not in _arrays.CONVOLVE_DTYPES:
        raise InvalidArgumentError(f"out_dtype is {value!r}; gpk takes uint8, uint16, float32, float64")
    return dtype


def _image(dtype, width, height, channels, stride):
    image = _lib.new_params(_lib.Image_C, "gpk_image_init", 0, 1, 1, 1)
    image.dtype, image.width, image.height, image.channels, image.stride = dtype, width, height, channels, stride
    return image


def _dtype_key(value):
    if value is None or isinstance(value, str):
        return value
    try:
        return np.dtype(value).name
    except TypeError:
        return value


def _check_image_shape(buf, what):
    if len(buf.shape) not in (2, 3):
        raise InvalidArgumentError(f"{what} has shape {buf.shape}; expected (height, width) or (height, width, "
                                   "channels)")
    if len(buf.shape) == 3 and not 1 <= buf.shape[2] <= 4:
        raise InvalidArgumentError(f"{what} has {buf.shape[2]} channels (shape {buf.shape}); gpk takes 1..4")


def _check_out(src, dst, odt):
    if dst.shape != src.shape:
        raise InvalidArgumentError(f"gpk.convolve: out has shape {dst.shape}; expected img's {src.shape}")
    if dst.dtype != odt:
        raise InvalidArgumentError(f"gpk.convolve: out has dtype {dst.dtype.name}; out_dtype is {odt.name}")
    if dst.readonly:
        raise InvalidArgumentError("gpk.convolve: out is read-only")


# ---------------------------------------------------------------------------------------------------
# Heat
# ---------------------------------------------------------------------------------------------------

class HeatReport(NamedTuple):
    """One report of a heat run, over the interior of the newest grid."""

    niter: int
    """Iterations done."""
    tmin: float
    """Minimum temperature."""
    tmax: float
    """Maximum temperature."""
    maxdiff: float
    """max |new - old| of the newest iteration."""
    tavg: float
    """Mean temperature."""
    time: float
    """Seconds since the loop started."""
    final: bool
    """True for the report at the end of the run."""


class HeatResult(NamedTuple):
    """What `gpk.heat` returns: the final grid and the reports (periodic ones, then the final one)."""

    grid: object
    """The final (rows, cols) float64 temperatures, where the input lives (or `out`)."""
    reports: list
    """HeatReport values: every periodic report, the final report last."""

    @property
    def final(self):
        """The final report."""
        return self.reports[-1]

    @property
    def niter(self):
        """Iterations done."""
        return self.reports[-1].niter


# Cell updates between the caller's progress calls when it sets no interval.
_PROGRESS_CELLS = {"cpu": 2**24, "cuda": 2**27}


def _progress_interval(interval, backends, cells):
    """The caller's interval, or its default: about _PROGRESS_CELLS cell updates of the fewest."""
    return interval or max(1, min(_PROGRESS_CELLS.get(b, 2**24) for b in backends) // max(cells, 1))


class _Run:
    """The callbacks of one heat run: reports are collected, the caller's callbacks called, exceptions
    kept (and the run stopped) to be raised once the library has returned.

    The library is asked for progress at every pass boundary (progress_interval 1: progress never
    shortens a pass), which is where Ctrl-C (marked by _sigint_stops) stops the run, within a batch of
    passes; the caller's on_progress comes at the boundaries the library would call it at for `interval`:
    the first at or after each multiple."""

    def __init__(self, on_report, on_progress, interval=1):
        self.on_report, self.on_progress, self.interval = on_report, on_progress, interval
        self.reports, self.error, self.interrupted = [], None, False
        self.boundary = 0  # the last pass boundary seen
        self.report_fn = _lib.REPORT_FN(self._report)
        self.progress_fn = _lib.PROGRESS_FN(self._progress)

    def _report(self, report, is_final, _user):
        try:
            r = report.contents
            rep = HeatReport(int(r.niter), r.tmin, r.tmax, r.maxdiff, r.tavg, r.time, bool(is_final))
            self.reports.append(rep)
            if self.error is None and not self.interrupted and self.on_report is not None:
                if self.on_report(rep):
                    return 1
            return 1 if self.error is not None or self.interrupted else 0
        except BaseException as e:  # noqa: B036 -- KeyboardInterrupt included: it stops the run
            self.error = self.error or e
            return 1

    def _progress(self, niter, maxdiff, time, _user):
        try:
            if self.error is not None or self.interrupted:
                return 1
            due = niter // self.interval > self.boundary // self.interval
            self.boundary = niter
            if due and self.on_progress is not None and self.on_progress(int(niter), maxdiff, time):
                return 1
            return 0
        except BaseException as e:  # noqa: B036
            self.error = self.error or e
            return 1


@contextlib.contextmanager
def _sigint_stops(run):
    """On the main thread with Python's default SIGINT handler, Ctrl-C during the run only marks it, and
    the next callback (at the next pass boundary) stops it; KeyboardInterrupt is raised when the library
    has returned."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return

    def mark(signum, frame):
        run.interrupted = True

    signal.signal(signal.SIGINT, mark)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _heat_input(obj, what, shape, run_stream):
    if obj is None:
        raise InvalidArgumentError(f"gpk.heat: {what} is None")
    if not isinstance(obj, np.ndarray) and device_of(obj) is None:
        if np.ndim(obj) == 0 and shape is not None:  # a scalar conductivity
            obj = np.full(shape, _real(obj, f"gpk.heat: {what}"))
        obj = np.asarray(obj)
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biuf":
            raise InvalidArgumentError(f"gpk.heat: {what} has dtype {obj.dtype}; expected real numbers")
        obj = _arrays.host_copy(obj, np.float64, f"gpk.heat: {what}")  # a copy only where it is not that already
    buf = adapt(obj, f"gpk.heat: {what}", _stream_arg(run_stream))
    if len(buf.shape) != 2:
        raise InvalidArgumentError(f"gpk.heat: {what} has shape {buf.shape}; expected (rows, cols)")
    if shape is not None and buf.shape != tuple(shape):
        raise InvalidArgumentError(f"gpk.heat: {what} has shape {buf.shape}; tinit has {tuple(shape)}")
    if buf.size == 0:
        raise InvalidArgumentError(f"gpk.heat: {what} has shape {buf.shape}; it needs a row and a column at least")
    if buf.dtype != np.float64 or buf.strides != _arrays.c_strides(buf.shape, 8):
        raise InvalidArgumentError(f"gpk.heat: {what} is a {buf.dtype.name} device array with strides "
                                   f"{buf.strides}; gpk takes C-contiguous float64 device arrays")
    return buf


def heat(tinit, conductivity, maxiter=5000, threshold=0.001, period=0, on_report=None, on_progress=None,
         progress_interval=None, out=None, *, context=None):
    """Heat dissipation on a cylinder (README.md, "What gpk computes"): a Jacobi 8-neighbour stencil weighted
    by each cell's conductivity; the columns wrap around, the rows above and below the grid hold the first
    and last rows' initial temperatures.

    Parameters
    ----------
    tinit : array (rows, cols)
        Initial temperatures, finite. NumPy input (or what ``numpy.asarray`` takes) of another real
        dtype or layout is converted to C-contiguous float64 (a copy); device arrays must be that
        already and are read in place.
    conductivity : array (rows, cols) or float
        Per-cell conductivity in [0, 1] (a number: the same for every cell).
    maxiter : int
        Iterations at most (>= 1).
    threshold : float
        Stop at the first iteration whose max |new - old| is below this (>= 0; 0 never stops early).
    period : int
        A periodic report every `period` iterations (0: none); not on the iteration that converges.
    on_report : callable(HeatReport) -> bool, optional
        Called with every report (periodic, then the final one); a true return stops the run.
    on_progress : callable(niter, maxdiff, seconds) -> bool, optional
        Called at the first pass boundary at or after each multiple of `progress_interval` (gpk.h: a
        backend advances several iterations a pass, up to 4 on the CPU and a batch of passes on the GPU,
        and progress never shortens one), with the iteration reached and its maxdiff; a true return stops
        the run at that boundary (on the GPU, at the end of the batch already queued).
    progress_interval : int, optional
        Iterations between progress calls; default about every 2**24 (CPU) or 2**27 (GPU) cell updates.
    out : array (rows, cols), optional
        Receives the final grid (C-contiguous float64, host or device).
    context : gpk.Context, optional

    Returns
    -------
    HeatResult(grid, reports): the final grid (where `tinit` lives) and the reports, final one last
    (``result.final``, ``result.niter``).

    Raises
    ------
    gpk.CancelledError
        A callback returned true; ``error.result`` is the HeatResult of the state reached.
    KeyboardInterrupt
        Ctrl-C (SIGINT) during a run on the main thread stops it at the next pass boundary (well within a
        second); the exception carries the HeatResult as ``.result``. An exception raised by a callback
        likewise stops the run and is raised again with ``.result``.
    """
    args = heat_args(maxiter, threshold, period, on_report, on_progress, progress_interval)
    objs = [tinit, conductivity, out]
    ctx = resolve(context, [device_of(o) for o in objs if o is not None])
    with ctx._call() as handle:
        run_stream, keep = _begin(ctx, objs)
        src, cond, out, dst = heat_buffers(tinit, conductivity, out, run_stream)
        rows, cols = src.shape
        run = _Run(on_report, on_progress, _progress_interval(args[3], [ctx.backend], rows * cols))
        p = heat_params(run, rows, cols, *args[:3])
        with _sigint_stops(run), _device_call(ctx, handle, run_stream, keep, [src, cond, dst]):
            _lib.traced("heat", tinit=src.ptr, conductivity=cond.ptr, tfinal=dst.ptr, stream=ctx._set)
            status = _lib.lib.gpk_heat_run(handle, byref(p), src.ptr, cond.ptr, dst.ptr, None)
        message = _lib.last_error(handle) if status else ""
    return heat_outcome(run, status, message, out)


def heat_args(maxiter, threshold, period, on_report, on_progress, progress_interval):
    """(maxiter, threshold, period, progress_interval or None) checked, and the callbacks callable."""
    maxiter = _integer(maxiter, "maxiter", 0, SIZE_MAX)
    period = _integer(period, "period", 0, SIZE_MAX)
    threshold = _real(threshold, "threshold")
    if progress_interval is not None:
        progress_interval = _integer(progress_interval, "progress_interval", 1, SIZE_MAX)
    for name, fn in (("on_report", on_report), ("on_progress", on_progress)):
        if fn is not None and not callable(fn):
            raise InvalidArgumentError(f"gpk.heat: {name} is not callable")
    return maxiter, threshold, period, progress_interval


def heat_buffers(tinit, conductivity, out, run_stream):
    """(Buffers of tinit and conductivity, the output array (made where tinit lives when `out` is None), its
    Buffer), checked."""
    src = _heat_input(tinit, "tinit", None, run_stream)
    cond = _heat_input(conductivity, "conductivity", src.shape, run_stream)
    if out is None:
        out = _arrays.allocate_like(src, src.shape, np.float64, "heat grid")
    elif not isinstance(out, np.ndarray) and device_of(out) is None:
        raise InvalidArgumentError(f"gpk.heat: out is a {type(out).__name__}; expected a NumPy or a device array")
    dst = adapt(out, "gpk.heat: out", _stream_arg(run_stream))
    heat_check_out(dst, src.shape)
    return src, cond, out, dst


def heat_check_out(dst, shape):
    if (dst.shape != shape or dst.dtype != np.float64
            or (dst.size and dst.strides != _arrays.c_strides(dst.shape, 8))):
        raise InvalidArgumentError(f"gpk.heat: out ({dst.dtype.name}, shape {dst.shape}, strides {dst.strides}) "
                                   f"is not a C-contiguous float64 array of shape {shape}")
    if dst.readonly:
        raise InvalidArgumentError("gpk.heat: out is read-only")


def heat_params(run, rows, cols, maxiter, threshold, period):
    """The run's parameters: progress at every pass boundary (_Run filters the caller's)."""
    p = _lib.new_params(_lib.HeatParams_C, "gpk_heat_params_init")
    p.rows, p.cols, p.maxiter, p.threshold, p.period = rows, cols, maxiter, threshold, period
    p.on_report, p.on_progress = run.report_fn, run.progress_fn
    p.progress_interval = 1
    return p


def heat_outcome(run, status, message, out):
    """The HeatResult of a run that returned `status`, or the exception it ends in (carrying the result)."""
    result = HeatResult(out, run.reports)
    if run.interrupted or run.error is not None:
        error = run.error if run.error is not None and not run.interrupted else KeyboardInterrupt()
        try:
            error.result = result
        except AttributeError:
            pass
        raise error
    if status == CancelledError.status:
        error = CancelledError(message)
        error.result = result
        raise error
    if status:
        raise error_for(status, message)
    return result
