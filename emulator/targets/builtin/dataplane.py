"""The data plane of the built-in switch: what happens to a frame between
the socket it came from and the socket it leaves by.

::

    recv → rx counters, pcap → MAC (PFC frames: pause timers, consumed)
         → P4 ingress → traffic manager (per port, per priority queues)
         → [port free, queue not paused] P4 egress (QueueInfo)
         → serialisation at rate_bps → propagation delay_us → send

Time. Every departure is timed on a per-port virtual clock:
``start = max(event time, port free at, enqueue time)``, ``end = start +
(len(frame) + overhead_bytes) * 8 / rate_bps``; the frame is handed to the
socket at ``end + delay_us`` (a packet being serialised when its queue is
paused still finishes). Events are timed from their scheduled time, not
from when the loop got to them, so a late wake-up does not slow a port
down; a port more than :data:`MAX_LAG_S` behind real time (the CPU cannot
keep up) gives up the lag instead of bursting, and counts what it gave up
(``lag_given_up_s``, ``lag_given_up_events``). ``rate_bps`` 0 = unlimited:
egress and send at once.

Fidelity. Each frame handed to the port (written into its transmit ring, see
:mod:`.ports`) is compared with when it was due
(end of serialisation plus delay): the lateness goes into the port's
histogram (:class:`~emulator.fidelity.LatenessHistogram`, on the data
plane's clock at the moment of the send) and the switch's
:class:`~emulator.fidelity.BehindSeries` (late = beyond one
:data:`~emulator.fidelity.REFERENCE_FRAME_BYTES` frame time at the port's
rate). Per departure that is a few additions: the port counts lateness per
whole µs (:class:`~.tally.LatenessTally`, folded into the histogram when
read) and the departure goes into the behind bin the previous one went to
when it falls in the same one. A port with
``rx_link`` set receives from a peer that hands frames
over undelayed at the start of their serialisation (a NIC agent): the
switch realises that direction of the link too, and a received frame enters
ingress after its serialisation at the port's rate plus ``delay_us``.

Threads. A :class:`DataPlane` is not thread-safe: one thread (the switch's
event loop, or a test driving :meth:`receive` and :meth:`run_due` with a
virtual clock) calls it. The P4 program's egress runs at dequeue; clones it
asks for are queued again, recirculated packets re-enter ingress on the
next :meth:`run_due`.

Program swap (:meth:`set_pipeline`): packets already queued finish with the
program that ran their ingress (each queue entry keeps its pipeline); new
packets take the new one. Recirculated packets take the new one.

Buffer. Every frame ingress queues is admitted by the switch's buffer
(:mod:`.mmu`) against its ingress port's priority group (lossless: XOFF
threshold then headroom, dropped only as ``headroom_overflow``) or its
egress queue's dynamic threshold (lossy: ``tail``), and released when it
leaves its queue, before egress runs, so whatever egress does next (send,
drop, truncate, recirculate, clone) the bytes are released once; copies
are charged each. The pause frames the buffer decides (XOFF when a lossless
group passes its threshold, refreshed every half pause time while it stays
there, XON when it drains) are built here and sent by the ingress port's
MAC ahead of its queues, as a switch's MAC inserts them between frames;
they wait only for the frame being serialised. Pause frames a P4 program
emits (fabric.p4 on targets without this buffer) are queued like any
packet. Both are counted as ``pfc_tx`` when sent; received ones as
``pfc_rx`` (see :mod:`.pfc` for what they do).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import deque
from typing import Any, Callable, Iterable

from emulator.fidelity import BehindSeries, LatenessHistogram, frame_time_us
from emulator.p4.exec.pipeline import NORMAL, V1ModelPipeline
from emulator.p4.exec.results import ProcessResult, QueueInfo
from emulator.targets.builtin.eventheap import EventHeap
from emulator.targets.builtin.config import PortConfig
from emulator.targets.builtin.errors import PortConfigError, SwitchError, UnknownPortError
from emulator.targets.builtin.mmu import (
    DEFAULT_MAX_FRAME_BYTES, PgAccount, SwitchBuffer, headroom_bytes,
)
from emulator.targets.builtin.pcap import PcapWriter
from emulator.targets.builtin.pfc import NUM_PRIORITIES, PauseTimers, parse_pfc, pause_seconds
from emulator.targets.builtin.ports import DROP_CAUSES, PortCounters
from emulator.targets.builtin.tally import LatenessTally
from emulator.targets.builtin.tm import PortQueues, QueueCounters, QueueSeries

MAX_LAG_S = 0.02
TX_DONE, DELIVER, PAUSE_END, ARRIVE, PFC_REFRESH = 0, 1, 2, 3, 4
_PFC_HEAD = b"\x01\x80\xc2\x00\x00\x01"  # 802.1Qbb destination
_PFC_PAD = bytes(60 - 14 - 20)  # opcode, vector and eight times are 20 bytes
_ERRORS_LOGGED = 10


class PortState:
    """Everything the data plane keeps about one port."""

    __slots__ = ("number", "backend", "config", "counters", "tm", "pfc", "busy", "free_at",
                 "rate_bps", "delay_s", "wait_s", "overhead", "pfc_enabled", "pcap_in",
                 "pcap_out",
                 "kicking", "lateness", "frame_us", "given_up_s", "given_up_events",
                 "rx_link", "arriving", "rx_free_at", "pg", "ctrl", "ctrl_qc", "pfc_src",
                 "queue_info")

    def __init__(self, number: int, backend: Any, config: PortConfig, priority_queues: int) -> None:
        self.number = number
        self.backend = backend
        self.counters = PortCounters()
        self.tm = PortQueues(priority_queues, config.buffer_bytes)
        self.pfc = PauseTimers()
        self.busy = False        # a frame is being serialised (a TX_DONE is pending)
        self.free_at = 0.0       # when the last serialisation ends (virtual time)
        self.kicking = False
        self.lateness = LatenessTally()  # departures' lateness (see ``late``)
        self.given_up_s = 0.0
        self.given_up_events = 0
        self.arriving = 0         # frames on the receive side of an rx_link port
        self.rx_free_at = 0.0     # when that side's wire is free again
        self.pcap_in: PcapWriter | None = None
        self.pcap_out: PcapWriter | None = None
        self.pg = PgAccount(self)  # ingress accounting of the buffer (.mmu)
        self.ctrl: deque[bytes] = deque()  # pause frames the MAC sends before the queues
        self.ctrl_qc = QueueCounters()     # ... counted apart from the priority queues
        # what egress is told of a dequeued packet's queue: one per port, set
        # anew for each packet (egress reads it before anything can reenter)
        self.queue_info = QueueInfo(0, 0, None)
        self.apply(config)

    @property
    def late(self) -> LatenessHistogram:
        """The lateness histogram of this port's departures."""
        return self.lateness.histogram()

    def apply(self, config: PortConfig) -> None:
        self.config = config
        self.rate_bps = config.rate_bps
        self.delay_s = config.delay_us * 1e-6
        # what departures wait out after serialisation: the delay, unless the
        # wire does (a virtual-time link)
        self.wait_s = 0.0 if config.delay_on_link else self.delay_s
        self.overhead = config.overhead_bytes
        self.tm.buffer_bytes = config.buffer_bytes
        self.pfc_enabled = sum(1 << p for p in config.pfc_priorities)
        self.frame_us = frame_time_us(config.rate_bps)
        self.rx_link = config.rx_link
        self.pfc_src = _PFC_HEAD + config.mac_bytes + b"\x88\x08\x01\x01"
        headroom = config.headroom_bytes or headroom_bytes(
            config.rate_bps, self.delay_s, DEFAULT_MAX_FRAME_BYTES, config.overhead_bytes)
        self.pg.configure(config.lossless_priorities, config.xoff_bytes, config.xon_bytes,
                          config.xoff_alpha, headroom, config.pfc_quanta, config.rate_bps)


