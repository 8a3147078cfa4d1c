"""The traffic manager's queues: per egress port, one FIFO per priority.

What it decides:

- **Capacity** is not decided here: the switch's buffer (:mod:`.mmu`)
  admits a frame before it is queued (:meth:`PortQueues.enqueue`) or
  rejects it (:meth:`PortQueues.reject`, a tail drop). ``buffer_bytes`` is
  the port's static cap of each lossy queue the buffer applies (0: none).
  Lengths are ``EgressItem.length``, the packet's ingress length.
- **Service order**: strict priority, the highest priority number first, as
  BMv2's ``--priority-queues`` (queue N-1 is served first); FIFO within a
  queue; a queue paused by PFC is skipped.
- **Depths** given to egress, as BMv2 computes them: ``enq_qdepth`` = packets
  already in the queue when the packet joined it, ``deq_qdepth`` = packets
  left behind when it left.

Counters of one (port, priority) queue, :class:`QueueCounters`, and the
sums they obey at every instant (tests assert them)::

    received    = enqueued + tail_dropped
    enqueued    = dequeued + depth_packets
    dequeued    = egress_out + egress_dropped + recirculated
    egress_out  = tx_packets + tx_errors + in_flight

``received`` counts what ingress (or an egress clone) sent to the queue;
``egress_out`` what egress emitted, ``in_flight`` the part of it still
being serialised or propagating. ``ResetStats`` keeps the sums true: the
packets still queued or in flight stay counted (as received, enqueued and,
for those in flight, dequeued and egress_out).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import cython  # (its decorators: nothing in Python; a free list where compiled)

from emulator.targets.builtin.counter_series import CounterSeries
from emulator.targets.builtin.mmu import BufferSeries, SwitchBuffer


class QueueCounters:
    """Counters of one (port, priority) queue; see the module docstring."""

    __slots__ = ("received", "enqueued", "tail_dropped", "dequeued", "egress_out",
                 "egress_dropped", "recirculated", "tx_packets", "tx_bytes", "tx_errors",
                 "max_depth_packets", "max_depth_bytes", "pfc_rx", "pfc_tx")

    def __init__(self) -> None:
        self.reset(0, 0, 0)

    def reset(self, depth_packets: int, depth_bytes: int, in_flight: int) -> None:
        # Packets still queued or in flight count as received since the reset.
        self.received = self.enqueued = depth_packets + in_flight
        self.tail_dropped = 0
        self.dequeued = self.egress_out = in_flight
        self.egress_dropped = self.recirculated = 0
        self.tx_packets = self.tx_bytes = self.tx_errors = 0
        self.max_depth_packets = depth_packets
        self.max_depth_bytes = depth_bytes
        self.pfc_rx = self.pfc_tx = 0

    @property
    def in_flight(self) -> int:
        return self.egress_out - self.tx_packets - self.tx_errors

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__}
        out["in_flight"] = self.in_flight
        return out


@cython.freelist(64)
@cython.cclass
class QueueEntry:
    """A packet in an egress queue: its ``item``; the ``pipeline`` that ran
    its ingress (it runs its egress too); when it was queued (``enq_t``,
    simulated or loop seconds, and ``enq_us``, the pipeline's clock); the
    ingress ``account`` (:class:`~.mmu.PgAccount`, or None) charged for its
    bytes; the queue ``depth`` it found; its ``priority`` and ``length``."""

    __slots__ = ("item", "pipeline", "enq_t", "enq_us", "account", "depth", "priority",
                 "length")


class PortQueues:
    """The priority queues of one egress port: deques of
    :class:`QueueEntry`. ``nonempty`` has bit n set while queue n holds
    packets."""

    __slots__ = ("queues", "depth_bytes", "counters", "nonempty", "buffer_bytes")

    def __init__(self, priority_queues: int, buffer_bytes: int) -> None:
        self.queues: list[deque[tuple]] = [deque() for _ in range(priority_queues)]
        self.depth_bytes = [0] * priority_queues
        self.counters = [QueueCounters() for _ in range(priority_queues)]
        self.nonempty = 0
        self.buffer_bytes = buffer_bytes

    def reject(self, priority: int) -> None:
        """Count a frame the buffer did not admit to queue ``priority``."""
        counters = self.counters[priority]
        counters.received += 1
        counters.tail_dropped += 1

    def enqueue(self, priority: int, length: int, item: Any, pipeline: Any, enq_t: float,
                enq_us: float | None, account: Any) -> None:
        """Queue a packet of ``length`` bytes on ``priority`` (admitted by
        the buffer; the caller checked ``priority`` is in range)."""
        counters = self.counters[priority]
        counters.received += 1
        depth_bytes = self.depth_bytes[priority] + length
        queue = self.queues[priority]
        depth = len(queue)
        entry = QueueEntry.__new__(QueueEntry)
        entry.item = item
        entry.pipeline = pipeline
        entry.enq_t = enq_t
        entry.enq_us = enq_us
        entry.account = account
        entry.depth = depth
        entry.priority = priority
        entry.length = length
        queue.append(entry)
        self.depth_bytes[priority] = depth_bytes
        counters.enqueued += 1
        if depth >= counters.max_depth_packets:
            counters.max_depth_packets = depth + 1
        if depth_bytes > counters.max_depth_bytes:
            counters.max_depth_bytes = depth_bytes
        self.nonempty |= 1 << priority

    def dequeue(self, paused_mask: int) -> QueueEntry | None:
        """The entry of the next packet to send, or None when every
        non-empty queue is paused."""
        eligible = self.nonempty & ~paused_mask
        if not eligible:
            return None
        priority = len(self.queues) - 1  # down to the highest eligible (in C when compiled)
        while not eligible >> priority & 1:
            priority -= 1
        queue = self.queues[priority]
        entry = queue.popleft()
        self.depth_bytes[priority] -= entry.length
        if not queue:
            self.nonempty &= ~(1 << priority)
        qc = self.counters[priority]
        qc.dequeued += 1
        return entry

    def depth_packets(self, priority: int) -> int:
        return len(self.queues[priority])


# ---- queue-depth time series ---------------------------------------------------------
SAMPLE_INTERVAL_S = 0.010   # default sampling period of the queue series
SERIES_WINDOW_S = 60.0      # samples older than this (behind the newest) are forgotten


class QueueSeries:
    """A bounded time series of queue depths, per (port, priority).

    :meth:`sample` (the data plane calls it every ``interval_s``) records
    ``(t, depth_packets, depth_bytes, paused)`` for every queue that holds
    packets, is paused, or was active since the previous sample: it received
    a packet (``QueueCounters.received`` moved), spent time paused
    (``paused`` is then true even if the pause already ended) or was busy
    at the previous sample (so a queue that drains gets one last sample
    showing it empty). It reads
    counters the data plane keeps anyway: no per-packet cost. Samples older
    than ``window_s`` behind the newest are dropped. Given the switch's
    buffer, the same sample records its occupancy in ``buffer``
    (:class:`~.mmu.BufferSeries`), and ``counts`` the ports' cumulative
    counters (:class:`~.counter_series.CounterSeries`)."""

    __slots__ = ("interval_s", "window_s", "next_t", "series", "_seen", "buffer", "counts")

    def __init__(self, interval_s: float = SAMPLE_INTERVAL_S,
                 window_s: float = SERIES_WINDOW_S) -> None:
        self.interval_s = interval_s
        self.window_s = window_s
        self.next_t = 0.0
        self.series: dict[tuple[int, int], deque[tuple[float, int, int, bool]]] = {}
        # (port, priority) -> (received, paused_s, busy) at the previous sample
        self._seen: dict[tuple[int, int], tuple[int, float]] = {}
        self.buffer = BufferSeries(window_s)
        self.counts = CounterSeries(window_s)

    def set_interval(self, interval_s: float) -> None:
        if not isinstance(interval_s, (int, float)) or isinstance(interval_s, bool) \
                or not 0.0001 <= interval_s <= 10.0:
            raise ValueError(f"sample interval must be 0.1 ms .. 10 s, got {interval_s!r}")
        self.interval_s = float(interval_s)
        self.next_t = 0.0

    def due(self, now: float) -> bool:
        return now >= self.next_t

    def sample(self, now: float, ports: Any, buffer: SwitchBuffer | None = None) -> None:
        """Record one sample of ``ports`` (``{number: PortState}``) at ``now``,
        and of ``buffer`` and the ports' ingress groups when given."""
        if buffer is not None:
            self.buffer.sample(now, buffer, ports)
        self.counts.sample(now, ports)
        next_t = self.next_t + self.interval_s
        self.next_t = next_t if next_t > now else now + self.interval_s
        seen = self._seen
        series = self.series
        horizon = now - self.window_s
        for number, ps in ports.items():
            tm = ps.tm
            pfc = ps.pfc
            mask = pfc.mask
            busy_mask = tm.nonempty | mask
            paused_totals = pfc.paused_s
            for prio, qc in enumerate(tm.counters):
                key = (number, prio)
                prev = seen.get(key)
                busy = bool(busy_mask >> prio & 1)
                if not busy and prev is not None and not prev[2] and prev[0] == qc.received \
                        and prev[1] == paused_totals[prio]:
                    continue  # idle then and now, nothing arrived, no pause since
                paused_s = pfc.total_paused_s(prio, now)
                state = (qc.received, paused_s, busy)
                if not busy and (prev is None or prev == state):
                    if prev is None:
                        seen[key] = state
                    continue
                seen[key] = state
                paused = bool(mask >> prio & 1) or (prev is not None and paused_s > prev[1])
                ring = series.get(key)
                if ring is None:
                    ring = series[key] = deque()
                ring.append((now, len(tm.queues[prio]), tm.depth_bytes[prio], paused))
                while ring[0][0] < horizon:
                    ring.popleft()

    def query(self, ports: Any = None, since: float | None = None) -> list[dict[str, Any]]:
        """``[{"port", "priority", "samples": [[t, packets, bytes, paused], ...]}]``,
        sorted, samples after ``since`` only."""
        out = []
        wanted = None if ports is None else set(ports)
        for (number, prio), ring in sorted(self.series.items()):
            if wanted is not None and number not in wanted:
                continue
            rows = [list(s) for s in ring if since is None or s[0] > since]
            if rows:
                out.append({"port": number, "priority": prio, "samples": rows})
        return out
