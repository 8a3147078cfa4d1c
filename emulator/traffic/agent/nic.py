"""One NIC of the agent: transmit scheduling, line-rate pacing, PFC
honouring, and what happens to a received frame.

**Transmit.** The NIC is a serialising port at ``line_rate_bps`` (a
:class:`~.pacing.Pacer`). When the line is free it sends, in this order:
control frames (ACK, NAK, CNP) from per-priority FIFOs, highest priority
first; then the next data packet of the queue pairs, round-robin among the
eligible ones. A QP is eligible when it has data its window allows, its
priority is not paused, and its own pacer (its DCQCN rate) is free. A
priority paused by PFC holds its control frames and its QPs; the others go
on. An idle line banks no credit: catching up after a late wake-up (up to
``max_lag_us``) is allowed only while there was something to send. A
pause holds the line and the paused queue pairs' pacers: they resume from
the pause's end, not from the last frame before it, and a line that waited
for a queue pair's slower pacer resumes from that pacer's time; lag behind
those times that is given up counts as lag (``given_up_s``). Frames
the socket refuses are counted (``tx_errors``) and lost, as on
a wire; the line time is spent either way. A back end that batches (a
transmit ring) is flushed at the end of each pass that sent something, so
the frames of one pass leave together, before the loop waits again;
there ``tx_packets`` counts the frames the ring took, and what the kernel
did with them afterwards is in the snapshot's ``tx_batching``.

**Receive.** IPv4 frames are read as RoCEv2 (the common shape, IPv4
without options, in place; any other through ``roce.parse``, with the same
checks and counters) and handed to the queue pair their BTH names:
ACK/NAK to the requester, CNP to DCQCN, SEND/WRITE to the responder.
802.1Qbb frames act on the pause state (:mod:`.pfc`). Anything else is
counted and dropped.

**PFC storm.** :meth:`Nic.start_storm` makes the NIC send PFC XOFF frames
to its switch port again and again (:mod:`.storm`), as a NIC with a stuck
receive pipeline does; they leave first, paused or not (MAC control frames
are never paused), and count in ``pfc_tx`` and ``pfc_storm_frames``.

**Time series.** The NIC owns the :class:`~.stats.SeriesClock` of its
queue pairs' binned counts: bins of ``series_bin_s`` on a grid through
``series_origin_unix`` (the run's common start, or by default Unix time 0),
bin 0 being the one the NIC starts in, so the bins of every agent of a run
line up. Its snapshot has ``pause_intervals``: per
priority, ``[start_unix, end_unix]`` of each pause it honoured (a pause
still on ends at the snapshot), and ``pause_intervals_dropped``.
"""

from __future__ import annotations

import math
import socket
import struct
from collections import deque
from typing import TYPE_CHECKING, Any, Sequence

from emulator.traffic.agent.config import NicConfig
from emulator.traffic.agent.pacing import Pacer
from emulator.traffic.agent.pfc import MAX_PAUSE_INTERVALS, PauseState
from emulator.traffic.agent.qp import REQUEST_OPCODES
from emulator.traffic.agent.stats import MAX_SERIES_BINS, NicCounters, SeriesClock
from emulator.traffic.agent.storm import PauseStorm
from emulator.traffic.layers.icrc import ETH_P_IPV4, ROCE_UDP_PORT, icrc_ok
from emulator.traffic.layers.opcodes import CNP, EXT_HEADER_BYTES, EXT_HEADERS, RC_ACKNOWLEDGE
from emulator.traffic.layers.pfc import NUM_PRIORITIES, pfc_pause_quanta
from emulator.traffic.roce import RoceFormatError, parse

if TYPE_CHECKING:
    from emulator.traffic.agent.qp import QueuePair

