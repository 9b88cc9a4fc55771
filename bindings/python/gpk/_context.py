"""gpk.Context, and the context each thread uses by default."""
import atexit
import operator
import threading
import weakref
from ctypes import byref, c_void_p

from . import _arrays, _lib
from ._errors import InvalidArgumentError

BACKENDS = {"auto": 0, "cpu": 1, "cuda": 2}
_BACKEND_NAMES = {1: "cpu", 2: "cuda"}
_live = weakref.WeakSet()


def _stream_handle(stream):
    """(handle or None, the object keeping it alive) of a stream given as None, an int handle, a CuPy stream
    (.ptr) or a PyTorch stream (.cuda_stream)."""
    if stream is None:
        return None, None
    for attr in ("ptr", "cuda_stream"):
        if hasattr(stream, attr):
            handle = int(getattr(stream, attr))
            return (handle or None), stream
    try:
        handle = operator.index(stream)
    except TypeError:
        raise InvalidArgumentError(f"stream is a {type(stream).__name__}; expected None, a stream handle (int), "
                                   "a CuPy or a PyTorch stream") from None
    if handle < 0:
        raise InvalidArgumentError(f"stream is {handle}; a stream handle is not negative")
    return (handle or None), None


class Context:
    """Where gpk computes: a backend with its reusable buffers, streams and worker threads.

    Parameters
    ----------
    backend : {'auto', 'cpu', 'cuda'}
        'auto' takes the GPU where one is usable, else the CPU (``GPK_BACKEND=cpu|cuda`` in the
        environment overrides). 'cuda' raises `gpk.NoDeviceError` where no GPU is usable.
    device : int
        The CUDA device ordinal.
    stream : None, int, cupy.cuda.Stream or torch.cuda.Stream
        A CUDA stream for every call on this context. Without one (None or 0), a call on device arrays
        runs on the arrays' own stream (see `gpk.convolve`), and a call on host data on gpk's streams.
        Calls whose data is all on the device return once the work is enqueued on the stream.
    threads : int
        CPU worker threads; 0 = every core the process may use.

    A context is used by one thread at a time: a second thread using it waits for the first call to
    end. Separate contexts run in parallel (every call releases the GIL). Functions called without
    ``context=`` use the innermost ``with gpk.Context(...)`` block of the thread, else the thread's own
    default context (`gpk.current_context`). ``with`` closes the context when the block ends.
    """

    def __init__(self, backend="auto", device=0, stream=None, threads=0):
        self._handle = None
        self._create(_lib.lib.gpk_context_create, *self._options(backend, device, stream, threads))

    @staticmethod
    def _options(backend, device, stream, threads):
        """(ContextOptions_C, stream owner) of the arguments, checked."""
        if backend not in BACKENDS:
            raise InvalidArgumentError(f"backend is {backend!r}; expected 'auto', 'cpu' or 'cuda'")
        try:
            device, threads = operator.index(device), operator.index(threads)
        except TypeError:
            raise InvalidArgumentError("device and threads must be integers") from None
        if not 0 <= device < 2**31 or not 0 <= threads < 2**32:
            raise InvalidArgumentError(f"device is {device}, threads {threads}; both must be >= 0")
        handle_value, owner = _stream_handle(stream)
        opts = _lib.new_params(_lib.ContextOptions_C, "gpk_context_options_init")
        opts.backend = BACKENDS[backend]
        opts.device = device
        opts.stream = handle_value
        opts.threads = threads
        return opts, owner

    def _create(self, create, opts, owner):
        """Makes the library context with `create(byref(handle), byref(opts))` (gpk_context_create, or
        gpk_mpi_context_create for gpk.mpi.context)."""
        handle = c_void_p()
        _lib.check(create(byref(handle), byref(opts)), None)
        self._handle = handle.value
        self._backend = _BACKEND_NAMES.get(_lib.lib.gpk_context_backend(self._handle), "unknown")
        self._device, self._threads = opts.device, opts.threads
        handle_value = opts.stream or None
        self._stream, self._stream_keep = handle_value, owner  # the stream asked for (None: none)
        self._set, self._set_keep = handle_value, owner  # the stream the library context holds now
        self._lock = threading.Lock()
        self._busy_thread = None
        _live.add(self)

    # -- properties -------------------------------------------------------------------------------
    @property
    def backend(self):
        """'cpu' or 'cuda': where this context computes."""
        return self._backend

    @property
    def device(self):
        """The CUDA device ordinal asked for."""
        return self._device

    @property
    def threads(self):
        """CPU worker threads asked for (0 = all cores)."""
        return self._threads

    @property
    def stream(self):
        """The stream handle given to the context (an int), or None."""
        return self._stream

    @property
    def closed(self):
        """True once `close` has run."""
        return self._handle is None

    def __repr__(self):
        if self.closed:
            return "<gpk.Context closed>"
        stream = f", stream={self._stream:#x}" if self._stream else ""
        return f"<gpk.Context backend={self.backend!r} device={self._device}{stream}>"

    # -- life -------------------------------------------------------------------------------------
    def close(self):
        """Frees the context and everything it holds, after its pending GPU work. Closing twice is
        harmless; any other use of a closed context raises `gpk.InvalidArgumentError`."""
        handle = self._handle
        if handle is None:
            return
        with self._lock:
            if self._handle is None:
                return
            self._handle = None
            _lib.lib.gpk_context_destroy(handle)
            self._set_keep = self._stream_keep = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        with self._call():
            pass
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        stack = _stack()
        if stack and stack[-1] is self:
            stack.pop()
        self.close()
        return False

    def synchronize(self):
        """Waits until all work this context enqueued has finished (a no-op on the CPU backend)."""
        with self._call() as handle:
            _lib.check(_lib.lib.gpk_context_synchronize(handle), handle)

    # -- use by the operations --------------------------------------------------------------------
    def _call(self):
        """Holds the context for one call: ``with ctx._call() as handle``."""
        return _Hold(self)

    def _switch_stream(self, handle, stream, keep):
        """Sets the library context's stream (the library waits for the work on the previous one)."""
        if stream != self._set:
            _lib.check(_lib.lib.gpk_context_set_stream(handle, stream), handle)
            self._set, self._set_keep = stream, keep

    def _run_stream(self, first_obj):
        """The stream a call on device data runs on: the context's own, else that of the first device
        array (see `_arrays.producer_stream`); with the object that keeps it alive (None if unknown)."""
        if self._stream is not None:
            return self._stream, self._stream_keep
        stream = _arrays.producer_stream(first_obj)
        return stream, _arrays.stream_owner(stream)

    def _prepare(self, handle, run_stream, keep, bufs):
        """Before a call on device data: arrays whose producers named other streams are waited for, then the
        library context is put on `run_stream`."""
        for buf in bufs:
            if buf.device is not None and buf.stream is not None and buf.stream != run_stream:
                self._switch_stream(handle, buf.stream, None)
        self._switch_stream(handle, run_stream, keep)

    def _finish(self, handle):
        """After a call: a stream whose lifetime gpk cannot tie to an object is not kept (switching back waits
        for the call's work on it)."""
        if self._set_keep is None and self._set != self._stream:
            self._switch_stream(handle, self._stream, self._stream_keep)


