"""gpk.histogram on the CPU backend against NumPy references (reference.histogram, numpy.bincount,
numpy.histogram): every dtype, channel count, range kind, saturation and memory layout."""
import numpy as np
import pytest

import gpk
import reference as ref

DTYPES = [np.uint8, np.uint16, np.uint32, np.int32, np.float32, np.float64]


def samples(rng, dtype, shape, lo, hi):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.uniform(lo, hi, shape).astype(dtype)
    return rng.integers(lo, hi, shape, endpoint=False).astype(dtype)


def check_channels(got, uncounted, data, bins, lower, upper, saturate=0):
    """`data` (..., C) against the reference per channel."""
    for c in range(data.shape[-1]):
        want, want_un = ref.histogram(data[..., c], bins, lower, upper, saturate)
        np.testing.assert_array_equal(got[c], want, err_msg=f"channel {c}")
        assert int(uncounted[c]) == want_un, f"channel {c}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_direct_bins(cpu, rng, dtype, channels):
    """Integer samples with range (0, bins) go to bin v; others (outside, or float samples) by the formula."""
    bins = 256 if np.dtype(dtype).itemsize == 1 else 1000
    data = samples(rng, dtype, (37, 53, channels), 0 if np.dtype(dtype).kind == "u" else -20, bins + 40)
    counts, uncounted = gpk.histogram(data, bins=bins, range=(0, bins), channel_axis=-1, return_uncounted=True,
                                      context=cpu)
    assert counts.dtype == np.uint64 and counts.shape == (channels, bins)
    check_channels(counts, uncounted, data, bins, 0, bins)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bins,lower,upper", [(10, 0.0, 100.0), (7, -3.5, 250.25), (1, 5.0, 6.0),
                                               (1024, -1e3, 1e3), (3, 0.0, 0.3)])
def test_general_bins(cpu, rng, dtype, bins, lower, upper):
    lo = 0 if np.dtype(dtype).kind == "u" else -1100
    data = samples(rng, dtype, (41, 29), lo, 1100)
    counts, uncounted = gpk.histogram(data, bins=bins, range=(lower, upper), return_uncounted=True, context=cpu)
    want, want_un = ref.histogram(data, bins, lower, upper)
    np.testing.assert_array_equal(counts, want)
    assert uncounted == want_un


def test_edges_and_nan(cpu):
    """upper itself, values just below it, NaN and infinities are placed as the README says."""
    x = np.array([0.0, 0.3, 0.1, np.nextafter(0.3, 0), 0.2, np.nan, -np.inf, np.inf, -0.0, 0.29999], np.float64)
    counts, uncounted = gpk.histogram(x, bins=3, range=(0.0, 0.3), return_uncounted=True, context=cpu)
    want, want_un = ref.histogram(x, 3, 0.0, 0.3)
    np.testing.assert_array_equal(counts, want)
    assert uncounted == want_un == 4
    for dtype in (np.float32, np.float64):
        data = np.full(100, np.nan, dtype)
        assert gpk.histogram(data, context=cpu, return_uncounted=True)[1] == 100


def test_matches_numpy(cpu, rng):
    """The common cases against numpy.bincount and numpy.histogram directly."""
    img = rng.integers(0, 256, (480, 640), dtype=np.uint8)
    np.testing.assert_array_equal(gpk.histogram(img, context=cpu), np.bincount(img.ravel(), minlength=256))
    ids = rng.integers(0, 1024, (399, 410), dtype=np.uint32)
    np.testing.assert_array_equal(gpk.histogram(ids, bins=1024, range=(0, 1024), context=cpu),
                                  np.bincount(ids.ravel(), minlength=1024))
    x = rng.integers(-500, 500, 10000).astype(np.float64) + 0.5  # never near a bin edge
    np.testing.assert_array_equal(gpk.histogram(x, bins=20, range=(-500, 500), context=cpu),
                                  np.histogram(x, bins=20, range=(-500, 500))[0])
    black = np.zeros((100, 100), np.uint8)
    assert gpk.histogram(black, context=cpu)[0] == 10000