class DataPlane:
    """Ports, the loaded pipeline, queues and timers of one switch."""

    def __init__(self, priority_queues: int = 8, *, clock: Callable[[], float] = time.monotonic,
                 logger: logging.Logger | None = None, pfc_to_pipeline: bool = False) -> None:
        self.priority_queues = priority_queues
        self.clock = clock
        self.log = logger or logging.getLogger("aifabric.switch")
        self.pfc_to_pipeline = pfc_to_pipeline
        self.ports: dict[int, PortState] = {}
        self.pipeline: V1ModelPipeline | None = None
        # its ingress and egress as set_pipeline found them (a call each
        # packet, not a lookup by name); _methods_of: the pipeline they are of
        self._methods_of: V1ModelPipeline | None = None
        self._pipe_ingress: Any = None
        self._pipe_egress: Any = None
        self._lent_refs = 0  # rx's lent_refs, while its frame is in ingress
        self._pipe_clock_us: Callable[[], float] = lambda: self.clock() * 1e6
        # Drops not tied to a port we have (egress port unknown, recirculation
        # from an unknown port), by cause.
        self.drops: dict[str, int] = dict.fromkeys(("no_port",) + DROP_CAUSES, 0)
        self.digest_handler: Callable[[str, object], None] | None = None
        self.digests = 0
        self.errors = 0
        # Timers (:mod:`.eventheap`): (when, 0, 0, kind, port
        # state, a, b); equal times run in the order they were scheduled.
        self._timers = EventHeap()
        self._recirc: deque[tuple[int, bytes, int, dict]] = deque()
        self.buffer = SwitchBuffer()  # the shared pool (see :mod:`.mmu`)
        self.series = QueueSeries()   # queue-depth time series (see :class:`QueueSeries`)
        self.behind = BehindSeries()  # where the switch fell behind (see the module docstring)
        # The behind bin the last departure went to (-1: none), so that the
        # next ones in the same bin are a few additions.
        self._behind_scale = 1.0 / self.behind.interval_s
        self._behind_bin = -1
        self._behind_row: list[int] = []
        # What egress is told about the queue of a packet that cut through
        # (all zeros): one object, never changed, for all of them.
        self._idle_queue = QueueInfo(0, 0, None)

    # ---- configuration (data-plane thread) -----------------------------------------
    def add_port(self, number: int, backend: Any, config: PortConfig | None = None,
                 pcap_dir: str | None = None) -> PortState:
        if number in self.ports:
            raise SwitchError(f"port {number} already exists ({self.ports[number].backend.name})")
        if not 0 <= number < 511:
            raise SwitchError(f"port number {number} not in 0..510")
        ps = PortState(number, backend, config or PortConfig(), self.priority_queues)
        if pcap_dir is not None:
            ps.pcap_in = PcapWriter(os.path.join(pcap_dir, f"{backend.name}_in.pcap"))
            ps.pcap_out = PcapWriter(os.path.join(pcap_dir, f"{backend.name}_out.pcap"))
        self.ports[number] = ps
        self._resize()
        return ps

    def set_buffer(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Set the switch's buffer: ``pool_bytes`` (0: sized from the
        ports) and ``alpha`` of the lossy queues (see :mod:`.mmu`)."""
        buf = self.buffer
        old_pool_bytes, old_alpha = buf.pool_bytes, list(buf.alpha)
        try:
            buf.configure(settings)
            self._resize()
        except ValueError as exc:
            buf.pool_bytes = old_pool_bytes
            buf.alpha = old_alpha
            self._resize()
            raise PortConfigError(f"buffer: {exc}") from None
        return buf.to_dict()

    def _resize(self) -> None:
        self.buffer.resize((ps.rate_bps, ps.tm.buffer_bytes, ps.pg)
                           for ps in self.ports.values())

    def port(self, number: int) -> PortState:
        ps = self.ports.get(number)
        if ps is None:
            raise UnknownPortError(f"no port {number}; ports: {sorted(self.ports) or 'none'}")
        return ps

    def set_pipeline(self, pipeline: V1ModelPipeline | None) -> None:
        """Swap the program; see the module docstring for queued packets.
        Its ``ingress`` and ``egress`` are taken now: a wrapper put on them
        later takes effect at the next call of this."""
        self.pipeline = pipeline
        self._methods_of = pipeline
        self._pipe_ingress = pipeline.ingress if pipeline is not None else None
        self._pipe_egress = pipeline.egress if pipeline is not None else None
        self._pipe_clock_us = (_pipeline_clock_us(pipeline) if pipeline is not None
                               else lambda: self.clock() * 1e6)

    def set_port_config(self, number: int, settings: dict[str, Any]) -> PortConfig:
        """Change some settings of a port (see :mod:`.config`); takes effect
        for the next packet that starts serialisation."""
        ps = self.port(number)
        old = ps.config
        config = old.updated(settings)
        ps.apply(config)
        try:
            self._resize()
        except ValueError as exc:
            ps.apply(old)
            self._resize()
            raise PortConfigError(f"port {number}: {exc}") from None
        now = self.clock()
        resumed = False
        for prio in range(NUM_PRIORITIES):
            if not ps.pfc_enabled >> prio & 1 and ps.pfc.resume(prio, now):
                resumed = True
                self.log.info("port %d: PFC pause end, priority %d (PFC disabled)", number, prio)
        if resumed and not ps.busy:
            self._kick(ps, now, now)
        acc = ps.pg
        for prio in range(NUM_PRIORITIES):
            if acc.xoff_on >> prio & 1 and not acc.lossless >> prio & 1:
                self._pfc_send(ps, prio, 0, now)  # no longer lossless: release the peer
        return config

    # ---- packets in ------------------------------------------------------------------
    def receive(self, number: int, frame: bytes, now: float | None = None) -> None:
        """Process a frame received on port ``number`` (also packet-out on the
        CPU port)."""
        self.rx(self.port(number), frame, self.clock() if now is None else now)

    def rx(self, ps: PortState, frame: bytes, now: float, lent_refs: int = 0) -> None:
        """``frame`` received on ``ps`` at ``now``. ``lent_refs``: references
        to it the caller holds only to hand it over, dropped after this call
        with the bytes unread (the engine's delivery: one); a packet that
        cuts through may then leave in this frame, its headers rewritten
        (:class:`~emulator.p4.exec.results.QueueInfo`)."""
        counters = ps.counters
        n = len(frame)
        counters.rx_packets += 1
        counters.rx_bytes += n
        if ps.pcap_in is not None:
            ps.pcap_in.write(frame)
        if ps.rx_link:
            # The peer handed the frame over as its serialisation began: the
            # wire carries one frame at a time, so frames read together
            # arrive one serialisation apart, in order.
            rate = ps.rate_bps
            start = ps.rx_free_at if ps.rx_free_at > now else now
            if rate:
                nbits = (n + ps.overhead) * 8
                free_at = start + nbits / rate
            else:
                free_at = start
            ps.rx_free_at = free_at
            ps.arriving += 1
            self._timers.push(free_at + ps.delay_s, 0, 0, ARRIVE, ps, frame, None)
            return
        if n > 13 and frame[12] == 0x88 and frame[13] == 0x08 \
                and self._mac_control(ps, frame, now) \
                and not self.pfc_to_pipeline:
            return
        self._lent_refs = lent_refs
        try:
            self._ingress(ps, ps.number, frame, NORMAL, None, now)
        finally:
            self._lent_refs = 0

    def _ingress(self, ps: PortState | None, port: int, frame: bytes, instance_type: int,
                 preserved: dict | None, now: float) -> None:
        pipe = self.pipeline
        if pipe is None:
            (ps.counters.drops if ps is not None else self.drops)["no_program"] += 1
            return
        try:
            res = (self._pipe_ingress if pipe is self._methods_of else pipe.ingress)(
                port, frame, instance_type, preserved)
        except Exception as exc:  # a bad frame or program must not stop the switch
            (ps.counters.drops if ps is not None else self.drops)["pipeline_error"] += 1
            self._error("ingress", exc)
            return
        if res.dropped:
            (ps.counters.drops if ps is not None else self.drops)["pipeline"] += res.dropped
        if res.digests or res.logs:
            self._side_results(res)
        for item in res.queued:
            self._enqueue(item, pipe, now, ps)

    def _mac_control(self, ps: PortState, frame: bytes, now: float) -> bool:
        """Act on a PFC frame received on ``ps``; False if not one."""
        parsed = parse_pfc(frame)
        if parsed is None:
            return False
        vector, times = parsed
        ps.counters.pfc_rx_frames += 1
        queue_counters = ps.tm.counters
        resumed = False
        for prio in range(NUM_PRIORITIES):
            if not vector >> prio & 1:
                continue
            if prio < self.priority_queues:
                queue_counters[prio].pfc_rx += 1
            if not ps.pfc_enabled >> prio & 1:
                continue
            quanta = times[prio]
            if quanta:
                until = now + pause_seconds(quanta, ps.rate_bps)
                if ps.pfc.pause(prio, until, now):
                    self.log.info("port %d: PFC pause start, priority %d, %d quanta (%.6f s)",
                                  ps.number, prio, quanta, until - now)
                self._push(until, PAUSE_END, ps, prio, until)
            elif ps.pfc.resume(prio, now):
                resumed = True
                self.log.info("port %d: PFC pause end, priority %d (zero quanta)", ps.number, prio)
        if resumed and not ps.busy:
            self._kick(ps, now, now)
        return True

    # ---- traffic manager and transmitter ----------------------------------------------
    def _enqueue(self, item: Any, pipe: V1ModelPipeline, now: float,
                 src: PortState | None) -> None:
        """Admit ``item`` (from ingress port ``src``; None: no port to
        charge) to the buffer and queue it, or send it at once."""
        ps = self.ports.get(item.port)
        if ps is None:
            self.drops["no_port"] += 1
            return
        prio = item.priority
        if not 0 <= prio < self.priority_queues:
            ps.counters.drops["bad_priority"] += 1
            return
        length = item.length
        tm = ps.tm
        buf = self.buffer
        acc = src.pg if src is not None else None
        if acc is not None and acc.lossless >> prio & 1:
            got = buf.admit_lossless(acc, prio, length)
            if got:
                if not acc.xoff_on >> prio & 1:
                    self._pfc_send(src, prio, acc.quanta, now)  # type: ignore[arg-type]
                if got < 0:
                    src.counters.drops["headroom_overflow"] += 1  # type: ignore[union-attr]
                    return
        elif buf.admit_lossy(tm.depth_bytes[prio], length, prio, tm.buffer_bytes):
            buf.charge(acc, prio, length)
        else:
            tm.reject(prio)
            ps.counters.drops["tail"] += 1
            return
        if not (ps.busy or ps.kicking or tm.nonempty or ps.ctrl or ps.pfc.mask >> prio & 1):
            # Cut-through: port idle, every queue empty, so the packet leaves
            # its queue as it joins it (same counts and depths as the slow way).
            qc = tm.counters[prio]
            qc.received += 1
            qc.enqueued += 1
            qc.dequeued += 1
            if not qc.max_depth_packets:
                qc.max_depth_packets = 1
            if length > qc.max_depth_bytes:
                qc.max_depth_bytes = length
            if buf.release(acc, prio, length):
                self._pfc_send(acc.port, prio, 0, now)  # type: ignore[union-attr]
            ps.kicking = True  # an egress clone to this port queues behind us
            idle = self._idle_queue
            idle.lent_refs = self._lent_refs  # (the frame rx is in the middle of)
            try:
                self._start(ps, qc, item, pipe, idle, now, now, src)
            finally:
                ps.kicking = False
                idle.lent_refs = 0
            if (tm.nonempty or ps.ctrl) and not ps.busy:
                self._kick(ps, now, now)
            return
        pipe_clock = self._pipe_clock_us if pipe is self.pipeline else _pipeline_clock_us(pipe)
        tm.enqueue(prio, length, item, pipe, now, pipe_clock(), acc)
        if not ps.busy:
            self._kick(ps, now, now)

    def _kick(self, ps: PortState, t: float, now: float) -> None:
        """Start sending from ``ps``'s queues at virtual time ``t`` while the
        port is free and a pause frame waits or an unpaused queue has packets."""
        if ps.kicking:  # re-entered through an egress clone to the same port
            return
        ps.kicking = True
        try:
            tm = ps.tm
            pfc = ps.pfc
            ctrl = ps.ctrl
            buf = self.buffer
            while not ps.busy:
                if ctrl:
                    qc = ps.ctrl_qc
                    qc.dequeued += 1
                    qc.egress_out += 1
                    self._wire(ps, qc, ctrl.popleft(), t, now)
                    continue
                got = tm.dequeue(pfc.mask)
                if got is None:
                    return
                prio = got.priority
                acc = got.account
                if buf.release(acc, prio, got.length):
                    self._pfc_send(acc.port, prio, 0, now)
                info = ps.queue_info
                info.enq_qdepth = got.depth
                info.deq_qdepth = len(tm.queues[prio])
                info.enq_timestamp_us = got.enq_us
                enq_t = got.enq_t
                self._start(ps, tm.counters[prio], got.item, got.pipeline, info,
                            t if t > enq_t else enq_t, now, acc.port if acc is not None else None)
        finally:
            ps.kicking = False

    def _pfc_send(self, ps: PortState, prio: int, quanta: int, now: float) -> None:
        """Send a pause frame for priority group ``prio`` out of ``ps``:
        XOFF with ``quanta`` (refreshed every half pause while on), 0: XON."""
        acc = ps.pg
        bit = 1 << prio
        if quanta:
            acc.xoff_on |= bit
            acc.xoff_sent_at[prio] = now
            acc.xoff_frames[prio] += 1
            self._push(now + acc.refresh_s, PFC_REFRESH, ps, prio, now)
        else:
            acc.xoff_on &= ~bit
            acc.xon_frames[prio] += 1
        times = [0] * NUM_PRIORITIES
        times[prio] = quanta
        ps.ctrl.append(ps.pfc_src + bit.to_bytes(2, "big")
                       + b"".join([t.to_bytes(2, "big") for t in times]) + _PFC_PAD)
        qc = ps.ctrl_qc
        qc.received += 1
        qc.enqueued += 1
        if not ps.busy:
            self._kick(ps, now, now)

    def _start(self, ps: PortState, qc: Any, item: Any, pipe: V1ModelPipeline,
               info: QueueInfo, t: float, now: float, src: PortState | None) -> None:
        """Run egress on a dequeued packet (of ingress port ``src``) and put
        its frame on the wire no earlier than ``t``."""
        try:
            res = (self._pipe_egress if pipe is self._methods_of else pipe.egress)(item, info)
        except Exception as exc:
            qc.egress_dropped += 1
            ps.counters.drops["pipeline_error"] += 1
            self._error("egress", exc)
            return
        if res.digests or res.logs:
            self._side_results(res)
        for clone in res.queued:
            self._enqueue(clone, pipe, now, src)
        outputs = res.outputs
        if not outputs:
            if res.recirculate:
                qc.recirculated += 1
                self._recirc.extend(res.recirculate)
            else:
                qc.egress_dropped += 1
                ps.counters.drops["pipeline"] += 1
            return
        qc.egress_out += 1
        first = outputs[0]  # egress emits at most the packet itself
        self._wire(ps, qc, first.data, t, now)

    def _wire(self, ps: PortState, qc: Any, frame: bytes, t: float, now: float) -> None:
        """Serialise ``frame`` on ``ps`` no earlier than ``t``."""
        start = ps.free_at
        if start < t:
            start = t
        if start < now - MAX_LAG_S:
            # The CPU fell this far behind: give the lag up, and say so.
            lag = now - MAX_LAG_S - start
            ps.given_up_s += lag
            ps.given_up_events += 1
            self.behind.gave_up(now, lag)
            self._behind_bin = -1
            start = now - MAX_LAG_S
        rate = ps.rate_bps
        if rate:
            nbits = (len(frame) + ps.overhead) * 8
            end = start + nbits / rate
        else:
            end = start
        ps.free_at = end
        if end > now:
            ps.busy = True
            self._timers.push(end, 0, 0, TX_DONE, ps, qc, frame)
        elif ps.wait_s:
            self._push(end + ps.wait_s, DELIVER, ps, qc, frame)
        else:
            self._transmit(ps, qc, frame, end)

    def _transmit(self, ps: PortState, qc: Any, frame: bytes, due: float) -> None:
        if ps.rate_bps:
            now = self.clock()
            late_s = now - due
            if late_s > 0:
                late_us = int(late_s * 1e6)
                counts = ps.lateness.counts
                counts[late_us] = counts.get(late_us, 0) + 1
            else:
                late_us = 0
                ps.lateness.on_time += 1
            bin_index = int(now * self._behind_scale)
            if bin_index == self._behind_bin:
                # BehindSeries.event on the bin the previous departure went to
                row = self._behind_row
                row[0] += 1
                if late_us > ps.frame_us:
                    row[1] += 1
                if late_us > row[2]:
                    row[2] = late_us
            else:
                self._behind_event(now, late_us, ps.frame_us)
        if not ps.backend.send(frame):
            qc.tx_errors += 1
            ps.counters.drops["tx_error"] += 1
            return
        counters = ps.counters
        n = len(frame)
        counters.tx_packets += 1
        counters.tx_bytes += n
        qc.tx_packets += 1
        qc.tx_bytes += n
        if ps.pcap_out is not None:
            ps.pcap_out.write(frame)
        if n > 13 and frame[12] == 0x88 and frame[13] == 0x08:  # (a PFC frame)
            parsed = parse_pfc(frame)
            if parsed is not None:
                counters.pfc_tx_frames += 1
                for prio in range(self.priority_queues):
                    if parsed[0] >> prio & 1:
                        ps.tm.counters[prio].pfc_tx += 1

    def _behind_event(self, now: float, late_us: int, threshold_us: float) -> None:
        """One departure into the behind series, and the bin it went to
        remembered (so the next ones in it are a few additions)."""
        behind = self.behind
        behind.event(now, late_us, threshold_us)
        index = int(now * self._behind_scale)
        row = behind.bins.get(index)
        if row is None:  # not the bin ``event`` used: do not remember it
            self._behind_bin = -1
        else:
            self._behind_bin = index
            self._behind_row = row

    # ---- timers -----------------------------------------------------------------------
    def _push(self, when: float, kind: int, ps: PortState, a: Any, b: Any) -> None:
        self._timers.push(when, 0, 0, kind, ps, a, b)

    def next_deadline(self) -> float | None:
        """When :meth:`run_due` next has work (-inf: now), None: nothing planned."""
        if self._recirc:
            return -math.inf
        timers = self._timers
        return timers.peek_time() if len(timers) else None

    def due(self, now: float) -> bool:
        """Whether :meth:`run_due` has work at ``now``."""
        timers = self._timers
        return bool(self._recirc) or (len(timers) > 0 and timers.peek_time() <= now)

    def run_due(self, now: float | None = None) -> None:
        """Run every timer due at ``now`` in time order, then the
        recirculated packets waiting."""
        if now is None:
            now = self.clock()
        timers = self._timers
        while True:
            ps = timers.pop_due(now)
            if ps is None:
                break
            when = timers.t
            kind = timers.kind
            a = timers.arg
            b = timers.arg2
            timers.arg = timers.arg2 = None  # (held by a and b alone: see the
                                             # compiled driver's _rewrite_out)
            if kind == DELIVER:
                self._transmit(ps, a, b, when)
            elif kind == TX_DONE:
                ps.busy = False
                if ps.wait_s:
                    # Through the timer heap even when already due: a loop
                    # running later than the delay must not send this frame
                    # ahead of earlier ones still propagating (FIFO per port).
                    timers.push(when + ps.wait_s, 0, 0, DELIVER, ps, a, b)
                else:
                    self._transmit(ps, a, b, when)
                if ps.tm.nonempty or ps.ctrl:
                    self._kick(ps, when, now)
            elif kind == ARRIVE:
                ps.arriving -= 1
                if len(a) > 13 and a[12] == 0x88 and a[13] == 0x08 \
                        and self._mac_control(ps, a, when) \
                        and not self.pfc_to_pipeline:
                    continue
                self._ingress(ps, ps.number, a, NORMAL, None, when)
            elif kind == PFC_REFRESH:
                acc = ps.pg
                if acc.xoff_on >> a & 1 and acc.xoff_sent_at[a] == b:
                    self._pfc_send(ps, a, 0 if self.buffer.xon_due(acc, a) else acc.quanta,
                                   when)
            else:
                prio, until = a, b
                if ps.pfc.expired(prio, until):
                    ps.pfc.resume(prio, until)
                    self.log.info("port %d: PFC pause end, priority %d (expired)", ps.number, prio)
                    if not ps.busy:
                        self._kick(ps, until, now)
        recirc = self._recirc
        for _ in range(len(recirc)):
            port, frame, instance_type, preserved = recirc.popleft()
            self._ingress(self.ports.get(port), port, frame, instance_type, preserved, now)

    # ---- results besides packets --------------------------------------------------------
    def _side_results(self, res: ProcessResult) -> None:
        if res.digests:
            self.digests += len(res.digests)
            handler = self.digest_handler
            if handler is not None:
                for name, value in res.digests:
                    handler(name, value)
        if res.logs and self.log.isEnabledFor(logging.DEBUG):
            for line in res.logs:
                self.log.debug("p4 log: %s", line)

    def _error(self, stage: str, exc: Exception) -> None:
        self.errors += 1
        if self.errors <= _ERRORS_LOGGED or self.errors % 1000 == 0:
            self.log.warning("%s raised %s: %s (executor error %d)", stage,
                             type(exc).__name__, exc, self.errors)

    # ---- statistics -----------------------------------------------------------------------
    def stats(self, ports: Iterable[int] | None = None) -> dict[str, Any]:
        """A snapshot of every counter (see :mod:`.tm` and :mod:`.ports`)."""
        now = self.clock()
        numbers = sorted(self.ports) if ports is None else list(ports)
        out = []
        for number in numbers:
            ps = self.port(number)
            row: dict[str, Any] = {"port": number, "name": ps.backend.name}
            row.update(ps.counters.to_dict())
            row["drops"]["truncated"] += getattr(ps.backend, "truncated", 0)
            if hasattr(ps.backend, "poll_overruns"):
                row["drops"]["rx_overrun"] += ps.backend.poll_overruns()
            row["config"] = ps.config.to_dict()
            queues = []
            for prio, qc in enumerate(ps.tm.counters):
                q = qc.to_dict()
                q.update(priority=prio, depth_packets=ps.tm.depth_packets(prio),
                         depth_bytes=ps.tm.depth_bytes[prio],
                         paused=bool(ps.pfc.mask >> prio & 1),
                         paused_s=ps.pfc.total_paused_s(prio, now))
                q.update(ps.pg.to_dict(prio))  # the ingress priority group of that number
                queues.append(q)
            row["queues"] = queues
            row["mac_control"] = ps.ctrl_qc.to_dict()
            out.append(row)
        return {"time_s": now, "ports": out, "switch_drops": dict(self.drops),
                "buffer": self.buffer.to_dict(),
                "digests": self.digests, "executor_errors": self.errors}

    def fidelity(self, ports: Iterable[int] | None = None) -> dict[str, Any]:
        """How far behind its schedule this switch ran (since the last reset):
        per port with a rate, the lateness histogram of its departures, the
        lag it gave up, frames the kernel dropped (overruns), lossless frames
        its headroom could not take and how long received frames waited in
        the socket; and the switch's
        :class:`~emulator.fidelity.BehindSeries` (times on this clock)."""
        numbers = sorted(self.ports) if ports is None else list(ports)
        out = []
        for number in numbers:
            ps = self.port(number)
            if not ps.rate_bps:
                continue
            backend = ps.backend
            rx_wait = getattr(backend, "rx_wait", None)
            out.append({
                "port": number, "name": backend.name, "rate_bps": ps.rate_bps,
                "frame_us": round(ps.frame_us, 3), "late": ps.late.to_dict(),
                "lag_given_up_s": round(ps.given_up_s, 6),
                "lag_given_up_events": ps.given_up_events,
                "rx_overruns": backend.poll_overruns() if hasattr(backend, "poll_overruns")
                else 0,
                "rx_ring_holes": _ring_holes(backend),
                "headroom_overflows": ps.counters.drops["headroom_overflow"],
                "rx_wait": None if rx_wait is None else rx_wait.to_dict()})
        return {"time_s": self.clock(), "ports": out, "behind": self.behind.to_dict()}

    def sample_queues(self, now: float | None = None) -> None:
        """Record one queue-depth sample of every port, and the buffer's
        occupancy (see :class:`QueueSeries`)."""
        self.series.sample(self.clock() if now is None else now, self.ports, self.buffer)

    def queue_series(self, ports: Iterable[int] | None = None,
                     since: float | None = None) -> dict[str, Any]:
        """The recorded series: ``{"time_s", "interval_s", "queues": [...],
        "buffer": [...], "groups": [...]}`` (see ``GetQueueSeries``)."""
        if ports is not None:
            for number in ports:
                self.port(number)
        pool, groups = self.series.buffer.query(ports, since)
        return {"time_s": self.clock(), "interval_s": self.series.interval_s,
                "queues": self.series.query(ports, since), "buffer": pool, "groups": groups}

    def reset_stats(self, ports: Iterable[int] | None = None) -> None:
        """Zero the counters of ``ports`` (all, and the switch's, by default);
        packets still queued or in flight stay counted (see :mod:`.tm`)."""
        now = self.clock()
        numbers = sorted(self.ports) if ports is None else list(ports)
        states = [self.port(n) for n in numbers]
        for ps in states:
            ps.counters.reset()
            if hasattr(ps.backend, "truncated"):
                ps.backend.truncated = 0
            if hasattr(ps.backend, "poll_overruns"):
                ps.backend.poll_overruns()
                ps.backend.overruns = 0
            ring = getattr(ps.backend, "rx_ring", None)
            if ring is not None:
                ring.holes = 0
            for prio, qc in enumerate(ps.tm.counters):
                qc.reset(ps.tm.depth_packets(prio), ps.tm.depth_bytes[prio], qc.in_flight)
            ps.ctrl_qc.reset(len(ps.ctrl), 0, ps.ctrl_qc.in_flight)
            ps.pg.reset_stats()
            ps.pfc.reset_stats(now)
            ps.lateness.reset()
            ps.given_up_s = 0.0
            ps.given_up_events = 0
            if getattr(ps.backend, "rx_wait", None) is not None:
                ps.backend.rx_wait.reset()
        if ports is None:
            self.buffer.reset_stats()
            self.behind.reset()
            self._behind_bin = -1
            self.drops = dict.fromkeys(self.drops, 0)
            self.digests = self.errors = 0

    def drop_summary(self) -> str:
        parts = []
        for number, ps in sorted(self.ports.items()):
            drops = {k: v for k, v in ps.counters.drops.items() if v}
            if drops:
                parts.append(f"port {number}: " + ", ".join(f"{k} {v}" for k, v in drops.items()))
        switch = {k: v for k, v in self.drops.items() if v}
        if switch:
            parts.append("switch: " + ", ".join(f"{k} {v}" for k, v in switch.items()))
        return "; ".join(parts) or "none"

    def close(self) -> None:
        """Close every port and capture (flushing them)."""
        for ps in self.ports.values():
            for writer in (ps.pcap_in, ps.pcap_out):
                if writer is not None:
                    writer.close()
            ps.backend.close()


def _ring_holes(backend: Any) -> int:
    """Empty receive-ring slots the port skipped with frames behind them
    (see :class:`~.ring.RxRing`): 0 for a port without a ring."""
    ring = getattr(backend, "rx_ring", None)
    return ring.holes if ring is not None else 0


def _pipeline_clock_us(pipeline: V1ModelPipeline) -> Callable[[], float]:
    # The enqueue timestamp given to egress must be on the pipeline's own
    # clock; V1ModelPipeline keeps it private (``_clock_us``).
    clock = getattr(pipeline, "clock_us", None) or getattr(pipeline, "_clock_us", None)
    if clock is None:
        raise SwitchError(f"{type(pipeline).__name__} has no clock_us")
    return clock
