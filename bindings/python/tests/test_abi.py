"""The library's init functions as a program built against an older gpk.h meets them, through ctypes: the
0.1 symbols write gpk 0.1's layout and nothing past it, the _sized forms exactly the size they are given,
and a heat run on the 0.1 struct gives what the current struct gives."""
import ctypes
from ctypes import POINTER, Structure, byref, c_double, c_int, c_size_t, c_void_p

import numpy as np
import pytest

import gpk
from gpk import _lib

CANARY = 0xA5


class HeatParams01(Structure):
    """gpk_heat_params as gpk 0.1's gpk.h declares it: it ends at user_data."""
    _fields_ = [("struct_size", c_size_t), ("rows", c_size_t), ("cols", c_size_t), ("maxiter", c_size_t),
                ("threshold", c_double), ("period", c_size_t), ("on_report", _lib.REPORT_FN),
                ("on_progress", _lib.PROGRESS_FN), ("progress_interval", c_size_t), ("user_data", c_void_p)]


def guarded(size, extra=64):
    """A buffer of `size` bytes followed by `extra` canary bytes, all set to the canary."""
    return (ctypes.c_ubyte * (size + extra))(*([CANARY] * (size + extra)))


def untouched_after(buf, size):
    return all(b == CANARY for b in bytes(buf)[size:])


def struct_size_of(buf):
    return c_size_t.from_buffer(buf).value


def plain_init(name, buf):
    fn = getattr(_lib.lib, name)
    fn.restype = c_int
    if name == "gpk_image_init":
        return fn(byref(buf), c_int(0), c_size_t(4), c_size_t(3), ctypes.c_uint(1))
    return fn(byref(buf))


INITS = [("gpk_heat_params_init", HeatParams01, _lib.HeatParams_C),
         ("gpk_histogram_params_init", _lib.HistogramParams_C, _lib.HistogramParams_C),
         ("gpk_convolve_params_init", _lib.ConvolveParams_C, _lib.ConvolveParams_C),
         ("gpk_context_options_init", _lib.ContextOptions_C, _lib.ContextOptions_C),
         ("gpk_image_init", _lib.Image_C, _lib.Image_C)]


@pytest.mark.parametrize("name,first,current", INITS, ids=[i[0] for i in INITS])
def test_init_writes_only_the_callers_layout(name, first, current):
    first_size = ctypes.sizeof(first)
    buf = guarded(first_size)
    assert plain_init(name, buf) == 0
    assert struct_size_of(buf) == first_size
    assert untouched_after(buf, first_size), f"{name} wrote past gpk 0.1's {first_size}-byte struct"
    # The package's own structs through the _sized forms.
    size = ctypes.sizeof(current)
    buf = guarded(size)
    sized = getattr(_lib.lib, name + "_sized")
    args = (c_int(0), c_size_t(4), c_size_t(3), ctypes.c_uint(1)) if name == "gpk_image_init" else ()
    assert sized(byref(buf), size, *args) == 0
    assert struct_size_of(buf) == size and untouched_after(buf, size)
    # A size that is no layout of the struct is refused, naming the struct and its sizes, and nothing is written.
    buf = guarded(size)
    assert sized(byref(buf), size + 8, *args) == gpk.InvalidArgumentError.status
    message = _lib.lib.gpk_context_last_error(None).decode()
    assert name[:-len("_init")] in message
    assert str(size + 8) in message and str(first_size) in message and str(size) in message
    assert untouched_after(buf, 0)


def test_heat_run_on_the_first_layout(cpu):
    rows, cols = 9, 11
    rng = np.random.default_rng(7)
    tinit = rng.uniform(-50, 50, (rows, cols))
    cond = rng.uniform(0, 1, (rows, cols))
    want, reports = gpk.heat(tinit, cond, maxiter=40, threshold=0.0, context=cpu)

    buf = guarded(ctypes.sizeof(HeatParams01))
    assert _lib.lib.gpk_heat_params_init(byref(buf)) == 0
    p = HeatParams01.from_buffer(buf)
    p.rows, p.cols, p.maxiter = rows, cols, 40
    got = np.empty_like(tinit)
    final = _lib.HeatReport_C()
    dp = POINTER(c_double)
    status = _lib.lib.gpk_heat_run(cpu._handle, byref(buf), tinit.ctypes.data_as(dp), cond.ctypes.data_as(dp),
                                   got.ctypes.data_as(dp), byref(final))
    assert status == 0, _lib.lib.gpk_context_last_error(cpu._handle)
    assert untouched_after(buf, ctypes.sizeof(HeatParams01))
    assert np.array_equal(got, want)
    assert final.niter == reports[-1].niter and final.tavg == reports[-1].tavg
