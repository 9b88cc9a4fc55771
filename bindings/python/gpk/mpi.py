"""gpk over MPI ranks (libgpk_mpi) on mpi4py communicators.

    >>> from mpi4py import MPI
    >>> import gpk.mpi, numpy as np
    >>> comm = MPI.COMM_WORLD
    >>> begin, count = gpk.mpi.default_block(comm, 1000)        # this rank's rows of a 1000-row grid
    >>> tinit = np.zeros((count, 500)); tinit[0] = 100.0 if begin == 0 else 0.0
    >>> grid, reports = gpk.mpi.heat(comm, tinit, 0.5, rows=1000)  # this rank's block of the final grid

Each rank holds a block of whole rows of the data: the blocks follow each other in rank order (``row_begin``,
by default the rows of the lower ranks' blocks) and every rank has at least one row (histograms: one sample).
`heat`, `histogram` and `convolve` take the parameters of `gpk.heat`, `gpk.histogram` and `gpk.convolve`
with the same names, defaults, reports and errors, and their results are bit-identical to those functions on
the whole data in one process (the report times aside).

Every function but `default_block` is collective over `comm`: every rank calls it, in the same order as its
other collective calls on `comm`. A failure on any rank (a bad argument, parameters or dtypes that differ
between ranks, blocks that do not tile the rows, an error of the library) raises on every rank the same
`gpk.Error` subclass with the same message, which names the rank ("rank 2: ..."); no rank is left waiting.
A callback that raises stops the run on every rank; that rank raises the callback's exception, the others
`gpk.CancelledError`.

Blocks are NumPy arrays or CUDA device arrays (CuPy, PyTorch), as elsewhere in the package. `histogram` reads
device blocks in place; libgpk_mpi takes host memory for heat and convolution (its halo rows travel through
host buffers), so `heat` and `convolve` copy device blocks to the host and the result back (CuPy or PyTorch
arrays). A rank computes on its context: ``context=``, else the thread's as for the other functions; on GPU
ranks `context` (``with gpk.mpi.context(comm):``) gives each rank its own GPU.

mpi4py is imported by the caller, not by this module (importing ``mpi4py.MPI`` initialises MPI);
libgpk_mpi is loaded from the package's copy on first use (``GPK_MPI_LIBRARY`` overrides it).
"""
import ctypes
import sys
from ctypes import POINTER, byref, c_int, c_size_t, c_void_p

import numpy as np

from . import _arrays, _lib, _ops
from ._arrays import device_of, library_of
from ._context import Context, resolve
from ._errors import Error, InvalidArgumentError, error_for

_ALL_RANKS = -1  # GPK_MPI_ALL_RANKS

__all__ = ["heat", "histogram", "convolve", "default_block", "context"]

_mpi = None  # (libgpk_mpi as a ctypes library, its path), once loaded


# ---------------------------------------------------------------------------------------------------
# libgpk_mpi and the communicator
# ---------------------------------------------------------------------------------------------------

def _mpi4py():
    """mpi4py.MPI if the caller imported it (a communicator cannot exist otherwise), else None."""
    return sys.modules.get("mpi4py.MPI")


