"""gpk.mpi on CPU ranks, and on the ranks' GPUs where they have them, run by every rank: `mpirun -np N
python3 -m pytest test_mpi.py` (meson's suites 'python' and 'mpi' run it on 1-4 ranks; tools/gpu/check.sh,
stage python, on the GPU machine's 2 GPUs). Each rank's result is compared bit for bit with the single-process
function on the whole data in the same process; failures must raise the same gpk.Error on every rank."""
import os

import numpy as np
import pytest

MPI = pytest.importorskip("mpi4py.MPI")

import gpk  # noqa: E402
import gpk.mpi  # noqa: E402
from gpk import _lib  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
HEAT_FIELDS = ("niter", "tmin", "tmax", "maxdiff", "tavg", "final")  # all but the time


@pytest.fixture(scope="module")
def cpu():
    ctx = gpk.Context(backend="cpu")
    yield ctx
    ctx.close()


def same_data(seed):
    """A generator seeded alike on every rank: every rank makes the whole data."""
    return np.random.default_rng(seed)


def skewed_blocks(rows):
    """Blocks growing with the rank (rank r about r + 1 parts), every rank at least one row."""
    weights = np.arange(1, size + 1)
    counts = np.maximum(1, (rows * weights) // weights.sum())
    counts[-1] = rows - counts[:-1].sum()
    begin = int(counts[:rank].sum())
    return begin, int(counts[rank])


def raised_everywhere(fn, cls, *needles):
    """Runs fn on every rank; each must raise `cls` with the same message, holding each needle. Returns it."""
    try:
        fn()
    except cls as e:
        message = str(e)
    else:
        message = None
    messages = comm.allgather(message)
    assert None not in messages, f"ranks {[r for r, m in enumerate(messages) if m is None]} raised nothing"
    assert len(set(messages)) == 1, messages
    for needle in needles:
        assert needle in message, message
    return message


def fields(reports):
    return [tuple(getattr(r, f) for f in HEAT_FIELDS) for r in reports]


# ---------------------------------------------------------------------------------------------------
# default_block, contexts
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rows", [1, 7, 100, 101])
def test_default_block(rows):
    begin, count = gpk.mpi.default_block(comm, rows)
    share, extra = divmod(rows, size)
    assert (begin, count) == (rank * share + min(rank, extra), share + (rank < extra))
    blocks = comm.allgather((begin, count))
    assert sum(n for _, n in blocks) == rows
    assert all(b == sum(n for _, n in blocks[:r]) for r, (b, _) in enumerate(blocks))
    assert max(n for _, n in blocks) - min(n for _, n in blocks) <= 1


def test_context(cpu):
    with gpk.mpi.context(comm, backend="cpu", threads=1) as ctx:
        assert ctx.backend == "cpu"
        b, n = gpk.mpi.default_block(comm, 20)
        img = np.arange(20 * 8, dtype=np.uint8).reshape(20, 8)
        assert np.array_equal(gpk.mpi.histogram(comm, img[b:b + n]), gpk.histogram(img, context=cpu))
    raised_everywhere(lambda: gpk.mpi.context(comm, backend="gpu"), gpk.InvalidArgumentError, "backend is 'gpu'")


# ---------------------------------------------------------------------------------------------------
# Heat
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rows,cols,maxiter,threshold,period,skew", [
    (37, 20, 300, 0.0, 70, False),
    (37, 20, 300, 0.0, 70, True),
    (64, 33, 5000, 0.01, 0, False),  # converges
    (size, 9, 40, 0.0, 7, False),  # one row a rank
])
def test_heat_bit_identical(cpu, rows, cols, maxiter, threshold, period, skew):
    rng = same_data(rows * 1000 + cols)
    tinit = rng.uniform(0, 100, (rows, cols))
    cond = rng.uniform(0, 1, (rows, cols))
    whole = gpk.heat(tinit, cond, maxiter=maxiter, threshold=threshold, period=period, context=cpu)
    b, n = skewed_blocks(rows) if skew else gpk.mpi.default_block(comm, rows)
    seen = []
    part = gpk.mpi.heat(comm, tinit[b:b + n], cond[b:b + n], maxiter=maxiter, threshold=threshold, period=period,
                        on_report=lambda r: seen.append(r) and False, rows=rows,
                        row_begin=b if skew else None, context=cpu)
    assert part.grid.shape == (n, cols) and part.grid.dtype == np.float64
    assert np.array_equal(part.grid, whole.grid[b:b + n])
    assert fields(part.reports) == fields(whole.reports)
    assert fields(seen) == fields(whole.reports)
    assert part.reports[-1].final and part.niter == whole.niter


