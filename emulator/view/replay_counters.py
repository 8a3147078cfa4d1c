"""The exact part of a replay: link use, PFC and CE marks per frame from the
switches' cumulative counters (``port_bytes.csv``, ``pfc_frames.csv``,
``ecn_marks.csv``, written by :mod:`emulator.measure.counter_csvs`).

Each frame covers ``(t - bin_s, t]``, a bin no shorter than the switches'
sampling interval; what happened in it is the difference of a counter's
values at the two ends (:class:`Cumulative`: exact where the bins are the
sampling instants, as on the sim). These are the counters a live feed reads
(:class:`~emulator.view.frames.Deriver`), so a replayed frame shows what the
streamed one showed, computed the same way: ``util`` of every link
direction (the fabric's as well as the hosts'), ``pfc`` of every switch
queue (frames per second and share of the bin paused), the link a paused
queue sends on in ``paused``, and ``ecnq`` (CE marks per second per queue).
Runs written before these files existed have none: the caller falls back
on what it can rebuild from the other CSVs.
"""

from __future__ import annotations

import bisect
import csv
import statistics
from pathlib import Path
from typing import Any, Sequence

from emulator.view.picture import Picture

Key = tuple[str, int, int]


class Cumulative:
    """One counter's rows ``(t, value)``, by time; a drop is a restart from zero
    (the values are kept rising so differences stay right).

    Rows come at sampling instants, only where the value changed: between
    two rows it stayed put until one sampling interval before the second,
    then rose to it. :meth:`at` reads it so: exact at sampling instants (the
    sim's bins), the rise spread evenly over its interval in between (a
    live switch samples on its own clock, not on the replay's bins)."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.times: list[float] = []
        self.values: list[float] = []
        self._raw = 0.0
        self._offset = 0.0

    def add(self, t: float, value: float) -> None:
        if value < self._raw:
            self._offset += self._raw
        self._raw = value
        self.times.append(t)
        self.values.append(value + self._offset)

    def at(self, t: float) -> float | None:
        """The value at ``t`` (the last row at or before it), None before the first."""
        i = bisect.bisect_right(self.times, t + 1e-9) - 1
        if i < 0:
            return None
        if i + 1 < len(self.times):
            end = self.times[i + 1]
            # two samples in a row (a live one may come late): the rise spans the gap
            start = (self.times[i] if end - self.times[i] < 1.5 * self.interval_s
                     else end - self.interval_s)
            if t > start + 1e-9:
                share = (t - start) / (end - start)
                return self.values[i] + share * (self.values[i + 1] - self.values[i])
        return self.values[i]

    def delta(self, lo: float, hi: float) -> float:
        a, b = self.at(lo), self.at(hi)
        if b is None:
            return 0.0
        return b - (a if a is not None else b)


def sample_interval_s(d: Path) -> float | None:
    """The switches' sampling interval: the median gap between two rows of
    one port in ``port_bytes.csv`` (mostly samples in a row that both moved;
    a live switch's late sample is followed by an early one)."""
    last: dict[tuple[str, str], float] = {}
    gaps: list[float] = []
    with open(d / "port_bytes.csv", newline="") as f:
        for row in csv.DictReader(f):
            key, t = (row["switch"], row["port"]), float(row["t_s"])
            if key in last and t - last[key] > 1e-9:
                gaps.append(t - last[key])
            last[key] = t
    return statistics.median(gaps) if gaps else None


def _read(path: Path, keys: Sequence[str], values: Sequence[str], interval_s: float
          ) -> dict[tuple[Any, ...], list[Cumulative]]:
    out: dict[tuple[Any, ...], list[Cumulative]] = {}
    with open(path, newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: float(r["t_s"]))
    for row in rows:
        key = tuple(row[k] if k == "switch" else int(row[k]) for k in keys)
        series = out.setdefault(key, [Cumulative(interval_s) for _ in values])
        for s, name in zip(series, values):
            s.add(float(row["t_s"]), float(row[name]))
    return out


def has_counters(d: Path) -> bool:
    return all((d / name).is_file() for name in ("port_bytes.csv", "pfc_frames.csv",
                                                 "ecn_marks.csv"))


def apply_counters(d: Path, pic: Picture, frames: list[dict[str, Any]], bin_s: float,
                   interval_s: float) -> None:
    """Fill ``util``, switch ``pfc``, ``paused`` and ``ecnq`` of ``frames``
    (module docstring) from counters sampled every ``interval_s``; ``util``
    replaces what the frames had."""
    ports = _read(d / "port_bytes.csv", ("switch", "port"), ("tx_bytes", "rx_bytes"),
                  interval_s)
    queues = _read(d / "pfc_frames.csv", ("switch", "port", "priority"),
                   ("pfc_tx", "pfc_rx", "paused_s"), interval_s)
    marks = _read(d / "ecn_marks.csv", ("switch", "port", "priority"), ("ecn_marked",),
                  interval_s)
    for frame in frames:
        hi = frame["t"]
        lo = hi - bin_s
        util: dict[str, float] = {}
        for edge, (switch, port, side) in pic.edge_counter.items():
            series = ports.get((switch, port))
            if series is None:
                continue
            moved = series[0 if side == "tx" else 1].delta(lo, hi)
            value = moved * 8 / bin_s / pic.edge_rate_bps[edge]
            if value > 0:
                util[edge] = round(value, 4)
        frame["util"] = util
        paused = set(frame.get("paused", []))
        for (switch, port, prio), (tx, rx, held) in queues.items():
            frames_moved = tx.delta(lo, hi) + rx.delta(lo, hi)
            paused_s = held.delta(lo, hi)
            if frames_moved > 0 or paused_s > 0:
                frame["pfc"][f"{switch}:{port}:{prio}"] = [
                    round(frames_moved / bin_s, 3), round(min(paused_s / bin_s, 1.0), 4)]
                if paused_s > 0:
                    edge = pic.egress_edge.get((switch, port))
                    if edge is not None:
                        paused.add(edge)
        frame["paused"] = sorted(paused)
        ecnq: dict[str, float] = {}
        for (switch, port, prio), (marked,) in marks.items():
            count = marked.delta(lo, hi)
            if count > 0:
                ecnq[f"{switch}:{port}:{prio}"] = round(count / bin_s, 3)
        frame["ecnq"] = ecnq
