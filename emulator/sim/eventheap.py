"""The engine's event heap: entries ``(t, order, kind, target, arg)`` popped
earliest ``t`` first, then least ``order`` (a non-negative int below 2^128,
what :mod:`.engine` makes of an event's identity), then in the order they
were pushed.

This file is the reference, a :mod:`heapq` of tuples; ``eventheap.pyx`` is
the same heap on an array of C structs, what runs where
:mod:`emulator.speedups` built it (tests/unit/sim/test_eventheap.py drives
both with the same pushes and compares what they pop)."""

from __future__ import annotations

import heapq
from typing import Any

INF = float("inf")


class EventHeap:
    """See the module docstring."""

    __slots__ = ("_entries", "_seq")

    def __init__(self) -> None:
        self._entries: list[tuple[float, int, int, int, Any, Any]] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._entries)

    def push(self, t: float, order: int, kind: int, target: Any, arg: Any) -> None:
        self._seq += 1
        heapq.heappush(self._entries, (t, order, self._seq, kind, target, arg))

    def pop_due(self, until: float) -> tuple[float, int, Any, Any] | None:
        """``(t, kind, target, arg)`` of the first entry if it is due by
        ``until``, removed; else None."""
        entries = self._entries
        if not entries or entries[0][0] > until:
            return None
        t, _order, _seq, kind, target, arg = heapq.heappop(entries)
        return t, kind, target, arg

    def peek_time(self) -> float:
        """The first entry's time (``inf``: none)."""
        return self._entries[0][0] if self._entries else INF