def test_heat_scalar_conductivity_and_out(cpu):
    rows, cols = 23, 11
    tinit = same_data(5).uniform(0, 50, (rows, cols))
    whole = gpk.heat(tinit, 0.25, maxiter=120, threshold=0, context=cpu)
    b, n = gpk.mpi.default_block(comm, rows)
    out = np.full((n, cols), -1.0)
    part = gpk.mpi.heat(comm, tinit[b:b + n], 0.25, maxiter=120, threshold=0, out=out, context=cpu)
    assert part.grid is out and np.array_equal(out, whole.grid[b:b + n])


def test_heat_stop_on_one_rank(cpu):
    rows, cols = 30, 10
    tinit = same_data(6).uniform(0, 100, (rows, cols))
    b, n = gpk.mpi.default_block(comm, rows)
    last = size - 1

    def run():
        gpk.mpi.heat(comm, tinit[b:b + n], 0.5, maxiter=500, threshold=0, period=10,
                     on_report=lambda r: rank == last and r.niter >= 30, context=cpu)

    try:
        run()
    except gpk.CancelledError as e:
        assert e.result.reports[-1].niter == 30 and e.result.reports[-1].final
        message = str(e)
    messages = comm.allgather(message)
    assert len(set(messages)) == 1 and "report callback" + (f" of rank {last}" if size > 1 else "") in message, messages


def test_heat_callback_raising_on_one_rank(cpu):
    rows, cols = 12, 6
    b, n = gpk.mpi.default_block(comm, rows)
    last = size - 1

    def boom(niter, maxdiff, seconds):
        if rank == last and niter >= 4:
            raise RuntimeError("boom")

    tinit = np.arange(n * cols, dtype=np.float64).reshape(n, cols) + b * cols
    try:
        gpk.mpi.heat(comm, tinit, 0.5, maxiter=50, threshold=0, on_progress=boom, progress_interval=2, context=cpu)
    except RuntimeError as e:
        assert rank == last and str(e) == "boom"
        result = e.result
    except gpk.CancelledError as e:
        assert rank != last
        result = e.result
    else:
        pytest.fail("the run was not stopped")
    # At the first pass boundary from 4 on (passes of up to 4 iterations), the same on every rank: the
    # state of a run of that many iterations.
    assert 4 <= result.niter < 8 and len(set(comm.allgather(result.niter))) == 1
    want = gpk.mpi.heat(comm, tinit, 0.5, maxiter=result.niter, threshold=0, context=cpu)
    np.testing.assert_array_equal(result.grid, want.grid)


def test_heat_mismatches(cpu):
    rows, cols = max(2 * size, 8), 6
    b, n = gpk.mpi.default_block(comm, rows)
    t = np.zeros((n, cols))
    last = size - 1
    raised_everywhere(lambda: gpk.mpi.heat(comm, t, 0.5, rows=rows + 1, context=cpu), gpk.InvalidArgumentError,
                      "gpk.mpi.heat: the blocks do not tile the rows", f"rows is {rows + 1}")
    raised_everywhere(lambda: gpk.mpi.heat(comm, t, 0.5, row_begin=b + 1, context=cpu), gpk.InvalidArgumentError,
                      "do not tile", "row_begin is")
    if size > 1:
        wide = np.zeros((n, cols + (rank == last)))
        raised_everywhere(lambda: gpk.mpi.heat(comm, wide, 0.5, context=cpu), gpk.InvalidArgumentError,
                          "tinit's columns differs between ranks", f"{cols + 1} on rank {last}")
        raised_everywhere(lambda: gpk.mpi.heat(comm, t, 0.5, maxiter=10 + (rank == last), context=cpu),
                          gpk.InvalidArgumentError, "maxiter differs between ranks")
        none = t[:0] if rank == last else t
        raised_everywhere(lambda: gpk.mpi.heat(comm, none, 0.5, context=cpu), gpk.InvalidArgumentError,
                          f"rank {last}: gpk.heat: tinit has shape (0, {cols})")
    # A bad argument on one rank only: every rank raises the same error, naming the rank.
    raised_everywhere(lambda: gpk.mpi.heat(comm, t, 0.5, threshold="x" if rank == last else 0.1, context=cpu),
                      gpk.InvalidArgumentError, "threshold is 'x'", *([f"rank {last}: "] if size > 1 else []))


