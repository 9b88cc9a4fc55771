"""`meson install` puts the package where the interpreter finds it, and the installed package finds the
installed library by itself (no GPK_LIBRARY). The build is installed into a staging directory (--destdir)."""
import os
import shutil
import subprocess
import sys

import pytest

SCRIPT = """
import sys, numpy as np, gpk
assert gpk.__file__.startswith(sys.argv[1]), gpk.__file__
assert gpk.library_path.startswith(sys.argv[1]), gpk.library_path
assert gpk.histogram(np.array([1, 1, 2], np.uint8))[1] == 2
print(gpk.__version__, gpk.library_path)
"""


def test_staged_install():
    meson, build = os.environ.get("GPK_TEST_MESON"), os.environ.get("GPK_TEST_BUILD_ROOT")
    py_dir = os.environ.get("GPK_TEST_PYTHON_DIR")
    if not (meson and build and py_dir):
        pytest.skip("needs GPK_TEST_MESON, GPK_TEST_BUILD_ROOT, GPK_TEST_PYTHON_DIR (set by meson test)")
    stage = os.path.join(build, "bindings", "python", "install-test")
    shutil.rmtree(stage, ignore_errors=True)
    proc = subprocess.run([meson, "install", "-C", build, "--no-rebuild", "--destdir", stage], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    staged_dir = os.path.join(stage, os.path.relpath(py_dir, os.sep))
    assert os.path.isfile(os.path.join(staged_dir, "gpk", "__init__.py"))
    assert os.path.isfile(os.path.join(staged_dir, "gpk", "_install.py"))
    env = {k: v for k, v in os.environ.items() if k not in ("GPK_LIBRARY", "PYTHONPATH", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = staged_dir
    proc = subprocess.run([sys.executable, "-c", SCRIPT, stage], env=env, cwd=stage, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    example = os.path.join(stage, "example.py")  # beside the source package, it would import that one
    shutil.copy(os.path.join(os.path.dirname(__file__), "..", "example.py"), example)
    proc = subprocess.run([sys.executable, example], env=env, cwd=stage, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_default_prefix_is_searched():
    """With the README's build (prefix /usr/local), the package goes where this interpreter looks."""
    py_dir, prefix = os.environ.get("GPK_TEST_PYTHON_DIR"), os.environ.get("GPK_TEST_PREFIX")
    if prefix != "/usr/local":
        pytest.skip(f"the build's prefix is {prefix}, not /usr/local")
    if sys.prefix != sys.base_prefix:
        pytest.skip("a virtual environment (Meson installs into its prefix, not the venv)")
    assert os.path.normpath(py_dir) in [os.path.normpath(p) for p in sys.path if p]