class _Hold:
    """The context's lock for one call; the library handle while held. A thread that holds it already (a
    heat callback using its own run's context) gets an error instead of a deadlock."""

    __slots__ = ("ctx",)

    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self):
        ctx, me = self.ctx, threading.get_ident()
        if ctx._busy_thread == me:
            raise InvalidArgumentError("this gpk.Context is in a call on this thread already (a heat callback "
                                       "cannot use the context of its own run)")
        ctx._lock.acquire()
        if ctx._handle is None:
            ctx._lock.release()
            raise InvalidArgumentError("the gpk.Context is closed")
        ctx._busy_thread = me
        return ctx._handle

    def __exit__(self, *exc):
        self.ctx._busy_thread = None
        self.ctx._lock.release()
        return False


def _stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


_local = threading.local()


def current_context(device=None):
    """The context gpk functions use on this thread when given none: the innermost ``with gpk.Context()``
    block's, else this thread's default context (backend 'auto') for `device` (default 0), created on
    first use and closed when the thread ends."""
    stack = _stack()
    if stack:
        return stack[-1]
    defaults = getattr(_local, "defaults", None)
    if defaults is None:
        defaults = _local.defaults = {}
    key = device if device is not None and device >= 0 else 0
    ctx = defaults.get(key)
    if ctx is None or ctx.closed:
        ctx = defaults[key] = Context(device=key)
    return ctx


def resolve(context, devices):
    """The context of a call on arrays at `devices` (`_arrays.device_of` of each), checked against them."""
    devices = {d for d in devices if d is not None}
    known = {d for d in devices if d >= 0}
    if len(known) > 1:
        raise InvalidArgumentError(f"the arrays are on different devices ({sorted(known)})")
    if context is None:
        context = current_context(next(iter(known)) if known else None)
    elif not isinstance(context, Context):
        raise InvalidArgumentError(f"context is a {type(context).__name__}; expected a gpk.Context")
    if devices:
        backend = context.backend
        if context.closed:
            raise InvalidArgumentError("the gpk.Context is closed")
        if backend != "cuda":
            raise InvalidArgumentError(f"device arrays need a CUDA context; this context computes on the {backend}")
        if known and context.device not in known:
            raise InvalidArgumentError(f"the arrays are on device {next(iter(known))}, the context on device "
                                       f"{context.device}")
    return context


@atexit.register
def _close_all():
    """Contexts are closed before the interpreter (and the CUDA runtime) shut down."""
    for ctx in list(_live):
        try:
            ctx.close()
        except Exception:
            pass