def test_heat_failing_rank(cpu):
    rows, cols = 20, 8
    tinit = same_data(7).uniform(0, 10, (rows, cols))
    b, n = gpk.mpi.default_block(comm, rows)
    last = size - 1
    bad = tinit.copy()
    bad[rows - 1, 2] = np.nan
    raised_everywhere(lambda: gpk.mpi.heat(comm, bad[b:b + n], 0.5, maxiter=10, context=cpu),
                      gpk.InvalidArgumentError, f"row {rows - 1}", *([f"rank {last}: "] if size > 1 else []))


def test_heat_allocation_failing_rank(cpu):
    # The last rank's first host allocation fails (the test hook GPK_TEST_FAULT, read again by the library).
    if not _lib.lib.gpk_internal_test_hooks():
        pytest.skip("this libgpk has no test hooks (-Dtest_hooks=true)")
    rows, cols = 20, 8
    tinit = same_data(7).uniform(0, 10, (rows, cols))
    b, n = gpk.mpi.default_block(comm, rows)
    last = size - 1
    out = np.full((n, cols), -1.0)
    try:
        if rank == last:
            os.environ["GPK_TEST_FAULT"] = "host:1"
            _lib.lib.gpk_internal_reload_test_hooks()
        raised_everywhere(lambda: gpk.mpi.heat(comm, tinit[b:b + n], 0.5, maxiter=10, out=out, context=cpu),
                          gpk.OutOfMemoryError, "bytes", *([f"rank {last}: "] if size > 1 else []))
    finally:
        os.environ.pop("GPK_TEST_FAULT", None)
        _lib.lib.gpk_internal_reload_test_hooks()
    assert (out == -1.0).all()  # untouched
    whole = gpk.heat(tinit, 0.5, maxiter=10, context=cpu)
    assert np.array_equal(gpk.mpi.heat(comm, tinit[b:b + n], 0.5, maxiter=10, context=cpu).grid, whole.grid[b:b + n])


def test_not_a_communicator(cpu):
    for bad in (None, 0, "MPI.COMM_WORLD"):
        with pytest.raises(gpk.InvalidArgumentError, match="comm is a .*; expected an mpi4py communicator"):
            gpk.mpi.heat(bad, np.zeros((4, 4)), 0.5, context=cpu)
        with pytest.raises(gpk.InvalidArgumentError, match="gpk.mpi.default_block: comm is a"):
            gpk.mpi.default_block(bad, 10)
    with pytest.raises(gpk.InvalidArgumentError, match="MPI.COMM_NULL"):
        gpk.mpi.histogram(MPI.COMM_NULL, np.zeros(4, np.uint8), context=cpu)


# ---------------------------------------------------------------------------------------------------
# Histogram
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,bins,range_,saturate,channels", [
    (np.uint8, 256, (0, 256), 0, None),
    (np.uint16, 1000, (0, 1000), 3, None),
    (np.float32, 17, (-1.0, 1.0), 0, None),
    (np.int32, 64, (-50, 50), 0, 3),
    (np.float64, 10, (0.0, 1.0), 0, 4),
])
def test_histogram_bit_identical(cpu, dtype, bins, range_, saturate, channels):
    rng = same_data(bins)
    # Every rank holds a block of its own size and shape.
    sizes = [(3 + 5 * r, 7 + r) for r in range(size)]
    whole = []
    for h, w in sizes:
        shape = (h, w) if channels is None else (h, w, channels)
        if np.dtype(dtype).kind == "f":
            block = rng.uniform(-1.2, 1.2, shape).astype(dtype)
            block.flat[::11] = np.nan
        else:
            info = np.iinfo(dtype)
            block = rng.integers(max(info.min, -60), min(info.max, 1100), shape).astype(dtype)
        whole.append(block)
    axis = None if channels is None else -1
    flat = np.concatenate([b.reshape(-1, channels or 1) for b in whole]) if channels else \
        np.concatenate([b.ravel() for b in whole])
    expect = gpk.histogram(flat, bins, range_, saturate, channel_axis=axis, return_uncounted=True, context=cpu)
    for root in (None, size - 1):
        got = gpk.mpi.histogram(comm, whole[rank], bins, range_, saturate, root=root, channel_axis=axis,
                                return_uncounted=True, context=cpu)
        if root is None or rank == root:
            assert np.array_equal(got[0], expect[0]) and np.array_equal(got[1], expect[1])
            assert got[0].dtype == np.uint64
        else:
            assert got is None


