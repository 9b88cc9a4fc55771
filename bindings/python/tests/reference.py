"""Independent NumPy/SciPy references for the contract (README.md, "What gpk computes"), written from it,
not from gpk's code."""
import math

import numpy as np
import scipy.ndimage as ndi

SCIPY_MODE = {"zero": "constant", "clamp": "nearest", "mirror": "mirror", "reflect": "reflect", "wrap": "wrap"}
INTEGER_LIMITS = {np.dtype(np.uint8): (0, 255), np.dtype(np.uint16): (0, 65535)}


# -- histogram ----------------------------------------------------------------------------------------

def histogram(samples, bins, lower, upper, saturate=0):
    """(counts, uncounted) of the histogram contract for one channel: `samples` any shape of one dtype."""
    v = np.asarray(samples).ravel()
    if v.dtype.kind in "ui" and lower == 0 and upper == bins:
        inside = (v >= 0) & (v < bins)
        counts = np.bincount(v[inside].astype(np.int64), minlength=bins).astype(np.uint64)
    else:
        d = v.astype(np.float64)
        scale = bins / (upper - lower)
        with np.errstate(invalid="ignore"):
            inside = (d >= lower) & (d < upper)
        b = np.floor((d[inside] - lower) * scale).astype(np.int64)
        b[b == bins] = bins - 1
        counts = np.bincount(b, minlength=bins).astype(np.uint64)
    if saturate:
        counts = np.minimum(counts, np.uint64(saturate))
    return counts, int(v.size - np.count_nonzero(inside))


# -- convolution --------------------------------------------------------------------------------------

def correlate(img, taps, border, separable=None):
    """The weighted sums in float64, per channel (last axis of a 3-D image): the contract's correlation.
    `separable`: (row, col) taps instead of `taps`."""
    if img.ndim == 3:
        return np.stack([correlate(img[..., c], taps, border, separable) for c in range(img.shape[2])], axis=-1)
    x = img.astype(np.float64)
    mode = SCIPY_MODE[border]
    if separable is not None:
        row, col = separable
        x = ndi.correlate1d(x, np.asarray(row, np.float64), axis=1, mode=mode, cval=0.0)
        return ndi.correlate1d(x, np.asarray(col, np.float64), axis=0, mode=mode, cval=0.0)
    return ndi.correlate(x, np.asarray(taps, np.float64), mode=mode, cval=0.0)


def round_saturate(v, dtype):
    """Float values to `dtype`: integers round to nearest, ties away from zero, and saturate (NaN -> 0)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return v.astype(dtype)
    lo, hi = INTEGER_LIMITS[dtype]
    r = np.where(np.isnan(v), 0.0, np.sign(v) * np.floor(np.abs(v) + 0.5))
    return np.clip(r, lo, hi).astype(dtype)


def _per_channel_minmax(v):
    axes = (0, 1)
    if v.ndim == 3:
        return np.nanmin(v, axis=axes, keepdims=True), np.nanmax(v, axis=axes, keepdims=True)
    return np.nanmin(v), np.nanmax(v)


def convolve_exact(img, taps, border, normalize, out_dtype, tap_sum, separable=None):
    """The exact path (integer image, integer taps): every value as gpk must give it, bit for bit."""
    v = correlate(img, taps, border, separable)  # integers, exact in float64 for these sizes
    out_dtype = np.dtype(out_dtype)
    if normalize == "sum":
        if out_dtype.kind == "f":
            return (v / tap_sum).astype(out_dtype)
        q = np.sign(v) * np.floor(np.abs(v) / abs(tap_sum) + 0.5) * np.sign(tap_sum)
        return round_saturate(q, out_dtype)
    if normalize == "minmax":
        mn, mx = _per_channel_minmax(v)
        span = mx - mn
        with np.errstate(invalid="ignore", divide="ignore"):
            if out_dtype.kind == "f":
                r = np.where(span == 0, 0.0, (v - mn) * 255.0 / np.where(span == 0, 1, span))
                return r.astype(out_dtype)
            vi, mni, spani = v.astype(np.int64), np.asarray(mn).astype(np.int64), np.asarray(span).astype(np.int64)
            r = np.where(spani == 0, 0, (vi - mni) * 255 // np.where(spani == 0, 1, spani))
        return round_saturate(r.astype(np.float64), out_dtype)
    return round_saturate(v, out_dtype)


def convolve_float(img, taps, border, normalize, tap_sum, separable=None):
    """The float path in float64, before conversion to the output type."""
    v = correlate(img, taps, border, separable)
    if normalize == "sum":
        return v / tap_sum
    if normalize == "minmax":
        mn, mx = _per_channel_minmax(v)
        span = mx - mn
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(span == 0, 0.0, (v - mn) * 255.0 / np.where(span == 0, 1, span))
    return v


def relative_l2(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    norm = np.linalg.norm(want)
    diff = np.linalg.norm(got - want)
    return diff / norm if norm else diff


# -- heat ---------------------------------------------------------------------------------------------

CDIR = 0.25 * math.sqrt(2) / (math.sqrt(2) + 1)
CDIAG = 0.25 / (math.sqrt(2) + 1)


def _stats(g, niter, maxdiff, final):
    interior = g[1:-1, 1:-1]
    return dict(niter=niter, tmin=interior.min(), tmax=interior.max(), maxdiff=maxdiff, tavg=interior.mean(),
                final=final)


def heat(tinit, cond, maxiter, threshold, period):
    """The heat contract step by step: (final interior grid, reports as dicts, periodic then final)."""
    n, m = tinit.shape
    src = np.zeros((n + 2, m + 2))
    src[1:-1, 1:-1] = tinit
    src[0, 1:-1], src[-1, 1:-1] = tinit[0], tinit[-1]
    dst = src.copy()
    w = np.asarray(cond, np.float64)
    r = 1 - w
    reports, niter, maxdiff = [], maxiter, 0.0
    for it in range(1, maxiter + 1):
        src, dst = dst, src
        src[:, -1], src[:, 0] = src[:, 1], src[:, -2]
        direct = src[2:, 1:-1] + src[:-2, 1:-1] + src[1:-1, 2:] + src[1:-1, :-2]
        diagonal = src[:-2, :-2] + src[:-2, 2:] + src[2:, :-2] + src[2:, 2:]
        dst[1:-1, 1:-1] = w * src[1:-1, 1:-1] + direct * (r * CDIR) + diagonal * (r * CDIAG)
        maxdiff = float(np.max(np.abs(dst[1:-1, 1:-1] - src[1:-1, 1:-1])))
        if maxdiff < threshold:
            niter = it
            break
        if period > 0 and it % period == 0:
            reports.append(_stats(dst, it, maxdiff, False))
    reports.append(_stats(dst, niter, maxdiff, True))
    return dst[1:-1, 1:-1].copy(), reports
