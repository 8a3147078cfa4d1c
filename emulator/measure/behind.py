"""Where a live run's host fell behind, on every timeline plot.

The runner writes ``behind.csv`` (``start_s,end_s`` per span, seconds since
the run's start; :mod:`emulator.fidelity.verdict`): the stretches in which
a switch or NIC agent sent more than 1 % of its frames later than one frame
time, or gave lag up. :func:`shade_behind` shades those spans on every axes
of a timeline figure and says so in one line at the bottom, so a reader
sees which part of a curve measured the host rather than the fabric.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Sequence

BEHIND_COLOR = "#dc2626"
NOTE = "red bands: the host fell behind (frames late by more than a frame time, or lag " \
       "given up); figures there measured the machine, not the fabric"


def read_behind(out_dir: str | Path) -> list[tuple[float, float]]:
    """The spans of ``out_dir/behind.csv`` ([] when there is none)."""
    path = Path(out_dir) / "behind.csv"
    if not path.exists():
        return []
    try:
        with open(path, newline="") as f:
            return [(float(r["start_s"]), float(r["end_s"])) for r in csv.DictReader(f)]
    except (OSError, KeyError, ValueError):
        return []


def shade_behind(fig: Any, spans: Sequence[tuple[float, float]]) -> None:
    """Shade ``spans`` on every axes of ``fig`` and add the note."""
    if not spans:
        return
    for ax in fig.get_axes():
        for a, b in spans:
            ax.axvspan(a, b, color=BEHIND_COLOR, alpha=0.12, lw=0, zorder=0)
    fig.text(0.01, 0.002, NOTE, fontsize=7, color=BEHIND_COLOR, va="bottom")
