"""Contexts (explicit, `with`, per-thread defaults), the exception classes against gpk.h, and the GIL:
calls on separate contexts run at the same time on separate threads."""
import os
import re
import threading
import time

import numpy as np
import pytest

import gpk

HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "..", "include", "gpk.h")


def test_one_exception_class_per_status():
    """Every GPK_ERR_* of gpk.h has its class, with the library's status string; none is left over."""
    with open(HEADER) as f:
        statuses = dict(re.findall(r"GPK_ERR_(\w+) = (\d+)", f.read()))
    assert statuses, "no statuses found in gpk.h"
    classes = {cls.status: cls for cls in vars(gpk).values()
               if isinstance(cls, type) and issubclass(cls, gpk.Error) and cls is not gpk.Error}
    assert sorted(classes) == sorted(int(v) for v in statuses.values())
    for name, value in statuses.items():
        cls = classes[int(value)]
        assert cls.__name__ == "".join(w.capitalize() for w in name.split("_")) + "Error"
        assert cls.status_name == gpk._lib.lib.gpk_status_string(int(value)).decode()
    assert issubclass(gpk.InvalidArgumentError, ValueError) and issubclass(gpk.OutOfMemoryError, MemoryError)


def test_library_message(cpu):
    with pytest.raises(gpk.InvalidArgumentError) as info:
        gpk.histogram(np.zeros(4, np.uint8), bins=4, range=(2.0, 2.0), context=cpu)
    assert "upper" in str(info.value) and info.value.message == str(info.value) and info.value.status == 1
    with pytest.raises(gpk.InvalidArgumentError, match="unknown.*'nope'|nope"):
        gpk.Filter("nope")


def test_context_properties():
    ctx = gpk.Context(backend="cpu", threads=2)
    assert ctx.backend == "cpu" and ctx.threads == 2 and ctx.device == 0 and ctx.stream is None
    assert "cpu" in repr(ctx) and not ctx.closed
    ctx.synchronize()
    ctx.close()
    ctx.close()  # harmless
    assert ctx.closed and "closed" in repr(ctx)
    for call in (lambda: gpk.histogram(np.zeros(3, np.uint8), context=ctx),
                 lambda: gpk.convolve(np.zeros((3, 3), np.uint8), "lp3", context=ctx),
                 lambda: gpk.heat(np.zeros((3, 3)), 0.5, context=ctx),
                 ctx.synchronize):
        with pytest.raises(gpk.InvalidArgumentError, match="closed"):
            call()


def test_cuda_without_a_device():
    if gpk.devices():
        pytest.skip("a CUDA device is present")
    with pytest.raises(gpk.NoDeviceError, match="GPU"):
        gpk.Context(backend="cuda")
    assert gpk.Context().backend == "cpu"


@pytest.mark.parametrize("kwargs", [dict(backend="gpu"), dict(device=-1), dict(threads=-2), dict(device="0"),
                                    dict(stream="s"), dict(stream=-5)])
def test_bad_options(kwargs):
    with pytest.raises(gpk.InvalidArgumentError):
        gpk.Context(**kwargs)


def test_with_block_is_current_and_closes():
    outer_default = gpk.current_context()
    with gpk.Context(backend="cpu", threads=1) as ctx:
        assert gpk.current_context() is ctx
        with gpk.Context(backend="cpu") as inner:
            assert gpk.current_context() is inner
            gpk.histogram(np.arange(10, dtype=np.uint8))
        assert inner.closed and gpk.current_context() is ctx
    assert ctx.closed and gpk.current_context() is outer_default


def test_default_context_per_thread():
    mine = gpk.current_context()
    assert gpk.current_context() is mine
    theirs = []
    worker = threading.Thread(target=lambda: theirs.append(gpk.current_context()))
    worker.start()
    worker.join()
    assert theirs[0] is not mine


def test_one_thread_at_a_time(rng):
    """Threads sharing one context take turns; every result is right."""
    ctx = gpk.Context(backend="cpu", threads=1)
    img = rng.integers(0, 256, (300, 300), dtype=np.uint8)
    want = gpk.convolve(img, "smooth5", normalize="sum", context=ctx)
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(gpk.convolve(img, "smooth5", normalize="sum", context=ctx))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 20
    for r in results:
        np.testing.assert_array_equal(r, want)
    ctx.close()


def test_gil_released_two_threads(rng):
    """Two threads, each with its own single-threaded context: their calls are in flight at the same time,
    which cannot happen if a call held the GIL; results equal those of one thread."""
    flt = gpk.Filter.separable(np.ones(41) / 41, np.ones(41) / 41)
    contexts = [gpk.Context(backend="cpu", threads=1) for _ in range(2)]
    # An image large enough that one call takes 50 ms or more on this machine, so that overlap shows.
    rows = 1500
    while True:
        img = rng.standard_normal((rows, 1500)).astype(np.float32)
        start = time.perf_counter()
        want = gpk.convolve(img, flt, context=contexts[0])
        one_call = time.perf_counter() - start
        if one_call > 0.05 or rows >= 1500 * 64:
            break
        rows *= 2
    assert one_call > 0.02, f"the call takes {one_call:.4f} s even on {rows} rows: too short to see overlap"
    barrier = threading.Barrier(2)
    spans = [[], []]
    outputs = [None, None]

    def work(i):
        barrier.wait()
        for _ in range(3):
            begin = time.perf_counter()
            outputs[i] = gpk.convolve(img, flt, context=contexts[i])
            spans[i].append((begin, time.perf_counter()))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    overlap = max(min(a_end, b_end) - max(a_begin, b_begin)
                  for a_begin, a_end in spans[0] for b_begin, b_end in spans[1])
    assert overlap > 0.5 * one_call, f"calls overlapped by {overlap:.4f} s only (one call {one_call:.4f} s)"
    for out in outputs:
        np.testing.assert_array_equal(out, want)
    for ctx in contexts:
        ctx.close()


def test_python_runs_during_a_call(rng):
    """While one thread is inside a long gpk call, another thread's Python code keeps running."""
    tinit = rng.uniform(0, 1, (256, 256))
    ctx = gpk.Context(backend="cpu", threads=1)
    span = {}
    # Enough iterations for a call of at least 0.2 s on this machine (the H100 host ran 400 in 45 ms).
    maxiter = 100
    while True:
        begin = time.perf_counter()
        gpk.heat(tinit, 0.5, maxiter=maxiter, threshold=0, context=ctx)
        if time.perf_counter() - begin >= 0.2 or maxiter >= 10**6:
            break
        maxiter *= 2

    def work():
        span["begin"] = time.perf_counter()
        gpk.heat(tinit, 0.5, maxiter=maxiter, threshold=0, context=ctx, progress_interval=10**9)
        span["end"] = time.perf_counter()

    ticks = []
    worker = threading.Thread(target=work)
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    inside = [t for t in ticks if span["begin"] + 0.01 < t < span["end"] - 0.01]
    assert span["end"] - span["begin"] > 0.05 and len(inside) > 100
    ctx.close()


def test_devices_list():
    found = gpk.devices()
    assert isinstance(found, list)
    for d in found:
        assert d.name and d.total_memory > 0 and d.compute_capability[0] >= 3


def test_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", gpk.__version__)
    assert os.path.exists(gpk.library_path) or "/" not in gpk.library_path
