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
later runs load it; a build removes what was not loaded for 30 days. Builds
of the same text by several processes (MPI ranks) wait for one another on a
lock. Where the speedups group runs compiled, a module cimports the
result classes (:mod:`.results`) from it, and its text names that build
(:func:`shared_results_key`), so a new build of the group builds it anew.
Where Cython, a C compiler or Python's headers
are missing, or a build fails, :func:`load` raises :class:`Unavailable`,
saying why in one line, and the caller runs the Python executor.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import sys
import sysconfig
from importlib.machinery import ExtensionFileLoader
from pathlib import Path
from types import ModuleType

from emulator import cache_dir
from emulator.speedups import SOURCE_ROOT
from emulator.speedups.toolchain import (CFLAGS, Unavailable, compile_c, cython_version,
                                         ext_suffix, python_include, remove_unused)
from emulator.speedups.toolchain import cythonize as _cythonize

DIRECTIVES = ("language_level=3", "boundscheck=True", "wraparound=True", "cdivision=False",
              "binding=False", "emit_code_comments=False")

__all__ = ["Unavailable", "cache_root", "cython_version", "load", "module_name",
           "shared_results_key"]


def cache_root() -> Path:
    return cache_dir() / "p4-cython"


def shared_results_key() -> str | None:
    """The key of the speedups build whose :mod:`.results` this process runs
    (a module cimports its classes then), None where it runs as Python."""
    from emulator.p4.exec import results

    if isinstance(getattr(results, "__loader__", None), ExtensionFileLoader):
        return Path(results.__file__).parent.name
    return None


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
    target = folder / (name + ext_suffix())
    if not target.exists():
        try:
            _build(source, name, folder, target, label)
        except OSError as exc:  # a cache folder not writable, a full disk
            raise Unavailable(f"cannot build in {folder}: {exc.strerror or exc}") from exc
        remove_unused(folder.glob("aifabric_p4_*"))
    else:
        try:
            os.utime(target)  # in use: kept by remove_unused
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
    python_include()
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
            so = work / target.name
            try:
                _cythonize(pyx, c_file, DIRECTIVES, label, include=(SOURCE_ROOT,))
                compile_c(c_file, so, label)
            except Unavailable as exc:
                for kept in (pyx, c_file):  # for the error to point at
                    if kept.exists():
                        os.replace(kept, folder / kept.name)
                # the source is kept in the cache folder, the build folder goes
                raise Unavailable(str(exc).replace(f"{work}/", f"{folder}/")) from exc
            os.replace(so, target)
        finally:
            for p in work.iterdir():
                p.unlink()
            work.rmdir()
