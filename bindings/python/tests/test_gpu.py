"""CuPy and PyTorch device arrays on the CUDA backend: results equal the CPU backend's (bit for bit on the exact
paths, within README's tolerances on the float paths), the library gets the arrays' own pointers (no copies),
outputs come from the input's library, and work runs on the arrays' streams. Skipped without a CUDA device.
"""
import threading

import numpy as np
import pytest

import gpk
from test_convolve import check, expected

pytestmark = pytest.mark.skipif(not gpk.devices(), reason="no usable CUDA device")

SPIN_FILL = r"""
extern "C" __global__ void spin_fill(unsigned char *p, long long n, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        p[i] = 7;
}
"""
SPIN_CYCLES = 200_000_000  # about 0.1 s: far longer than gpk takes to enqueue and run


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    return torch


@pytest.fixture(scope="module")
def gpu():
    ctx = gpk.Context(backend="cuda")
    yield ctx
    ctx.close()


def host_image(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "u":
        return rng.integers(0, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)
    return (rng.standard_normal(shape) * 100).astype(dtype)


CONVOLVE_CASES = [(f, n) for f in ("smooth5", "lp3", "log9", "box:9", "gauss:1.5") for n in (None, "sum", "minmax")
                  if not (n == "sum" and f in ("lp3", "log9"))]


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64])
@pytest.mark.parametrize("border", ["zero", "clamp", "mirror", "reflect", "wrap"])
def test_cupy_convolve(cp, cpu, rng, calls, dtype, border):
    for channels in (1, 3):
        host = host_image(rng, dtype, (67, 91) if channels == 1 else (45, 38, channels))
        x = cp.asarray(host)
        for name, normalize in CONVOLVE_CASES:
            for out_dtype in {np.dtype(dtype), np.dtype(np.float32)}:
                calls.clear()
                y = gpk.convolve(x, name, border=border, normalize=normalize, out_dtype=out_dtype)
                assert isinstance(y, cp.ndarray) and y.dtype == out_dtype and y.shape == x.shape
                assert calls[0][1]["src"] == x.data.ptr and calls[0][1]["dst"] == y.data.ptr  # in place
                got = cp.asnumpy(y)
                flt = gpk.Filter(name)
                want, kind = expected(host, flt, border, normalize, out_dtype)
                what = f"cupy {np.dtype(dtype).name}->{np.dtype(out_dtype).name} {channels}ch {name} {border} {normalize}"
                check(got, want, kind, out_dtype, what)
                if kind == "exact":  # identical to the CPU backend
                    np.testing.assert_array_equal(got, gpk.convolve(host, name, border=border, normalize=normalize,
                                                                    out_dtype=out_dtype, context=cpu), err_msg=what)


def test_cupy_layouts_and_out(cp, cpu, rng, calls):
    host = host_image(rng, np.uint8, (80, 120, 3))
    big = cp.asarray(host)
    view = big[10:70, 5:100]  # rows 360 bytes apart: read in place
    calls.clear()
    y = gpk.convolve(view, "smooth5", normalize="sum")
    assert calls[0][1]["src"] == view.data.ptr
    np.testing.assert_array_equal(cp.asnumpy(y), gpk.convolve(np.ascontiguousarray(host[10:70, 5:100]), "smooth5",
                                                               normalize="sum", context=cpu))
    with pytest.raises(gpk.InvalidArgumentError, match="contiguous"):
        gpk.convolve(big[:, ::2], "lp3")
    padded = cp.full((70, 110, 3), 99, cp.uint8)
    out = padded[5:65, 10:105]
    ptr = out.data.ptr
    result = gpk.convolve(view, "smooth5", normalize="sum", out=out)
    assert result is out and out.data.ptr == ptr
    np.testing.assert_array_equal(cp.asnumpy(out), cp.asnumpy(y))
    outside = cp.asnumpy(padded).copy()
    outside[5:65, 10:105] = 99
    assert (outside == 99).all()  # the bytes between the output rows are untouched
    # mixed: device in, host out; host in on a CUDA context
    host_out = np.empty(view.shape, np.float32)
    assert gpk.convolve(view, "lp3", out=host_out) is host_out
    np.testing.assert_array_equal(host_out, gpk.convolve(np.ascontiguousarray(host[10:70, 5:100]), "lp3",
                                                         out_dtype=np.float32, context=cpu))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.int32, np.float32, np.float64])
