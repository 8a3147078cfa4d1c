"""Counters over time: what a finished run needs to be replayed exactly.

The queue series (:class:`~.tm.QueueSeries`) records depths; this records,
at the same sampling instants, the *cumulative* counters that a rate or a
count per interval is the difference of:

- per port: ``(t, tx_bytes, rx_bytes)`` (the socket's counters, as
  ``GetPortStats``);
- per (port, priority): ``(t, pfc_tx, pfc_rx, paused_s, ecn_marked)``: PFC
  frames naming the priority sent and received, time the queue was held
  (the running part of a pause included) and packets the loaded P4 program
  marked CE on that queue (``ecn_marked``: see :mod:`.marks`; 0 where the
  program keeps no such counter).

A row is recorded at a port's first sample (its baseline) and then only
when a value changed, so an idle fabric costs a comparison per port per
sample: the value at any sampling instant is the last row at or before it.
A port is looked at queue by queue only when its packet or PFC counters
moved or one of its priorities is paused. Rows older than ``window_s``
behind the newest are dropped, but each ring keeps its newest such row (the
value the window starts from). Counters a ``ResetStats`` zeroes restart
from zero: a reader takes a drop as a restart.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Sequence

# () -> (the marks table, the slot of (port, priority)) or None: see .marks
MarksReader = Callable[[], "tuple[Sequence[int], Callable[[int, int], int]] | None"]


class CounterSeries:
    """Cumulative port and queue counters over time (module docstring)."""

    __slots__ = ("window_s", "ports", "queues", "marks", "_sig")

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.ports: dict[int, deque[tuple[float, int, int]]] = {}
        self.queues: dict[tuple[int, int], deque[tuple[float, int, int, float, int]]] = {}
        self.marks: MarksReader | None = None
        self._sig: dict[int, tuple[int, ...]] = {}

    def sample(self, now: float, ports: Any) -> None:
        """One sample of ``ports`` (``{number: PortState}``) at ``now``."""
        marks = self.marks() if self.marks is not None else None
        table, slot = marks if marks is not None else ((), None)
        horizon = now - self.window_s
        seen = self._sig
        for number, ps in ports.items():
            c = ps.counters
            pfc = ps.pfc
            mask = pfc.mask
            sig = (c.tx_packets, c.rx_packets, c.pfc_rx_frames, c.pfc_tx_frames,
                   ps.ctrl_qc.tx_packets, mask)
            first = number not in seen
            if not first and not mask and seen[number] == sig:
                continue
            seen[number] = sig
            _record(self.ports, number, (now, c.tx_bytes, c.rx_bytes), first, horizon)
            for prio, qc in enumerate(ps.tm.counters):
                ecn = 0
                if slot is not None:
                    index = slot(number, prio)
                    ecn = table[index] if index < len(table) else 0
                key = (number, prio)
                _record(self.queues, key,
                        (now, qc.pfc_tx, qc.pfc_rx, pfc.total_paused_s(prio, now), ecn),
                        first, horizon)

    def query(self, ports: Any = None, since: float | None = None) -> dict[str, Any]:
        """``{"port_counts": [{"port", "samples": [[t, tx_bytes, rx_bytes]]}],
        "queue_counts": [{"port", "priority", "samples": [[t, pfc_tx, pfc_rx,
        paused_s, ecn_marked]]}]}``, sorted; only rows after ``since``, and
        only rings with a change (a ring's baseline alone says nothing moved)."""
        wanted = None if ports is None else set(ports)

        def rows(ring: deque) -> list[list[Any]]:
            if len(ring) < 2 and not any(ring[0][1:]):
                return []
            return [list(r) for r in ring if since is None or r[0] > since]

        port_counts = [{"port": n, "samples": r} for n, ring in sorted(self.ports.items())
                       if (wanted is None or n in wanted) and (r := rows(ring))]
        queue_counts = [{"port": n, "priority": p, "samples": r}
                        for (n, p), ring in sorted(self.queues.items())
                        if (wanted is None or n in wanted) and (r := rows(ring))]
        return {"port_counts": port_counts, "queue_counts": queue_counts}


def _record(rings: dict, key: Any, row: tuple, first: bool, horizon: float) -> None:
    ring = rings.get(key)
    if ring is None:
        ring = rings[key] = deque()
    elif not first and ring[-1][1:] == row[1:]:
        return
    ring.append(row)
    while len(ring) > 1 and ring[1][0] < horizon:
        ring.popleft()
