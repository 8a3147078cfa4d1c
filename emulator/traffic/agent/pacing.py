"""Pacing on a virtual clock, as a serialising port does it.

A :class:`Pacer` holds ``free_at``, the time its last frame's transmission
ends at ``rate_bps``. A frame may start when ``now >= free_at``; sending it
moves ``free_at`` on by ``(bytes + overhead) × 8 / rate``, counted from
``free_at`` itself, not from ``now``, so a late wake-up (the event loop
sleeps in steps of tens of microseconds) does not slow the long-run rate
down. The lag that may be caught up this way is bounded by ``max_lag_s``:
over any interval of length D a pacer sends at most
``rate × (D + max_lag_s)`` bits plus one frame, and an idle pacer does not
bank credit for a burst beyond that. Lag beyond ``max_lag_s`` is not
silently lost: ``given_up_s`` and ``given_up_events`` count it (a machine
falling behind must not look like a slower link). Only lag behind the
pacer's schedule counts: when its owner marked it idle (``free_at`` moved
to now: nothing to send) the gap was idle time; when its owner held it
(:meth:`resume_at`: a pause's end, a queue pair's slower pacer) the
schedule goes on from there.

The agent has one pacer per NIC (line rate) and one per queue pair (its
DCQCN rate); a frame of a queue pair needs both to be free.
"""

from __future__ import annotations

import math


class Pacer:
    """Virtual-clock rate limiter; ``rate_bps`` ``inf`` (or 0) means unlimited."""

    __slots__ = ("rate_bps", "overhead_bytes", "max_lag_s", "free_at", "_s_per_byte",
                 "given_up_s", "given_up_events", "_scheduled")

    def __init__(self, rate_bps: float, *, overhead_bytes: int = 0, max_lag_s: float = 1e-3,
                 start: float = 0.0) -> None:
        if max_lag_s < 0:
            raise ValueError("max_lag_s must not be negative")
        self.overhead_bytes = overhead_bytes
        self.max_lag_s = max_lag_s
        self.free_at = start
        self._scheduled = math.nan   # free_at as the last consume left it
        self.given_up_s = 0.0
        self.given_up_events = 0
        self.rate_bps = math.inf
        self._s_per_byte = 0.0
        self.set_rate(rate_bps)

    def set_rate(self, rate_bps: float) -> None:
        """Change the rate for frames sent from now on."""
        if rate_bps < 0 or math.isnan(rate_bps):
            raise ValueError(f"rate {rate_bps} b/s is not a rate")
        self.rate_bps = rate_bps if rate_bps > 0 else math.inf
        self._s_per_byte = 8.0 / self.rate_bps

    def ready(self, now: float) -> bool:
        return now >= self.free_at

    def consume(self, frame_bytes: int, now: float) -> float:
        """Account a frame that starts now; returns the new ``free_at``."""
        start = self.free_at
        floor = now - self.max_lag_s
        if start < floor:
            if start == self._scheduled:
                # behind a schedule of back-to-back frames: time lost, not idle
                self.given_up_s += floor - start
                self.given_up_events += 1
            start = floor
        self.free_at = self._scheduled = start + (frame_bytes + self.overhead_bytes) \
            * self._s_per_byte
        return self.free_at

    def resume_at(self, t: float) -> None:
        """The line is held idle until ``t`` (a pause's end, a slower pacer in
        front of it): frames are due from ``t`` on, and lag behind ``t`` that is
        given up counts."""
        if t > self.free_at:
            self.free_at = self._scheduled = t

    def duration_s(self, frame_bytes: int) -> float:
        """How long the frame takes at this pacer's rate."""
        return (frame_bytes + self.overhead_bytes) * self._s_per_byte
