"""The agent's work graph: messages posted when the data they depend on has
arrived (what a collective library does on each GPU).

A graph message (:class:`~emulator.traffic.agent.config.MessageSpec` with
``after_rx``, ``delay_s`` or ``tag``) becomes **ready** when

- the workload's start + ``at_s`` has come, and
- for every ``[qpn, n]`` of ``after_rx``, the responder QP ``qpn`` of this
  agent has received at least ``n`` whole messages (counted from the
  agent's start; RC delivers a QP's messages in order, so "n received"
  means "the n-th message sent to us on that QP is here"),

and is **posted** ``delay_s`` after it became ready (compute time), but
never before the graph messages listed before it on the same QP: a QP's
send queue is FIFO, as an application posts its work requests in order.
So the k-th graph message of a QP is the k-th message its peer receives,
which is how the runner matches the receivers' records to the steps of a
collective.

A message may also wait for earlier graph entries of this agent
(``after``: their indices in the graph) to be **done**: a message is done
when posted; an entry with op ``compute`` posts nothing and is done
``delay_s`` after it became ready (a GPU's compute, as a training step's
layers: what comes next on that GPU, or what the GPU sends then, waits for
it). Its record's ``posted_at`` is then when it was done.

Arrivals are learnt from the agent's :class:`~.stats.MessageLog` (its
``receive`` records); posting happens from a timer, never inside the
frame handler that delivered the data. :meth:`WorkGraph.records` gives one
record per graph message: its tag, QP, when it became ready and was posted
(Unix time) and the message id (null until posted).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Sequence

from emulator.traffic.agent.config import COMPUTE_OP, MessageSpec
from emulator.traffic.agent.timers import TimerHeap

PostFn = Callable[[int, str, int, float], int | None]


class _Entry:
    __slots__ = ("spec", "waiting", "ready_at", "posted_at", "msg_id", "failed", "then")

    def __init__(self, spec: MessageSpec) -> None:
        self.spec = spec
        # the dependencies, and the start time
        self.waiting = len(spec.after_rx) + len(spec.after) + 1
        self.then: list[_Entry] = []  # entries waiting for this one to be done
        self.ready_at: float | None = None
        self.posted_at: float | None = None
        self.msg_id: int | None = None
        self.failed: str | None = None


class WorkGraph:
    """Graph messages of one agent (see the module docstring).

    ``post(qpn, op, size, now)`` posts a message and returns its id (raises
    when the QP cannot take it: the entry then records the error).
    """

    def __init__(self, specs: Sequence[MessageSpec], timers: TimerHeap, start: float,
                 post: PostFn, *, wall_offset: float = 0.0) -> None:
        self.timers = timers
        self.start = start
        self.wall = wall_offset
        self._post = post
        self.entries = [_Entry(spec) for spec in specs]
        self._fifo: dict[int, list[_Entry]] = defaultdict(list)
        self._next: dict[int, int] = {}
        self._rx: dict[int, int] = defaultdict(int)
        # responder qpn -> [(count, entry)], sorted by count, consumed from the front
        self._waiting: dict[int, list[tuple[int, _Entry]]] = defaultdict(list)
        for entry in self.entries:
            spec = entry.spec
            for index in spec.after:
                self.entries[index].then.append(entry)
            if spec.op != COMPUTE_OP:
                self._fifo[spec.qp].append(entry)
                self._next.setdefault(spec.qp, 0)
            for qpn, count in spec.after_rx:
                self._waiting[qpn].append((count, entry))
            self.timers.schedule(start + spec.at_s, lambda t, e=entry: self._satisfy(e, t))
        for waiters in self._waiting.values():
            waiters.sort(key=lambda item: item[0])
        self._heads = {qpn: 0 for qpn in self._waiting}

    def __len__(self) -> int:
        return len(self.entries)

    def on_log(self, kind: str, record: dict[str, Any]) -> None:
        """A :class:`~.stats.MessageLog` listener: counts whole messages received per QP."""
        if kind != "receive":
            return
        qpn = record["qpn"]
        self._rx[qpn] += 1
        waiters = self._waiting.get(qpn)
        if not waiters:
            return
        have = self._rx[qpn]
        head = self._heads[qpn]
        now = record["last_at"] - self.wall
        while head < len(waiters) and waiters[head][0] <= have:
            self._satisfy(waiters[head][1], now)
            head += 1
        self._heads[qpn] = head

    def _satisfy(self, entry: _Entry, now: float) -> None:
        entry.waiting -= 1
        if entry.waiting:
            return
        entry.ready_at = now
        # post from a timer: never inside the frame handler that delivered the data
        self.timers.schedule(now + entry.spec.delay_s, lambda t, e=entry: self._release(e, t))

    def _done(self, entry: _Entry, now: float) -> None:
        for waiter in entry.then:
            self._satisfy(waiter, now)

    def _release(self, entry: _Entry, now: float) -> None:
        entry.posted_at = now  # provisional: marks it releasable
        if entry.spec.op == COMPUTE_OP:
            self._done(entry, now)
            return
        qpn = entry.spec.qp
        fifo = self._fifo[qpn]
        index = self._next[qpn]
        while index < len(fifo) and fifo[index].posted_at is not None:
            head = fifo[index]
            head.posted_at = now
            try:
                head.msg_id = self._post(qpn, head.spec.op, head.spec.size_bytes, now)
            except Exception as exc:  # the QP is in error: nothing more goes on it
                head.failed = str(exc)
            else:
                self._done(head, now)
            index += 1
        self._next[qpn] = index

    def pending(self) -> int:
        """Graph messages not posted yet."""
        return sum(1 for e in self.entries if e.failed is None and (
            e.msg_id is None if e.spec.op != COMPUTE_OP else e.posted_at is None))

    def records(self) -> list[dict[str, Any]]:
        wall = self.wall
        return [{"tag": e.spec.tag, "qp": e.spec.qp, "size": e.spec.size_bytes,
                 "ready_at": None if e.ready_at is None else e.ready_at + wall,
                 "posted_at": None if e.posted_at is None or (
                     e.msg_id is None and e.spec.op != COMPUTE_OP) else e.posted_at + wall,
                 "id": e.msg_id, "error": e.failed}
                for e in self.entries]