def _load(MPI):
    """libgpk_mpi with its functions declared for this MPI's C handle type."""
    global _mpi
    if _mpi is not None:
        return _mpi
    lib, path = _lib.load(_lib.candidates("GPK_MPI_LIBRARY", "MPI_LIBRARY", _lib.MPI_SONAME), "libgpk_mpi",
                          "GPK_MPI_LIBRARY")
    # libgpk_mpi calls libgpk's internal entry points: it must reach the libgpk this package loaded, not a
    # second copy (GPK_LIBRARY naming another build than the package's libgpk_mpi).
    if _address(lib.gpk_context_create) != _address(_lib.lib.gpk_context_create):
        raise ImportError(f"gpk.mpi: {path} uses another libgpk than {_lib.path}; set GPK_MPI_LIBRARY to the "
                          "libgpk_mpi of the same build as GPK_LIBRARY")
    # And the MPI library mpi4py calls: a communicator means nothing to another MPI in the same process.
    ours, theirs = _mpi_function(lib), _mpi_function(ctypes.CDLL(MPI.__file__))
    if ours is None or theirs is None or _address(ours) != _address(theirs):
        raise ImportError(f"gpk.mpi: {path} and mpi4py use different MPI libraries ({_mpi_version(lib)!r} and "
                          f"{MPI.Get_library_version().strip()!r}); build mpi4py against the MPI of gpk")
    # The communicator reaches the library as its C handle (MPI_Comm), read from mpi4py with
    # MPI._handleof, its type (a pointer in Open MPI, an int in MPICH) from MPI._sizeof. Chosen over
    # comm.py2f() and an MPI_Fint entry point: the C functions take MPI_Comm (only heat has a Fortran twin),
    # the handle is exactly what mpi4py holds (no conversion table in between), and both routes need the
    # same MPI library in the process anyway, which the check above makes sure of.
    size = MPI._sizeof(MPI.Comm)
    comm_t = {ctypes.sizeof(c_void_p): c_void_p, ctypes.sizeof(c_int): c_int}.get(size)
    if comm_t is None:
        raise ImportError(f"gpk.mpi: MPI_Comm has {size} bytes here; gpk.mpi knows ints and pointers")
    p = c_void_p
    _declare(lib, "gpk_mpi_context_create", POINTER(c_void_p), comm_t, p)
    _declare(lib, "gpk_mpi_default_block", POINTER(c_size_t), POINTER(c_size_t), comm_t, c_size_t)
    _declare(lib, "gpk_mpi_heat_run", p, comm_t, p, c_size_t, c_size_t, p, p, p, POINTER(_lib.HeatReport_C))
    _declare(lib, "gpk_mpi_histogram", p, comm_t, c_int, p, p, p, p)
    _declare(lib, "gpk_mpi_convolve", p, comm_t, p, c_size_t, c_size_t, p, p, p, p)
    _mpi = (lib, path)
    return _mpi


def _address(fn):
    return ctypes.cast(fn, c_void_p).value


def _mpi_function(lib):
    try:
        return lib.MPI_Get_library_version  # dlsym on a handle searches the libraries it loaded too
    except AttributeError:
        return None


def _mpi_version(lib):
    fn = _mpi_function(lib)
    if fn is None:
        return "no MPI_Get_library_version"
    text, length = ctypes.create_string_buffer(16384), c_int()
    fn(text, byref(length))
    return text.value.decode("utf-8", "replace").strip()


def _declare(lib, name, *argtypes):
    fn = getattr(lib, name)
    fn.restype = c_int
    fn.argtypes = list(argtypes)


def _comm(comm, what):
    """(libgpk_mpi, the C handle of comm) for an mpi4py intracommunicator; InvalidArgumentError otherwise."""
    MPI = _mpi4py()
    if MPI is None or not isinstance(comm, MPI.Comm):
        raise InvalidArgumentError(f"{what}: comm is a {type(comm).__name__}; expected an mpi4py communicator "
                                   "(mpi4py.MPI.Comm, e.g. MPI.COMM_WORLD)")
    if not MPI.Is_initialized() or MPI.Is_finalized():
        raise InvalidArgumentError(f"{what}: MPI is not initialised, or already finalised")
    if comm == MPI.COMM_NULL:
        raise InvalidArgumentError(f"{what}: comm is MPI.COMM_NULL")
    if comm.Is_inter():
        raise InvalidArgumentError(f"{what}: comm is an intercommunicator; gpk.mpi takes intracommunicators")
    lib, _ = _load(MPI)
    return lib, MPI._handleof(comm)


def _rank_list(ranks):
    """'0-2, 5' for [0, 1, 2, 5]."""
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ", ".join(out)


