"""Arrays in and out of gpk.

An array argument is one of:
  - a NumPy array (or anything ``numpy.asarray`` takes: lists, CPU tensors) in host memory;
  - an object with ``__cuda_array_interface__`` (CuPy, Numba, PyTorch), versions 2 and 3;
  - an object with ``__dlpack__`` and ``__dlpack_device__`` on a CUDA device (PyTorch, JAX, CuPy).
Each becomes a `Buffer`: a data pointer, a shape, byte strides, a NumPy dtype, the device and the stream its
producer named. Device data is passed to the library in place; nothing is copied.
"""
import ctypes
import functools
import os
import sys
from ctypes import POINTER, Structure, c_int32, c_int64, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p

import numpy as np

from ._errors import InvalidArgumentError, OutOfMemoryError

# gpk_dtype values of the NumPy dtypes gpk knows.
GPK_DTYPES = {np.dtype(np.uint8): 0, np.dtype(np.uint16): 1, np.dtype(np.uint32): 2, np.dtype(np.int32): 3,
              np.dtype(np.float32): 4, np.dtype(np.float64): 5}
CONVOLVE_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.float32, np.float64))

# DLPack device types and CUDA's special stream handles (as the DLPack and CAI protocols number them).
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
LEGACY_STREAM, PER_THREAD_STREAM = 1, 2


class Buffer:
    """An array as gpk sees it. `device` is None for host memory, else the CUDA ordinal (or -1 where the
    producer does not say); `stream` is the stream a CAI v3 producer named (None: no ordering needed);
    `keep` holds what must live until the call returns (a DLPack capsule, a converted copy)."""

    __slots__ = ("obj", "ptr", "shape", "strides", "dtype", "device", "stream", "keep", "readonly", "protocol")

    def __init__(self, obj, ptr, shape, strides, dtype, device, stream=None, keep=None, readonly=False,
                 protocol="numpy"):
        self.obj, self.ptr, self.shape, self.strides, self.dtype = obj, ptr, tuple(shape), tuple(strides), dtype
        self.device, self.stream, self.keep, self.readonly, self.protocol = device, stream, keep, readonly, protocol

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def on_device(self):
        return self.device is not None


def describe_dtype(dtype):
    return np.dtype(dtype).name if isinstance(dtype, (np.dtype, type, str)) else str(dtype)


def check_dtype(buf, what, allowed):
    if buf.dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        hint = " (convert it first, e.g. with .astype(...))" if buf.device is None else ""
        raise InvalidArgumentError(f"{what} has dtype {describe_dtype(buf.dtype)}; gpk takes {names}{hint}")


def c_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(strides))


# ---------------------------------------------------------------------------------------------------
# Where an object lives, and which stream its producer works on
# ---------------------------------------------------------------------------------------------------

def library_of(obj):
    """The top-level module of the library that made `obj` ('numpy', 'cupy', 'torch', ...)."""
    return type(obj).__module__.split(".")[0]


def _dlpack_device(obj):
    probe = getattr(obj, "__dlpack_device__", None)
    if probe is None:
        return None
    try:
        kind, ordinal = probe()
    except Exception:  # a producer that cannot tell (e.g. a CPU tensor of a GPU-only library)
        return None
    return int(kind), int(getattr(ordinal, "id", ordinal))  # some CuPy versions give a Device


def _cai(obj):
    try:
        return obj.__cuda_array_interface__
    except Exception:  # absent, or refused (PyTorch: requires_grad); DLPack then says why, if it is there
        return None


def device_of(obj):
    """None for host data, else the CUDA device ordinal of `obj` (-1 where the producer does not say)."""
    if isinstance(obj, np.ndarray):
        return None
    dl = _dlpack_device(obj)
    if _cai(obj) is not None:
        return dl[1] if dl is not None and dl[0] in (KDL_CUDA, KDL_CUDA_MANAGED) else -1
    if dl is not None and dl[0] in (KDL_CUDA, KDL_CUDA_MANAGED, KDL_CUDA_HOST):
        return dl[1]
    return None