_IPV4 = b"\x08\x00"
_MAC_CONTROL = b"\x88\x08"
# EtherType, IPv4 version/IHL, TOS, total length, protocol, destination;
# UDP destination port; BTH opcode, flags, (FECN/BECN/reserved, dest QP),
# (AckReq, PSN); the first byte after the BTH (an AETH's syndrome)
_COMMON = struct.Struct("!12xHBBH5xB6x4s2xH4xBB2xIIB")
# Ethernet + IPv4 (no options) + UDP + BTH + ICRC: the shortest RoCEv2 frame.
_MIN_ROCE = 14 + 20 + 8 + 12 + 4
# From the end of the IPv4 datagram back to the extended headers: ICRC, then
# everything from the frame's start to the end of the BTH.
_PAYLOAD_MINUS_EXT = 4 + 14 + 20 + 8 + 12
INF = math.inf


def _nothing() -> None:
    """The flush of a back end that sends each frame in ``send``."""


class Nic:
    """Scheduling, pacing, pause state and receive dispatch of one NIC."""

    def __init__(self, config: NicConfig, io: Any, now: float, *,
                 check_icrc: bool = False, series_bin_s: float = 0.01,
                 wall_offset: float = 0.0, max_series_bins: int = MAX_SERIES_BINS,
                 series_origin_unix: float | None = None,
                 max_pause_intervals: int = MAX_PAUSE_INTERVALS) -> None:
        self.config = config
        self.io = io
        self.check_icrc = check_icrc
        self.wall = wall_offset
        self.pacer = Pacer(config.line_rate_bps, overhead_bytes=config.overhead_bytes,
                           max_lag_s=config.max_lag_us / 1e6, start=now)
        self.pause = PauseState(config.line_rate_bps, config.pfc_priorities,
                                max_intervals=max_pause_intervals)
        self.series_clock = clock = SeriesClock(now, series_bin_s, max_series_bins)
        origin = (series_origin_unix or 0.0) - wall_offset  # on the agent's clock
        clock.t0 = origin + math.floor((now - origin) / series_bin_s) * series_bin_s
        self.counters = NicCounters()
        self.qps: list[QueuePair] = []
        self.qp_by_num: dict[int, QueuePair] = {}
        self._rr = 0
        self._ctrl: list[deque[bytes]] = [deque() for _ in range(NUM_PRIORITIES)]
        self._ctrl_mask = 0
        self._request_opcodes = frozenset(REQUEST_OPCODES)
        # extended header bytes after the BTH, per opcode parse() accepts
        self._ext_bytes = {code: sum(EXT_HEADER_BYTES[h] for h in headers)
                           for code, headers in EXT_HEADERS.items()}
        self._ip_bytes = socket.inet_aton(config.ip)
        self._flush = getattr(io, "flush", None) or _nothing
        self.storm: PauseStorm | None = None

    def add_qp(self, qp: QueuePair) -> None:
        self.qps.append(qp)
        self.qp_by_num[qp.qpn] = qp

    # -- transmit ------------------------------------------------------------------

    def send_control(self, frame: bytes, priority: int) -> None:
        """Queue an ACK, NAK or CNP; it leaves before data when the line is free."""
        self._ctrl[priority].append(frame)
        self._ctrl_mask |= 1 << priority

    def service(self, now: float) -> int:
        """Send everything that may leave at ``now``; returns how many frames."""
        pause = self.pause
        if pause.mask:
            pause.expire(now)
        pacer = self.pacer
        if pause.resumed_mask:
            self._resume(pause)
        if pacer.free_at > now:
            return 0
        sent = 0
        counters = self.counters
        send = self.io.send
        storm = self.storm
        ctrl = self._ctrl
        paused = pause.mask   # pauses change on received frames, not within a pass
        while pacer.free_at <= now:
            eligible = self._ctrl_mask & ~paused
            if storm is not None and storm.next_time() <= now:
                frame = storm.take(now)
                counters.pfc_tx += 1
                if frame is storm.xoff:
                    counters.pfc_storm_frames += 1
            elif eligible:
                priority = eligible.bit_length() - 1
                queue = ctrl[priority]
                frame = queue.popleft()
                if not queue:
                    self._ctrl_mask &= ~(1 << priority)
            else:
                qp = self._pick(now)
                if qp is None:
                    # Idle (or waiting on a QP's own pacer): the line banks no
                    # credit for a burst later.
                    pacer.free_at = now
                    break
                qp_pacer = qp.pacer
                if qp_pacer is not None and qp_pacer.free_at > pacer.free_at:
                    # the line waited for the queue pair's own (DCQCN) rate
                    pacer.resume_at(qp_pacer.free_at)
                frame = qp.next_frame(now)
            size = len(frame)
            if send(frame):
                counters.tx_packets += 1
                counters.tx_bytes += size
            else:
                counters.tx_errors += 1
            pacer.consume(size, now)
            sent += 1
        if sent:
            self._flush()   # frames a batching back end queued leave with this pass
        return sent

    def _resume(self, pause: PauseState) -> None:
        # The line and the paused queue pairs sent nothing while paused: no
        # credit from before the pause for a burst after it (the frames would
        # leave at once), and their schedules go on from the pause's end.
        resumed = pause.resumed_mask
        pause.resumed_mask = 0
        self.pacer.resume_at(pause.resumed_at)
        ended = pause.ended
        for qp in self.qps:
            if qp.pacer is not None and resumed >> qp.priority & 1:
                qp.pacer.resume_at(ended[qp.priority])

    def _pick(self, now: float) -> QueuePair | None:
        qps = self.qps
        n = len(qps)
        paused = self.pause.mask
        if n == 1:  # the common case: no round to make
            qp = qps[0]
            if qp.snd < qp.end_seq and qp.has_tx() and not paused >> qp.priority & 1 and (
                    qp.pacer is None or qp.pacer.free_at <= now):
                return qp
            return None
        start = self._rr
        for i in range(n):
            j = start + i
            if j >= n:
                j -= n
            qp = qps[j]
            if qp.snd < qp.end_seq and qp.has_tx() and not paused >> qp.priority & 1 and (
                    qp.pacer is None or qp.pacer.free_at <= now):
                self._rr = j + 1 if j + 1 < n else 0
                return qp
        return None

    def next_tx_time(self) -> float:
        """When :meth:`service` next has something to do (``inf``: nothing)."""
        paused = self.pause.mask
        t = self.pause.next_expiry() if paused else INF
        line = self.pacer.free_at
        if self.storm is not None:
            t = min(t, max(line, self.storm.next_time()))
        if self._ctrl_mask & ~paused:
            return min(t, line)
        for qp in self.qps:
            if qp.snd < qp.end_seq and qp.has_tx() and not paused >> qp.priority & 1:
                pacer = qp.pacer
                ready = line if pacer is None or pacer.free_at < line else pacer.free_at
                if ready < t:
                    t = ready
        return t

    def start_storm(self, priorities: Sequence[int], quanta: int, interval_s: float,
                    now: float) -> PauseStorm:
        """Send XOFF frames for ``priorities`` every ``interval_s`` from now on
        (a storm already running is replaced)."""
        self.storm = PauseStorm(self.config.mac, priorities, quanta, interval_s, now)
        return self.storm

    def stop_storm(self, now: float, *, xon: bool = True) -> int:
        """End the storm (one XON follows with ``xon``); its XOFF frames so far."""
        if self.storm is None:
            return 0
        self.storm.stop(now, xon)
        return self.storm.frames

    def backlog(self) -> int:
        """Control frames waiting."""
        return sum(len(q) for q in self._ctrl)

    # -- receive -------------------------------------------------------------------

    def on_frame(self, frame: bytes, now: float) -> None:
        c = self.counters
        c.rx_packets += 1
        n = len(frame)
        c.rx_bytes += n
        if n >= _MIN_ROCE:
            # The common shape (IPv4 without options, UDP to 4791, an opcode
            # the agent knows) is read in place, with one unpack; anything
            # else goes through roce.parse, which says what is wrong with it.
            (ethertype, ver_ihl, tos, ip_len, proto, dst_ip, dport, opcode, flags, qp_word,
             psn_word, syndrome) = _COMMON.unpack_from(frame)
            if ethertype == ETH_P_IPV4 and ver_ihl == 0x45 and proto == 17 \
                    and dport == ROCE_UDP_PORT:
                ext = self._ext_bytes.get(opcode)
                end = 14 + ip_len
                if ext is not None and _MIN_ROCE <= end <= n:
                    payload_len = end - _PAYLOAD_MINUS_EXT - ext - (flags >> 4 & 3)
                    if payload_len < 0:
                        c.other_rx += 1
                        return
                    c.roce_rx += 1
                    if dst_ip != self._ip_bytes:
                        c.not_for_us_rx += 1
                        return
                    if self.check_icrc and not icrc_ok(frame):
                        c.bad_icrc_rx += 1
                        return
                    qp = self.qp_by_num.get(qp_word & 0xFFFFFF)
                    if qp is None:
                        c.unknown_qp_rx += 1
                        return
                    if opcode in self._request_opcodes:
                        qp.on_request(opcode, psn_word & 0xFFFFFF, psn_word >= 0x80000000,
                                      tos & 3, payload_len, now)
                    elif opcode == RC_ACKNOWLEDGE:
                        qp.on_ack(psn_word & 0xFFFFFF, syndrome, now)
                    elif opcode == CNP:
                        qp.on_cnp(now)
                    else:
                        c.malformed_rx += 1  # an RC opcode this agent does not speak
                    return
        if frame[12:14] == _IPV4:
            try:
                view = parse(frame, check_icrc=self.check_icrc)
            except RoceFormatError:
                c.other_rx += 1
                return
            c.roce_rx += 1
            if view.dst_ip != self.config.ip:
                c.not_for_us_rx += 1
                return
            if view.icrc_ok is False:
                c.bad_icrc_rx += 1
                return
            qp = self.qp_by_num.get(view.dest_qp)
            if qp is None:
                c.unknown_qp_rx += 1
                return
            opcode = view.opcode
            if opcode in self._request_opcodes:
                qp.on_request(opcode, view.psn, view.ack_req, view.ecn, view.payload_len, now)
            elif opcode == RC_ACKNOWLEDGE:
                qp.on_ack(view.psn, view.aeth.syndrome, now)
            elif opcode == CNP:
                qp.on_cnp(now)
            else:
                c.malformed_rx += 1  # an RC opcode this agent does not speak (READ, atomics)
        elif frame[12:14] == _MAC_CONTROL:
            try:
                quanta = pfc_pause_quanta(frame)
            except ValueError:
                c.other_rx += 1
                c.mac_control_other_rx += 1
                return
            c.pfc_rx += 1
            self.pause.on_frame(quanta, now)
        else:
            c.other_rx += 1

    # -- reporting -----------------------------------------------------------------

    def snapshot(self, now: float) -> dict[str, Any]:
        p = self.pause
        cfg = self.config
        return {"name": cfg.name, "ip": cfg.ip, "mac": cfg.mac,
                "line_rate_bps": cfg.line_rate_bps, "counters": self.counters.to_dict(),
                "paused_s": p.total_paused_s(now), "pfc_pauses": list(p.pauses),
                "pfc_resumes": list(p.resumes), "paused_now": [
                    bool(p.mask >> i & 1) for i in range(NUM_PRIORITIES)],
                "control_backlog": self.backlog(), "io_errors": getattr(self.io, "errors", 0),
                "refused": (self.io.refused.to_dict() if hasattr(self.io, "refused")
                            else None),
                "tx_batching": self.io.tx_stats() if hasattr(self.io, "tx_stats") else None,
                "pause_intervals": [[[start + self.wall, end + self.wall] for start, end in spans]
                                    for spans in p.intervals_by_priority(now)],
                "pause_intervals_dropped": p.intervals_dropped,
                "pfc_storm": None if self.storm is None else self.storm.to_dict(self.wall)}
