"""The array protocols without a GPU: DLPack capsules (NumPy exports them for host arrays) and
__cuda_array_interface__ dictionaries are read into the same pointer, shape, strides and dtype as NumPy's
own; the layout rules say which views gpk reads in place."""
import numpy as np
import pytest

import gpk
from gpk import _arrays


def views(rng):
    base = rng.integers(0, 200, (20, 30, 4)).astype(np.float32)
    return [base, base[3:17, 5:25], base[::2, ::3, 1], base[..., 2], base[:, 7], base[4:9, 2:3, :3]]


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.int32, np.float32, np.float64])
def test_dlpack_capsules(rng, dtype):
    for view in views(rng):
        view = view.astype(dtype)[1:]
        buf = _arrays._from_dlpack(view, "x", None)
        assert buf.ptr == view.ctypes.data and buf.shape == view.shape and buf.strides == view.strides
        assert buf.dtype == view.dtype and buf.protocol == "dlpack" and buf.keep is not None


def test_dlpack_refuses_other_dtypes():
    for dtype, name in [(np.int64, "int64"), (np.bool_, "bool|DLPack"), (np.float16, "float16"), (np.complex128, "complex")]:
        with pytest.raises(gpk.InvalidArgumentError, match=name):
            _arrays._from_dlpack(np.zeros(3, dtype), "x", None)


class FakeCai:
    def __init__(self, a, version=3, strides=True, **extra):
        self.__cuda_array_interface__ = dict(shape=a.shape, typestr=a.dtype.str, data=(a.ctypes.data, False),
                                             strides=a.strides if strides else None, version=version, **extra)


def test_cuda_array_interface(rng):
    for view in views(rng):
        buf = _arrays._from_cai(view, FakeCai(view).__cuda_array_interface__, "x")
        assert (buf.ptr, buf.shape, buf.strides, buf.dtype) == (view.ctypes.data, view.shape, view.strides, view.dtype)
    a = np.zeros((3, 4), np.uint16)
    buf = _arrays._from_cai(a, FakeCai(a, strides=False, stream=5).__cuda_array_interface__, "x")
    assert buf.strides == a.strides and buf.stream == 5 and buf.device == -1
    for extra, pattern in [(dict(stream=0), "stream"), (dict(mask=object()), "mask"), (dict(version=4), "version")]:
        fields = dict(FakeCai(a).__cuda_array_interface__, **extra)
        with pytest.raises(gpk.InvalidArgumentError, match=pattern):
            _arrays._from_cai(a, fields, "x")
    big_endian = np.zeros(3, ">f4")
    with pytest.raises(gpk.InvalidArgumentError, match="big-endian"):
        _arrays._from_cai(big_endian, FakeCai(big_endian).__cuda_array_interface__, "x")


def test_where_objects_live():
    a = np.zeros((2, 2), np.uint8)
    assert _arrays.device_of(a) is None and _arrays.device_of([1, 2]) is None
    assert _arrays.device_of(FakeCai(a)) == -1
    assert _arrays.producer_stream(FakeCai(a, stream=7)) == 7
    assert _arrays.producer_stream(FakeCai(a, version=2)) is None
    assert _arrays.stream_owner(None) is True and _arrays.stream_owner(1) is True
    assert _arrays.stream_owner(0x1234) is None


def test_rows_layout():
    item = 2
    f = _arrays.rows_layout
    assert f((5, 6), (12, 2), item, 1) == (1, 30, 0)  # contiguous: one row
    assert f((5, 6), (20, 2), item, 1) == (5, 6, 20)  # padded rows
    assert f((4, 5, 6), (100, 20, 2), item, 1) == (20, 6, 20)  # padded rows of a 3-D array, collapsed
    assert f((4, 5, 6), (240, 20, 2), item, 1) is None  # planes apart: not one row pitch
    assert f((5, 6), (12, 4), item, 1) is None  # samples apart
    assert f((5, 6), (-12, 2), item, 1) is None  # reversed
    assert f((5, 6), (0, 2), item, 1) is None  # broadcast rows
    assert f((5, 6), (13, 2), item, 1) is None  # pitch not whole samples
    assert f((5, 1, 6), (12, 999, 2), item, 1) == (1, 30, 0)  # size-1 axes do not matter
    assert f((5, 6), (48, 8), item, 4) == (1, 30, 0)  # pixels of 4 channels
    assert f((), (), item, 1) == (1, 1, 0)


def test_image_layout():
    a = np.zeros((10, 12, 3), np.float32)
    assert _arrays.image_layout(_arrays.from_numpy(a, "a")) == (10, 12, 3, 0 + 12 * 3 * 4)
    assert _arrays.image_layout(_arrays.from_numpy(a[2:3], "a")) == (1, 12, 3, 0)
    assert _arrays.image_layout(_arrays.from_numpy(a[::2, 1:5], "a")) == (5, 4, 3, 2 * 12 * 3 * 4)
    assert _arrays.image_layout(_arrays.from_numpy(a[:, ::2], "a")) is None
    assert _arrays.image_layout(_arrays.from_numpy(a[..., :2], "a")) is None
    assert _arrays.image_layout(_arrays.from_numpy(a[..., 0], "a")) is None
