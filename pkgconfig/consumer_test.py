#!/usr/bin/env python3
"""Builds and runs programs against an installed gpk, the way a consumer would.

Each run installs the meson build into a fresh staging directory (meson install --destdir), then:
  c, cxx   compiles pkgconfig/consumer/consumer.{c,cpp} with only `pkg-config --cflags --libs gpk`;
  cmake    configures pkgconfig/consumer/cmake (find_package(gpk) + gpk::gpk), and checks the version file;
  fortran  compiles the installed module source (pkg-config variable fortran_module) with the example;
  mpi      compiles pkgconfig/consumer/consumer_mpi.c with mpicc and `pkg-config --cflags --libs gpk-mpi`,
           and runs it on two ranks with mpirun;
and runs the result against the staged library. GPK_TEST_CC and GPK_TEST_CXX give the compilers. `readme` checks that every code block of
bindings/README.md marked <!-- file: PATH --> is that file, so the README shows what the tests compile.
Exit status: 0 pass, 1 fail, 77 skip (pkg-config, cmake or the Fortran compiler is missing).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

SKIP = 77


class Failure(Exception):
    pass


def run(cmd, env=None, quiet=False):
    """Runs cmd, returns its output; raises Failure, showing the output, when it fails."""
    print("$ " + " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
    proc = subprocess.run([str(c) for c in cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if proc.stdout and (not quiet or proc.returncode != 0):
        print(proc.stdout.rstrip())
    if proc.stderr:
        print(proc.stderr.rstrip())
    if proc.returncode != 0:
        raise Failure(f"exit status {proc.returncode}: {cmd[0]}")
    return proc.stdout


def staged(destdir, path):
    """Where an installed absolute path lies inside the staging directory."""
    return os.path.join(destdir, os.path.relpath(path, os.sep))


class Install:
    """A staged install of the build: its prefix directories, inside destdir."""

    def __init__(self, args, workdir):
        self.destdir = os.path.join(workdir, "destdir")
        run([args.meson, "install", "-C", args.build_root, "--no-rebuild", "--destdir", self.destdir], quiet=True)
        options = json.loads(run([args.meson, "introspect", args.build_root, "--buildoptions"], quiet=True))
        values = {o["name"]: o["value"] for o in options}
        self.prefix = values["prefix"]

        def under_prefix(name):
            return staged(self.destdir, os.path.join(self.prefix, values[name]))

        self.libdir = under_prefix("libdir")
        self.includedir = under_prefix("includedir")
        self.staged_prefix = staged(self.destdir, self.prefix)
        if not os.path.isfile(os.path.join(self.includedir, "gpk.h")):
            raise Failure("gpk.h is not installed in " + self.includedir)

    def pkg_config_env(self):
        """pkg-config sees only the staged gpk.pc and maps its paths into the staging directory."""
        env = dict(os.environ)
        env.pop("PKG_CONFIG_PATH", None)
        env["PKG_CONFIG_LIBDIR"] = os.path.join(self.libdir, "pkgconfig")
        env["PKG_CONFIG_SYSROOT_DIR"] = self.destdir
        env["PKG_CONFIG_ALLOW_SYSTEM_CFLAGS"] = "1"
        env["PKG_CONFIG_ALLOW_SYSTEM_LIBS"] = "1"
        return env

    def run_env(self):
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [self.libdir, env.get("LD_LIBRARY_PATH")]))
        return env


def pkg_config(install, *query):
    tool = os.environ.get("PKG_CONFIG", "pkg-config")
    return shlex.split(run([tool, *query, "gpk"], env=install.pkg_config_env()))


def check_flags_point_into(install, flags):
    """The flags must name the staged files, not the build tree or a system copy."""
    include_flags = [f for f in flags if f.startswith("-I")]
    libdir_flags = [f for f in flags if f.startswith("-L")]
    if not any(f[2:].startswith(install.destdir) for f in include_flags):
        raise Failure(f"pkg-config gave no -I inside {install.destdir}: {flags}")
    if not any(f[2:].startswith(install.destdir) for f in libdir_flags):
        raise Failure(f"pkg-config gave no -L inside {install.destdir}: {flags}")
    if "-lgpk" not in flags:
        raise Failure(f"pkg-config gave no -lgpk: {flags}")


def compile_and_run(args, install, workdir, compiler, source, warnings):
    flags = pkg_config(install, "--cflags", "--libs")
    check_flags_point_into(install, flags)
    exe = os.path.join(workdir, "consumer")
    run([*compiler, *warnings, source, "-o", exe, *flags])
    run([exe], env=install.run_env())


def test_c(args, install, workdir):
    source = os.path.join(args.source_root, "pkgconfig", "consumer", "consumer.c")
    compile_and_run(args, install, workdir, shlex.split(os.environ.get("GPK_TEST_CC", "cc")), source,
                    ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror"])


def test_cxx(args, install, workdir):
    source = os.path.join(args.source_root, "pkgconfig", "consumer", "consumer.cpp")
    compile_and_run(args, install, workdir, shlex.split(os.environ.get("GPK_TEST_CXX", "c++")), source,
                    ["-std=c++17", "-Wall", "-Wextra", "-pedantic", "-Werror"])


VERSION_CHECK_PROJECT = """cmake_minimum_required(VERSION 3.16)
project(gpk_version_check C)
find_package(gpk 999 QUIET)
if(gpk_FOUND)
  message(FATAL_ERROR "find_package(gpk 999) accepted gpk ${{gpk_VERSION}}")
