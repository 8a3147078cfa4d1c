"""The switches' counters over time, as CSV: what ``aifabric view`` replays a
run from, exactly (:mod:`emulator.view.replay`).

From each switch's ``GetQueueSeries`` ``port_counts`` and ``queue_counts``
(:class:`~emulator.targets.builtin.counter_series.CounterSeries`), on both
clocks, times in seconds since the run's common start (negative before it):

- ``port_bytes.csv``: ``switch, port, t_s, tx_bytes, rx_bytes``;
- ``pfc_frames.csv``: ``switch, port, priority, t_s, pfc_tx, pfc_rx,
  paused_s`` (PFC frames naming the priority sent and received, time the
  queue was held);
- ``ecn_marks.csv``: ``switch, port, priority, t_s, ecn_marked`` (packets
  the switch's P4 program marked CE on that queue).

Values are *cumulative* counters read at the switch's queue-sampling
instants (the sim's series bins; every 10 ms on a live switch by default):
a row at a port's first sample, then one whenever a value changed, so the
value at any sampling instant is the last row at or before it, and what
happened in an interval is the difference of two such values. A value that
drops was reset (the live runner zeroes the switches' counters at its
start): it counts again from zero. Each file has its header even when empty.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Mapping

PORT_BYTES_COLUMNS = ("switch", "port", "t_s", "tx_bytes", "rx_bytes")
PFC_FRAMES_COLUMNS = ("switch", "port", "priority", "t_s", "pfc_tx", "pfc_rx", "paused_s")
ECN_MARKS_COLUMNS = ("switch", "port", "priority", "t_s", "ecn_marked")


def counter_rows(series: Mapping[str, Mapping[str, Any] | None], start_unix: float,
                 digits: int) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """Rows of the three files from ``{switch: get_queue_series()}``."""
    ports: list[tuple] = []
    pfc: list[tuple] = []
    ecn: list[tuple] = []
    for name in sorted(series):
        answer = series[name] or {}
        offset = answer.get("unix_offset_s", 0.0) - start_unix
        for ring in answer.get("port_counts", []):
            for t, tx, rx in ring["samples"]:
                ports.append((name, ring["port"], round(t + offset, digits), tx, rx))
        for ring in answer.get("queue_counts", []):
            last_pfc = last_ecn = None
            for t, pfc_tx, pfc_rx, paused_s, marked in ring["samples"]:
                t_s = round(t + offset, digits)
                now_pfc = (pfc_tx, pfc_rx, round(paused_s, 9))
                if now_pfc != last_pfc:
                    pfc.append((name, ring["port"], ring["priority"], t_s, *now_pfc))
                    last_pfc = now_pfc
                if marked != last_ecn:
                    ecn.append((name, ring["port"], ring["priority"], t_s, marked))
                    last_ecn = marked
    return ports, pfc, ecn


def write_counter_csvs(out_dir: Path, series: Mapping[str, Mapping[str, Any] | None],
                       start_unix: float, digits: int) -> None:
    """Write ``port_bytes.csv``, ``pfc_frames.csv`` and ``ecn_marks.csv``."""
    ports, pfc, ecn = counter_rows(series, start_unix, digits)
    for name, columns, rows in (("port_bytes.csv", PORT_BYTES_COLUMNS, ports),
                                ("pfc_frames.csv", PFC_FRAMES_COLUMNS, pfc),
                                ("ecn_marks.csv", ECN_MARKS_COLUMNS, ecn)):
        with open(out_dir / name, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(columns)
            w.writerows(rows)
