"""Builds a program's generated module as a C extension with Cython and
loads it: the compiled executor.

The source is what :class:`.blocks.ModuleBuilder` writes for the Python
executor, with its classes as extension types (:mod:`.layout`) and the
blocks' functions typed on their frame class; the code inside the functions
is the same text, so the two executors compute the same thing (the suite
checks they give the same bytes).

A module is built once per source text (and Cython, Python and compiler) and
kept in ``$AIFABRIC_CACHE/p4-cython`` (default ``~/.cache/aifabric``): the
first run of a program pays Cython and the C compiler (about ten seconds),
later runs load it; a build removes what was not loaded for 30 days. Builds of the same text by several processes (MPI ranks)
wait for one another on a lock. Where Cython, a C compiler or Python's headers
are missing, or a build fails, :func:`load` raises :class:`Unavailable`,
saying why in one line, and the caller runs the Python executor.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from types import ModuleType

from emulator import cache_dir

BUILD_TIMEOUT_S = 600
KEEP_DAYS = 30  # a module not loaded for this long is removed at the next build
# Compiled with these (part of the cache key); -O1 builds in about half
# the time of -O2 and runs as fast on this code (calls into CPython).
CFLAGS = ("-O1", "-fPIC", "-shared", "-fno-strict-aliasing", "-w")
DIRECTIVES = ("language_level=3", "boundscheck=True", "wraparound=True", "cdivision=False",
              "binding=False", "emit_code_comments=False")

_LOCATED = re.compile(r":\d+:\d+: ")


class Unavailable(Exception):
    """The compiled executor cannot be had here (the message says why)."""


def cache_root() -> Path:
    return cache_dir() / "p4-cython"


def cython_version() -> str:
    try:
        import Cython
    except ImportError as exc:
        raise Unavailable("Cython is not installed (pip install cython)") from exc
    return str(Cython.__version__)


def module_name(source: str) -> str:
    """The extension's name: a digest of the text and of what builds it."""
    key = "\n".join([source, cython_version(), sys.version, sysconfig.get_platform(),
                     " ".join(CFLAGS), " ".join(DIRECTIVES)])
    return "aifabric_p4_" + hashlib.sha256(key.encode()).hexdigest()[:20]


def load(source: str, label: str = "") -> ModuleType:
    """The extension built from ``source`` (a ``.pyx`` text), from the cache
    or built now; ``label`` names the program in errors."""
    name = module_name(source)
    module = sys.modules.get(name)
    if module is not None:
        return module
    folder = cache_root()
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = folder / (name + suffix)
    if not target.exists():
        try:
            _build(source, name, folder, target, label)
        except OSError as exc:  # a cache folder not writable, a full disk
            raise Unavailable(f"cannot build in {folder}: {exc.strerror or exc}") from exc
        _prune(folder)
    else:
        try:
            os.utime(target)  # in use: kept by _prune
        except OSError:
            pass
    spec = importlib.util.spec_from_file_location(name, target)
    if spec is None or spec.loader is None:
        raise Unavailable(f"cannot load {target}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise Unavailable(f"cannot load {target}: {exc}") from exc
    sys.modules[name] = module
    return module


def _build(source: str, name: str, folder: Path, target: Path, label: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    include = sysconfig.get_paths().get("include", "")
    if not Path(include, "Python.h").exists():
        raise Unavailable(f"Python's headers are missing ({include}/Python.h: apt install python3-dev)")
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it
        if target.exists():
            return
        work = folder / f"{name}.build-{os.getpid()}"
        work.mkdir(exist_ok=True)
        try:
            pyx = work / f"{name}.pyx"
            pyx.write_text(source)
            c_file = work / f"{name}.c"
            cmd = [sys.executable, "-m", "cython", "-3", "--fast-fail", "-o", str(c_file)]
            for d in DIRECTIVES:
                cmd += ["-X", d]
            cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
            so = work / target.name
            try:
                _run(cmd + [str(pyx)], "Cython", label)
                _run(cc + list(CFLAGS) + [f"-I{include}", str(c_file), "-o", str(so)],
                     "the C compiler", label)
            except Unavailable:
                for kept in (pyx, c_file):  # for the error to point at
                    if kept.exists():
                        os.replace(kept, folder / kept.name)
                raise
            os.replace(so, target)
        finally:
            for p in work.iterdir():
                p.unlink()
            work.rmdir()


def _prune(folder: Path) -> None:
    """Remove what was built here and not loaded for :data:`KEEP_DAYS` (the
    modules of programs and versions no longer run)."""
    old = time.time() - KEEP_DAYS * 86400
    for path in folder.glob("aifabric_p4_*"):
        try:
            if path.stat().st_mtime < old:
                path.unlink()
        except OSError:
            pass


def _run(cmd: list[str], what: str, label: str) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except FileNotFoundError as exc:
        raise Unavailable(f"{what} is not installed ({exc.filename})") from exc
    except subprocess.TimeoutExpired as exc:
        raise Unavailable(f"{what} took over {BUILD_TIMEOUT_S} s on {label}") from exc
    if done.returncode != 0:
        lines = [ln.strip() for ln in (done.stderr + done.stdout).splitlines() if ln.strip()]
        # "FILE:LINE:COL: message" (Cython's and the compiler's), else any
        errors = [ln for ln in lines if _LOCATED.search(ln)] or lines
        tail = errors[0] if errors else f"exit status {done.returncode}"
        # the source is kept in the cache folder, the build folder goes
        tail = re.sub(r"/aifabric_p4_\w+\.build-\d+/", "/", tail)
        raise Unavailable(f"{what} failed on {label or 'the program'}: {tail}")
