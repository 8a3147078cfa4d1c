"""PFC honouring at a host NIC (IEEE 802.1Qbb, clause 36.2 and Annex N).

A PFC frame received on a NIC pauses the NIC's transmission of each
priority it enables (and the NIC honours) for ``quanta × 512 / line_rate``
seconds from its arrival. A later frame restarts the timer (it does not
add to it); zero quanta resume at once. A frame being sent when the pause
arrives finishes; the pause applies from the next frame on.

:class:`PauseState` keeps one NIC's eight priorities: ``mask`` (bit n set
while priority n is paused), when each pause ends, and how long each
priority has been paused, counting the running part of a pause still on.
It has no timers of its own: the NIC calls :meth:`expire` before it sends
and asks :meth:`next_expiry` when to wake up.

Each pause that ends (XON, or its time ran out) is kept as an interval
``(priority, start, end)`` in ``intervals``, at most ``max_intervals`` of
them; later ones are only counted in ``intervals_dropped`` (paused time
still counts them). :meth:`intervals_by_priority` adds the pauses still on.
"""

from __future__ import annotations

import math

from emulator.traffic.layers.pfc import NUM_PRIORITIES, pause_duration_s

# 20 000 intervals: a pause storm of a few hundred per second for a minute.
MAX_PAUSE_INTERVALS = 20_000


class PauseState:
    """Pause timers and paused-time counters of one NIC."""

    __slots__ = ("line_rate_bps", "honoured_mask", "mask", "until", "since", "paused_s",
                 "pauses", "resumes", "frames", "intervals", "max_intervals",
                 "intervals_dropped", "resumed_at", "resumed_mask", "ended")

    def __init__(self, line_rate_bps: float, honoured: tuple[int, ...] = tuple(range(8)),
                 max_intervals: int = MAX_PAUSE_INTERVALS) -> None:
        self.line_rate_bps = line_rate_bps
        self.honoured_mask = 0
        for priority in honoured:
            if not 0 <= priority < NUM_PRIORITIES:
                raise ValueError(f"PFC priority {priority} is not in 0..7")
            self.honoured_mask |= 1 << priority
        self.mask = 0
        self.resumed_at = -math.inf  # when the latest pause ended (any priority)
        self.resumed_mask = 0        # priorities resumed since the owner last looked
        self.ended = [-math.inf] * NUM_PRIORITIES  # when each priority's latest pause ended
        self.until = [0.0] * NUM_PRIORITIES
        self.since = [0.0] * NUM_PRIORITIES
        self.paused_s = [0.0] * NUM_PRIORITIES
        self.pauses = [0] * NUM_PRIORITIES   # XOFF frames (quanta > 0) acted on
        self.resumes = [0] * NUM_PRIORITIES  # XON frames (quanta 0) acted on
        self.frames = 0
        self.intervals: list[tuple[int, float, float]] = []  # (priority, start, end)
        self.max_intervals = max_intervals
        self.intervals_dropped = 0

    def on_frame(self, quanta_by_priority: dict[int, int], now: float) -> None:
        """Act on a received PFC frame's enabled priorities."""
        self.frames += 1
        for priority, quanta in quanta_by_priority.items():
            if not self.honoured_mask >> priority & 1:
                continue
            if quanta == 0:
                self.resumes[priority] += 1
                self._resume(priority, now)
                continue
            self.pauses[priority] += 1
            self.until[priority] = now + pause_duration_s(quanta, self.line_rate_bps)
            bit = 1 << priority
            if not self.mask & bit:
                self.mask |= bit
                self.since[priority] = now

    def expire(self, now: float) -> None:
        """Resume every priority whose pause has run out by ``now``."""
        mask = self.mask
        while mask:
            priority = (mask & -mask).bit_length() - 1
            mask &= mask - 1
            if self.until[priority] <= now:
                self._resume(priority, self.until[priority])

    def next_expiry(self) -> float:
        """When the first pause on now ends (inf: none is on)."""
        mask = self.mask
        t = math.inf
        if mask:
            until = self.until
            for p in range(NUM_PRIORITIES):
                if mask >> p & 1 and until[p] < t:
                    t = until[p]
        return t

    def paused(self, priority: int) -> bool:
        return bool(self.mask >> priority & 1)

    def total_paused_s(self, now: float) -> list[float]:
        return [self.paused_s[p] + (max(0.0, now - self.since[p]) if self.mask >> p & 1 else 0.0)
                for p in range(NUM_PRIORITIES)]

    def total_paused_s_of(self, priority: int, now: float) -> float:
        """``total_paused_s(now)[priority]``, without the other seven."""
        return self.paused_s[priority] + (max(0.0, now - self.since[priority])
                                          if self.mask >> priority & 1 else 0.0)

    def intervals_by_priority(self, now: float) -> list[list[tuple[float, float]]]:
        """``(start, end)`` of every recorded pause, per priority, in time
        order; a pause still on ends at ``now``."""
        out: list[list[tuple[float, float]]] = [[] for _ in range(NUM_PRIORITIES)]
        for priority, start, end in self.intervals:
            out[priority].append((start, end))
        for priority in range(NUM_PRIORITIES):
            if self.mask >> priority & 1:
                out[priority].append((self.since[priority], max(now, self.since[priority])))
        return out

    def _resume(self, priority: int, at: float) -> None:
        bit = 1 << priority
        if self.mask & bit:
            self.mask &= ~bit
            since = self.since[priority]
            end = max(at, since)
            self.paused_s[priority] += end - since
            if end > self.resumed_at:
                self.resumed_at = end
            self.ended[priority] = end
            self.resumed_mask |= bit
            if len(self.intervals) < self.max_intervals:
                self.intervals.append((priority, since, end))
            else:
                self.intervals_dropped += 1
