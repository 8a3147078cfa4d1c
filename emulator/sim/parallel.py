"""One simulated fabric over several MPI ranks: the frames that cross ranks
and the conservative synchronisation that keeps every rank's clock exact.

Each rank runs its part of the fabric (:mod:`.partition`) on its own
:class:`~.engine.Engine`. A link end whose peer runs on another rank sends
into an :class:`Outbox` instead of its engine; the frames are exchanged in
one batch per window and land on the other rank at the time they were sent
for, in the same order as on one engine (:mod:`.engine`'s order keys).

**Windows** (:func:`run_windows`). Ranks agree on the earliest event any of
them has left (one ``allreduce``, the global minimum T), then each runs
every event before T + L, where L, the lookahead, is the least delay of the
links cut between ranks: a frame sent at or after T crosses to another rank
no sooner than T + L, so nothing a rank has not yet received can fall inside
the window. Then the ranks exchange what they sent (one ``alltoall``) and
start again. A global minimum rather than null messages: the fabrics here
are small-diameter (every rank talks to nearly every other through the
spines), where a null message per pair per window would cost more than one
collective, and the windows skip idle stretches at once (T jumps to the next
event anywhere). The last window runs up to the run's end, inclusive, as
one engine does.

**Failures and Ctrl-C.** A rank whose events raise, or that is interrupted
(SIGINT or SIGTERM set a flag while the windows run, so no rank leaves a
collective half-way; so does ``stop_requested()``, how ``aifabric run
--ranks`` passes on a Ctrl-C, :mod:`emulator.run.mpi`), says so in the next
``allreduce`` (a negative time); then every rank stops: an error becomes
:class:`RankError` on every rank with the failing rank's message, an
interrupt a partial run everywhere.
"""

from __future__ import annotations

import signal
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from emulator.sim.engine import Engine, SimError

_FAILED = -1.0
_INTERRUPTED = -2.0


class RankError(SimError):
    """Another rank (or this one) failed: the run stops on every rank."""


class Outbox(Engine):
    """What this rank's link ends send to one other rank until the next
    exchange: ``(time, end key, frames that end has sent, item, tag)``. It stands
    in for the engine of those ends: an :class:`Engine` (a link end's type
    says so, compiled) of which only ``clock`` and ``deliver`` are used."""

    __slots__ = ("rank", "frames")

    def __init__(self, rank: int, clock: Any) -> None:
        super().__init__(clock)
        self.rank = rank
        self.frames: list[tuple[float, int, int, Any, Any]] = []

    def deliver(self, when: float, end: Any, item: Any, tag: Any) -> None:
        self.frames.append((when, end.key, end.sent, item, tag))


@dataclass
class WindowStats:
    """How the windows went on this rank (results.json's ``sim.ranks``)."""

    windows: int = 0
    sent_frames: int = 0            # frames this rank sent to others
    wait_s: float = 0.0             # wall time in the exchanges and the agreements
    interrupted: bool = False
    end_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"windows": self.windows, "sent_frames": self.sent_frames,
                "wait_s": round(self.wait_s, 3)}


@dataclass
class _Flag:
    raised: bool = False
    previous: Any = field(default=None, repr=False)


def run_windows(engine: Engine, comm: Any, until: float, lookahead_s: float,
                outboxes: dict[int, Outbox], ends_by_key: dict[int, Any], *,
                on_window: Callable[[float], None] | None = None,
                stop_requested: Callable[[], bool] | None = None) -> WindowStats:
    """Run this rank's engine to ``until`` in step with the other ranks of
    ``comm`` (see the module docstring); ``on_window(T)`` after each
    agreement (T: the time every rank has reached)."""
    from mpi4py import MPI

    size = comm.Get_size()
    stats = WindowStats()
    flag = _Flag()

    def on_sigint(_signum: int, _frame: Any) -> None:
        flag.raised = True

    flag.previous = signal.signal(signal.SIGINT, on_sigint)
    previous_term = signal.signal(signal.SIGTERM, on_sigint)
    failure: str | None = None
    try:
        while True:
            started = time.perf_counter()
            send: list[list[Any]] = [[] for _ in range(size)]
            for rank, box in outboxes.items():
                if box.frames:
                    send[rank] = box.frames
                    stats.sent_frames += len(box.frames)
                    box.frames = []
            for frames in comm.alltoall(send):
                for when, key, sent, item, tag in frames:
                    engine.deliver_numbered(when, ends_by_key[key], item, tag, sent)
            mine = engine.next_event_time()
            if failure is not None:
                mine = _FAILED
            elif flag.raised or (stop_requested is not None and stop_requested()):
                mine = _INTERRUPTED
            t = comm.allreduce(mine, op=MPI.MIN)
            stats.wait_s += time.perf_counter() - started
            if t < 0:
                messages = comm.allgather(failure)
                if t == _FAILED:
                    rank, text = next((r, m) for r, m in enumerate(messages) if m is not None)
                    raise RankError(f"rank {rank}: {text}")
                stats.interrupted = True
                stats.end_s = engine.clock.now
                return stats
            if on_window is not None:
                on_window(min(t, until))
            if t > until:
                stats.end_s = until
                engine.clock.now = max(engine.clock.now, until)
                return stats
            stats.windows += 1
            end = t + lookahead_s
            try:
                if end > until:
                    engine.run(until)
                else:
                    engine.run_before(end)
            except Exception as exc:  # told to every rank at the next agreement
                failure = f"{type(exc).__name__}: {exc} ({_where(exc)})"
    finally:
        signal.signal(signal.SIGINT, flag.previous)
        signal.signal(signal.SIGTERM, previous_term)


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "no traceback"
    last = frames[-1]
    return f"{last.filename.rsplit('/', 2)[-1]}:{last.lineno} in {last.name}"
