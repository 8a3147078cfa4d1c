"""The virtual clock and the one event heap of a simulated fabric.

Everything in a sim run happens at a point of simulated time, in one
thread, in the order of one heap: frame arrivals on links, switch data-plane
deadlines (departures, pause expiries), NIC agent wake-ups and the runner's
own calls (events, feeding fed flows, queue sampling).

**Order at equal times.** Events at one instant run in an order that
follows from what they are, never from when they were put on the heap, so
that the same fabric split over several engines (one per MPI rank,
:mod:`.parallel`) runs every component's events in the same order as one
engine does: first the runner's calls (by their ``key``, then their
repetition), then frame deliveries (by the sending link end's ``key``, then
the number of frames that end has sent), then component wake-ups (by the
component's ``key``). The fabric gives every component and link end a key
unique in the run (:class:`~.fabric.SimFabric`); objects left at the default
key 0 still run in a repeatable order (a heap sequence number breaks the
remaining ties), which is all a run on one engine needs.

Components are woken, not polled. A :class:`Component` says when it next
has work (``next_time()``) and does it (``wake(now)``); the engine keeps at
most one live wake-up per component in the heap (a stale one, superseded
by an earlier wake-up, is skipped when it surfaces) and asks for the next
time after every wake-up and every frame delivered to it. A switch's
:class:`~emulator.targets.builtin.dataplane.DataPlane` and a NIC agent's
:class:`~emulator.traffic.agent.agent.Agent` are both driven this way: they
already take ``now`` everywhere and never read a clock of their own here.

The clock: :class:`SimClock` is what the components that want a clock
(the data plane's counters, the pipeline's timestamps, pcap records) call;
the engine moves it, nothing else does.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

from emulator.targets.builtin.eventheap import EventHeap

INF = math.inf
# Wake-ups at one instant that change nothing before the engine calls it a
# livelock (a component that says "now" forever).
MAX_SAME_TIME_WAKEUPS = 100_000

_WAKE, _DELIVER, _CALL = 0, 1, 2
# The order key of an event (see the module docstring), two 64-bit words the
# heap compares in turn: the major word is the kind (calls, deliveries,
# wake-ups: bits 60 and 61) and the key of what it belongs to (below 2^60);
# the minor word a count within that key.
KEY_LIMIT = 1 << 60
_CALL_MAJOR = 0
_DELIVER_MAJOR = 1 << 60
_WAKE_MAJOR = 2 << 60
# Calls made without a key get keys from here on, after every named one.
CALL_KEYS_UNNAMED = 1 << 30


class SimClock:
    """Simulated seconds since the run's start; call it for the time."""

    __slots__ = ("now",)

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def us(self) -> float:
        """The time in microseconds (the P4 pipeline's clock)."""
        return self.now * 1e6

    def ns(self) -> int:
        """The time in whole nanoseconds (pcap timestamps)."""
        return round(self.now * 1e9)


class Component:
    """Something the engine wakes: ``next_time()`` (INF: nothing planned;
    at or before now: at once) and ``wake(now)``; ``key`` orders its
    wake-ups among others at the same instant."""

    __slots__ = ("wake_at", "name", "order")

    def __init__(self, name: str, key: int = 0) -> None:
        self.name = name
        self.wake_at = INF  # the time of this component's live heap entry
        self.order = _WAKE_MAJOR + check_key(key)

    def next_time(self) -> float:
        raise NotImplementedError

    def wake(self, now: float) -> None:
        raise NotImplementedError


class Landing:
    """What the engine delivers to (a link's end, :mod:`.links`):
    ``land(item, tag, now)``; then ``peer_node``, the component that received,
    is rescheduled. ``key`` and ``sent`` order deliveries at one instant
    (:meth:`Engine.deliver`)."""

    __slots__ = ("peer_node", "order", "sent")

    def __init__(self, key: int = 0) -> None:
        self.peer_node: Component | None = None
        self.order = _DELIVER_MAJOR + check_key(key)
        self.sent = 0

    def land(self, item: Any, tag: Any, now: float) -> None:
        raise NotImplementedError


def check_key(key: int) -> int:
    """``key`` if it can order events (0 .. 2^60 - 1), else ValueError."""
    if not 0 <= key < KEY_LIMIT:
        raise ValueError(f"event key {key!r} is not in 0 .. 2^60 - 1")
    return key


class SimError(RuntimeError):
    """The simulation cannot go on (a livelock, a component that failed)."""