def _collective(comm, what, prepare):
    """Runs prepare() -> (value, fields, facts) on this rank, then makes the ranks agree (one all-gather on
    comm): a failure on any rank raises the same error on every rank (its message names the rank; the
    failing rank raises its own exception where it is not a gpk.Error), and so does a field of `fields` (a
    dict of values that must be equal) that differs between ranks. Returns (value, the fields, every rank's
    facts: values that may differ, such as the block's rows).

    The all-gather runs on the caller's communicator: every rank makes it at the same point of the same
    collective call, so it cannot match another of the caller's collectives, and point-to-point messages
    never match a collective."""
    failure = None
    try:
        value, fields, facts = prepare()
        mine = (None, (fields, facts))
    except Exception as e:  # noqa: BLE001 -- every failure must reach the other ranks, or they would wait
        value, failure = None, e
        status = e.status if isinstance(e, Error) else None
        mine = ((status, str(e) if isinstance(e, Error) else f"{type(e).__name__}: {e}"), None)
    everyone = comm.allgather(mine)
    for rank, (err, _) in enumerate(everyone):
        if err is not None:
            if rank == comm.Get_rank() and not isinstance(failure, Error):
                raise failure
            status, message = err
            message = f"rank {rank}: {message}" if len(everyone) > 1 else message
            raise error_for(status, message) if status is not None else Error(message)
    all_fields = [f for _, (f, _) in everyone]
    for name in all_fields[0]:
        holders = {}
        for rank, f in enumerate(all_fields):
            holders.setdefault(f[name], []).append(rank)
        if len(holders) > 1:
            groups = "; ".join(f"{_shown(v)} on rank{'s' if len(r) > 1 else ''} {_rank_list(r)}"
                               for v, r in sorted(holders.items(), key=lambda item: item[1]))
            raise InvalidArgumentError(f"{what}: {name} differs between ranks: {groups}; it must be the same on "
                                       "every rank")
    return value, all_fields[0], [facts for _, (_, facts) in everyone]


def _shown(value):
    return "not given" if value is None else str(value)


def _blocks(what, counts, begins, rows, rows_name):
    """(rows, this rank's row_begin) from every rank's row count and row_begin (None: follow the lower
    ranks), checked to tile the rows in rank order; the same InvalidArgumentError on every rank if not."""
    empty = [r for r, n in enumerate(counts) if n == 0]
    if empty:
        raise InvalidArgumentError(f"{what}: no rows on rank{'s' if len(empty) > 1 else ''} {_rank_list(empty)}; "
                                   "every rank needs a block of at least one row")
    total = sum(counts)
    if rows is None:
        rows = total
    starts, next_row = [], 0
    for r, (n, b) in enumerate(zip(counts, begins)):
        b = next_row if b is None else b
        if b != next_row:
            raise InvalidArgumentError(
                f"{what}: the blocks do not tile the rows in rank order: rank {r}'s row_begin is {b}, but "
                + (f"rank {r - 1}'s block ends at row {next_row}" if r else "the first block must begin at row 0"))
        starts.append(b)
        next_row += n
    if next_row != rows:
        sizes = " + ".join(str(n) for n in counts)
        raise InvalidArgumentError(f"{what}: the blocks do not tile the rows: they hold {sizes} = {total} rows, "
                                   f"and {rows_name} is {rows}")
    return rows, starts


# ---------------------------------------------------------------------------------------------------
# Device blocks (heat, convolution): through host memory
# ---------------------------------------------------------------------------------------------------

def _to_host(obj, what):
    """A NumPy copy of a CuPy or PyTorch device array; host data as it is."""
    if device_of(obj) is None:
        return obj
    library = library_of(obj)
    if library == "cupy":
        import cupy
        return cupy.asnumpy(obj)
    if library == "torch":
        return obj.detach().cpu().numpy()
    raise InvalidArgumentError(f"{what} is a {type(obj).__name__} on the device; gpk.mpi copies device blocks of "
                               "heat and convolution through host memory, which it does for CuPy and PyTorch "
                               "arrays")


def _from_host(host, like, out):
    """`out` (a device array), or a new array on the device of `like`, holding the NumPy array `host`."""
    target = out if out is not None else like
    if library_of(target) == "torch":
        import torch
        if out is None:
            return torch.from_numpy(host).to(like.device)
        out.copy_(torch.from_numpy(host))
        return out
    import cupy
    with cupy.cuda.Device(device_of(target)):
        if out is None:
            return cupy.asarray(host)
        out[...] = cupy.asarray(host)
    return out


# ---------------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------------

