"""gpk.heat on the CPU backend against the NumPy reference (reference.heat), the course pattern's check,
callbacks, cancellation, exceptions from callbacks and Ctrl-C."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import gpk
import reference as ref


def check_run(result, want_grid, want_reports):
    np.testing.assert_allclose(result.grid, want_grid, rtol=1e-9, atol=1e-12)
    assert len(result.reports) == len(want_reports)
    for got, want in zip(result.reports, want_reports):
        assert got.niter == want["niter"] and got.final == want["final"]
        for field in ("tmin", "tmax", "maxdiff", "tavg"):
            assert getattr(got, field) == pytest.approx(want[field], rel=1e-9, abs=1e-12), field
    assert result.final is result.reports[-1] and result.niter == want_reports[-1]["niter"]


@pytest.mark.parametrize("shape", [(1, 1), (1, 6), (6, 1), (7, 9), (16, 23)])
@pytest.mark.parametrize("period", [0, 3, 7])
def test_against_reference(cpu, rng, shape, period):
    tinit = rng.uniform(-100, 100, shape)
    cond = rng.uniform(0, 1, shape)
    for maxiter, threshold in [(1, 0.0), (40, 0.0), (500, 0.5), (2000, 1e-3)]:
        result = gpk.heat(tinit, cond, maxiter=maxiter, threshold=threshold, period=period, context=cpu)
        check_run(result, *ref.heat(tinit, cond, maxiter, threshold, period))
        assert result.grid.shape == shape and result.grid.dtype == np.float64


def test_scalar_conductivity_and_conversions(cpu, rng):
    """A number for the conductivity; float32, Fortran-order and list inputs are converted."""
    tinit = rng.uniform(0, 50, (12, 10))
    want = ref.heat(tinit, np.full(tinit.shape, 0.25), 100, 0.0, 0)
    check_run(gpk.heat(tinit, 0.25, maxiter=100, threshold=0, context=cpu), *want)
    base = gpk.heat(tinit, 0.25, maxiter=100, threshold=0, context=cpu).grid
    for variant in (np.asfortranarray(tinit), tinit.tolist(), np.ascontiguousarray(tinit[::-1])[::-1]):
        np.testing.assert_array_equal(gpk.heat(variant, 0.25, maxiter=100, threshold=0, context=cpu).grid, base)
    t32 = tinit.astype(np.float32)
    check_run(gpk.heat(t32, 0.25, maxiter=100, threshold=0, context=cpu),
              *ref.heat(t32.astype(np.float64), np.full(tinit.shape, 0.25), 100, 0.0, 0))
    out = np.empty_like(tinit)
    assert gpk.heat(tinit, 0.25, maxiter=100, threshold=0, out=out, context=cpu).grid is out
    np.testing.assert_array_equal(out, base)


def read_pgm(path):
    """(pixels as float64, maxval) of an ASCII (P2) or binary (P5) PGM file."""
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos)
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    magic, width, height, maxval = fields[0], int(fields[1]), int(fields[2]), int(fields[3])
    if magic == b"P2":
        pixels = np.array(data[pos:].split(), np.float64)[:width * height]
    else:
        pixels = np.frombuffer(data[pos + 1:], ">u2" if maxval > 255 else "u1", width * height)
    return pixels.reshape(height, width).astype(np.float64), maxval


def test_spec_pat1(cpu):
    """The course pattern's check: pat1_100x150.pgm as temperatures in [-100, 100] and conductivities."""
    directory = os.environ.get("GPK_TEST_DATA", "")
    path = os.path.join(directory, "pat1_100x150.pgm")
    if not os.path.isfile(path):
        pytest.skip("pat1_100x150.pgm not found (GPK_TEST_DATA)")
    pixels, maxval = read_pgm(path)
    assert pixels.shape == (150, 100)
    tinit = -100 + pixels * 200 / maxval
    result = gpk.heat(tinit, pixels / maxval, maxiter=5000, threshold=0.001, period=500, context=cpu)
    final = result.final
    assert final.niter == 5000 and len(result.reports) == 11
    line = f"{final.tmin:.6e} {final.tmax:.6e} {final.maxdiff:.6e} {final.tavg:.6e}"
    assert line == "-6.818562e+00 2.687404e+01 4.175908e-03 8.652341e+00"


