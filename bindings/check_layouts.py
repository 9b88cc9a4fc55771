"""The bindings' hand-written mirrors of gpk.h's structs against the C layout, field by field.

The C probe (bindings/rust/gpk-sys/tests/layout_probe.c, compiled against this include/gpk.h) prints every
struct's size and every field's offset and size; this script checks first that the probe names every
struct and field the header declares, then compares the mirrors with it: the ctypes Structures of the
Python package (gpk/_lib.py) and the bind(c) types of the Fortran module (their table printed by
bindings/fortran/tests/layout.f90). Rust's gpk-sys is compared with the same probe by its own test
(gpk-sys/tests/layout.rs, `cargo test`). A binding that mirrors a struct mirrors every field of it, with
the C names; each struct it mirrors is listed below.

Usage: check_layouts.py --header gpk.h --probe EXE [--python DIR] [--fortran EXE]
"""
import argparse
import ctypes
import importlib
import re
import subprocess
import sys

# The ctypes Structure of gpk/_lib.py for each C struct.
PYTHON = {"gpk_device_info": "DeviceInfo_C", "gpk_context_options": "ContextOptions_C",
          "gpk_heat_report": "HeatReport_C", "gpk_heat_params": "HeatParams_C",
          "gpk_histogram_params": "HistogramParams_C", "gpk_filter_info": "FilterInfo_C",
          "gpk_image": "Image_C", "gpk_convolve_params": "ConvolveParams_C"}
# The structs the Fortran module mirrors (gpk_device_info it does not: it has no device query).
FORTRAN = ["gpk_context_options", "gpk_heat_report", "gpk_heat_params", "gpk_histogram_params",
           "gpk_filter_info", "gpk_image", "gpk_convolve_params"]


def header_structs(path):
    """{struct: [field, ...]} of every `typedef struct name { ... } name;` in the header."""
    text = re.sub(r"/\*.*?\*/", "", open(path, encoding="utf-8").read(), flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    structs = {}
    for name, body in re.findall(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*\1\s*;", text, flags=re.S):
        fields = []
        for decl in body.split(";"):
            decl = decl.strip()
            if not decl:
                continue
            pointer_to_function = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
            if pointer_to_function:
                fields.append(pointer_to_function.group(1))
                continue
            for part in decl.split(","):  # `int a, b;`
                fields.append(re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", part.strip()).group(1))
        structs[name] = fields
    return structs


def table(lines):
    """{"kind key": number} of "kind key number" lines."""
    out = {}
    for line in lines.splitlines():
        line = line.strip()
        if line:
            kind, key, number = line.split()
            out[f"{kind} {key}"] = int(number)
    return out


def compare(binding, struct, fields, c, mirror, problems):
    """Appends to problems each size, offset or field size of `mirror` that is not C's."""
    for key in [f"size {struct}"] + [f"{kind} {struct}.{f}" for f in fields for kind in ("offset", "fieldsize")]:
        if key not in mirror:
            problems.append(f"{binding}: {key}: not mirrored")
        elif mirror[key] != c[key]:
            problems.append(f"{binding}: {key}: {mirror[key]}, C {c[key]}")
    for key in mirror:
        if key.split()[1].split(".")[0] == struct and key not in c:
            problems.append(f"{binding}: {key}: no such field in C")


def python_table(directory, structs):
    sys.path.insert(0, directory)
    lib = importlib.import_module("gpk._lib")
    out = {}
    for struct, cls_name in PYTHON.items():
        cls = getattr(lib, cls_name)
        out[f"size {struct}"] = ctypes.sizeof(cls)
        for name, *_ in cls._fields_:
            descriptor = getattr(cls, name)
            out[f"offset {struct}.{name}"] = descriptor.offset
            out[f"fieldsize {struct}.{name}"] = descriptor.size
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--header", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--python")
    ap.add_argument("--fortran")
    args = ap.parse_args()
    structs = header_structs(args.header)
    c = table(subprocess.run([args.probe], check=True, capture_output=True, text=True).stdout)
    problems = []
    # The probe covers the header: every struct, every field.
    for struct, fields in structs.items():
        for key in [f"size {struct}"] + [f"offset {struct}.{f}" for f in fields]:
            if key not in c:
                problems.append(f"probe: {key}: in gpk.h, not printed by layout_probe.c")
    for binding, names in (("python", PYTHON), ("fortran", FORTRAN)):
        missing = [s for s in structs if s not in names and not (binding == "fortran" and s == "gpk_device_info")]
        problems += [f"{binding}: {s}: a struct of gpk.h this check does not know" for s in missing]
    checked = []
    if args.python:
        mirror = python_table(args.python, structs)
        for struct in PYTHON:
            compare("python", struct, structs.get(struct, []), c, mirror, problems)
        checked.append(f"python {len(PYTHON)} structs")
    if args.fortran:
        mirror = table(subprocess.run([args.fortran], check=True, capture_output=True, text=True).stdout)
        for struct in FORTRAN:
            compare("fortran", struct, structs.get(struct, []), c, mirror, problems)
        checked.append(f"fortran {len(FORTRAN)} structs")
    fields = sum(len(f) for f in structs.values())
    print(f"gpk.h: {len(structs)} structs, {fields} fields; checked against C: {', '.join(checked) or 'none'}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