def test_cupy_histogram(cp, cpu, rng, calls, dtype):
    host = host_image(rng, dtype, (300, 200, 2)) if np.dtype(dtype).kind != "i" else \
        rng.integers(-50, 1100, (300, 200, 2)).astype(dtype)
    x = cp.asarray(host)
    for kwargs in (dict(), dict(bins=1000, range=(0, 1000)), dict(bins=37, range=(-40.5, 3000.0), saturate=900)):
        for axis in (None, -1):
            calls.clear()
            got, un = gpk.histogram(x, channel_axis=axis, return_uncounted=True, **kwargs)
            assert isinstance(got, np.ndarray) and calls[0][1]["data"] == x.data.ptr
            want, want_un = gpk.histogram(host, channel_axis=axis, return_uncounted=True, context=cpu, **kwargs)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(un, want_un)
    rows = x[::3]  # every third row of whole pixels: in place
    calls.clear()
    np.testing.assert_array_equal(gpk.histogram(rows, channel_axis=-1),
                                  gpk.histogram(np.ascontiguousarray(host[::3]), channel_axis=-1, context=cpu))
    assert calls[0][1]["data"] == rows.data.ptr


def test_cupy_heat(cp, cpu, rng, calls):
    tinit = rng.uniform(-50, 50, (130, 170))
    cond = rng.uniform(0, 1, (130, 170))
    t, c = cp.asarray(tinit), cp.asarray(cond)
    calls.clear()
    result = gpk.heat(t, c, maxiter=700, threshold=1e-4, period=100)
    assert isinstance(result.grid, cp.ndarray) and calls[0][1]["tinit"] == t.data.ptr
    want = gpk.heat(tinit, cond, maxiter=700, threshold=1e-4, period=100, context=cpu)
    np.testing.assert_allclose(cp.asnumpy(result.grid), want.grid, rtol=1e-9, atol=1e-12)
    assert [r.niter for r in result.reports] == [r.niter for r in want.reports]
    for got, exp in zip(result.reports, want.reports):
        assert got.tavg == pytest.approx(exp.tavg, rel=1e-9) and got.tmax == pytest.approx(exp.tmax, rel=1e-9)
    # A stop asked at the first batch's end from 40 on ends the run at the end of the batch queued behind
    # it: the state of a run of that many iterations.
    with pytest.raises(gpk.CancelledError) as info:
        gpk.heat(t, c, maxiter=10**6, threshold=0, on_progress=lambda n, d, s: n >= 40, progress_interval=10)
    stopped = info.value.result
    assert 40 <= stopped.niter < 10**6
    np.testing.assert_array_equal(cp.asnumpy(stopped.grid),
                                  cp.asnumpy(gpk.heat(t, c, maxiter=stopped.niter, threshold=0).grid))


def test_cupy_stream_is_honoured(cp, calls):
    """On a non-blocking CuPy stream, a kernel that writes the input only after ~0.1 s comes before gpk's
    work: gpk runs on that stream (it would read zeros on any other)."""
    spin = cp.RawKernel(SPIN_FILL, "spin_fill")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = cp.zeros((1024, 1024), cp.uint8)
        stream.synchronize()
        spin((32,), (256,), (x, cp.int64(x.size), cp.int64(SPIN_CYCLES)))
        calls.clear()
        counts = gpk.histogram(x)  # host counts: returns when done
        assert calls[0][1]["stream"] == stream.ptr
        assert counts[7] == x.size
        spin((32,), (256,), (x, cp.int64(x.size), cp.int64(SPIN_CYCLES)))
        y = gpk.convolve(x, "smooth5", normalize="sum", out_dtype=cp.float32)  # enqueued on the stream
        stream.synchronize()
    assert (cp.asnumpy(y) == 7).all()


def test_context_stream_waits_for_the_array(cp):
    """A context with its own stream waits for work a CuPy array's stream still has pending."""
    spin = cp.RawKernel(SPIN_FILL, "spin_fill")
    mine, theirs = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    with gpk.Context(backend="cuda", stream=mine) as ctx:
        assert ctx.stream == mine.ptr
        with theirs:
            x = cp.zeros((512, 512), cp.uint8)
            theirs.synchronize()
            spin((32,), (256,), (x, cp.int64(x.size), cp.int64(SPIN_CYCLES)))
            counts = gpk.histogram(x, context=ctx)
        assert counts[7] == x.size


def test_torch_convolve(torch, cpu, rng, calls):
    for np_dtype in (np.dtype(np.uint8), np.dtype(np.float32), np.dtype(np.float64)):
        host = host_image(rng, np_dtype, (64, 80, 3))
        x = torch.from_numpy(host).cuda()
        for name, normalize in CONVOLVE_CASES:
            calls.clear()
            y = gpk.convolve(x, name, border="reflect", normalize=normalize)
            assert isinstance(y, torch.Tensor) and y.is_cuda and tuple(y.shape) == host.shape
            assert calls[0][1]["src"] == x.data_ptr() and calls[0][1]["dst"] == y.data_ptr()
            torch.cuda.synchronize()
            want, kind = expected(host, gpk.Filter(name), "reflect", normalize, np_dtype)
            check(y.cpu().numpy(), want, kind, np_dtype, f"torch {np_dtype.name} {name} {normalize}")
        out = torch.empty_like(x)
        ptr = out.data_ptr()
        assert gpk.convolve(x, "lp3", out=out) is out and out.data_ptr() == ptr
        torch.cuda.synchronize()
        np.testing.assert_array_equal(out.cpu().numpy(), gpk.convolve(host, "lp3", context=cpu))
    with pytest.raises(gpk.InvalidArgumentError, match="contiguous"):
        gpk.convolve(torch.zeros((40, 30), dtype=torch.float32, device="cuda").t(), "lp3")
    with pytest.raises(gpk.InvalidArgumentError, match="gradient|grad"):
        gpk.convolve(torch.zeros((40, 30), device="cuda", requires_grad=True), "lp3")
    with pytest.raises(gpk.InvalidArgumentError, match="int64"):
        gpk.histogram(torch.zeros(10, dtype=torch.int64, device="cuda"))


