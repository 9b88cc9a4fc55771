"""libgpk through ctypes: where the library is found, the structs of gpk.h, and status checks.

ctypes calls foreign functions with the GIL released, so every gpk call lets other Python threads run.
"""
import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char, c_char_p, c_double, c_int, c_size_t,
                    c_uint, c_uint64, c_void_p)

from ._errors import ERRORS, error_for

SONAME = "libgpk.so.0"
MPI_SONAME = "libgpk_mpi.so.0"
ABI_MAJOR = 0  # the gpk major version this package speaks


def candidates(variable, key, soname):
    """Library paths to try, in order: $variable alone when set, else the package's own copy (a wheel's, or
    where `meson install` put it relative to the package), else the installed path, else the loader's name."""
    explicit = os.environ.get(variable)
    if explicit:
        return [explicit]
    found = []
    try:
        from . import _install  # written by Meson for installs and wheels
    except ImportError:
        _install = None
    if _install is not None:
        here = os.path.dirname(os.path.abspath(__file__))
        relative, absolute = getattr(_install, key + "_FROM_PACKAGE", ""), getattr(_install, key, "")
        if relative:
            found.append(os.path.normpath(os.path.join(here, relative)))
        if absolute:
            found.append(absolute)
    found.append(soname)  # LD_LIBRARY_PATH, the loader cache
    return found


def load(paths, what, variable):
    """(ctypes.CDLL, path) of the first of `paths` that loads; ImportError naming every failure."""
    errors = []
    for path in paths:
        if os.sep in path and not os.path.exists(path):
            errors.append(f"{path}: no such file")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(str(e))
    raise ImportError(f"gpk: cannot load {what} (set {variable} to the path of {what}.so): " + "; ".join(errors))


def _load():
    return load(candidates("GPK_LIBRARY", "LIBRARY", SONAME), "libgpk", "GPK_LIBRARY")


lib, path = _load()


class HeatReport_C(Structure):
    _fields_ = [("niter", c_size_t), ("tmin", c_double), ("tmax", c_double), ("maxdiff", c_double),
                ("tavg", c_double), ("time", c_double)]


REPORT_FN = CFUNCTYPE(c_int, POINTER(HeatReport_C), c_int, c_void_p)
PROGRESS_FN = CFUNCTYPE(c_int, c_size_t, c_double, c_double, c_void_p)
CHECKPOINT_FN = CFUNCTYPE(c_int, c_size_t, c_double, POINTER(c_double), c_void_p)


class HeatParams_C(Structure):
    _fields_ = [("struct_size", c_size_t), ("rows", c_size_t), ("cols", c_size_t), ("maxiter", c_size_t),
                ("threshold", c_double), ("period", c_size_t), ("on_report", REPORT_FN),
                ("on_progress", PROGRESS_FN), ("progress_interval", c_size_t), ("user_data", c_void_p),
                ("start_iteration", c_size_t), ("fixed_rows", POINTER(c_double)), ("on_checkpoint", CHECKPOINT_FN),
                ("checkpoint_interval", c_size_t)]


class HistogramParams_C(Structure):
    _fields_ = [("struct_size", c_size_t), ("dtype", c_int), ("width", c_size_t), ("height", c_size_t),
                ("channels", c_uint), ("stride", c_size_t), ("bins", c_size_t), ("lower", c_double),
                ("upper", c_double), ("saturate", c_uint64)]


class ContextOptions_C(Structure):
    _fields_ = [("struct_size", c_size_t), ("backend", c_int), ("device", c_int), ("stream", c_void_p),
                ("threads", c_uint)]


class Image_C(Structure):
    _fields_ = [("struct_size", c_size_t), ("dtype", c_int), ("width", c_size_t), ("height", c_size_t),
                ("channels", c_uint), ("stride", c_size_t)]


class ConvolveParams_C(Structure):
    _fields_ = [("struct_size", c_size_t), ("filter", c_void_p), ("border", c_int), ("normalize", c_int),
                ("accumulate", c_int)]


class FilterInfo_C(Structure):
    _fields_ = [("struct_size", c_size_t), ("separable", c_int), ("kh", c_size_t), ("kw", c_size_t),
                ("sum", c_double), ("integer_taps", c_int)]