def producer_stream(obj):
    """The stream the producer of device array `obj` works on: the CAI v3 `stream` field, PyTorch's
    current stream, the legacy default stream for other DLPack producers; None where a CAI producer
    names none (its data is ready)."""
    cai = _cai(obj)
    if cai is not None and "stream" in cai:
        return _cai_stream(cai)
    if library_of(obj) == "torch" and hasattr(obj, "__dlpack__"):
        import torch
        ptr = torch.cuda.current_stream(obj.device).cuda_stream
        return ptr if ptr else LEGACY_STREAM
    if cai is not None and not hasattr(obj, "__dlpack__"):
        return None
    return LEGACY_STREAM


def _cai_stream(cai):
    stream = cai.get("stream")
    if stream is None:
        return None
    if not isinstance(stream, int) or isinstance(stream, bool) or stream < 1:
        raise InvalidArgumentError(f"__cuda_array_interface__ stream is {stream!r}; the protocol allows None, "
                                   "1, 2 or a stream handle (0 is disallowed)")
    return stream


def stream_owner(ptr):
    """An object whose life keeps stream `ptr` valid, True for streams never destroyed, None if unknown."""
    if ptr in (None, LEGACY_STREAM, PER_THREAD_STREAM):
        return True
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        current = cupy.cuda.get_current_stream()
        if current.ptr == ptr:
            return current
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        current = torch.cuda.current_stream()
        if current.cuda_stream == ptr:
            return current  # PyTorch never destroys its streams; held all the same
    return None


# ---------------------------------------------------------------------------------------------------
# DLPack
# ---------------------------------------------------------------------------------------------------

class _DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class _DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class _DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", _DLDevice), ("ndim", c_int32), ("dtype", _DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class _DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


class _DLManagedTensorVersioned(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32), ("manager_ctx", c_void_p), ("deleter", c_void_p),
                ("flags", c_uint64), ("dl_tensor", _DLTensor)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]

_DL_DTYPES = {(1, 8): np.uint8, (1, 16): np.uint16, (1, 32): np.uint32, (0, 32): np.int32, (2, 32): np.float32,
              (2, 64): np.float64}
_DL_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}
_DL_READ_ONLY = 1


def _export_dlpack(obj, stream):
    try:
        return obj.__dlpack__(stream=stream)
    except TypeError:
        return obj.__dlpack__()  # a producer from before the stream argument


def _from_dlpack(obj, what, stream):
    try:
        if library_of(obj) == "torch" and obj.is_cuda:
            # PyTorch exports with a stream only while the tensor's device is the current one.
            import torch
            with torch.cuda.device(obj.device):
                capsule = _export_dlpack(obj, stream)
        else:
            capsule = _export_dlpack(obj, stream)
    except BufferError as e:  # the producer refuses to export (PyTorch: requires_grad, conjugate bit)
        raise InvalidArgumentError(f"{what}: {e}") from None
    readonly = False
    if _capsule_is_valid(capsule, b"dltensor"):
        managed = _DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    elif _capsule_is_valid(capsule, b"dltensor_versioned"):
        managed = _DLManagedTensorVersioned.from_address(_capsule_pointer(capsule, b"dltensor_versioned"))
        readonly = bool(managed.flags & _DL_READ_ONLY)
    else:
        raise InvalidArgumentError(f"{what}: __dlpack__ gave no DLPack capsule (or one already used)")
    t = managed.dl_tensor
    key = (t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1 or key not in _DL_DTYPES:
        name = f"{_DL_CODE_NAMES.get(t.dtype.code, 'code %d ' % t.dtype.code)}{t.dtype.bits}"
        if t.dtype.lanes != 1:
            name += f"x{t.dtype.lanes}"
        raise InvalidArgumentError(f"{what} has dtype {name}; gpk takes uint8, uint16, uint32, int32, float32, "
                                   "float64")
    dtype = np.dtype(_DL_DTYPES[key])
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[i] * dtype.itemsize for i in range(t.ndim))
    else:
        strides = c_strides(shape, dtype.itemsize)
    ptr = (t.data or 0) + t.byte_offset
    return Buffer(obj, ptr, shape, strides, dtype, t.device.device_id, stream, keep=capsule, readonly=readonly,
                  protocol="dlpack")


