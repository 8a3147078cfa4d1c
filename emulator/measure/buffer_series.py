"""The switches' buffer occupancy over time, as CSV and as ``buffer.png``
(pure functions over plain dicts and CSV rows, no root).

``buffer.csv``, one row per switch and sample while its pool held anything
(and one after it emptied)::

    switch, t_s, shared_used_bytes, headroom_used_bytes, shared_bytes, headroom_bytes

the shared pool and the lossless headroom in use, and their capacities
(:class:`~emulator.targets.builtin.mmu.SwitchBuffer`).

``priority_groups.csv``, one row per ingress (port, priority group) and
sample while it held bytes or had XOFF on (and one after)::

    switch, port, priority, t_s, pg_bytes, headroom_used_bytes, xoff

``pg_bytes`` is what the group's frames still queued in the switch take
(shared and headroom), ``headroom_used_bytes`` the part of it in the
group's headroom, ``xoff`` 1 while the port keeps its peer paused on that
priority. ``port`` is the *ingress* port (``queues.csv`` has egress queues).

Both come from the samples the switch takes with its queue depths
(``GetQueueSeries``'s ``buffer`` and ``groups``, on either clock); times
are seconds since the run's common start. A BMv2 switch has no such buffer:
its files hold the header only.

:mod:`.buffer_plot` draws them as ``buffer.png``.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterator, Mapping

BUFFER_COLUMNS = ("switch", "t_s", "shared_used_bytes", "headroom_used_bytes",
                  "shared_bytes", "headroom_bytes")
GROUP_COLUMNS = ("switch", "port", "priority", "t_s", "pg_bytes", "headroom_used_bytes",
                 "xoff")


def _digits(start_unix: float) -> int:
    # ns on the virtual clock (times from 0), µs for differences of Unix times
    return 9 if abs(start_unix) < 1e6 else 6


def _answers(series: Mapping[str, Mapping[str, Any] | None], start_unix: float
             ) -> Iterator[tuple[str, Mapping[str, Any], float]]:
    """(switch, its answer, seconds from its clock to the run's start), by name."""
    for name in sorted(series):
        answer = series[name] or {}
        yield name, answer, answer.get("unix_offset_s", 0.0) - start_unix


def buffer_rows(series: Mapping[str, Mapping[str, Any] | None],
                start_unix: float) -> list[tuple]:
    """Rows of ``buffer.csv`` from ``{switch: GetQueueSeries answer}``."""
    rows = []
    digits = _digits(start_unix)
    for name, answer, offset in _answers(series, start_unix):
        for t, used, hr_used, shared, headroom in answer.get("buffer") or ():
            rows.append((name, round(t + offset, digits), used, hr_used, shared, headroom))
    return rows


def group_rows(series: Mapping[str, Mapping[str, Any] | None],
               start_unix: float) -> list[tuple]:
    """Rows of ``priority_groups.csv`` from ``{switch: GetQueueSeries answer}``."""
    rows = []
    digits = _digits(start_unix)
    for name, answer, offset in _answers(series, start_unix):
        for group in answer.get("groups") or ():
            for t, held, hr_used, xoff in group["samples"]:
                rows.append((name, group["port"], group["priority"], round(t + offset, digits),
                             held, hr_used, int(bool(xoff))))
    return rows


def write_buffer_csvs(out_dir: Path, series: Mapping[str, Mapping[str, Any] | None],
                      start_unix: float) -> None:
    """Write ``buffer.csv`` and ``priority_groups.csv`` (headers even when empty)."""
    for name, columns, rows in (("buffer.csv", BUFFER_COLUMNS, buffer_rows(series, start_unix)),
                                ("priority_groups.csv", GROUP_COLUMNS,
                                 group_rows(series, start_unix))):
        with open(Path(out_dir) / name, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(columns)
            w.writerows(rows)