def test_histogram_defaults_and_views(cpu):
    img = same_data(3).integers(0, 256, (40, 30)).astype(np.uint8)
    b, n = gpk.mpi.default_block(comm, 40)
    view = img[b:b + n, ::2]  # not contiguous: copied, as gpk.histogram does
    assert np.array_equal(gpk.mpi.histogram(comm, view, context=cpu),
                          gpk.histogram(img[:, ::2], context=cpu))


def test_histogram_mismatches(cpu):
    last = size - 1
    a = np.zeros((4, 4), np.uint8)
    if size > 1:
        other = a.astype(np.float32) if rank == last else a
        raised_everywhere(lambda: gpk.mpi.histogram(comm, other, context=cpu), gpk.InvalidArgumentError,
                          "gpk.mpi.histogram: a's dtype differs between ranks", f"float32 on rank {last}")
        raised_everywhere(lambda: gpk.mpi.histogram(comm, a, bins=10 + (rank == last), context=cpu),
                          gpk.InvalidArgumentError, "bins differs between ranks")
        empty = a[:0] if rank == last else a
        raised_everywhere(lambda: gpk.mpi.histogram(comm, empty, context=cpu), gpk.InvalidArgumentError,
                          f"rank {last}: gpk.histogram: a has no samples")
    raised_everywhere(lambda: gpk.mpi.histogram(comm, a, root=size, context=cpu), gpk.InvalidArgumentError,
                      f"root is {size}")
    raised_everywhere(lambda: gpk.mpi.histogram(comm, a.astype(np.int8), context=cpu), gpk.InvalidArgumentError,
                      "has dtype int8")


# ---------------------------------------------------------------------------------------------------
# Convolution
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("filt,border,normalize,dtype,height", [
    ("lp3", "clamp", None, np.uint8, 29),
    ("lp3", "zero", "minmax", np.uint8, 29),
    ("box:9", "wrap", "sum", np.uint16, 2 * 4),  # blocks thinner than the filter's reach
    ("gauss:1.5", "mirror", None, np.float32, 31),
    ("smooth5", "reflect", "sum", np.float64, 17),
])
def test_convolve_bit_identical(cpu, filt, border, normalize, dtype, height):
    if height < size:
        pytest.skip("fewer rows than ranks")
    rng = same_data(height)
    shape = (height, 23, 3) if dtype == np.float32 else (height, 23)
    img = (rng.uniform(0, 200, shape)).astype(dtype)
    whole = gpk.convolve(img, filt, border=border, normalize=normalize, context=cpu)
    for skew in (False, True):
        b, n = skewed_blocks(height) if skew else gpk.mpi.default_block(comm, height)
        part = gpk.mpi.convolve(comm, img[b:b + n], filt, border=border, normalize=normalize,
                                row_begin=b if skew else None, height=height, context=cpu)
        assert part.dtype == whole.dtype and np.array_equal(part, whole[b:b + n])


def test_convolve_out_and_out_dtype(cpu):
    img = same_data(9).integers(0, 256, (19, 13)).astype(np.uint8)
    whole = gpk.convolve(img, "lp5", out_dtype=np.float32, context=cpu)
    b, n = gpk.mpi.default_block(comm, 19)
    out = np.empty((n, 13), np.float32)
    part = gpk.mpi.convolve(comm, img[b:b + n], "lp5", out=out, context=cpu)
    assert part is out and np.array_equal(out, whole[b:b + n])


def test_convolve_mismatches(cpu):
    last = size - 1
    b, n = gpk.mpi.default_block(comm, 12)
    img = np.zeros((n, 8), np.uint8)
    raised_everywhere(lambda: gpk.mpi.convolve(comm, img, "lp3", height=13, context=cpu), gpk.InvalidArgumentError,
                      "do not tile", "height is 13")
    if size > 1:
        other = img.astype(np.uint16) if rank == last else img
        raised_everywhere(lambda: gpk.mpi.convolve(comm, other, "lp3", context=cpu), gpk.InvalidArgumentError,
                          "img's dtype differs between ranks", f"uint16 on rank {last}")
        none = img[:0] if rank == last else img
        raised_everywhere(lambda: gpk.mpi.convolve(comm, none, "lp3", context=cpu), gpk.InvalidArgumentError,
                          f"no rows on rank {last}")
        raised_everywhere(lambda: gpk.mpi.convolve(comm, img, "lp3" if rank != last else "lp5", context=cpu),
                          gpk.InvalidArgumentError, "filter differs between ranks")
        raised_everywhere(lambda: gpk.mpi.convolve(comm, img, "lp3", border="zero" if rank == last else "clamp",
                                                   context=cpu), gpk.InvalidArgumentError,
                          "border differs between ranks: clamp on rank")
    raised_everywhere(lambda: gpk.mpi.convolve(comm, img, "lp3", border="nope" if rank == last else "clamp",
                                               context=cpu), gpk.InvalidArgumentError, "border is 'nope'")


