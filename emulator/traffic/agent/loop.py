"""The agent's real-time event loop: one thread, epoll on the NIC sockets
(and the control channel), the agent's timers and pacers for the timeout.

Each turn: run the agent (due timers, sends), ask it when it next needs to
run, wait for that long or until a socket is readable, then drain each
readable NIC socket (up to ``rx_batch`` frames, each stamped with the clock
as it is read, and for at most ``rx_batch_s``, so that a burst of received
frames does not hold back sends that fall due meanwhile) and handle the
other ready descriptors.

Waiting: ``epoll_wait`` takes milliseconds, too coarse to pace a 10 Mb/s NIC
(a 1 KiB frame lasts 0.8 ms), so the loop waits with ``select`` on the epoll
descriptor itself (readable when any registered socket is), whose timeout
is in microseconds, then collects events with a zero-timeout ``poll``. A
wait is never longer than ``max_wait_s`` so a stop request is seen soon
even without a wake-up descriptor.

Fidelity: the loop knows when the agent asked to run next (its next pacer
slot or timer) and when it got to run; a turn that sends frames that late
records the lateness (µs, :class:`~emulator.fidelity.LatenessHistogram`,
one sample per such turn: the lateness of its first frame against the
pacer's schedule) and the :class:`~emulator.fidelity.BehindSeries` marks
it late when it is beyond one reference frame time at the fastest NIC's
line rate. Turns woken early by a received frame record nothing (nothing
was due). :meth:`EventLoop.fidelity` is what the stats file carries. With
``run.realtime_priority`` the loop runs at that real-time priority while
it stays light (:class:`~emulator.fidelity.process.RealtimeGuard`).

Signals: :meth:`EventLoop.stop_on_signals` makes SIGTERM/SIGINT stop the
loop at once (through ``signal.set_wakeup_fd``); whoever called
:meth:`EventLoop.run` then writes the stats.
"""

from __future__ import annotations

import math
import select
import signal
import socket
import time
from typing import Any, Callable

from emulator.fidelity import BehindSeries, LatenessHistogram, frame_time_us
from emulator.fidelity.process import RealtimeGuard, settle_memory
from emulator.traffic.agent.agent import Agent

Handler = Callable[[int, float], None]


class EventLoop:
    """Drives one :class:`~.agent.Agent` on the monotonic clock."""

    def __init__(self, agent: Agent, backends: list[Any], *,
                 clock: Callable[[], float] = time.monotonic, rx_batch: int = 64,
                 max_wait_s: float = 0.05, rx_batch_s: float = 200e-6) -> None:
        self.agent = agent
        self.clock = clock
        self.rx_batch = rx_batch
        self.rx_batch_s = rx_batch_s
        self.max_wait_s = max_wait_s
        self._ep = select.epoll()
        self._handlers: dict[int, Handler] = {}
        self._stop = False
        self.stop_reason: str | None = None
        self.turns = 0
        self.late = LatenessHistogram()
        self.behind = BehindSeries()
        rates = [n.line_rate_bps for n in agent.config.nics if n.line_rate_bps > 0]
        self.frame_us = frame_time_us(max(rates)) if rates else float("inf")
        self.realtime = RealtimeGuard(agent.config.run.realtime_priority)
        self._wakeup: tuple[socket.socket, socket.socket] | None = None
        self._old_signals: dict[int, Any] = {}
        for index, io in enumerate(backends):
            fd = io.fileno()
            if fd is not None:
                self.add(fd, self._nic_reader(index, io))

    # -- registration ----------------------------------------------------------------

    def add(self, fd: int, handler: Handler, events: int = select.EPOLLIN) -> None:
        self._handlers[fd] = handler
        self._ep.register(fd, events)

    def modify(self, fd: int, events: int) -> None:
        self._ep.modify(fd, events)

    def remove(self, fd: int) -> None:
        if self._handlers.pop(fd, None) is not None:
            try:
                self._ep.unregister(fd)
            except (OSError, ValueError):
                pass

    def _nic_reader(self, index: int, io: Any) -> Handler:
        on_frame = self.agent.on_frame
        recv = io.recv
        clock = self.clock
        batch = self.rx_batch

        limit_s = self.rx_batch_s

        def read(_events: int, _now: float) -> None:
            start = clock()
            for _ in range(batch):
                frame = recv()
                if frame is None:
                    return
                now = clock()
                on_frame(index, frame, now)
                if now - start > limit_s:  # let due sends go first; the rest waits
                    return
        return read

    # -- running -----------------------------------------------------------------------

    def stop(self, reason: str = "stop") -> None:
        if not self._stop:
            self._stop = True
            self.stop_reason = reason

    def stop_on_signals(self, signums: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)
                        ) -> None:
        """Stop at once on these signals (main thread only)."""
        r, w = socket.socketpair()
        r.setblocking(False)
        w.setblocking(False)
        self._wakeup = (r, w)
        signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)

        def on_signal(signum: int, _frame: Any) -> None:
            self.stop(signal.Signals(signum).name)

        for signum in signums:
            self._old_signals[signum] = signal.signal(signum, on_signal)

        def drain(_events: int, _now: float) -> None:
            try:
                while r.recv(512):
                    pass
            except BlockingIOError:
                pass
        self.add(r.fileno(), drain)

    def run(self) -> str:
        """Run until :meth:`stop` or the agent stops; returns the reason."""
        agent = self.agent
        clock = self.clock
        epfd = self._ep.fileno()
        poll = self._ep.poll
        handlers = self._handlers
        max_wait = self.max_wait_s
        late, behind, frame_us = self.late, self.behind, self.frame_us
        due = math.inf
        realtime = self.realtime
        if realtime.priority:  # a live agent: the tests' loops keep the collector as it is
            settle_memory()
        realtime.start(clock())
        while not self._stop and not agent.stopped:
            self.turns += 1
            now = clock()
            if agent.service(now) and due <= now:
                behind.event(now, late.record_s(now - due), frame_us)
            realtime.check(now)
            due = agent.next_wakeup()
            timeout = due - clock()
            if timeout > 0:
                if timeout > max_wait:
                    timeout = max_wait
                ready, _, _ = select.select([epfd], [], [], timeout)
                events = poll(0) if ready else ()
            else:
                events = poll(0)
            if events:
                now = clock()
                for fd, mask in events:
                    handler = handlers.get(fd)
                    if handler is not None:
                        handler(mask, now)
        if agent.stopped:
            self.stop(agent.stop_reason or "agent")
        return self.stop_reason or "stop"

    def fidelity(self, wall_offset: float = 0.0) -> dict[str, Any]:
        """The loop's lateness histogram, the reference frame time it judged
        turns by, and its behind series (bin starts in Unix time with
        ``wall_offset``)."""
        return {"late": self.late.to_dict(), "realtime": self.realtime.to_dict(),
                "frame_us": None if math.isinf(self.frame_us) else round(self.frame_us, 3),
                "behind": self.behind.to_dict(wall_offset)}

    def close(self) -> None:
        if self._wakeup is not None:
            signal.set_wakeup_fd(-1)
            for signum, old in self._old_signals.items():
                signal.signal(signum, old)
            for s in self._wakeup:
                s.close()
            self._wakeup = None
        self._ep.close()