@pytest.mark.parametrize("saturate", [1, 255, 1000])
def test_saturate(cpu, rng, saturate):
    """The lab's 1024 bins of u32 IDs saturating at 255, in rows padded to 4096 values (padding not read)."""
    padded = rng.integers(0, 1024, (398, 4096), dtype=np.uint32)
    padded[:, 3984:] = 5000  # outside the range: counted as uncounted if the padding were read
    ids = padded[:, :3984]
    counts, uncounted = gpk.histogram(ids, bins=1024, range=(0, 1024), saturate=saturate, return_uncounted=True,
                                      context=cpu)
    want, _ = ref.histogram(ids, 1024, 0, 1024, saturate)
    np.testing.assert_array_equal(counts, want)
    assert uncounted == 0


def test_layouts_read_in_place(cpu, rng, calls):
    """Row-pitch slices and collapsible N-D arrays are read where they are, other layouts are copied; the
    counts are the same either way."""
    base = rng.integers(0, 256, (64, 100, 4), dtype=np.uint8)
    # (view, channel_axis, read in place?)
    cases = [
        (base[3:50, 10:90, 1], None, False),  # samples 4 bytes apart
        (base[3:50, 10:90, :], None, True),  # rows of whole pixels, row pitch 400 bytes
        (base[3:50, 10:90, :], -1, True),
        (base[::2, :, :3], -1, False),  # 3 of 4 channels: pixels 4 samples apart
        (base[::2, :, :3], None, False),
        (base[::2], -1, True),  # every other row
        (np.ascontiguousarray(base[:, :50]), None, True),
        (base[5, :, 2].copy(), None, True),
    ]
    for view, axis, in_place in cases:
        calls.clear()
        got = gpk.histogram(view, channel_axis=axis, context=cpu)
        want = gpk.histogram(np.ascontiguousarray(view), channel_axis=axis, context=cpu)
        np.testing.assert_array_equal(got, want)
        if axis is None:
            np.testing.assert_array_equal(got, np.bincount(view.ravel(), minlength=256))
        assert (calls[0][1]["data"] == view.ctypes.data) == in_place, (view.shape, view.strides, axis)


def test_copied_layouts(cpu, rng, calls):
    """Layouts gpk cannot describe (columns, reversed, broadcast, Fortran order) are copied: same counts."""
    base = rng.integers(0, 65536, (60, 70), dtype=np.uint16)
    views = [base[:, ::3], base[::-1], base.T, np.asfortranarray(base),
             np.broadcast_to(base[0], (5, 70)), base.astype(">u2")]
    for view in views:
        calls.clear()
        got = gpk.histogram(view, bins=100, range=(0, 65536), context=cpu)
        want, _ = ref.histogram(np.asarray(view), 100, 0, 65536)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_channel_axis(cpu, rng, axis):
    data = rng.integers(0, 256, (3, 30, 4), dtype=np.uint8) if axis != 1 else \
        rng.integers(0, 256, (30, 2, 40), dtype=np.uint8)
    counts = gpk.histogram(data, channel_axis=axis, context=cpu)
    moved = np.moveaxis(data, axis, -1)
    assert counts.shape == (moved.shape[-1], 256)
    for c in range(moved.shape[-1]):
        np.testing.assert_array_equal(counts[c], np.bincount(moved[..., c].ravel(), minlength=256))


def test_inputs_that_are_not_arrays(cpu):
    """Sequences become NumPy arrays; Python ints as int32 where they fit."""
    np.testing.assert_array_equal(gpk.histogram([1, 2, 2, 3, -1], bins=4, range=(0, 4), context=cpu), [0, 1, 2, 1])
    np.testing.assert_array_equal(gpk.histogram([[0.5, 1.5], [1.25, 9.0]], bins=2, range=(0, 2), context=cpu),
                                  [1, 2])
    with pytest.raises(gpk.InvalidArgumentError, match="int64"):
        gpk.histogram([0, 2**40], context=cpu)


def test_empty(cpu):
    counts, uncounted = gpk.histogram(np.zeros((0, 5), np.uint8), return_uncounted=True, context=cpu)
    assert counts.shape == (256,) and not counts.any() and uncounted == 0
    assert gpk.histogram(np.zeros((0, 3), np.float32), channel_axis=-1, context=cpu).shape == (3, 256)
