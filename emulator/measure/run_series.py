"""What the hosts saw over time, and every PFC pause of a run, as CSV:
``series.csv`` and ``pauses.csv`` (pure functions over plain dicts, no root).

``series.csv``, one row per queue pair and time bin::

    flow, qp, t_s, tx_bps, retx_bps, rx_bps, ce_packets, cnps_sent, cnps_rx

from the agents' per-QP ``series`` (:mod:`emulator.traffic.agent.stats`):
the requester end (the flow's source) gives ``tx_bps`` (payload sent the
first time), ``retx_bps`` (payload sent again) and ``cnps_rx``; the
responder end (its destination) gives ``rx_bps`` (payload accepted: the
goodput), ``ce_packets`` (CE-marked packets received) and ``cnps_sent``.
Rates are bytes × 8 / bin; counts are per bin. ``t_s`` is the bin's start
in seconds since the run's common start. Both ends use bins of the same
size on a grid through the common start, so they line up; when one end's bins were
coarsened (a long run) the other's are summed into them by start time.
Every bin from a QP's first count to its last has a row (zeros included),
so a line drawn from the rows drops to zero where nothing moved.

``pauses.csv``, one row per pause interval::

    kind, node, port, priority, start_s, end_s

``kind`` ``switch``: ``node`` is the switch and ``port`` its egress port;
the intervals come from the queue-depth samples (``queues.csv``): a sample
flagged ``paused`` at ``t`` says the queue was held during the sampling
interval that ends at ``t``, so consecutive paused samples make one
interval ``(t_first − interval, t_last)``. ``kind`` ``host``: ``node`` is
the server and ``port`` the NIC; the intervals are the ones the NIC agent
recorded while it honoured a pause on that priority (exact, not sampled).
Times are seconds since the run's common start.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol, Sequence

SERIES_COLUMNS = ("flow", "qp", "t_s", "tx_bps", "retx_bps", "rx_bps", "ce_packets",
                  "cnps_sent", "cnps_rx")
PAUSE_COLUMNS = ("kind", "node", "port", "priority", "start_s", "end_s")
# Which end of a queue pair each column comes from, and the agent's series key.
_REQUESTER = (("tx_bps", "tx_bytes"), ("retx_bps", "retx_bytes"), ("cnps_rx", "cnps_rx"))
_RESPONDER = (("rx_bps", "rx_bytes"), ("ce_packets", "ce_packets_rx"),
              ("cnps_sent", "cnps_sent"))
_RATE_COLUMNS = ("tx_bps", "retx_bps", "rx_bps")
_VALUE_COLUMNS = SERIES_COLUMNS[3:]
DEFAULT_SAMPLE_INTERVAL_S = 0.01


class QueuePairEnds(Protocol):
    """What these builders need of a queue pair's plan (``QpPlan``)."""

    flow: str
    qpn: int
    src_server: str
    dst_server: str


def _qp_of(snapshot: Mapping[str, Any] | None, qpn: int) -> Mapping[str, Any] | None:
    for qp in (snapshot or {}).get("qps", []):
        if qp["qpn"] == qpn:
            return qp
    return None


