"""The README's Python example is bindings/python/example.py, and it runs."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "example.py")
README = os.path.join(HERE, "..", "..", "..", "README.md")


def test_readme_shows_the_example():
    with open(README) as f:
        blocks = re.findall(r"<!-- file: bindings/python/example.py -->\n```python\n(.*?)```\n", f.read(), re.S)
    with open(EXAMPLE) as f:
        assert blocks == [f.read()], "README.md's copy of bindings/python/example.py differs from the file"


def test_example_runs():
    # Through runpy rather than `python example.py`, which would put the example's folder (the source tree's
    # package) first on sys.path: the package tested is the one the interpreter finds (installed or
    # PYTHONPATH's).
    run = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", run, EXAMPLE], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert re.match(r"gpk \d+\.\d+\.\d+ on the (cpu|cuda): grey level \d+ is the commonest \(\d+ pixels\)", lines[0])
    assert lines[-1].endswith("(final)") or lines[-1].startswith("cupy: ndarray True")
    assert any(line.endswith("(final)") for line in lines)
    assert "cupy: ndarray False" not in proc.stdout