# ---------------------------------------------------------------------------------------------------
# __cuda_array_interface__
# ---------------------------------------------------------------------------------------------------

def _from_cai(obj, cai, what):
    version = cai.get("version", 0)
    if version > 3:
        raise InvalidArgumentError(f"{what}: __cuda_array_interface__ version {version} is newer than 3")
    if cai.get("mask") is not None:
        raise InvalidArgumentError(f"{what}: masked CUDA arrays are not supported")
    try:
        dtype = np.dtype(cai["typestr"])
    except TypeError as e:
        raise InvalidArgumentError(f"{what}: typestr {cai.get('typestr')!r}: {e}") from None
    if dtype.byteorder == ">":
        raise InvalidArgumentError(f"{what} is big-endian ({cai['typestr']}); gpk takes native byte order")
    shape = tuple(int(n) for n in cai["shape"])
    strides = cai.get("strides")
    strides = c_strides(shape, dtype.itemsize) if strides is None else tuple(int(s) for s in strides)
    ptr, readonly = cai["data"]
    dl = _dlpack_device(obj)
    device = dl[1] if dl is not None and dl[0] in (KDL_CUDA, KDL_CUDA_MANAGED) else -1
    return Buffer(obj, int(ptr or 0), shape, strides, dtype.newbyteorder("="), device, _cai_stream(cai),
                  readonly=bool(readonly), protocol="cai")


# ---------------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------------

def from_numpy(a, what):
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))  # a copy in native byte order
    return Buffer(a, a.ctypes.data if a.size else 0, a.shape, a.strides, a.dtype, None,
                  readonly=not a.flags.writeable, keep=a)


def adapt(obj, what, stream=None):
    """The Buffer of an array argument. `stream` is passed to DLPack producers (the stream the call will
    run on), so that they order their pending work before it."""
    if isinstance(obj, np.ndarray):
        return from_numpy(obj, what)
    cai = _cai(obj)
    use_dlpack = hasattr(obj, "__dlpack__") and (cai is None or "stream" not in cai)
    if use_dlpack and device_of(obj) is not None:
        return _from_dlpack(obj, what, LEGACY_STREAM if stream is None else stream)
    if cai is not None:
        return _from_cai(obj, cai, what)
    try:
        a = np.asarray(obj)
    except Exception as e:
        raise InvalidArgumentError(f"{what} is a {type(obj).__name__}, not an array: {e}") from None
    if a.dtype == object:
        raise InvalidArgumentError(f"{what} is a {type(obj).__name__}, not an array of numbers")
    if a.dtype == np.int64 and a.size and -2**31 <= a.min() and a.max() < 2**31:
        a = a.astype(np.int32)  # Python ints, as NumPy makes them, where they fit gpk's i32
    return from_numpy(a, what)


def contiguous_copy(buf, what, reason):
    """A C-contiguous host copy of a NumPy input that gpk cannot read in place; device inputs are refused."""
    if buf.device is not None:
        raise InvalidArgumentError(
            f"{what}: {reason} (shape {buf.shape}, strides {buf.strides} bytes); gpk reads device arrays only in "
            "place: pass a contiguous one (cupy.ascontiguousarray(x), x.contiguous())")
    return from_numpy(host_copy(buf.obj, buf.dtype, what), what)