def default_block(comm, rows):
    """This rank's default block of `rows` rows: ``(row_begin, row_count)`` (gpk_mpi_default_block): the
    rows split as evenly as they go over the ranks of ``comm`` in rank order, the first ``rows % size``
    ranks a row more. Not collective. Ranks beyond the rows get a count of 0, which the operations refuse.

        >>> begin, count = gpk.mpi.default_block(comm, len(grid)); block = grid[begin:begin + count]
    """
    lib, handle = _comm(comm, "gpk.mpi.default_block")
    rows = _ops._integer(rows, "rows", 0, _ops.SIZE_MAX)
    begin, count = c_size_t(), c_size_t()
    _lib.check(lib.gpk_mpi_default_block(byref(begin), byref(count), handle, rows), None)
    return begin.value, count.value


def context(comm, backend="auto", stream=None, threads=0):
    """A `gpk.Context` for this rank (collective; gpk_mpi_context_create): on the CUDA backend, the device
    of the rank's place on its node (local rank r takes device r modulo the node's devices); `backend`,
    `stream` and `threads` as for `gpk.Context`. A failure on any rank raises on every rank."""
    what = "gpk.mpi.context"
    lib, handle = _comm(comm, what)

    def prepare():
        opts, owner = Context._options(backend, 0, stream, threads)
        node = comm.Split_type(_mpi4py().COMM_TYPE_SHARED)
        local = node.Get_rank()
        node.Free()
        count = c_int(0)
        found = _lib.lib.gpk_device_count(byref(count)) == 0 and count.value > 0
        opts.device = local % count.value if found else 0
        return (opts, owner), {}, None

    (opts, owner), _, _ = _collective(comm, what, prepare)
    ctx = Context.__new__(Context)
    ctx._handle = None
    ctx._create(lambda out, o: lib.gpk_mpi_context_create(out, handle, o), opts, owner)
    return ctx


def heat(comm, tinit, conductivity, maxiter=5000, threshold=0.001, period=0, on_report=None, on_progress=None,
         progress_interval=None, out=None, *, rows=None, row_begin=None, context=None):
    """`gpk.heat` of a grid split into blocks of whole rows (gpk_mpi_heat_run): this rank holds rows
    ``row_begin .. row_begin + len(tinit)`` of the whole grid's `tinit`, `conductivity` (an array of the
    block's shape, or a number) and of the result.

    Parameters are those of `gpk.heat`, with
    rows : int, optional
        The whole grid's rows (default: the sum of the blocks' rows).
    row_begin : int, optional
        Where this rank's block begins (default: after the lower ranks' blocks).

    Returns
    -------
    HeatResult(grid, reports): this rank's block of the final grid (where `tinit` lives, or `out`), and the
    reports of the whole grid, the same on every rank (each report's time is the slowest rank's). The
    final grid and the reports but their times are bit-identical to `gpk.heat` of the whole grid (of a run
    that no callback stops). Callbacks run on every rank at the same iterations (progress: at the pass
    boundaries of the ranks' passes); one that returns true on any rank stops every rank at that boundary
    (`gpk.CancelledError`).
    """
    what = "gpk.mpi.heat"
    lib, handle = _comm(comm, what)

    def prepare():
        args = _ops.heat_args(maxiter, threshold, period, on_report, on_progress, progress_interval)
        given_rows = None if rows is None else _ops._integer(rows, "rows", 1, _ops.SIZE_MAX)
        begin = None if row_begin is None else _ops._integer(row_begin, "row_begin", 0, _ops.SIZE_MAX)
        ctx = resolve(context, [device_of(o) for o in (tinit, conductivity, out) if o is not None])
        staged = out is not None and device_of(out) is not None
        src, cond, host_out, dst = _ops.heat_buffers(_to_host(tinit, "gpk.heat: tinit"),
                                                     _to_host(conductivity, "gpk.heat: conductivity"),
                                                     None if staged else out, None)
        if staged:
            _ops.heat_check_out(_arrays.adapt(out, "gpk.heat: out"), src.shape)
        fields = {"rows": given_rows, "tinit's columns": src.shape[1], "maxiter": args[0], "threshold": args[1],
                  "period": args[2], "progress_interval": args[3], "row_begin (given or not)": begin is not None,
                  "on_report (given or not)": on_report is not None,
                  "on_progress (given or not)": on_progress is not None}
        return (args, ctx, src, cond, host_out, dst, staged), fields, (src.shape[0], begin, ctx.backend)

    (args, ctx, src, cond, host_out, dst, staged), fields, facts = _collective(comm, what, prepare)
    counts = [f[0] for f in facts]
    total, starts = _blocks(what, counts, [f[1] for f in facts], fields["rows"], "rows")
    rows_here, cols = src.shape
    # As gpk.heat, from the largest block and the slowest backend: the same on every rank.
    interval = _ops._progress_interval(args[3], [f[2] for f in facts], max(counts) * cols)
    run = _ops._Run(on_report, on_progress, interval)
    p = _ops.heat_params(run, total, cols, *args[:3])
    with ctx._call() as ctx_handle:
        with _ops._sigint_stops(run):
            _lib.traced("mpi.heat", tinit=src.ptr, conductivity=cond.ptr, tfinal=dst.ptr, stream=None)
            status = lib.gpk_mpi_heat_run(ctx_handle, handle, byref(p), starts[comm.Get_rank()], rows_here,
                                          src.ptr, cond.ptr, dst.ptr, None)
        message = _lib.last_error(ctx_handle) if status else ""
    if staged or (out is None and device_of(tinit) is not None):
        host_out = _from_host(host_out, tinit, out)
    return _ops.heat_outcome(run, status, message, host_out)