class Engine:
    """The event heap and the clock (see the module docstring)."""

    def __init__(self, clock: SimClock | None = None) -> None:
        self.clock = clock or SimClock()
        # (time, major, minor, kind, target, arg, None): the order words as the
        # module docstring says; the heap breaks ties between objects that
        # share a key in the order they were pushed.
        self._heap = EventHeap()
        self._calls = 0          # keys of calls made without one
        self.events = 0          # heap entries run (stale wake-ups not counted)
        self.deliveries = 0      # frames handed over at the far end of a link
        self.wall_s = 0.0        # wall time spent in run()
        self.cpu_s = 0.0         # this process's CPU time spent in run() (a busy machine
                                 # stretches wall time, much less this)

    # -- scheduling ------------------------------------------------------------------
    def schedule(self, component: Component) -> None:
        """Make sure ``component`` is woken at its ``next_time()``."""
        t = component.next_time()
        if t < component.wake_at:
            now = self.clock.now
            if t < now:
                t = now
            component.wake_at = t
            self._heap.push(t, component.order, 0, _WAKE, component, None, None)

    def deliver(self, when: float, end: Any, item: Any, tag: Any) -> None:
        """At ``when``, call ``end.land(item, tag, when)`` (``tag``: what the
        sender says of the item, a link's epoch), then reschedule
        ``end.peer_node`` (the component that received). ``end``'s key and
        ``end.sent`` (the frames that end has sent, this one included) order
        it among deliveries at the same instant."""
        self._heap.push(when, end.order, end.sent, _DELIVER, end, item, tag)

    def deliver_numbered(self, when: float, end: Any, item: Any, tag: Any, sent: int) -> None:
        """:meth:`deliver` for a frame another engine's copy of ``end`` sent
        as its ``sent``-th (a frame that crossed MPI ranks)."""
        self._heap.push(when, end.order, sent, _DELIVER, end, item, tag)

    def call_at(self, when: float, fn: Callable[[float], None], *, key: int | None = None,
                count: int = 0) -> None:
        """Run ``fn(now)`` at ``when`` (now, if that is past). Calls at one
        instant run in the order of ``key`` (default: a new key, after every
        key given so far), then of ``count``."""
        now = self.clock.now
        if key is None:
            key = self._new_call_key()
        self._heap.push(when if when > now else now, _CALL_MAJOR + check_key(key), count, _CALL,
                        fn, None, None)

    def every(self, period_s: float, fn: Callable[[float], bool | None], *,
              start: float | None = None, key: int | None = None) -> None:
        """Run ``fn(now)`` every ``period_s`` from ``start`` (default now) on,
        until it returns False; ``key`` as for :meth:`call_at`."""
        if not period_s > 0:
            raise ValueError(f"period {period_s!r} s is not positive")
        first = self.clock.now if start is None else start
        if key is None:
            key = self._new_call_key()

        def tick(now: float, k: int = 0) -> None:
            if fn(now) is False:
                return
            self.call_at(first + (k + 1) * period_s, lambda t: tick(t, k + 1), key=key,
                         count=k + 1)
        self.call_at(first, tick, key=key)

    def _new_call_key(self) -> int:
        self._calls += 1
        return CALL_KEYS_UNNAMED + self._calls

    def next_event_time(self) -> float:
        """The time of the earliest event on the heap (INF: none)."""
        return self._heap.peek_time()

    # -- running ---------------------------------------------------------------------
    def run(self, until: float, *, on_progress: Callable[[float], None] | None = None,
            progress_every: int = 20_000) -> float:
        """Run every event up to ``until`` (simulated seconds) inclusive;
        returns the time reached (``until``)."""
        return self._run(until, True, on_progress, progress_every)

    def run_before(self, end: float) -> float:
        """Run every event strictly before ``end``, leaving the clock at the
        last one's time; returns it."""
        return self._run(math.nextafter(end, -INF), False, None, 1 << 62)

    def _run(self, until: float, advance: bool, on_progress: Callable[[float], None] | None,
             progress_every: int) -> float:
        clock = self.clock
        heap = self._heap
        wall = time.perf_counter()
        cpu = time.process_time()
        events = self.events
        same_time = 0
        last_t = -INF
        countdown = progress_every
        try:
            while True:
                target = heap.pop_due(until)
                if target is None:
                    break
                t = heap.t
                kind = heap.kind
                if kind == _WAKE:
                    component = target
                    if component.wake_at != t:
                        continue  # superseded by an earlier wake-up
                    component.wake_at = INF
                    clock.now = t
                    component.wake(t)
                    self.schedule(component)
                elif kind == _DELIVER:
                    clock.now = t
                    end = target
                    # The frame out of the heap first: this local is then its
                    # only holder besides whoever takes it (land lends it
                    # on, see DataPlane.rx and the compiled driver's
                    # _rewrite_out), and drops it after, unread.
                    item = heap.arg
                    heap.arg = None
                    end.land(item, heap.arg2, t)
                    item = None
                    self.deliveries += 1
                    self.schedule(end.peer_node)
                else:
                    clock.now = t
                    target(t)
                events += 1
                if t == last_t:
                    same_time += 1
                    if same_time > MAX_SAME_TIME_WAKEUPS:
                        raise SimError(f"livelock at t={t:.9f} s: more than "
                                       f"{MAX_SAME_TIME_WAKEUPS} events without time moving")
                else:
                    same_time = 0
                    last_t = t
                countdown -= 1
                if not countdown:
                    countdown = progress_every
                    if on_progress is not None:
                        self.events = events
                        on_progress(t)
            if advance and clock.now < until and until < INF:
                clock.now = until
        finally:
            self.events = events
            self.wall_s += time.perf_counter() - wall
            self.cpu_s += time.process_time() - cpu
        return clock.now