endif()
find_package(gpk {version} EXACT REQUIRED)
get_target_property(location gpk::gpk IMPORTED_LOCATION)
if(NOT location MATCHES "^{staged}/")
  message(FATAL_ERROR "gpk::gpk points at ${{location}}, outside the staged prefix")
endif()
message(STATUS "gpk ${{gpk_VERSION}}: ${{location}}")
"""


def cmake_configure_build(project, build, install):
    run(["cmake", "-S", project, "-B", build, "-DCMAKE_PREFIX_PATH=" + install.staged_prefix])
    run(["cmake", "--build", build])


def test_cmake(args, install, workdir):
    project = os.path.join(workdir, "app")
    os.makedirs(project)
    consumer = os.path.join(args.source_root, "pkgconfig", "consumer")
    shutil.copy(os.path.join(consumer, "cmake", "CMakeLists.txt"), project)
    shutil.copy(os.path.join(consumer, "consumer.c"), project)
    cmake_configure_build(project, os.path.join(project, "build"), install)
    run([os.path.join(project, "build", "app")], env=install.run_env())

    checks = os.path.join(workdir, "version-check")
    os.makedirs(checks)
    with open(os.path.join(checks, "CMakeLists.txt"), "w") as f:
        f.write(VERSION_CHECK_PROJECT.format(version=args.version, staged=re.escape(install.destdir)))
    run(["cmake", "-S", checks, "-B", os.path.join(checks, "build"),
         "-DCMAKE_PREFIX_PATH=" + install.staged_prefix])


def test_fortran(args, install, workdir):
    (module,) = pkg_config(install, "--variable=fortran_module")
    if not os.path.isfile(module):
        # pkgconf maps variables into the sysroot; the freedesktop pkg-config does not.
        module = staged(install.destdir, module)
    if not os.path.isfile(module):
        raise Failure("the Fortran module source is not installed: " + module)
    libs = pkg_config(install, "--libs")
    example = os.path.join(args.source_root, "bindings", "fortran", "example.f90")
    exe = os.path.join(workdir, "example")
    run([args.fc, "-std=f2018", "-Wall", "-Werror", "-J", workdir, module, example, "-o", exe, *libs])
    run([exe], env=install.run_env())


def test_readme(args):
    readme = os.path.join(args.source_root, "bindings", "README.md")
    if not os.path.isfile(readme):
        raise Failure(readme + " is missing")
    with open(readme) as f:
        text = f.read()
    blocks = re.findall(r"<!-- file: (\S+) -->\n```[a-z+]*\n(.*?)```\n", text, re.S)
    if not blocks:
        raise Failure("no <!-- file: PATH --> code blocks in " + readme)
    for path, body in blocks:
        if not os.path.isfile(os.path.join(args.source_root, path)):
            raise Failure(f"the README shows {path}, which does not exist")
        with open(os.path.join(args.source_root, path)) as f:
            if f.read() != body:
                raise Failure(f"the README's copy of {path} differs from the file")
        print("README block matches " + path)
    return 0


def test_mpi(args, install, workdir):
    """consumer_mpi.c built with mpicc and the gpk-mpi flags, run on two ranks."""
    tool = os.environ.get("PKG_CONFIG", "pkg-config")
    flags = shlex.split(run([tool, "--cflags", "--libs", "gpk-mpi"], env=install.pkg_config_env()))
    check_flags_point_into(install, flags)
    if "-lgpk_mpi" not in flags:
        raise Failure(f"pkg-config gave no -lgpk_mpi: {flags}")
    source = os.path.join(args.source_root, "pkgconfig", "consumer", "consumer_mpi.c")
    exe = os.path.join(workdir, "consumer_mpi")
    run([args.mpicc, "-std=c99", "-Wall", "-Wextra", "-Werror", source, "-o", exe, *flags])
    env = install.run_env()
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    run([args.mpirun, "--oversubscribe", "-np", "2", exe], env=env)


TESTS = {"c": test_c, "cxx": test_cxx, "cmake": test_cmake, "fortran": test_fortran, "mpi": test_mpi}


def missing_tool(args):
    """The first tool the mode needs that is not on this machine, or None."""
    pkg_config_tool = os.environ.get("PKG_CONFIG", "pkg-config")
    needs = {"c": [pkg_config_tool], "cxx": [pkg_config_tool], "cmake": ["cmake"],
             "fortran": [pkg_config_tool, args.fc or "gfortran"],
             "mpi": [pkg_config_tool, args.mpicc or "mpicc", args.mpirun or "mpirun"]}[args.mode]
    return next((tool for tool in needs if not shutil.which(tool)), None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=[*TESTS, "readme"])
    parser.add_argument("--meson", default="meson")
    parser.add_argument("--build-root")
    parser.add_argument("--source-root", required=True)
    parser.add_argument("--version", default="")
    parser.add_argument("--fc", default="", help="the Fortran compiler, empty when there is none")
    parser.add_argument("--mpicc", default="mpicc", help="the MPI C compiler wrapper (mode mpi)")
    parser.add_argument("--mpirun", default="mpirun", help="the MPI launcher (mode mpi)")
    args = parser.parse_args()
    try:
        if args.mode == "readme":
            return test_readme(args)
        tool = missing_tool(args)
        if tool:
            print(f"SKIP: {tool} not found")
            return SKIP
        workdir = os.path.join(args.build_root, "pkgconfig", "consumer-" + args.mode)
        shutil.rmtree(workdir, ignore_errors=True)
        os.makedirs(workdir)
        TESTS[args.mode](args, Install(args, workdir), workdir)
        return 0
    except Failure as e:
        print("FAIL: " + str(e))
        return 1


if __name__ == "__main__":
    sys.exit(main())
