"""The built-in switch: a :class:`~.dataplane.DataPlane` driven by one
event-loop thread, and the one way in for the control plane.

Event loop (the data-plane thread): epoll on every port's descriptor and an
eventfd for wake-ups; each turn runs the timers that are due (departures,
deliveries after the link delay, PFC pause expiries), the control-plane
calls waiting, then up to :data:`BATCH` frames from each readable port,
running the timers that fall due between two frames. Frames sent go into
the ports' transmit rings (:mod:`.ring`); the loop flushes them, one system
call a port, once a turn, before it looks for more to read or waits. It
waits for the next timer with ``select`` on the epoll descriptor
(microsecond timeouts; ``epoll.poll`` rounds up to milliseconds), and no
longer than :data:`~.ring.HOLE_WAIT_S` while a receive ring has frames
behind an empty slot (``RxRing.hole_pending``: the socket may not poll
readable then).

Control plane: other threads (the gRPC servers) never touch the data plane
themselves. :meth:`Switch.call_in_dataplane` queues a function, wakes the
loop and returns the function's result (or raises its exception) once the
loop has run it, between two packets. Table writes, program swaps, port
settings and counter snapshots all go this way, so the data plane needs no
locks and a snapshot is consistent. Before :meth:`Switch.start` and after
:meth:`Switch.stop` calls run in the caller's thread (one at a time).

Usage::

    switch = Switch(SwitchOptions(cpu_port=255))
    switch.open_interface(1, "s1-eth1")          # or add_port(1, FakePort())
    switch.set_pipeline(pipeline)                # a V1ModelPipeline
    switch.start()
    switch.call_in_dataplane(lambda: switch.pipeline.table("t").insert(entry))
    switch.stop(); switch.close()
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections import deque
from concurrent.futures import Future
from typing import Any, Callable, Iterable, TypeVar

from emulator.p4.exec.pipeline import V1ModelPipeline
from emulator.fidelity.process import RealtimeGuard, settle_memory
from emulator.targets.builtin.config import PortConfig, SwitchOptions
from emulator.targets.builtin.dataplane import DataPlane, PortState
from emulator.targets.builtin.errors import SwitchError
from emulator.targets.builtin.ports import CpuPort, RawPort
from emulator.targets.builtin.ring import HOLE_WAIT_S, RxRing

BATCH = 64                 # frames read from one port per turn at most (then the rings flush)
HOUSEKEEPING_S = 1.0       # pcap flush; wake-up when idle
SUMMARY_EVERY = 10         # drop summary (debug) every this many housekeeping ticks
MAX_EMPTY_WAKEUPS = 1000   # a port readable with nothing to read this often is dropped from epoll

T = TypeVar("T")


class Switch:
    """One switch: ports, a pipeline, the data-plane thread."""

    def __init__(self, options: SwitchOptions | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 logger: logging.Logger | None = None) -> None:
        self.options = options or SwitchOptions()
        self.log = logger or logging.getLogger("aifabric.switch")
        self.dataplane = DataPlane(self.options.priority_queues, clock=clock, logger=self.log,
                                   pfc_to_pipeline=self.options.pfc_to_pipeline)
        self._calls: deque[tuple[Callable[[], Any], Future]] = deque()
        self._wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._running = False
        self._stopping = False
        self._closed = False
        self._epoll: select.epoll | None = None
        self._fds: dict[int, PortState] = {}
        self._flushes: list[Callable[[], bool]] = []  # ports' flush (transmit rings)
        self._rx_rings: list[tuple[int, RxRing]] = []   # (fd, receive ring) of ports with one
        self._cpu: CpuPort | None = None
        self.realtime = RealtimeGuard(self.options.realtime_priority)
        if self.options.cpu_port is not None:
            self._cpu = CpuPort()
            self.add_port(self.options.cpu_port, self._cpu, PortConfig())

    # ---- ports ---------------------------------------------------------------------
    def add_port(self, number: int, backend: Any, config: PortConfig | None = None) -> None:
        """Add a port with ``backend`` (see :mod:`.ports`); ``config`` defaults
        to the options' settings for ``number``. Thread-safe."""
        cfg = config or self.options.port_config(number)

        def add() -> None:
            ps = self.dataplane.add_port(number, backend, cfg, self.options.pcap_dir)
            if getattr(backend, "tx_ring", None) is not None:
                self._flushes.append(backend.flush)
            fd = backend.fileno()
            ring = getattr(backend, "rx_ring", None)
            if fd is not None and ring is not None:
                self._rx_rings.append((fd, ring))
            if fd is not None:
                self._fds[fd] = ps
                if self._epoll is not None:
                    self._epoll.register(fd, select.EPOLLIN)
            self.log.info("port %d up: %s (%s)", number, backend.name, describe_config(cfg))

        self.call_in_dataplane(add)

    def open_interface(self, number: int, iface: str, config: PortConfig | None = None) -> None:
        """Add port ``number`` on network interface ``iface`` (AF_PACKET)."""
        try:
            backend = RawPort(iface, ring=self.options.rx_ring, tx_ring=self.options.tx_ring)
        except OSError as exc:
            raise SwitchError(f"port {number}: cannot open interface {iface}: {exc.strerror or exc}") \
                from None
        try:
            self.add_port(number, backend, config)
        except BaseException:
            backend.close()
            raise

    # ---- life cycle ----------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._running

    def start(self) -> None:
        """Start the data-plane thread."""
        with self._lock:
            if self._running or self._closed:
                raise SwitchError("switch already started" if self._running else "switch closed")
            ep = select.epoll()
            ep.register(self._wake, select.EPOLLIN)
            for fd in self._fds:
                ep.register(fd, select.EPOLLIN)
            self._epoll = ep
            self._stopping = False
            self._thread = threading.Thread(target=self._loop, name="aifabric-dataplane",
                                            daemon=True)
            self._running = True
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the data-plane thread (packets still queued stay queued)."""
        with self._lock:
            if not self._running:
                return
            self._stopping = True
            os.eventfd_write(self._wake, 1)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                raise SwitchError(f"data-plane thread did not stop within {timeout} s")
        with self._lock:
            self._running = False
            self._thread = None
            if self._epoll is not None:
                self._epoll.close()
                self._epoll = None
            self._run_calls()  # queued before the loop saw the stop: run here

    def close(self) -> None:
        """Stop, then close every port and capture file."""
        self.stop()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.dataplane.close()
            os.close(self._wake)
        self.log.info("switch stopped")

    def __enter__(self) -> "Switch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the way in for the control plane ------------------------------------------------
    def call_in_dataplane(self, fn: Callable[[], T], timeout: float | None = None) -> T:
        """Run ``fn()`` on the data-plane thread between two packets and
        return its result (its exception is raised here)."""
        if threading.current_thread() is self._thread:
            return fn()
        with self._lock:
            if not self._running:
                return fn()
            future: Future = Future()
            self._calls.append((fn, future))
            os.eventfd_write(self._wake, 1)
        return future.result(timeout)

    def call_soon(self, fn: Callable[[], Any]) -> None:
        """Queue ``fn()`` for the data-plane thread without waiting."""
        with self._lock:
            if not self._running:
                fn()
                return
            self._calls.append((fn, Future()))
            os.eventfd_write(self._wake, 1)

    def _run_calls(self) -> None:
        calls = self._calls
        while calls:
            fn, future = calls.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the caller
                future.set_exception(exc)

    # ---- control-plane operations (thread-safe) ------------------------------------------
    @property
    def pipeline(self) -> V1ModelPipeline | None:
        return self.dataplane.pipeline

    def set_pipeline(self, pipeline: V1ModelPipeline | None) -> None:
        """Swap the P4 program atomically between two packets; queued packets
        finish with the old one (see :mod:`.dataplane`)."""
        if pipeline is not None and pipeline.priority_queues != self.options.priority_queues:
            self.log.warning("pipeline built for %d priority queues, switch has %d",
                             pipeline.priority_queues, self.options.priority_queues)
        self.call_in_dataplane(lambda: self.dataplane.set_pipeline(pipeline))
        settle_memory()  # the program's objects out of the collector's way
        if pipeline is None:
            self.log.info("program unloaded: dropping every packet")
        else:
            name = str(pipeline.program.source).strip().splitlines() or ["?"]
            self.log.info("program loaded: %s (%d tables)", name[0][:80], len(pipeline.tables))

    def set_port_config(self, port: int, **settings: Any) -> PortConfig:
        """Change some settings of a port (:data:`~.config.PORT_KEYS`)."""
        config = self.call_in_dataplane(lambda: self.dataplane.set_port_config(port, settings))
        self.log.info("port %d config: %s", port, describe_config(config))
        return config

    def set_buffer(self, **settings: Any) -> dict[str, Any]:
        """Set the switch's shared buffer (``pool_bytes``, ``alpha``; see
        :mod:`.mmu`); returns the buffer's state."""
        state = self.call_in_dataplane(lambda: self.dataplane.set_buffer(settings))
        self.log.info("buffer: pool %d B (shared %d, headroom %d), alpha %s",
                      state["pool_bytes"], state["shared_bytes"], state["headroom_bytes"],
                      state["alpha"])
        return state

    def buffer_state(self) -> dict[str, Any]:
        return self.call_in_dataplane(lambda: self.dataplane.buffer.to_dict())

    def port_config(self, port: int) -> PortConfig:
        return self.call_in_dataplane(lambda: self.dataplane.port(port).config)

    def set_pfc(self, port: int, priority: int, enabled: bool) -> PortConfig:
        """Honour (or ignore) received PFC frames for ``priority`` on ``port``."""
        def change() -> PortConfig:
            prios = set(self.dataplane.port(port).config.pfc_priorities)
            (prios.add if enabled else prios.discard)(priority)
            return self.dataplane.set_port_config(port, {"pfc_priorities": sorted(prios)})

        config = self.call_in_dataplane(change)
        self.log.info("port %d: PFC %s on priority %d", port,
                      "enabled" if enabled else "disabled", priority)
        return config

    def port_stats(self, ports: Iterable[int] | None = None) -> dict[str, Any]:
        selected = None if ports is None else list(ports)
        return self.call_in_dataplane(lambda: self.dataplane.stats(selected))

    def fidelity(self, ports: Iterable[int] | None = None) -> dict[str, Any]:
        """Lateness, lag given up and overruns per port (see
        :meth:`~.dataplane.DataPlane.fidelity`)."""
        selected = None if ports is None else list(ports)

        def read() -> dict[str, Any]:
            out = self.dataplane.fidelity(selected)
            out["realtime"] = self.realtime.to_dict()
            return out
        return self.call_in_dataplane(read)

    def queue_series(self, ports: Iterable[int] | None = None,
                     since: float | None = None) -> dict[str, Any]:
        """The queue-depth time series (see :class:`~.tm.QueueSeries`)."""
        selected = None if ports is None else list(ports)
        return self.call_in_dataplane(lambda: self.dataplane.queue_series(selected, since))

    def set_sample_interval(self, interval_ms: float) -> float:
        """Sample the queue series every ``interval_ms``; returns it."""
        def change() -> float:
            self.dataplane.series.set_interval(interval_ms / 1000.0)
            return self.dataplane.series.interval_s * 1000.0
        return self.call_in_dataplane(change)

    def reset_stats(self, ports: Iterable[int] | None = None) -> None:
        selected = None if ports is None else list(ports)
        if selected is None:
            self.realtime.reset()
        self.call_in_dataplane(lambda: self.dataplane.reset_stats(selected))

    def inject_packet_out(self, frame: bytes) -> None:
        """A P4Runtime PacketOut: ``frame`` (packet_out header + payload)
        enters ingress as received on the CPU port."""
        cpu_port = self.options.cpu_port
        if cpu_port is None:
            raise SwitchError("no CPU port (start the switch with --cpu-port)")
        data = bytes(frame)
        self.call_soon(lambda: self.dataplane.receive(cpu_port, data))

    def set_packet_in_handler(self, handler: Callable[[bytes], None] | None) -> None:
        """``handler(frame)`` receives frames sent to the CPU port, on the
        data-plane thread: it must not block."""
        if self._cpu is None:
            raise SwitchError("no CPU port (start the switch with --cpu-port)")
        self._cpu.handler = handler

    def set_digest_handler(self, handler: Callable[[str, object], None] | None) -> None:
        """``handler(name, value)`` for every digest the program emits, on the
        data-plane thread: it must not block."""
        self.call_in_dataplane(lambda: setattr(self.dataplane, "digest_handler", handler))

    # ---- the loop ----------------------------------------------------------------------------
    def _loop(self) -> None:
        dp = self.dataplane
        clock = dp.clock
        rx = dp.rx
        ep = self._epoll
        assert ep is not None
        epfd = ep.fileno()
        fds = self._fds
        flushes = self._flushes
        rx_rings = self._rx_rings
        run_due = dp.run_due
        calls = self._calls
        empty: dict[int, int] = {}
        next_tick = clock() + HOUSEKEEPING_S
        series = dp.series
        due = dp.due
        ticks = 0
        last_summary = ""
        realtime = self.realtime
        settle_memory()
        realtime.start(clock())
        while not self._stopping:
            try:
                now = clock()
                run_due(now)
                if calls:
                    self._run_calls()
                if now >= series.next_t:
                    dp.sample_queues(now)
                if now >= next_tick:
                    next_tick = now + HOUSEKEEPING_S
                    ticks += 1
                    realtime.check(now)
                    self._flush_pcaps()
                    if ticks % SUMMARY_EVERY == 0 and self.log.isEnabledFor(logging.DEBUG):
                        summary = dp.drop_summary()
                        if summary != last_summary:
                            self.log.debug("drops: %s", summary)
                            last_summary = summary
                for flush in flushes:  # what this turn sent leaves now
                    flush()
                events = ep.poll(0)
                if not events:
                    deadline = dp.next_deadline()
                    wait = min(next_tick, series.next_t) - clock()
                    if deadline is not None:
                        wait = min(wait, deadline - clock())
                    holes = [fd for fd, ring in rx_rings if ring.hole_pending]
                    if holes and wait > HOLE_WAIT_S:
                        wait = HOLE_WAIT_S
                    if wait > 0:
                        if select.select((epfd,), (), (), wait)[0]:
                            events = ep.poll(0)
                        elif holes:  # not readable, frames behind a hole: look again
                            events = [(fd, 0) for fd in holes]
                        else:
                            continue
                for fd, mask in events:
                    ps = fds.get(fd)
                    if ps is None:
                        try:
                            os.eventfd_read(self._wake)
                        except BlockingIOError:
                            pass
                        continue
                    recv = ps.backend.recv
                    frame = recv()
                    if frame is None:
                        if mask:
                            self._empty_wakeup(ps, fd, empty)
                        continue
                    empty.pop(fd, None)
                    budget = BATCH
                    while True:
                        now = clock()
                        rx(ps, frame, now)
                        budget -= 1
                        if not budget:
                            break
                        if due(now):  # a departure fell due: on time, between two frames
                            run_due(now)
                        frame = recv()
                        if frame is None:
                            break
                    now = clock()
                    if due(now):
                        run_due(now)
            except Exception:  # a bug must not take the data plane down
                self.log.exception("data plane: unexpected error")
        for flush in flushes:  # nothing sent stays in a ring when the loop stops
            flush()

    def _empty_wakeup(self, ps: PortState, fd: int, empty: dict[int, int]) -> None:
        count = empty.get(fd, 0) + 1
        empty[fd] = count
        if count >= MAX_EMPTY_WAKEUPS and self._epoll is not None:
            self._epoll.unregister(fd)
            err = getattr(ps.backend, "last_error", None)
            self.log.warning("port %d (%s): readable with nothing to read, stopped receiving (%s)",
                             ps.number, ps.backend.name, err)

    def _flush_pcaps(self) -> None:
        for ps in self.dataplane.ports.values():
            for writer in (ps.pcap_in, ps.pcap_out):
                if writer is not None:
                    writer.flush()


def describe_config(config: PortConfig) -> str:
    rate = f"{config.rate_bps / 1e6:g} Mb/s" if config.rate_bps else "unlimited rate"
    prios = ",".join(str(p) for p in sorted(config.pfc_priorities)) or "none"
    return (f"{rate}, delay {config.delay_us:g} us, buffer {config.buffer_bytes} B per queue, "
            f"PFC on {prios}")
