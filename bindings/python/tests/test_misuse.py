"""Misuse: wrong dtypes, shapes, values, NaN, huge sizes, foreign objects. Each is a clear gpk exception
(naming what is wrong), never a crash; outputs passed in are left untouched."""
import numpy as np
import pytest

import gpk

BAD_DTYPES = [np.int64, np.uint64, np.int8, np.int16, np.float16, np.bool_, np.complex64]


@pytest.mark.parametrize("dtype", BAD_DTYPES)
def test_dtypes(cpu, dtype):
    a = np.zeros((4, 4), dtype)
    with pytest.raises(gpk.InvalidArgumentError, match=np.dtype(dtype).name):
        gpk.histogram(a, context=cpu)
    with pytest.raises(gpk.InvalidArgumentError, match=np.dtype(dtype).name):
        gpk.convolve(a, "lp3", context=cpu)
    for ok in (np.uint32, np.int32):
        with pytest.raises(gpk.InvalidArgumentError, match=np.dtype(ok).name):
            gpk.convolve(np.zeros((4, 4), ok), "lp3", context=cpu)
    for bad in (dtype, "nope", 3.5):
        with pytest.raises(gpk.InvalidArgumentError, match="out_dtype"):
            gpk.convolve(np.zeros((4, 4), np.uint8), "lp3", out_dtype=bad, context=cpu)
    with pytest.raises(gpk.InvalidArgumentError):
        gpk.histogram(np.array(["a", "b"]), context=cpu)
    with pytest.raises(gpk.InvalidArgumentError, match="not an array"):
        gpk.histogram(object(), context=cpu)


def test_convolve_shapes(cpu):
    for shape in [(5,), (2, 3, 4, 5), (4, 4, 5), (4, 4, 0)]:
        with pytest.raises(gpk.InvalidArgumentError, match="shape|channels"):
            gpk.convolve(np.zeros(shape, np.uint8), "lp3", context=cpu)
    img = np.zeros((6, 7), np.uint8)
    for out in [np.zeros((7, 6), np.uint8), np.zeros((6, 7, 1), np.uint8), np.zeros((6, 7), np.float32)]:
        with pytest.raises(gpk.InvalidArgumentError, match="out"):
            gpk.convolve(img, "lp3", out=out, out_dtype=np.uint8, context=cpu)
    readonly = np.zeros((6, 7), np.uint8)
    readonly.flags.writeable = False
    with pytest.raises(gpk.InvalidArgumentError, match="read-only"):
        gpk.convolve(img, "lp3", out=readonly, context=cpu)
    with pytest.raises(gpk.InvalidArgumentError, match="list"):
        gpk.convolve(img, "lp3", out=[[0] * 7] * 6, context=cpu)
    columns = np.zeros((6, 14), np.uint8)[:, ::2]
    with pytest.raises(gpk.InvalidArgumentError, match="contiguous"):
        gpk.convolve(img, "lp3", out=columns, context=cpu)
    assert not columns.any()
    with pytest.raises(gpk.InvalidArgumentError, match="overlap"):
        gpk.convolve(img, "lp3", out=img, context=cpu)


def test_convolve_arguments(cpu):
    img = np.zeros((6, 7), np.float32)
    out = np.full((6, 7), 3.0, np.float32)
    for kwargs, pattern in [(dict(border="edge"), "border"), (dict(normalize="max"), "normalize"),
                            (dict(accumulate="f16"), "accumulate"), (dict(border=["zero"]), "border"), (dict(normalize="sum"), "sum")]:
        with pytest.raises(gpk.InvalidArgumentError, match=pattern):
            gpk.convolve(img, "lp3", out=out, context=cpu, **kwargs)
        assert (out == 3).all()
    for spec, pattern in [("nope", "nope"), ("box:4", "box"), ("gauss:-1", "gauss"), (np.ones((2, 2)), "kh|odd"),
                          (np.ones((65, 1)), "65|kh"), (np.ones(3), "separable"), ([[1, np.nan, 1]], "finite|nan"),
                          ([[np.inf]], "finite|inf"), ([["a"]], "number"), (np.ones((0, 3)), "0|kh")]:
        with pytest.raises(gpk.InvalidArgumentError, match=pattern):
            gpk.convolve(img, spec, context=cpu)
    with pytest.raises(gpk.InvalidArgumentError, match="130|row_len|length"):
        gpk.Filter.separable(np.ones(131), [1])
    with pytest.raises(gpk.InvalidArgumentError, match="dimension"):
        gpk.Filter.separable(np.ones((3, 3)), [1])


def test_histogram_arguments(cpu):
    a = np.arange(10, dtype=np.uint8)
    for kwargs, pattern in [(dict(bins=0), "bins"), (dict(bins=-1), "bins"), (dict(bins=2.5), "bins"),
                            (dict(bins=2**41), "bins"), (dict(bins=[0, 1, 2]), "bins"),
                            (dict(range=(5, 1)), "upper"), (dict(range=(0, np.nan)), "upper|range|finite"),
                            (dict(range=(-np.inf, 0)), "finite|range|lower"), (dict(range=5), "range"),
                            (dict(range=("a", 1)), "range"), (dict(saturate=-1), "saturate"),
                            (dict(channel_axis=1), "channel_axis"), (dict(range=(0, 1e-320), bins=10), "finite|bins")]:
        with pytest.raises(gpk.InvalidArgumentError, match=pattern):
            gpk.histogram(a, context=cpu, **kwargs)
    with pytest.raises(gpk.InvalidArgumentError, match="channels"):
        gpk.histogram(np.zeros((3, 5), np.uint8), channel_axis=-1, context=cpu)
    with pytest.raises(gpk.InvalidArgumentError, match="scalar"):
        gpk.histogram(np.uint8(3), channel_axis=-1, context=cpu)


