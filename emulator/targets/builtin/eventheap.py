"""A heap of timed events: entries ``(t, major, minor, kind, target, arg,
arg2)`` popped earliest ``t`` first, then least ``major``, then least
``minor`` (two words below 2^64: what :mod:`.engine` makes of an event's
identity; 0 and 0 where only time and push order count), then in the order
they were pushed. The engine's heap, and a switch data plane's timers
(:mod:`emulator.targets.builtin.dataplane`).

:meth:`EventHeap.pop_due` returns the first entry's ``target`` and leaves
its ``t``, ``kind``, ``arg`` and ``arg2`` in the attributes of those names
(no tuple per event).

This file is the reference, a :mod:`heapq` of tuples; ``eventheap.pyx`` is
the same heap on an array of C structs, what runs where
:mod:`emulator.speedups` built it (tests/unit/sim/test_eventheap.py drives
both with the same pushes and compares what they pop)."""

from __future__ import annotations

import heapq
from operator import index
from typing import Any

INF = float("inf")
WORD_LIMIT = 1 << 64


class EventHeap:
    """See the module docstring."""

    __slots__ = ("_entries", "_seq", "t", "kind", "arg", "arg2")

    def __init__(self) -> None:
        self._entries: list[tuple[float, int, int, int, int, Any, Any, Any]] = []
        self._seq = 0
        self.t = 0.0     # the last popped entry's
        self.kind = 0
        self.arg: Any = None
        self.arg2: Any = None

    def __len__(self) -> int:
        return len(self._entries)

    def push(self, t: float, major: int, minor: int, kind: int, target: Any, arg: Any,
             arg2: Any) -> None:
        if not (0 <= index(major) < WORD_LIMIT and 0 <= index(minor) < WORD_LIMIT):
            raise OverflowError(f"event order ({major}, {minor}) is not two words in 0 .. 2^64")
        self._seq += 1
        heapq.heappush(self._entries, (t, major, minor, self._seq, kind, target, arg, arg2))

    def pop_due(self, until: float) -> Any:
        """The first entry's ``target`` if it is due by ``until``, removed
        (its ``t``, ``kind``, ``arg`` and ``arg2`` in the attributes); else
        None."""
        entries = self._entries
        if not entries or entries[0][0] > until:
            return None
        self.t, _major, _minor, _seq, self.kind, target, self.arg, self.arg2 = \
            heapq.heappop(entries)
        return target

    def peek_time(self) -> float:
        """The first entry's time (``inf``: none)."""
        return self._entries[0][0] if self._entries else INF
