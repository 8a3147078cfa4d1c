"""Lateness counted on the hot path: one dictionary addition an event (one
integer addition for an event on time), read as a
:class:`~emulator.fidelity.LatenessHistogram`.

A live switch measures every departure against when it was due and every
received frame's wait in the socket: two events a frame. Recording into a
histogram (bucket arithmetic, count, sum, max) costs about a microsecond a
time in Python; :class:`LatenessTally` only counts events per whole
microsecond (``counts``: µs -> events) and folds them into the histogram
when it is read (:meth:`~LatenessTally.histogram`, and what reads through
it). The histogram it gives is the one recording each event would have
built: same buckets, count, sum and max. Events on time (0 µs late, all of
them on the virtual clock) are only counted (``on_time``), added to
``counts[0]`` when read. Built by :mod:`emulator.speedups` (tally.pxd).
"""

from __future__ import annotations

from typing import Any

from emulator.fidelity import LatenessHistogram
from emulator.fidelity.lateness import bucket_of


class LatenessTally:
    """Lateness events per whole µs, folded into a histogram when read; the
    readers' side of :class:`~emulator.fidelity.LatenessHistogram`
    (``count``, ``max_us``, ``to_dict``, ``reset``) goes through it."""

    __slots__ = ("counts", "on_time", "_histogram")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}  # the hot path adds here (kept, never rebound)
        self.on_time = 0                  # events 0 µs late not yet in counts
        self._histogram = LatenessHistogram()

    def record_s(self, late_s: float) -> int:
        """Count one event ``late_s`` seconds late (≤ 0: on time); returns µs."""
        us = int(late_s * 1e6) if late_s > 0 else 0
        counts = self.counts
        counts[us] = counts.get(us, 0) + 1
        return us

    def histogram(self) -> LatenessHistogram:
        """Every event so far, as a histogram."""
        counts = self.counts
        if self.on_time:
            counts[0] = counts.get(0, 0) + self.on_time
            self.on_time = 0
        if counts:
            buckets: dict[int, int] = {}
            total = sum_us = 0
            for us, n in counts.items():
                index = bucket_of(us)
                buckets[index] = buckets.get(index, 0) + n
                total += n
                sum_us += us * n
            self._histogram.add(LatenessHistogram.from_dict(
                {"count": total, "sum_us": sum_us, "max_us": max(counts), "buckets": buckets}))
            counts.clear()
        return self._histogram

    @property
    def count(self) -> int:
        return self.histogram().count

    @property
    def max_us(self) -> int:
        return self.histogram().max_us

    def to_dict(self) -> dict[str, Any]:
        return self.histogram().to_dict()

    def reset(self) -> None:
        self.counts.clear()
        self.on_time = 0
        self._histogram.reset()