def test_callbacks_see_what_is_returned(cpu, rng):
    tinit = rng.uniform(0, 10, (9, 11))
    seen, progress = [], []
    result = gpk.heat(tinit, 0.3, maxiter=50, threshold=0, period=10, on_report=seen.append,
                      on_progress=lambda *a: progress.append(a), progress_interval=7, context=cpu)
    assert seen == result.reports and len(seen) == 6 and [r.final for r in seen] == [False] * 5 + [True]
    # Progress comes at the first pass boundary at or after each multiple of 7: the CPU's passes are 4
    # iterations and end at the reports (4, 8, 10, 14, 18, 20, 24, ...), never shortened for progress.
    assert [p[0] for p in progress] == [8, 14, 24, 28, 38, 44, 50]
    every = gpk.heat(tinit, 0.3, maxiter=50, threshold=0, period=1, context=cpu).reports
    assert [p[1] for p in progress] == [every[p[0] - 1].maxdiff for p in progress]
    assert all(p[2] >= 0 for p in progress)
    np.testing.assert_array_equal(result.grid, gpk.heat(tinit, 0.3, maxiter=50, threshold=0, context=cpu).grid)


@pytest.mark.parametrize("which", ["progress", "report"])
def test_cancel(cpu, rng, which):
    """A callback returning True stops the run at that pass boundary (a report's iteration, or for progress
    the boundary after 22: 24): CancelledError with the state reached, which is the grid of a run of
    exactly that many iterations."""
    tinit = rng.uniform(0, 10, (9, 11))
    kwargs = dict(maxiter=1000, threshold=0, context=cpu)
    if which == "progress":
        kwargs.update(on_progress=lambda niter, maxdiff, t: niter >= 22, progress_interval=2)
    else:
        kwargs.update(on_report=lambda r: r.niter == 30, period=5)
    with pytest.raises(gpk.CancelledError, match="cancel") as info:
        gpk.heat(tinit, 0.3, **kwargs)
    result = info.value.result
    stop = 24 if which == "progress" else 30
    assert result.niter == stop and result.final.final
    np.testing.assert_array_equal(result.grid, gpk.heat(tinit, 0.3, maxiter=stop, threshold=0, context=cpu).grid)


def test_callback_exception_stops_the_run(cpu, rng):
    tinit = rng.uniform(0, 10, (9, 11))

    def boom(niter, maxdiff, t):
        if niter == 12:
            raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError, match="from the callback") as info:
        gpk.heat(tinit, 0.3, maxiter=10**6, threshold=0, on_progress=boom, progress_interval=3, context=cpu)
    assert info.value.result.niter == 12


def test_keyboard_interrupt_from_callback(cpu, rng):
    tinit = rng.uniform(0, 10, (9, 11))

    def interrupt(report):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as info:
        gpk.heat(tinit, 0.3, maxiter=10**6, threshold=0, period=20, on_report=interrupt, context=cpu)
    assert info.value.result.niter == 20 and info.value.result.final.final


def test_ctrl_c(cpu, rng):
    """SIGINT during a long run on the main thread stops it within a second with its last report, whatever
    the progress interval (the run is checked at every pass boundary); the handler is restored."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("needs the main thread")
    # A process started in the background by a shell without job control ignores SIGINT: Python's handler
    # is put in place for the test, as an interactive process has it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    tinit = rng.uniform(0, 10, (64, 64))
    sent = []

    def interrupt():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.3, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as info:  # a lost signal ends the run after 60 s, and fails
            gpk.heat(tinit, 0.3, maxiter=10**12, threshold=0, on_progress=lambda n, d, t: t > 60,
                     progress_interval=10**6, context=cpu)
        stopped = time.monotonic()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert sent and stopped - sent[0] < 1
    result = info.value.result
    assert 0 < result.niter < 10**12 and result.final.final
    np.testing.assert_array_equal(result.grid, gpk.heat(tinit, 0.3, maxiter=result.niter, threshold=0,
                                                        context=cpu).grid)


def test_reports_in_a_thread(rng):
    """A run on another thread with its own default context."""
    tinit = rng.uniform(0, 10, (9, 11))
    box = {}
    worker = threading.Thread(target=lambda: box.update(r=gpk.heat(tinit, 0.5, maxiter=30, threshold=0, period=10)))
    worker.start()
    worker.join()
    check_run(box["r"], *ref.heat(tinit, np.full(tinit.shape, 0.5), 30, 0.0, 10))
