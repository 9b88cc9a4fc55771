#!/usr/bin/env bash
# The Python package as its users install it, from any folder (a step of .ci/run; tools/gpu/check.sh, stage
# python, runs it on the GPU machine):
#   pip    a fresh virtual environment (--system-site-packages: NumPy, pytest, SciPy, mpi4py of the system),
#          `pip install --no-build-isolation` of the checkout, then the Python suite run from outside the
#          checkout against the installed package (conftest.py checks where gpk came from), and gpk.mpi's
#          tests on 2 ranks where mpi4py is there
#   wheel  `python3 -m build --wheel --no-isolation` (else `pip wheel --no-build-isolation`) in the same build
#          folder (nothing is compiled again), installed into a second fresh environment with --no-index
#          --no-deps; then: the wheel holds no path of the checkout or the build and no test hook's name,
#          libgpk_mpi loads alone (it finds libgpk beside itself), gpk loads its own copy and GPK_LIBRARY
#          still overrides it, gpk.__version__ is meson.build's version, and one operation runs
# Environment: PYTHON (default /usr/bin/python3), WORK (default build-pip in the checkout: environments,
# build folder, wheel), SETUP_ARG (one Meson setup argument for the build, e.g. -Dcuda=disabled),
# EXTRA_SITE (a site-packages folder both environments also search, e.g. a venv's with CuPy and PyTorch),
# PYTEST_ARGS (default: the whole suite; e.g. bindings/python/tests/test_gpu.py, relative to the checkout),
# BACKEND_PATH (a folder with meson-python, on PYTHONPATH for the build commands alone).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
WORK=${WORK:-$ROOT/build-pip}
SETUP_ARG=${SETUP_ARG:-}
BACKEND_PATH=${BACKEND_PATH:-}
EXTRA_SITE=${EXTRA_SITE:-}
read -r -a TESTS <<<"${PYTEST_ARGS:-bindings/python/tests}"
TESTS=("${TESTS[@]/#bindings/$ROOT/bindings}")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export PYTHONDONTWRITEBYTECODE=1
unset GPK_LIBRARY GPK_MPI_LIBRARY PYTHONPATH
# A fresh build folder, and no native file of an earlier run: meson-python 0.12 reconfigures (and fails on a
# folder that does not exist yet) when the file it would write is already there.
rm -rf "$WORK/meson" "$WORK/venv-pip" "$WORK/venv-wheel" "$WORK/dist" "$WORK/other" \
    "$ROOT/.mesonpy-native-file.ini"
mkdir -p "$WORK"
version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" "$ROOT/meson.build" | head -n 1)
settings=(--config-settings=builddir="$WORK/meson")
[ -n "$SETUP_ARG" ] && settings+=(--config-settings=setup-args="$SETUP_ARG")

venv() { # venv DIR: a fresh environment that also searches EXTRA_SITE (without pip where ensurepip is absent)
    "$PYTHON" -m venv --system-site-packages "$1" || "$PYTHON" -m venv --system-site-packages --without-pip "$1"
    if [ -n "$EXTRA_SITE" ]; then
        "$1/bin/python" -c 'import site; print(site.getsitepackages()[0])' | {
            read -r site && echo "$EXTRA_SITE" >"$site/extra-site.pth"
        }
    fi
}

pip_in() { # pip_in DIR ARGS...: DIR's pip, else PYTHON's pip acting on DIR's interpreter (pip >= 22.3)
    local dir=$1
    shift
    if [ -x "$dir/bin/pip" ]; then "$dir/bin/pip" "$@"; else "$PYTHON" -m pip --python "$dir/bin/python" "$@"; fi
}

echo "== pip install --no-build-isolation $ROOT (gpk $version)"
venv "$WORK/venv-pip"
PYTHONPATH=$BACKEND_PATH pip_in "$WORK/venv-pip" install --no-build-isolation --no-cache-dir --no-deps \
    "${settings[@]}" "$ROOT"
cd "$WORK" # not the checkout: `import gpk` must find the installed package
GPK_TEST_PACKAGE_UNDER="$WORK/venv-pip" "$WORK/venv-pip/bin/python" -m pytest -q -p no:cacheprovider -rs \
    "${TESTS[@]}"
if "$WORK/venv-pip/bin/python" -c "import mpi4py" 2>/dev/null && command -v mpirun >/dev/null; then
    echo "== gpk.mpi of the installed package on 2 ranks"
    GPK_TEST_PACKAGE_UNDER="$WORK/venv-pip" mpirun --oversubscribe -np 2 "$WORK/venv-pip/bin/python" -m pytest -q \
        -p no:cacheprovider --color=no "$ROOT/bindings/python/tests/test_mpi.py"
fi

echo "== wheel"
if PYTHONPATH=$BACKEND_PATH "$PYTHON" -c "import build" 2>/dev/null; then
    PYTHONPATH=$BACKEND_PATH "$PYTHON" -m build --wheel --no-isolation --skip-dependency-check --outdir "$WORK/dist" \
        "${settings[@]/#--config-settings=/-C}" "$ROOT"
else
    PYTHONPATH=$BACKEND_PATH pip_in "$WORK/venv-pip" wheel --no-build-isolation --no-cache-dir --no-deps \
        -w "$WORK/dist" "${settings[@]}" "$ROOT"
fi
wheel=$(ls "$WORK"/dist/gpk-"$version"-*.whl)
venv "$WORK/venv-wheel"
pip_in "$WORK/venv-wheel" install --no-index --no-deps "$wheel"
"$WORK/venv-wheel/bin/python" - "$wheel" "$ROOT" "$WORK/meson" "$version" <<'EOF'
import ctypes, importlib.metadata, importlib.util, os, shutil, subprocess, sys, zipfile
wheel, root, build, version = sys.argv[1:5]
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    assert "gpk/libgpk.so" in names and "gpk/__init__.py" in names, names
    assert all(n.startswith(("gpk/", "gpk-")) for n in names), names  # nothing outside the package
    for name in names:
        data = z.read(name)
        for path in (root, build):
            assert path.encode() not in data, f"{name} holds {path}"
        if name.endswith(".so"):  # the libraries: the wheel's build has no test hooks (METADATA quotes the README)
            assert b"GPK_TEST_" not in data, f"{name} has test hooks"
package = os.path.dirname(importlib.util.find_spec("gpk").origin)
assert package.startswith(sys.prefix), package
if os.path.exists(os.path.join(package, "libgpk_mpi.so")):
    ctypes.CDLL(os.path.join(package, "libgpk_mpi.so"))  # before gpk: libgpk comes through its RUNPATH
import numpy as np
import gpk
assert gpk.library_path == os.path.join(package, "libgpk.so"), gpk.library_path
assert gpk.__version__ == version == importlib.metadata.version("gpk"), (gpk.__version__, version)
assert list(gpk.histogram(np.array([1, 1, 2], np.uint8))[:3]) == [0, 2, 1]
other = os.path.join(os.path.dirname(build), "other")
os.makedirs(other, exist_ok=True)
copy = shutil.copy(gpk.library_path, os.path.join(other, "libgpk.so"))
shown = subprocess.run([sys.executable, "-c", "import gpk; print(gpk.library_path)"], check=True, text=True,
                       capture_output=True, env=dict(os.environ, GPK_LIBRARY=copy)).stdout.strip()
assert shown == copy, shown
print(f"wheel {os.path.basename(wheel)}: gpk {gpk.__version__} from {package}, on the "
      f"{gpk.current_context().backend}; GPK_LIBRARY overrides it")
EOF