def test_torch_histogram_and_heat(torch, cpu, rng, calls):
    host = rng.integers(0, 256, (500, 300), dtype=np.uint8)
    x = torch.from_numpy(host).cuda()
    calls.clear()
    np.testing.assert_array_equal(gpk.histogram(x), np.bincount(host.ravel(), minlength=256))
    assert calls[0][1]["data"] == x.data_ptr()
    tinit = rng.uniform(0, 100, (64, 96))
    t = torch.from_numpy(tinit).cuda()
    result = gpk.heat(t, 0.4, maxiter=300, threshold=0)
    assert isinstance(result.grid, torch.Tensor) and result.grid.is_cuda
    np.testing.assert_allclose(result.grid.cpu().numpy(),
                               gpk.heat(tinit, 0.4, maxiter=300, threshold=0, context=cpu).grid, rtol=1e-9, atol=1e-12)


def test_torch_tensor_on_another_device(torch, cpu, rng):
    """A tensor on a device that is not PyTorch's current one, on a context of that device."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 CUDA devices")
    host = rng.integers(0, 256, (300, 200), dtype=np.uint8)
    x = torch.from_numpy(host).cuda(1)
    assert torch.cuda.current_device() == 0
    with gpk.Context(backend="cuda", device=1) as ctx:
        np.testing.assert_array_equal(gpk.histogram(x, context=ctx), np.bincount(host.ravel(), minlength=256))
        out = gpk.convolve(x, "box:3", normalize="sum", context=ctx)
        assert out.device == x.device
        np.testing.assert_array_equal(out.cpu().numpy(), gpk.convolve(host, "box:3", normalize="sum", context=cpu))
    assert torch.cuda.current_device() == 0


def test_torch_stream_is_honoured(torch, calls):
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x = torch.zeros((1024, 1024), dtype=torch.uint8, device="cuda")
        torch.cuda._sleep(SPIN_CYCLES)
        x.fill_(7)
        calls.clear()
        counts = gpk.histogram(x)
        assert calls[0][1]["stream"] == stream.cuda_stream
        assert counts[7] == x.numel()
        torch.cuda._sleep(SPIN_CYCLES)
        x.fill_(3)
        y = gpk.convolve(x, "box:5", normalize="sum")
        stream.synchronize()
    assert (y.cpu().numpy() == 3).all()


class DLPackOnly:
    """A producer with DLPack and nothing else (as JAX arrays are)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class CudaArrayInterfaceV2:
    """A producer with only a version 2 CUDA array interface (no stream), as older Numba arrays are."""

    def __init__(self, array):
        cai = dict(array.__cuda_array_interface__)
        cai.pop("stream", None)
        cai["version"] = 2
        self.__cuda_array_interface__ = cai
        self.array = array


def test_other_producers(cp, cpu, rng, calls):
    host = host_image(rng, np.float32, (50, 60))
    x = cp.asarray(host)
    cp.cuda.Device().synchronize()
    want = gpk.convolve(host, "gauss:2", context=cpu)
    for wrapped in (DLPackOnly(x), CudaArrayInterfaceV2(x)):
        calls.clear()
        y = gpk.convolve(wrapped, "gauss:2")
        assert calls[0][1]["src"] == x.data.ptr
        assert isinstance(y, cp.ndarray)  # made by CuPy where the producer's library cannot be asked
        cp.cuda.Device().synchronize()
        np.testing.assert_allclose(cp.asnumpy(y), want, rtol=1e-5, atol=1e-3)
        np.testing.assert_array_equal(gpk.histogram(wrapped, bins=10, range=(-300, 300)),
                                      gpk.histogram(host, bins=10, range=(-300, 300), context=cpu))


def test_threads_with_their_own_contexts(cp, cpu, rng):
    host = host_image(rng, np.uint8, (2048, 2048))
    want = gpk.convolve(host, "log9", normalize="minmax", context=cpu)
    results = {}

    def work(i):
        with gpk.Context(backend="cuda") as ctx:
            x = cp.asarray(host)
            for _ in range(5):
                results[i] = cp.asnumpy(gpk.convolve(x, "log9", normalize="minmax", context=ctx))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        np.testing.assert_array_equal(results[i], want)

