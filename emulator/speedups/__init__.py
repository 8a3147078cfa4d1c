"""The simulator's hot modules, also built as C extensions (Cython's
pure-Python mode), and the import hook that loads them.

Every module of :data:`GROUP` is plain Python and runs as it is. Beside it a
``.pxd`` file declares its classes as extension types and their hot
attributes and locals with C types; Cython compiles the ``.py`` with that
``.pxd`` into an extension of the same name that does the same thing, only
faster (the suite runs scenarios both ways and compares the bytes). A module
with a ``.pyx`` beside it (the engine's event heap) is compiled from that: a
C implementation of the ``.py``'s classes, tested against it.

:mod:`.build` builds the whole group into ``$AIFABRIC_CACHE/speedups/KEY``
(``python -m emulator.speedups build``, which ``make setup`` runs), KEY a
digest of every source of the group, Python's version, the platform and the
build flags. :func:`install`, called when the ``emulator`` package is
imported (before any module of the group can be), puts a finder on
``sys.meta_path`` that loads the built extensions in place of the ``.py`` files only where KEY matches the sources
as they are now: an edited module runs as Python until the group is built
again, never a stale build. ``AIFABRIC_SPEEDUPS=0`` turns them off.
"""

from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
from importlib.machinery import ExtensionFileLoader, ModuleSpec
from pathlib import Path
from typing import Sequence

# Modules in import order (a module's .pxd may cimport only those before it).
GROUP = ("emulator.targets.builtin.eventheap", "emulator.targets.builtin.ports",
         "emulator.targets.builtin.pfc", "emulator.targets.builtin.mmu",
         "emulator.targets.builtin.counter_series", "emulator.targets.builtin.tm",
         "emulator.targets.builtin.tally",
         "emulator.p4.exec.results", "emulator.p4.exec.decision_cache",
         "emulator.targets.builtin.dataplane",
         "emulator.traffic.agent.timers",
         "emulator.traffic.agent.pacing", "emulator.traffic.agent.stats",
         "emulator.traffic.agent.frames", "emulator.traffic.agent.pfc",
         "emulator.traffic.agent.dcqcn", "emulator.traffic.agent.qp",
         "emulator.traffic.agent.nic", "emulator.traffic.agent.agent",
         "emulator.sim.engine", "emulator.sim.links")
ENV = "AIFABRIC_SPEEDUPS"
# Cython's directives for the group (part of the key). Annotations do not
# type anything: only the .pxd files do, so the .py files keep Python's
# meaning where a .pxd says nothing.
DIRECTIVES = ("language_level=3", "annotation_typing=False", "emit_code_comments=False",
              "cdivision=False")
SOURCE_ROOT = Path(__file__).resolve().parents[2]


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "no", "false")


def cache_dir() -> Path:
    """Where the package keeps what it works out once per machine
    (re-exported as ``emulator.cache_dir``): ``$AIFABRIC_CACHE``, else
    ``$XDG_CACHE_HOME/aifabric``, else ``~/.cache/aifabric``."""
    root = os.environ.get("AIFABRIC_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "aifabric")
    return Path(root)


def cache_root() -> Path:
    return cache_dir() / "speedups"


def source_files(name: str, root: Path = SOURCE_ROOT) -> tuple[Path, Path, Path]:
    """The ``.py``, ``.pxd`` and ``.pyx`` of module ``name``: a ``.pyx``, where
    there is one, is what is compiled (a C implementation of what the
    ``.py`` does, for what Python's syntax cannot say: C arrays)."""
    base = root.joinpath(*name.split("."))
    return base.with_suffix(".py"), base.with_suffix(".pxd"), base.with_suffix(".pyx")


def source_key(group: Sequence[str] = GROUP, root: Path = SOURCE_ROOT) -> str:
    """The digest naming a build of ``group`` as its sources are now."""
    digest = hashlib.sha256()
    for part in (sys.version, sysconfig.get_platform(), " ".join(DIRECTIVES)):
        digest.update(part.encode() + b"\0")
    from emulator.speedups.toolchain import CFLAGS
    digest.update(" ".join(CFLAGS).encode() + b"\0")
    for name in group:
        digest.update(name.encode() + b"\0")
        for path in source_files(name, root):
            digest.update(path.read_bytes() if path.exists() else b"-")
            digest.update(b"\0")
    return digest.hexdigest()[:20]


def ext_name(name: str) -> str:
    from emulator.speedups.toolchain import ext_suffix
    return name + ext_suffix()


class Finder:
    """Loads the group's modules from a build whose key matches the
    sources (see the module docstring); anything else it leaves alone."""

    def __init__(self) -> None:
        self._folder: Path | None | bool = False  # False: not looked yet

    def folder(self) -> Path | None:
        """The build in use (None: none fresh, or turned off)."""
        if self._folder is False:
            self._folder = None
            if enabled():
                try:
                    folder = cache_root() / source_key()
                except OSError:
                    folder = None
                if folder is not None and all((folder / ext_name(n)).exists() for n in GROUP):
                    self._folder = folder
        return self._folder  # type: ignore[return-value]

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> ModuleSpec | None:
        if fullname not in GROUP:
            return None
        folder = self.folder()
        if folder is None:
            return None
        so = str(folder / ext_name(fullname))
        return ModuleSpec(fullname, ExtensionFileLoader(fullname, so), origin=so)


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, Finder())


def loaded() -> list[str]:
    """The group's modules this process runs as C extensions."""
    return [n for n in GROUP if isinstance(getattr(sys.modules.get(n), "__loader__", None),
                                           ExtensionFileLoader)]


def state() -> str:
    """``compiled`` (every module of the group is), else ``python`` and why."""
    done = loaded()
    if len(done) == len(GROUP):
        return "compiled"
    if not enabled():
        return f"python ({ENV}=0)"
    if done:
        return f"python (only {', '.join(done)} compiled)"
    return "python (not built for these sources: python -m emulator.speedups build)"
