"""Shared fixtures: a CPU-backend context, a seeded random generator, and a recorder of the pointers gpk
passes to the library (the package's debugging hook)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # reference.py

import gpk  # noqa: E402
from gpk import _lib  # noqa: E402

# Run against an installed package (tools/pip_check.sh), the suite must not find the source tree's.
_expected = os.environ.get("GPK_TEST_PACKAGE_UNDER")
if _expected and not os.path.realpath(gpk.__file__).startswith(os.path.realpath(_expected) + os.sep):
    raise RuntimeError(f"the suite imported gpk from {gpk.__file__}, not from under {_expected}")


@pytest.fixture(scope="session")
def cpu():
    ctx = gpk.Context(backend="cpu")
    yield ctx
    ctx.close()


@pytest.fixture
def rng(request):
    import zlib

    import numpy as np
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


@pytest.fixture
def calls():
    """The operations gpk calls during the test, as (name, {argument: pointer or stream})."""
    seen = []
    _lib.trace = lambda name, fields: seen.append((name, fields))
    yield seen
    _lib.trace = None


_outcomes = set()


def pytest_runtest_logreport(report):
    if report.when == "call" or report.skipped:
        _outcomes.add(report.outcome)


def pytest_sessionfinish(session, exitstatus):
    """A module whose every test skipped (no GPU, no CuPy) exits 77, which meson reports as SKIP."""
    if exitstatus == 0 and _outcomes == {"skipped"}:
        session.exitstatus = 77
