"""aifabric: a packet-level emulator of AI-cluster networks.

Subpackages, in the order data flows through them: ``topology`` (pure data),
``p4`` (the P4 toolchain of the built-in target), ``targets`` (switch
processes), ``network`` (Mininet), ``control`` (P4Runtime controller),
``traffic`` (RoCEv2 hosts and collectives), ``measure``, ``scenario`` and
``cli``. See DESIGN.md for the dependency rules between them.

:func:`cache_dir` is where any of them keeps what it works out once per
machine (the live calibration, compiled P4 programs).
"""

from __future__ import annotations

import os
from pathlib import Path

__version__ = "0.1.0"


def cache_dir() -> Path:
    """``$AIFABRIC_CACHE``, else ``$XDG_CACHE_HOME/aifabric``, else
    ``~/.cache/aifabric``."""
    root = os.environ.get("AIFABRIC_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "aifabric")
    return Path(root)