def test_heat_arguments(cpu):
    t = np.zeros((4, 5))
    cases = [(dict(tinit=np.array([[0.0, np.nan]]), conductivity=0.5), "finite|NaN|nan"),
             (dict(tinit=np.array([[0.0, np.inf]]), conductivity=0.5), "finite|inf"),
             (dict(tinit=t, conductivity=1.5), "conductivity"),
             (dict(tinit=t, conductivity=np.full((4, 5), -0.1)), "conductivity"),
             (dict(tinit=t, conductivity=np.full((4, 5), np.nan)), "conductivity"),
             (dict(tinit=t, conductivity=np.zeros((5, 4))), "shape"),
             (dict(tinit=np.zeros(5), conductivity=0.5), "shape"),
             (dict(tinit=np.zeros((2, 2, 2)), conductivity=0.5), "shape"),
             (dict(tinit=np.zeros((0, 3)), conductivity=0.5), "rows|0"),
             (dict(tinit=t.astype(complex), conductivity=0.5), "dtype"),
             (dict(tinit=t, conductivity=0.5, maxiter=0), "maxiter"),
             (dict(tinit=t, conductivity=0.5, maxiter=-1), "maxiter"),
             (dict(tinit=t, conductivity=0.5, threshold=-1.0), "threshold"),
             (dict(tinit=t, conductivity=0.5, threshold=np.nan), "threshold"),
             (dict(tinit=t, conductivity=0.5, period=-1), "period"),
             (dict(tinit=t, conductivity=0.5, progress_interval=0), "progress_interval"),
             (dict(tinit=t, conductivity=0.5, on_report=5), "callable"),
             (dict(tinit=t, conductivity="warm"), "real"),
             (dict(tinit=t, conductivity=0.5, out=np.zeros((4, 5), np.float32)), "out"),
             (dict(tinit=t, conductivity=0.5, out=np.zeros((4, 5)).T), "out"),
             (dict(tinit=None, conductivity=0.5), "None")]
    for kwargs, pattern in cases:
        with pytest.raises(gpk.InvalidArgumentError, match=pattern):
            gpk.heat(context=cpu, **kwargs)


def test_huge_sizes(cpu):
    """Arrays far beyond memory (broadcast views of one sample) and huge bin counts: OutOfMemoryError."""
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=(2**31, 2**31), strides=(0, 0))
    with pytest.raises(gpk.OutOfMemoryError, match="bytes"):
        gpk.convolve(huge, "lp3", context=cpu)
    with pytest.raises(gpk.OutOfMemoryError, match="bytes"):
        gpk.histogram(huge, context=cpu)
    with pytest.raises(gpk.OutOfMemoryError, match="bytes"):
        gpk.histogram(np.zeros(3, np.uint8), bins=2**40, context=cpu)
    with pytest.raises(gpk.OutOfMemoryError, match="bytes"):
        gpk.heat(np.lib.stride_tricks.as_strided(np.zeros(1), shape=(2**30, 2**29), strides=(0, 0)), 0.5,
                 context=cpu)


class FakeDeviceArray:
    """A CUDA array interface naming memory that is not there: gpk must never touch it on the CPU."""

    def __init__(self, shape=(8, 8), typestr="|u1", **extra):
        self.__cuda_array_interface__ = dict(shape=shape, typestr=typestr, data=(0xDEAD0000, False), version=3,
                                             strides=None, **extra)


def test_device_arrays_on_the_cpu(cpu):
    for call in (lambda: gpk.histogram(FakeDeviceArray(), context=cpu),
                 lambda: gpk.convolve(FakeDeviceArray(), "lp3", context=cpu),
                 lambda: gpk.convolve(np.zeros((8, 8), np.uint8), "lp3", out=FakeDeviceArray(), context=cpu),
                 lambda: gpk.heat(FakeDeviceArray(typestr="<f8"), 0.5, context=cpu)):
        with pytest.raises(gpk.InvalidArgumentError, match="CUDA context"):
            call()


def test_context_argument(cpu):
    with pytest.raises(gpk.InvalidArgumentError, match="gpk.Context"):
        gpk.histogram(np.zeros(3, np.uint8), context="cpu")


def test_callback_reusing_its_context(cpu):
    """A heat callback calling gpk on the run's own context gets an error (raised from gpk.heat)."""
    def report(r):
        gpk.histogram(np.zeros(3, np.uint8), context=cpu)

    with pytest.raises(gpk.InvalidArgumentError, match="in a call") as info:
        gpk.heat(np.zeros((3, 3)), 0.5, maxiter=10, threshold=0, period=2, on_report=report, context=cpu)
    assert info.value.result.niter == 2
