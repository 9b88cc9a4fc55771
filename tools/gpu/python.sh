#!/usr/bin/env bash
# The Python package with its CUDA backend on the GPU machine, as pip users get it (tools/pip_check.sh with
# the torch venv's python3, which has NumPy, CuPy and PyTorch): the wheel's build (sm_90) by
# `pip install --no-build-isolation` into a fresh venv, the Python suite against the installed package,
# `python3 -m build --wheel` (else `pip wheel`) in the same build folder, the wheel into a second venv with
# --no-index --no-deps and its checks; then the GPU suite (bindings/python/tests/test_gpu.py, CuPy and
# PyTorch arrays in place) once more from the installed wheel. Logs under $OUT (default python-logs).
#
# meson-python is needed for the build: where the machine has none (`import mesonpy` fails), the script
# takes the pure-Python copy in .whl/pydeps, made on the development machine and carried:
#   mkdir -p .whl/pydeps && cp -r /usr/lib/python3/dist-packages/{mesonpy,pyproject_metadata} .whl/pydeps/
# (run with carry: [".whl"]). tools/pip_check.sh runs gpk.mpi's suite on 2 ranks where the Python has mpi4py
# (the torch venv does).
set -u -o pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-python-logs}
mkdir -p "$OUT"
export PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH
PYTHON=$(command -v python3)
backend=""
if ! "$PYTHON" -c "import mesonpy" 2>/dev/null && [ -d .whl/pydeps/mesonpy ]; then
    backend="$PWD/.whl/pydeps"
fi
{
    echo "python: $PYTHON ($("$PYTHON" --version 2>&1))"
    PYTHONPATH=$backend "$PYTHON" -c "import mesonpy; print('meson-python', mesonpy.__version__, mesonpy.__file__)" 2>&1
    "$PYTHON" -c "import build; print('build', build.__version__)" 2>&1 | tail -n 1
    echo "meson $(meson --version), nvcc: $(nvcc --version | tail -n 1)"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
} >"$OUT/environment.txt" 2>&1
cat "$OUT/environment.txt"
site=$("$PYTHON" -c 'import site; print(site.getsitepackages()[0])')
status=0
BACKEND_PATH=$backend PYTHON="$PYTHON" EXTRA_SITE="$site" SETUP_ARG=-Dgpu_archs=90 WORK="$PWD/build-pip" \
    timeout 540 bash tools/pip_check.sh >"$OUT/pip_check.log" 2>&1 || status=$?
tail -n 30 "$OUT/pip_check.log"
if [ "$status" = 0 ]; then
    (cd build-pip && GPK_TEST_PACKAGE_UNDER="$PWD/venv-wheel" venv-wheel/bin/python -m pytest -v -p no:cacheprovider \
        -rs ../bindings/python/tests/test_gpu.py) >"$OUT/test_gpu_from_wheel.log" 2>&1 || status=$?
    tail -n 5 "$OUT/test_gpu_from_wheel.log"
    cp build-pip/dist/*.whl "$OUT/" 2>/dev/null
fi
echo "python.sh: exit $status"
exit "$status"