def qp_series_rows(qps: Sequence[QueuePairEnds], stats: Mapping[str, Mapping[str, Any] | None],
                   start_unix: float) -> list[tuple]:
    """Rows of ``series.csv`` (see the module docstring), QP by QP in plan order."""
    rows: list[tuple] = []
    for plan in qps:
        parts = []
        # the responder's number differs when both ends are in one agent (QpPlan.responder_qpn)
        ends = ((plan.src_server, plan.qpn, _REQUESTER),
                (plan.dst_server, getattr(plan, "responder_qpn", plan.qpn), _RESPONDER))
        for server, qpn, columns in ends:
            qp = _qp_of(stats.get(server), qpn)
            if qp is not None and qp.get("series"):
                parts.append((qp["series"], columns))
        if not parts:
            continue
        # the coarsest end sets the grid (both ends share it unless one coarsened)
        grid = max((series for series, _ in parts), key=lambda s: s["bin_s"])
        width, origin = float(grid["bin_s"]), float(grid["start_unix"])
        bins: dict[int, dict[str, float]] = {}
        for series, columns in parts:
            bin_s = float(series["bin_s"])
            shift = (float(series["start_unix"]) - origin) / width
            for column, key in columns:
                for i, count in enumerate(series.get(key) or ()):
                    if count:
                        # Unix times carry ~0.2 µs of rounding: a start a hair
                        # below a grid line is on it
                        j = math.floor(shift + i * bin_s / width + 1e-3)
                        slot = bins.setdefault(j, {})
                        slot[column] = slot.get(column, 0) + count
        if not bins:
            continue
        for j in range(min(bins), max(bins) + 1):
            slot = bins.get(j, {})
            values = [round(slot.get(c, 0) * 8 / width, 1) if c in _RATE_COLUMNS
                      else slot.get(c, 0) for c in _VALUE_COLUMNS]
            rows.append((plan.flow, plan.qpn, round(origin + j * width - start_unix, 6),
                         *values))
    return rows


def sampled_pause_intervals(samples: Iterable[Sequence[Any]], interval_s: float
                            ) -> list[tuple[float, float]]:
    """``(start, end)`` spans from ``[t, packets, bytes, paused]`` samples in
    time order: a paused sample at t covers ``(t − interval_s, t]``; paused
    samples one interval apart (give or take half of one: the sampler runs
    late at times) make one span. A longer gap had an unpaused sample or
    none (a queue neither busy nor paused is not sampled), so it ends the
    span."""
    spans: list[tuple[float, float]] = []
    previous: float | None = None          # the last sample, if it was paused
    for sample in samples:
        t, paused = float(sample[0]), sample[3]
        if not paused:
            previous = None
            continue
        if previous is not None and t - previous <= 1.5 * interval_s:
            spans[-1] = (spans[-1][0], t)
        else:
            spans.append((t - interval_s, t))
        previous = t
    return spans


def switch_pause_rows(series: Mapping[str, Mapping[str, Any] | None],
                      start_unix: float) -> list[tuple]:
    """``pauses.csv`` rows of switch queues, from ``{switch: GetQueueSeries answer}``."""
    rows = []
    for name in sorted(series):
        answer = series[name]
        if not answer:
            continue
        offset = answer.get("unix_offset_s", 0.0) - start_unix
        interval = answer.get("interval_s") or DEFAULT_SAMPLE_INTERVAL_S
        for queue in answer.get("queues", []):
            samples = sorted(queue["samples"], key=lambda s: s[0])
            for a, b in sampled_pause_intervals(samples, interval):
                rows.append(("switch", name, queue["port"], queue["priority"],
                             round(a + offset, 6), round(b + offset, 6)))
    return rows


def host_pause_rows(stats: Mapping[str, Mapping[str, Any] | None],
                    start_unix: float) -> list[tuple]:
    """``pauses.csv`` rows of host NICs, from the agents' ``pause_intervals``."""
    rows = []
    for server in sorted(stats):
        for nic in (stats[server] or {}).get("nics", []):
            for prio, spans in enumerate(nic.get("pause_intervals") or ()):
                for a, b in spans:
                    rows.append(("host", server, nic["name"], prio,
                                 round(a - start_unix, 6), round(b - start_unix, 6)))
    return rows


def write_run_series_csvs(out_dir: Path, queue_series: Mapping[str, Mapping[str, Any] | None],
                          qps: Sequence[QueuePairEnds],
                          stats: Mapping[str, Mapping[str, Any] | None],
                          start_unix: float) -> None:
    """Write ``series.csv`` and ``pauses.csv`` (each with its header even when empty)."""
    pauses = switch_pause_rows(queue_series, start_unix) + host_pause_rows(stats, start_unix)
    for name, columns, rows in (
            ("series.csv", SERIES_COLUMNS, qp_series_rows(qps, stats, start_unix)),
            ("pauses.csv", PAUSE_COLUMNS, pauses)):
        with open(Path(out_dir) / name, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(columns)
            w.writerows(rows)
