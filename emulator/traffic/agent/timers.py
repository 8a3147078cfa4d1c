"""The agent's timer heap: callbacks due at points of (monotonic) time.

One heap serves every timer of one agent (workload start times, DCQCN
timers, retransmission timeouts, the stop time). An entry is a small list
``[when, seq, callback, alive]``; ``seq`` keeps equal times in the order
they were scheduled, so a run is deterministic under a virtual clock.
Cancelling marks the entry dead; dead entries are dropped when they reach
the top of the heap.
"""

from __future__ import annotations

import heapq
import math
from typing import Callable

INF = math.inf
Callback = Callable[[float], None]


class Timer:
    """Handle of a scheduled callback; ``cancel()`` keeps it from running."""

    __slots__ = ("when", "_entry")

    def __init__(self, when: float, entry: list) -> None:
        self.when = when
        self._entry = entry

    @property
    def alive(self) -> bool:
        return self._entry[3]

    def cancel(self) -> None:
        self._entry[3] = False


class TimerHeap:
    """Callbacks ``fn(now)`` run by :meth:`run_due` once their time has come."""

    __slots__ = ("heap", "_seq")

    def __init__(self) -> None:
        # ``[when, seq, callback, alive]`` entries; read-only outside this
        # class (the agent peeks at the top to skip a call when nothing is due)
        self.heap: list[list] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self.heap)

    def schedule(self, when: float, callback: Callback) -> Timer:
        if math.isnan(when):
            raise ValueError("timer time is NaN")
        self._seq += 1
        entry = [when, self._seq, callback, True]
        heapq.heappush(self.heap, entry)
        return Timer(when, entry)

    def next_time(self) -> float:
        """When the earliest live timer is due (``inf`` when none is)."""
        heap = self.heap
        while heap and not heap[0][3]:
            heapq.heappop(heap)
        return heap[0][0] if heap else INF

    def run_due(self, now: float) -> int:
        """Run every live callback due at or before ``now``, earliest first,
        each with its own due time; returns how many ran. Callbacks may
        schedule more timers (those due by ``now`` run in this call too)."""
        heap = self.heap
        ran = 0
        while heap and heap[0][0] <= now:
            when, _seq, callback, alive = heapq.heappop(heap)
            if alive:
                callback(when)
                ran += 1
        return ran
