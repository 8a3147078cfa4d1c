"""Cython and the C compiler, run to build an extension: what the compiled
P4 executor (:mod:`emulator.p4.exec.compiled`) and the simulator's compiled
modules (:mod:`emulator.speedups.build`) share. A tool that is missing or
fails raises :class:`Unavailable` with one line saying why (the first
``FILE:LINE:COL: message`` of the tool's output where there is one)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Iterable

BUILD_TIMEOUT_S = 600
KEEP_DAYS = 30  # a build not loaded for this long is removed at the next build
# -O1 builds in about half the time of -O2 and runs as fast on this code
# (calls into CPython); part of every cache key.
CFLAGS = ("-O1", "-fPIC", "-shared", "-fno-strict-aliasing", "-w")

_LOCATED = re.compile(r":\d+:\d+: ")


class Unavailable(Exception):
    """A compiled module cannot be had here (the message says why)."""


def cython_version() -> str:
    try:
        import Cython
    except ImportError as exc:
        raise Unavailable("Cython is not installed (pip install cython)") from exc
    return str(Cython.__version__)


def ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def missing() -> str | None:
    """Why extensions cannot be built here (Cython, gcc or Python's headers
    missing), or None."""
    try:
        cython_version()
        python_include()
    except Unavailable as exc:
        return str(exc)
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")[0]
    return None if shutil.which(cc) else f"the C compiler is not installed ({cc})"


def remove_unused(paths: Iterable[Path], keep_days: float = KEEP_DAYS) -> None:
    """Remove the builds among ``paths`` (files or folders; loading one
    touches it) not used for ``keep_days``: those of sources long gone."""
    old = time.time() - keep_days * 86400
    for path in paths:
        try:
            if path.stat().st_mtime < old:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        except OSError:
            pass


def python_include() -> str:
    """Where ``Python.h`` is (Unavailable where it is not)."""
    include = sysconfig.get_paths().get("include", "")
    if not Path(include, "Python.h").exists():
        raise Unavailable(f"Python's headers are missing ({include}/Python.h: "
                          "apt install python3-dev)")
    return include


def cythonize(source: Path, c_file: Path, directives: tuple[str, ...], label: str,
              include: tuple[Path, ...] = (), module_name: str = "") -> None:
    """``source`` (.pyx or .py, with its .pxd beside it) to C."""
    cmd = [sys.executable, "-m", "cython", "-3", "--fast-fail", "-o", str(c_file)]
    for d in directives:
        cmd += ["-X", d]
    for folder in include:
        cmd += ["-I", str(folder)]
    if module_name:
        cmd += ["--module-name", module_name]
    run(cmd + [str(source)], "Cython", label)


def compile_c(c_file: Path, target: Path, label: str) -> None:
    """``c_file`` to the extension ``target``."""
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    run(cc + list(CFLAGS) + [f"-I{python_include()}", str(c_file), "-o", str(target)],
        "the C compiler", label)


def run(cmd: list[str], what: str, label: str) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except FileNotFoundError as exc:
        raise Unavailable(f"{what} is not installed ({exc.filename})") from exc
    except subprocess.TimeoutExpired as exc:
        raise Unavailable(f"{what} took over {BUILD_TIMEOUT_S} s on {label}") from exc
    if done.returncode != 0:
        lines = [ln.strip() for ln in (done.stderr + done.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if _LOCATED.search(ln)] or lines
        tail = errors[0] if errors else f"exit status {done.returncode}"
        raise Unavailable(f"{what} failed on {label or 'the program'}: {tail}")