def histogram(comm, a, bins=256, range=(0, 256), saturate=0, *, root=None, channel_axis=None,
              return_uncounted=False, context=None):
    """`gpk.histogram` of samples spread over the ranks (gpk_mpi_histogram): each rank counts its own `a`
    (any shape and size, at least one sample; dtype and channels the same on every rank), and the counts
    are summed exactly into the result. `saturate` clamps the sums. Device arrays are read in place.

    Parameters are those of `gpk.histogram`, with
    root : int or None
        The rank that receives the counts; None: every rank.

    Returns
    -------
    What `gpk.histogram` returns, for the samples of every rank, on the ranks that receive the counts;
    None elsewhere.
    """
    what = "gpk.mpi.histogram"
    lib, handle = _comm(comm, what)
    size = comm.Get_size()

    def prepare():
        bins_v, lower, upper, sat = _ops.histogram_args(bins, range, saturate)
        if root is not None:
            _ops._integer(root, "root", 0, size - 1)
        data, axis = _ops.histogram_input(a, channel_axis)
        ctx = resolve(context, [device_of(data)])
        fields = {"bins": bins_v, "range": (lower, upper), "saturate": sat, "root": root,
                  "channel_axis (given or not)": channel_axis is not None}
        return (bins_v, lower, upper, sat, data, axis, ctx), fields, None

    (bins_v, lower, upper, sat, data, axis, ctx), _, _ = _collective(comm, what, prepare)
    target = _ALL_RANKS if root is None else root
    receives = root is None or root == comm.Get_rank()
    with ctx._call() as ctx_handle:

        def layout():
            run_stream, keep = _ops._begin(ctx, [data])
            buf, channels = _ops.histogram_buffer(data, axis, run_stream)
            if buf.size == 0:
                raise InvalidArgumentError("gpk.histogram: a has no samples; every rank needs at least one")
            buf, p = _ops.histogram_params(buf, axis, channels, bins_v, lower, upper, sat)
            fields = {"a's dtype": buf.dtype.name, "a's channels": channels}
            return (run_stream, keep, buf, channels, p), fields, None

        (run_stream, keep, buf, channels, p), _, _ = _collective(comm, what, layout)
        counts = _arrays.empty_host((channels, bins_v), np.uint64, "histogram") if receives else None
        uncounted = np.zeros(channels, np.uint64) if receives else None
        with _ops._device_call(ctx, ctx_handle, run_stream, keep, [buf]):
            _lib.traced("mpi.histogram", data=buf.ptr, stream=ctx._set)
            status = lib.gpk_mpi_histogram(ctx_handle, handle, target, byref(p), buf.ptr,
                                           None if counts is None else counts.ctypes.data,
                                           None if uncounted is None else uncounted.ctypes.data)
        _lib.check(status, ctx_handle)
    if not receives:
        return None
    if channel_axis is None:
        counts, uncounted = counts[0], int(uncounted[0])
    return (counts, uncounted) if return_uncounted else counts


