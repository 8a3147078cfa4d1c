"""Where aifabric keeps what it works out once per machine (the live
calibration, compiled P4 programs): ``$AIFABRIC_CACHE``, else
``$XDG_CACHE_HOME/aifabric``, else ``~/.cache/aifabric``."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    root = os.environ.get("AIFABRIC_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "aifabric")
    return Path(root)
