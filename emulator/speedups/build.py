"""Builds :data:`~emulator.speedups.GROUP` into the cache folder its key
names (see the package docstring): each module's ``.py`` and ``.pxd``
copied into a work folder laid out as the package, Cython run on each under
its real name (so that one module's ``.pxd`` can cimport another's), the C
compiled, the extensions moved in together. Builds by several processes
wait on a lock; a build not loaded for 30 days goes at the next build."""

from __future__ import annotations

import fcntl
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

from emulator.speedups import (DIRECTIVES, GROUP, SOURCE_ROOT, cache_root, ext_name,
                               source_files, source_key)
from emulator.speedups.toolchain import (Unavailable, compile_c, cython_version, cythonize,
                                         python_include, remove_unused)


def build(group: Sequence[str] = GROUP, root: Path = SOURCE_ROOT,
          cache: Path | None = None) -> Path:
    """The folder holding ``group`` built from the sources under ``root``,
    built now unless there already (Unavailable: why it cannot be)."""
    cython_version()
    python_include()
    cache = cache or cache_root()
    key = source_key(group, root)
    folder = cache / key
    if _complete(folder, group):
        os.utime(folder)
        return folder
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with open(cache / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not _complete(folder, group):
                _build(group, root, cache, folder)
    except OSError as exc:
        raise Unavailable(f"cannot build in {cache}: {exc.strerror or exc}") from exc
    remove_unused(p for p in cache.iterdir() if p.is_dir() and p != folder)
    return folder


def _complete(folder: Path, group: Sequence[str]) -> bool:
    return all((folder / ext_name(n)).exists() for n in group)


def _build(group: Sequence[str], root: Path, cache: Path, folder: Path) -> None:
    work = cache / f"{folder.name}.build-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    try:
        out = work / "out"
        out.mkdir(parents=True)
        sources = []
        for name in group:
            py, pxd, pyx = source_files(name, root)
            parts = name.split(".")
            for i in range(1, len(parts)):  # packages, so Cython names the module right
                (work.joinpath(*parts[:i]) / "__init__.py").parent.mkdir(parents=True,
                                                                          exist_ok=True)
                (work.joinpath(*parts[:i]) / "__init__.py").touch()
            copy = work.joinpath(*parts).with_suffix(".pyx" if pyx.exists() else ".py")
            shutil.copyfile(pyx if pyx.exists() else py, copy)
            if pxd.exists():
                shutil.copyfile(pxd, copy.with_suffix(".pxd"))
            sources.append((name, copy))

        def one(item: tuple[str, Path]) -> None:
            name, copy = item
            c_file = copy.with_suffix(".c")
            try:
                cythonize(copy, c_file, DIRECTIVES, name, include=(work,), module_name=name)
                compile_c(c_file, out / ext_name(name), name)
            except Unavailable as exc:  # point at the repository's file, not the copy
                raise Unavailable(str(exc).replace(str(work), str(root))) from exc

        with ThreadPoolExecutor(max_workers=max(1, min(len(sources), os.cpu_count() or 1))) as pool:
            for done in [pool.submit(one, item) for item in sources]:
                done.result()
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(out, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
