"""aifabric: a packet-level emulator of AI-cluster networks.

Subpackages, in the order data flows through them: ``topology`` (pure data),
``p4`` (the P4 toolchain of the built-in target), ``targets`` (switch
processes), ``network`` (Mininet), ``control`` (P4Runtime controller),
``traffic`` (RoCEv2 hosts and collectives), ``measure``, ``scenario`` and
``cli``. See DESIGN.md for the dependency rules between them.

:func:`cache_dir` is where any of them keeps what it works out once per
machine (the live calibration, compiled P4 programs, the simulator's compiled
modules); it lives in :mod:`emulator.speedups`, the bottom layer, whose import
hook is installed here, before any module it may load compiled is imported.
"""

from __future__ import annotations

from emulator.speedups import cache_dir
from emulator.speedups import install as _install_speedups

__version__ = "0.1.0"
__all__ = ["cache_dir"]

_install_speedups()