@functools.lru_cache(maxsize=None)
def _physical_memory():
    """The machine's memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _refuse_beyond_memory(shape, dtype, what):
    """Raises gpk.OutOfMemoryError for a host array larger than the machine's memory. Where the kernel
    overcommits, NumPy's allocation of such an array succeeds and filling it ends in the OOM killer (seen on a
    128 GiB VM), so the size is checked before trying."""
    nbytes, memory = _bytes(shape, dtype), _physical_memory()
    if memory is not None and nbytes > memory:
        raise OutOfMemoryError(f"{what} of shape {tuple(shape)} would take {nbytes} bytes; this machine has "
                               f"{memory} bytes of memory")


def host_copy(a, dtype, what):
    """numpy.ascontiguousarray(a, dtype), with a failing allocation as gpk.OutOfMemoryError."""
    shape = np.shape(a)
    _refuse_beyond_memory(shape, dtype, f"{what}: a contiguous copy")
    try:
        return np.ascontiguousarray(a, dtype=dtype)
    except MemoryError:
        raise OutOfMemoryError(f"{what}: a contiguous copy of shape {shape} ({_bytes(shape, dtype)} bytes) cannot "
                               "be allocated") from None


def permute(buf, axes):
    buf.shape = tuple(buf.shape[a] for a in axes)
    buf.strides = tuple(buf.strides[a] for a in axes)


def image_layout(buf):
    """(height, width, channels, row stride in bytes; 0 for one row) of an image buffer shaped (H, W) or
    (H, W, C) whose rows are contiguous samples, or None if its layout is anything else."""
    item = buf.dtype.itemsize
    channels = buf.shape[2] if len(buf.shape) == 3 else 1
    if channels > 1 and buf.strides[2] != item:
        return None
    pixel = channels * item
    height, width = buf.shape[:2]
    row, col = buf.strides[:2]
    if width > 1 and col != pixel:
        return None
    if height > 1 and (row < width * pixel or row % item):
        return None
    if buf.ptr % item:
        return None
    return height, width, channels, row if height > 1 else 0


def rows_layout(shape, strides, item, channels):
    """(height, width, row stride) that reads an array of any shape (the channel axis taken off) as rows of
    contiguous pixels of `channels` samples, or None where no such reading exists."""
    pixel = channels * item
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]
    width = 1
    while dims and dims[-1][1] == width * pixel:
        width *= dims.pop()[0]
    if not dims:
        return 1, width, 0
    if width == 1:
        return None
    height, row = dims.pop()
    while dims and dims[-1][1] == row * height:
        height *= dims.pop()[0]
    if dims or row < width * pixel or row % item:
        return None
    return height, width, row


def allocate_like(src, shape, dtype, what="output"):
    """A new array of `shape` and `dtype` where `src` lives: NumPy for host data, else made by the library of
    the device array (CuPy, PyTorch), or by CuPy or PyTorch for other producers."""
    dtype = np.dtype(dtype)
    if src is None or src.device is None:
        return empty_host(shape, dtype, what)
    library = library_of(src.obj)
    if library == "torch":
        return _torch_empty(shape, dtype, src.obj.device)
    if library == "cupy":
        return _cupy_empty(shape, dtype, src.device)
    for make in (_cupy_empty, _torch_empty_on):
        try:
            return make(shape, dtype, src.device)
        except ImportError:
            pass
    raise InvalidArgumentError(f"cannot allocate the {what} on the device of a {type(src.obj).__name__} "
                               "(neither CuPy nor PyTorch is installed): pass out=")


def empty_host(shape, dtype, what="output"):
    _refuse_beyond_memory(shape, dtype, f"the {what}")
    try:
        return np.empty(shape, dtype)
    except (MemoryError, ValueError) as e:
        raise OutOfMemoryError(f"the {what} of shape {tuple(shape)} ({_bytes(shape, dtype)} bytes) cannot be "
                               f"allocated: {e}") from None


def _bytes(shape, dtype):
    n = np.dtype(dtype).itemsize
    for d in shape:
        n *= int(d)
    return n


def _cupy_empty(shape, dtype, device):
    import cupy
    with cupy.cuda.Device(device if device >= 0 else None):
        return cupy.empty(shape, dtype)


def _torch_empty(shape, dtype, device):
    import torch
    return torch.empty(tuple(shape), dtype=getattr(torch, dtype.name), device=device)


def _torch_empty_on(shape, dtype, ordinal):
    import torch
    return _torch_empty(shape, dtype, torch.device("cuda", max(ordinal, 0)))