def convolve(comm, img, filter, border="clamp", normalize=None, out_dtype=None, accumulate=None, out=None, *,
             height=None, row_begin=None, context=None):
    """`gpk.convolve` of an image split into blocks of whole rows (gpk_mpi_convolve): this rank holds rows
    ``row_begin .. row_begin + len(img)`` of the image and of the output. Halo rows come from the
    neighbouring ranks; at the image's top and bottom the border rule applies (wrap reads the other end),
    and 'minmax' normalises over the whole image. The output is bit-identical to `gpk.convolve` of the
    whole image.

    Parameters are those of `gpk.convolve` (width, channels, dtypes, filter and options the same on every
    rank), with
    height : int, optional
        The whole image's rows (default: the sum of the blocks' rows).
    row_begin : int, optional
        Where this rank's block begins (default: after the lower ranks' blocks).

    Returns
    -------
    This rank's block of the output (`out` itself when given; else a new array where `img` lives).
    """
    what = "gpk.mpi.convolve"
    lib, handle = _comm(comm, what)

    def prepare():
        flt, border_v, normalize_v, accumulate_v = _ops.convolve_args(filter, border, normalize, accumulate, out)
        given_height = None if height is None else _ops._integer(height, "height", 1, _ops.SIZE_MAX)
        begin = None if row_begin is None else _ops._integer(row_begin, "row_begin", 0, _ops.SIZE_MAX)
        ctx = resolve(context, [device_of(img), None if out is None else device_of(out)])
        staged = out is not None and device_of(out) is not None
        host_img = _to_host(img, "gpk.convolve: img")
        device_out = _arrays.adapt(out, "gpk.convolve: out") if staged else None
        odt = out_dtype if out_dtype is not None or not staged else device_out.dtype
        src, host_out, dst = _ops.convolve_buffers(host_img, None if staged else out, odt, None)
        if staged:
            _ops._check_out(src, device_out, dst.dtype)
        # An empty block is refused with the others' blocks in view (_blocks), on every rank.
        src, c_in, c_out = _ops.convolve_images(src, dst) if src.size else (src, None, None)
        p = _ops.convolve_params(flt, border_v, normalize_v, accumulate_v)
        fields = {"height": given_height, "img's width": src.shape[1] if len(src.shape) > 1 else None,
                  "img's channels": src.shape[2] if len(src.shape) == 3 else 1, "img's dtype": src.dtype.name,
                  "the output's dtype": dst.dtype.name, "border": _name_of(_ops.BORDERS, border_v),
                  "normalize": _name_of(_ops.NORMALIZE, normalize_v),
                  "accumulate": _name_of(_ops.ACCUMULATE, accumulate_v), "filter": repr(flt),
                  "row_begin (given or not)": begin is not None}
        return (ctx, src, host_out, dst, c_in, c_out, p, flt, staged), fields, (src.shape[0], begin)

    (ctx, src, host_out, dst, c_in, c_out, p, flt, staged), fields, facts = _collective(comm, what, prepare)
    total, starts = _blocks(what, [f[0] for f in facts], [f[1] for f in facts], fields["height"], "height")
    with ctx._call() as ctx_handle:
        _lib.traced("mpi.convolve", src=src.ptr, dst=dst.ptr, stream=None)
        status = lib.gpk_mpi_convolve(ctx_handle, handle, byref(p), total, starts[comm.Get_rank()], byref(c_in),
                                      src.ptr, byref(c_out), dst.ptr)
        _lib.check(status, ctx_handle)
    if staged or (out is None and device_of(img) is not None):
        return _from_host(host_out, img, out)
    return host_out


def _name_of(choices, value):
    """The first name of an option's value ('clamp' for 'nearest' too)."""
    return next(name for name, v in choices.items() if v == value)
