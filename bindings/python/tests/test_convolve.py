"""gpk.convolve on the CPU backend against scipy.ndimage.correlate / correlate1d (reference.py): every input
and output dtype, channel count, border, normalisation, named, 2D and separable filter, and layout."""
import numpy as np
import pytest

import gpk
import reference as ref

DTYPES = [np.uint8, np.uint16, np.float32, np.float64]
BORDERS = ["zero", "clamp", "mirror", "reflect", "wrap"]
NORMALIZE = [None, "sum", "minmax"]


def image(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "u":
        return rng.integers(0, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)
    return (rng.standard_normal(shape) * 100).astype(dtype)


def filters(rng):
    """Named, random integer 2D, random float 2D and random separable filters."""
    return [
        gpk.Filter("lp3"), gpk.Filter("smooth5"), gpk.Filter("log9"), gpk.Filter("lp5"), gpk.Filter("box:3"),
        gpk.Filter("gauss:1.2"), gpk.Filter("identity"),
        gpk.Filter(rng.integers(-3, 6, (3, 5))),
        gpk.Filter(rng.uniform(0.1, 1.0, (5, 3))),
        gpk.Filter.separable(rng.uniform(0.1, 1.0, 7), rng.uniform(0.1, 1.0, 3)),
        gpk.Filter.separable([1, 2, 1], [1, 0, -1]),
    ]


def expected(img, flt, border, normalize, out_dtype, accumulate=None):
    """(reference values, tolerance kind) for one case: 'exact' on gpk's integer path, else the float path
    in float64 with the tolerance README gives for the accumulation precision."""
    sep = (flt.row, flt.col) if flt.is_separable else None
    if img.dtype.kind == "u" and flt.integer_taps:
        return ref.convolve_exact(img, flt.taps, border, normalize, out_dtype, flt.sum, sep), "exact"
    v = ref.convolve_float(img, flt.taps, border, normalize, flt.sum, sep)
    f64 = accumulate == "f64" or (accumulate is None and np.float64 in (img.dtype, np.dtype(out_dtype)))
    return v, ("f64" if f64 else "f32")


def check(got, want, kind, out_dtype, what):
    out_dtype = np.dtype(out_dtype)
    assert got.dtype == out_dtype, what
    if kind == "exact":
        np.testing.assert_array_equal(got, want, err_msg=what)
    elif out_dtype.kind == "u":
        diff = np.abs(got.astype(np.float64) - ref.round_saturate(want, out_dtype).astype(np.float64))
        assert diff.max() <= 1, f"{what}: off by {diff.max()}"
    else:
        tol = 1e-12 if kind == "f64" and out_dtype == np.float64 else 1e-5
        err = ref.relative_l2(got, want)
        assert err <= tol, f"{what}: relative L2 error {err:.3g} > {tol:g}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("normalize", NORMALIZE)
def test_against_scipy(cpu, rng, dtype, border, normalize):
    for channels in (1, 3, 4):
        shape = (23, 31) if channels == 1 else (19, 17, channels)
        img = image(rng, dtype, shape)
        for flt in filters(rng):
            for out_dtype in {np.dtype(dtype), np.dtype(np.uint8), np.dtype(np.float32), np.dtype(np.float64)}:
                what = f"{np.dtype(dtype).name}->{out_dtype.name} {channels}ch {flt!r} {border} {normalize}"
                if normalize == "sum" and flt.sum == 0:
                    with pytest.raises(gpk.InvalidArgumentError, match="sum"):
                        gpk.convolve(img, flt, border, normalize, out_dtype, context=cpu)
                    continue
                got = gpk.convolve(img, flt, border=border, normalize=normalize, out_dtype=out_dtype, context=cpu)
                want, kind = expected(img, flt, border, normalize, out_dtype)
                check(got, want, kind, out_dtype, what)


@pytest.mark.parametrize("accumulate", ["f32", "f64", np.float32, "float64"])
def test_accumulate(cpu, rng, accumulate):
    img = image(rng, np.float32, (40, 50))
    flt = gpk.Filter("gauss:2.0")
    got = gpk.convolve(img, flt, accumulate=accumulate, out_dtype=np.float64, context=cpu)
    f64 = np.dtype(accumulate).name == "float64" if not isinstance(accumulate, str) or accumulate.startswith("float") \
        else accumulate == "f64"
    want, _ = expected(img, flt, "clamp", None, np.float64, "f64" if f64 else "f32")
    check(got, want, "f64" if f64 else "f32", np.float64, f"accumulate {accumulate}")
    if not f64:  # f32 sums are not f64 sums
        assert ref.relative_l2(got, want) > 0


def test_small_images_and_large_filters(cpu, rng):
    """Filters wider than the image: the borders repeat as scipy's modes do (periodic extension)."""
    for shape in [(1, 1), (1, 7), (6, 1), (3, 4), (5, 2, 2)]:
        img = image(rng, np.uint8, shape)
        for border in BORDERS:
            for flt in (gpk.Filter("log9"), gpk.Filter("smooth5"), gpk.Filter.separable(np.ones(15), [1, 2, 1])):
                got = gpk.convolve(img, flt, border=border, out_dtype=np.float64, context=cpu)
                want, kind = expected(img, flt, border, None, np.float64)
                check(got, want, kind, np.float64, f"{shape} {border} {flt!r}")


def test_nan(cpu):
    img = np.arange(48, dtype=np.float64).reshape(6, 8)
    img[2, 3] = np.nan
    got = gpk.convolve(img, "box:3", border="zero", context=cpu)
    want = ref.correlate(img, None, "zero", (np.ones(3), np.ones(3)))
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    assert np.isnan(got).sum() == 9
    # minmax takes NaN out of the min and max; integer outputs of NaN are 0
    got = gpk.convolve(img, "identity", normalize="minmax", out_dtype=np.uint8, context=cpu)
    assert got[2, 3] == 0 and got.max() == 255 and got[0, 0] == 0


def test_filter_specs(cpu, rng):
    """A name, a Filter and 2D taps give the same result; scipy's border names are accepted."""
    img = image(rng, np.uint8, (30, 30))
    by_name = gpk.convolve(img, "smooth5", normalize="sum", context=cpu)
    np.testing.assert_array_equal(by_name, gpk.convolve(img, gpk.Filter("smooth5"), normalize="sum", context=cpu))
    np.testing.assert_array_equal(by_name, gpk.convolve(img, gpk.Filter("smooth5").taps.tolist(), normalize="sum",
                                                        context=cpu))
    for alias, border in (("nearest", "clamp"), ("constant", "zero")):
        np.testing.assert_array_equal(gpk.convolve(img, "lp3", border=alias, context=cpu),
                                      gpk.convolve(img, "lp3", border=border, context=cpu))


def test_filter_objects():
    f = gpk.Filter("smooth5")
    assert f.shape == (5, 5) and f.sum == 35 and f.integer_taps and not f.is_separable and f.name == "smooth5"
    np.testing.assert_array_equal(f.taps[2], [1, 2, 3, 2, 1])
    g = gpk.Filter.separable([1, 2, 1], [1, 1, 1, 1, 1])
    assert g.is_separable and g.shape == (5, 3) and g.sum == 20
    np.testing.assert_array_equal(g.taps, np.outer([1, 1, 1, 1, 1], [1, 2, 1]))
    gauss = gpk.Filter("gauss:1.0")
    assert gauss.is_separable and abs(gauss.row.sum() - 1) < 1e-12 and not gauss.integer_taps
    assert gpk.Filter("box:5").shape == (5, 5)
    assert gpk.Filter(gpk.Filter("lp3")).sum == 0
    with pytest.raises(ValueError):
        f.taps[0, 0] = 5  # read-only
    assert "smooth5" in repr(f)


def test_strided_inputs_in_place(cpu, rng, calls):
    """Row-pitch views are read in place; other layouts are copied first; results equal the contiguous ones."""
    base = image(rng, np.float32, (60, 80, 4))
    flt = gpk.Filter("smooth5")
    cases = [  # (view, read in place?)
        (base[5:45, 7:70], True),  # 4 channels, row pitch 80*4 samples
        (base[::3, :, 0:1], False),  # a one-channel slice of a 4-channel image: samples 16 bytes apart
        (base[::2, 3:60, :], True),
        (base[:, :, 0], False),
        (np.ascontiguousarray(base[:, :, 0])[:, ::2], False),
        (np.ascontiguousarray(base[:, :, 0])[::-1], False),
        (np.asfortranarray(base[:, :, 1]), False),
        (np.ascontiguousarray(base[:, :, 1])[10:20], True),
        (base[..., 1:3], False),  # 2 channels of 4
    ]
    for view, in_place in cases:
        calls.clear()
        got = gpk.convolve(view, flt, normalize="sum", context=cpu)
        want = gpk.convolve(np.ascontiguousarray(view), flt, normalize="sum", context=cpu)
        np.testing.assert_array_equal(got, want, err_msg=str(view.strides))
        assert (calls[0][1]["src"] == view.ctypes.data) == in_place, view.strides


def test_out(cpu, rng, calls):
    """out= with a row pitch is written in place, and the bytes between rows are left alone."""
    img = image(rng, np.uint8, (20, 30, 3))
    big = np.full((25, 40, 3), 77, np.uint8)
    out = big[2:22, 5:35]
    result = gpk.convolve(img, "lp3", border="wrap", normalize="minmax", out=out, context=cpu)
    assert result is out and calls[0][1]["dst"] == out.ctypes.data
    np.testing.assert_array_equal(out, gpk.convolve(img, "lp3", border="wrap", normalize="minmax", context=cpu))
    mask = np.ones(big.shape, bool)
    mask[2:22, 5:35] = False
    assert (big[mask] == 77).all()
    f32 = np.empty((20, 30, 3), np.float32)
    assert gpk.convolve(img, "lp3", out=f32, context=cpu) is f32  # out's dtype is the output type
    np.testing.assert_array_equal(f32, ref.correlate(img, gpk.Filter("lp3").taps, "clamp").astype(np.float32))


def test_empty(cpu):
    out = gpk.convolve(np.zeros((0, 5), np.uint8), "lp3", context=cpu)
    assert out.shape == (0, 5) and out.dtype == np.uint8
    assert gpk.convolve(np.zeros((4, 0, 2), np.float32), "lp3", out_dtype="f8", context=cpu).dtype == np.float64