# ---------------------------------------------------------------------------------------------------
# On the ranks' GPUs (gpk.mpi.context: the rank's own device); skipped where there is none
# ---------------------------------------------------------------------------------------------------

def device_array_modules(device):
    """CuPy and PyTorch where installed, arrays on CUDA device `device` (the rank's): (name, to_device,
    to_numpy)."""
    found = []
    try:
        import cupy

        def to_cupy(a):
            with cupy.cuda.Device(device):
                return cupy.asarray(a)

        found.append(("cupy", to_cupy, cupy.asnumpy))
    except ImportError:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            found.append(("torch", lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda(device),
                          lambda t: t.cpu().numpy()))
    except ImportError:
        pass
    return found


on_gpus = pytest.mark.skipif(not gpk.devices(), reason="no CUDA device")


@pytest.fixture(scope="module")
def rank_gpu():
    with gpk.mpi.context(comm) as ctx:
        yield ctx


@on_gpus
def test_gpu_context_is_the_ranks_device(rank_gpu):
    assert rank_gpu.backend == "cuda"


@on_gpus
@pytest.mark.parametrize("rows, cols, maxiter, threshold, period", [(96, 130, 200, 1e-4, 50), (400, 257, 37, 0, 0)])
def test_gpu_heat_equals_one_gpu(rank_gpu, rows, cols, maxiter, threshold, period):
    rng = same_data(rows + cols)
    tinit = rng.uniform(-50, 50, (rows, cols))
    cond = rng.uniform(0, 1, (rows, cols))
    whole = gpk.heat(tinit, cond, maxiter=maxiter, threshold=threshold, period=period, context=rank_gpu)
    b, n = gpk.mpi.default_block(comm, rows)
    part = gpk.mpi.heat(comm, tinit[b:b + n], cond[b:b + n], maxiter=maxiter, threshold=threshold, period=period,
                        rows=rows, context=rank_gpu)
    assert np.array_equal(part.grid, whole.grid[b:b + n])
    assert fields(part.reports) == fields(whole.reports)
    for name, to_device, to_numpy in device_array_modules(rank_gpu.device):
        dev = gpk.mpi.heat(comm, to_device(tinit[b:b + n]), to_device(cond[b:b + n]), maxiter=maxiter,
                           threshold=threshold, period=period, rows=rows, context=rank_gpu)
        assert np.array_equal(to_numpy(dev.grid), whole.grid[b:b + n]), name
        assert fields(dev.reports) == fields(whole.reports), name


@on_gpus
@pytest.mark.parametrize("filt, normalize", [("lp3", None), ("lp3", "minmax"), ("box:9", "sum"), ("smooth5", "sum")])
def test_gpu_convolve_equals_one_process(cpu, rank_gpu, filt, normalize):
    height = 301
    img = same_data(height).integers(0, 256, (height, 517)).astype(np.uint8)
    whole = gpk.convolve(img, filt, normalize=normalize, context=cpu)  # integer taps: exact on every backend
    b, n = gpk.mpi.default_block(comm, height)
    host = gpk.mpi.convolve(comm, img[b:b + n], filt, normalize=normalize, height=height, context=rank_gpu)
    assert np.array_equal(host, whole[b:b + n])
    for name, to_device, to_numpy in device_array_modules(rank_gpu.device):
        dev = gpk.mpi.convolve(comm, to_device(img[b:b + n]), filt, normalize=normalize, height=height,
                               context=rank_gpu)
        assert np.array_equal(to_numpy(dev), whole[b:b + n]), name


@on_gpus
def test_gpu_histogram_equals_one_process(cpu, rank_gpu):
    data = same_data(17).integers(0, 65536, (size, 64, 1000)).astype(np.uint32)
    whole = gpk.histogram(data.reshape(-1, 1000), bins=65536, range=(0, 65536), context=cpu)
    mine = data[rank]
    assert np.array_equal(gpk.mpi.histogram(comm, mine, bins=65536, range=(0, 65536), context=rank_gpu), whole)
    for name, to_device, _ in device_array_modules(rank_gpu.device):
        got = gpk.mpi.histogram(comm, to_device(mine), bins=65536, range=(0, 65536), context=rank_gpu)
        assert np.array_equal(got, whole), name