class DeviceInfo_C(Structure):
    _fields_ = [("struct_size", c_size_t), ("name", c_char * 256), ("compute_major", c_int),
                ("compute_minor", c_int), ("total_memory", c_uint64), ("free_memory", c_uint64),
                ("multiprocessors", c_int), ("clock_khz", c_int), ("memory_bus_bits", c_int),
                ("l2_bytes", c_int), ("driver_version", c_int), ("runtime_version", c_int)]


def _declare(name, restype, *argtypes):
    try:
        fn = getattr(lib, name)
    except AttributeError:
        raise ImportError(f"gpk: {path} has no {name}: it is older than this package "
                          f"(gpk {lib.gpk_version_string().decode()})") from None
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


_declare("gpk_version_number", c_uint)
_declare("gpk_version_string", c_char_p)
_declare("gpk_status_string", c_char_p, c_int)
_declare("gpk_backend_name", c_char_p, c_int)
_declare("gpk_device_count", c_int, POINTER(c_int))
_declare("gpk_device_get_info", c_int, POINTER(DeviceInfo_C), c_int)
_declare("gpk_context_options_init_sized", c_int, c_void_p, c_size_t)
_declare("gpk_context_create", c_int, POINTER(c_void_p), c_void_p)
_declare("gpk_context_destroy", None, c_void_p)
_declare("gpk_context_backend", c_int, c_void_p)
_declare("gpk_context_last_error", c_char_p, c_void_p)
_declare("gpk_context_set_stream", c_int, c_void_p, c_void_p)
_declare("gpk_context_synchronize", c_int, c_void_p)
_declare("gpk_heat_params_init_sized", c_int, c_void_p, c_size_t)
_declare("gpk_heat_run", c_int, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, POINTER(HeatReport_C))
_declare("gpk_histogram_params_init_sized", c_int, c_void_p, c_size_t)
_declare("gpk_histogram", c_int, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p)
_declare("gpk_filter_create_2d", c_int, POINTER(c_void_p), c_size_t, c_size_t, POINTER(c_double))
_declare("gpk_filter_create_separable", c_int, POINTER(c_void_p), c_size_t, POINTER(c_double), c_size_t,
         POINTER(c_double))
_declare("gpk_filter_create_named", c_int, POINTER(c_void_p), c_char_p)
_declare("gpk_filter_destroy", None, c_void_p)
_declare("gpk_filter_get_info", c_int, POINTER(FilterInfo_C), c_void_p)
_declare("gpk_filter_get_taps", c_int, POINTER(c_double), c_size_t, c_void_p)
_declare("gpk_image_init_sized", c_int, c_void_p, c_size_t, c_int, c_size_t, c_size_t, c_uint)
_declare("gpk_convolve_params_init_sized", c_int, c_void_p, c_size_t)
_declare("gpk_convolve", c_int, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p)

if lib.gpk_version_number() // 10000 != ABI_MAJOR:
    raise ImportError(f"gpk: {path} is gpk {lib.gpk_version_string().decode()}; this package needs "
                      f"gpk {ABI_MAJOR}.x")

for _status, _cls in ERRORS.items():
    _cls.status_name = lib.gpk_status_string(_status).decode()

# Parameter structs in this package's layout: the library's _sized init functions write the defaults of the
# fields this package knows and read no further. Each init runs once; later structs are copies of its bytes.
_templates = {}


def new_params(struct_type, init_name, *init_args):
    """A `struct_type` initialised by the library's init function `init_name` (its _sized form)."""
    key = (init_name, init_args)
    template = _templates.get(key)
    if template is None:
        p = struct_type()
        check(getattr(lib, init_name + "_sized")(ctypes.byref(p), ctypes.sizeof(p), *init_args), None)
        template = _templates[key] = bytes(p)
    return struct_type.from_buffer_copy(template)


def last_error(handle):
    """The message of the last failure on a context handle, or the thread's context-less one for None."""
    return lib.gpk_context_last_error(handle).decode("utf-8", "replace")


def check(status, handle):
    """Raises the gpk.Error subclass of a failing status with the library's message."""
    if status != 0:
        raise error_for(status, last_error(handle))


# A debugging hook (tests use it to see that device arrays reach the library without copies): when set,
# called as trace(function_name, fields) before each operation with the pointers and stream passed.
trace = None


def traced(name, **fields):
    if trace is not None:
        trace(name, fields)


__all__ = ["lib", "path", "new_params", "check", "last_error", "byref", "traced"]
