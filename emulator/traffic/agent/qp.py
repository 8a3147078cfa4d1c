"""A reliable-connected queue pair: requester and responder of RoCEv2 RC.

**Requester** (the data this QP sends). Posted messages (RDMA WRITE or
SEND of any size, 0 included) are cut into path-MTU packets: FIRST, MIDDLE…,
LAST, or ONLY for one packet; WRITE FIRST/ONLY carry a RETH (IBA vol. 1
§9.4). PSNs are 24 bits and wrap; internally every packet has an unwrapped
sequence number ``seq`` (PSN = start PSN + seq mod 2^24), and a received
PSN is read as the seq nearest to the oldest unacknowledged one. AckReq is
set on each message's last packet and on every ``ack_req_every``-th.
Acknowledgement is cumulative (an ACK for PSN p acknowledges everything up
to p); a NAK "PSN sequence error" carrying the responder's expected PSN e
acknowledges everything before e and sends the requester back to e
(go-back-N, §9.7.5.1). The retransmission timer runs while an ACK is owed
(a packet with AckReq is unacknowledged): it starts when such a packet
leaves and restarts on each ACK that makes progress. Packets sent without
AckReq are covered by the next one that has it (every message's last
does), so a slow sender does not time out between ACK requests. When it
expires (the larger of ``rtt_timeout_factor`` × SRTT and SRTT + 4 RTTVAR,
RFC 6298 smoothing, within the bounds, doubling per timeout in a row; RTT
samples are taken from first transmissions only, Karn's rule, so they
follow the queueing delay; time the NIC held the QP's priority PFC-paused
does not count towards the timeout) the QP goes back to the oldest unacknowledged packet; after ``retry_count``
timeouts in a row the QP goes to the error state and fails its messages.
A message completes when its last packet is acknowledged; its record says
when it was posted, when its first packet left and when it was acked, so
flow completion time = ``acked_at − first_tx_at``.

**Responder** (the data this QP receives). It accepts exactly the expected
PSN (checking the opcode sequence), ACKs packets that ask for it (and every
``ack_every``-th accepted one if set), answers a duplicate that asks for an
ACK with an ACK of the last accepted PSN, and answers the first
out-of-order packet of a gap with one NAK (no more until the expected PSN
arrives). Data is not stored: the emulator moves bytes, not memory.

**Congestion** (DCQCN, see ``dcqcn``). Any data packet arriving CE-marked
asks the QP's CNP gate for a CNP to the sender's QP (priority 6, DSCP 48):
sent at once if none went in the last interval, else one is sent when the
interval ends (``cnps_deferred``), so marks arriving in a burst still get
one CNP per interval.
A received CNP goes to the QP's reaction point; the QP's pacer follows its
rate Rc. ACKs and NAKs travel on the QP's priority, not ECN-capable.

Every packet also counts in the QP's time series (:class:`~.stats.QpSeries`
on the NIC's bins): payload sent first time and again, payload accepted,
CE marks, CNPs sent and received.

The QP builds frames (from its :class:`~.frames.QpFrames` templates) and
queues control frames on its NIC, which it knows only as a :class:`QpPort`
(the NIC of :mod:`.nic` is one; this module does not import it); the NIC
reads received frames and hands
the QP their fields (:meth:`QueuePair.on_request`, :meth:`QueuePair.on_ack`,
:meth:`QueuePair.on_cnp`) and decides when data leaves
(:meth:`QueuePair.has_tx`, :attr:`pacer`, :meth:`QueuePair.next_frame`).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, Callable, Protocol

from emulator.traffic.agent.config import NicConfig, QpConfig
from emulator.traffic.agent.dcqcn import CnpGate, ReactionPoint
from emulator.traffic.agent.frames import QpFrames
from emulator.traffic.agent.pacing import Pacer
from emulator.traffic.agent.pfc import PauseState
from emulator.traffic.agent.stats import (
    CE_PACKETS, CNPS_RX, CNPS_SENT, RETX_BYTES, RX_BYTES, TX_BYTES, MessageLog, QpCounters,
    QpSeries, SeriesClock,
)
from emulator.traffic.agent.timers import Timer, TimerHeap
from emulator.traffic.layers import opcodes as op
from emulator.traffic.layers.aeth import (
    KIND_ACK,
    KIND_NAK,
    KIND_RNR_NAK,
    NAK_PSN_SEQUENCE_ERROR,
    ack_syndrome,
    nak_syndrome,
    syndrome_kind,
    syndrome_value,
)
from emulator.traffic.roce import (
    ECN_CE,
    ECN_ECT0,
    ECN_ECT1,
    ECN_NOT_ECT,
    MAX_PSN,
    RoceFlow,
)

HALF_PSN_SPACE = 1 << 23
PSN_SPACE = 1 << 24
_NAK_SEQ = nak_syndrome(NAK_PSN_SEQUENCE_ERROR)

# opcode -> (operation, position); position: 0 first, 1 middle, 2 last, 3 only
_SEGMENTS = {"write": (op.RC_RDMA_WRITE_FIRST, op.RC_RDMA_WRITE_MIDDLE, op.RC_RDMA_WRITE_LAST,
                       op.RC_RDMA_WRITE_ONLY),
             "send": (op.RC_SEND_FIRST, op.RC_SEND_MIDDLE, op.RC_SEND_LAST, op.RC_SEND_ONLY)}
_FIRST, _MIDDLE, _LAST, _ONLY = range(4)
REQUEST_OPCODES: dict[int, tuple[str, int]] = {
    code: (name, pos) for name, codes in _SEGMENTS.items() for pos, code in enumerate(codes)}
REQUEST_OPCODES[op.RC_SEND_LAST_WITH_IMMEDIATE] = ("send", _LAST)
REQUEST_OPCODES[op.RC_SEND_ONLY_WITH_IMMEDIATE] = ("send", _ONLY)
REQUEST_OPCODES[op.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE] = ("write", _LAST)
REQUEST_OPCODES[op.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE] = ("write", _ONLY)
_ECN = {"ect0": ECN_ECT0, "ect1": ECN_ECT1, "not-ect": ECN_NOT_ECT}


class QpError(RuntimeError):
    """A work request this QP cannot take."""


class Message:
    """One posted work request as the requester tracks it."""

    __slots__ = ("id", "op", "codes", "size", "npkts", "first_seq", "posted_at", "first_tx_at")

    def __init__(self, msg_id: int, kind: str, size: int, npkts: int, first_seq: int,
                 posted_at: float) -> None:
        self.id = msg_id
        self.op = kind
        self.codes = _SEGMENTS[kind]   # opcodes of its FIRST, MIDDLE, LAST, ONLY packets
        self.size = size
        self.npkts = npkts
        self.first_seq = first_seq
        self.posted_at = posted_at
        self.first_tx_at: float | None = None

    @property
    def end_seq(self) -> int:
        return self.first_seq + self.npkts


class QpPort(Protocol):
    """What a queue pair needs of the NIC it sits on."""

    config: NicConfig
    pause: PauseState             # the PFC pauses the NIC honours, per priority
    series_clock: SeriesClock     # the NIC's time bins, shared by its QPs' series
    send_control: Callable[[bytes, int], None]   # queue an ACK/NAK/CNP at a priority


class QueuePair:
    """Requester and responder of one RC queue pair (see the module docstring)."""

    def __init__(self, config: QpConfig, nic: QpPort, timers: TimerHeap, log: MessageLog,
                 now: float, *, wall_offset: float = 0.0, cnp_dscp: int = 48,
                 cnp_priority: int = 6, max_rate_samples: int = 20_000) -> None:
        self.config = config
        self.qpn = config.qpn
        self.remote_qpn = config.remote_qpn
        self.priority = config.priority
        self.cnp_priority = cnp_priority
        self.nic = nic
        self.timers = timers
        self.log = log
        self.wall = wall_offset
        self.counters = QpCounters()
        self.series = QpSeries(nic.series_clock)
        t = config.transport
        self.mtu = t.path_mtu_bytes
        self.ack_req_every = t.ack_req_every
        self.ack_every = t.ack_every
        self.max_outstanding = t.max_outstanding_packets
        dst_mac = config.remote_mac or nic.config.gateway_mac
        src_mac, src_ip = nic.config.mac, nic.config.ip
        dcqcn = config.dcqcn
        ecn = _ECN.get(config.ecn, ECN_ECT0 if dcqcn.enabled else ECN_NOT_ECT)
        sport = config.sport
        self.data_flow = RoceFlow(src_mac, dst_mac, src_ip, config.remote_ip, sport,
                                  dscp=config.dscp, ecn=ecn)
        self.ack_flow = RoceFlow(src_mac, dst_mac, src_ip, config.remote_ip, sport,
                                 dscp=config.dscp, ecn=ECN_NOT_ECT)
        self.cnp_flow = RoceFlow(src_mac, dst_mac, src_ip, config.remote_ip, sport,
                                 dscp=cnp_dscp, ecn=ECN_NOT_ECT)
        self.frames = QpFrames(self.data_flow, self.ack_flow, self.cnp_flow, self.remote_qpn,
                               self.mtu, va=config.remote_va, rkey=config.rkey)
        self._ack_syndrome = ack_syndrome()
        # requester
        self.psn0 = config.start_psn
        self.msgs: deque[Message] = deque()   # not yet complete, in seq order
        self.una = 0          # oldest unacknowledged seq
        self.snd = 0          # next seq to transmit
        self.max_sent = 0     # one past the highest seq ever transmitted
        self.end_seq = 0      # one past the last seq posted
        self._tx_index = 0    # index in msgs of the message holding snd
        self._next_msg_id = 0
        self.error = False
        self.srtt: float | None = None
        self.rttvar = 0.0
        self.base_rto_s = t.timeout_ms / 1e3
        self.rto_s = self.base_rto_s
        self.rto_at: float | None = None
        self.retries = 0
        self._rto_timer: Timer | None = None
        self._rtt_seq: int | None = None
        self._last_ack_req = -1  # highest seq sent with AckReq: an ACK is owed up to it
        self._rtt_sent_at = 0.0
        self._rto_paused0 = 0.0   # the NIC's paused time on our priority when the timer was set
        # a rate cap makes the QP behave as on a NIC of that rate: DCQCN starts
        # and recovers up to it
        cap = config.max_rate_bps
        top_bps = nic.config.line_rate_bps if cap is None else min(cap, nic.config.line_rate_bps)
        self.scaled = dcqcn.scaled(top_bps)
        self.pacer: Pacer | None = None
        if dcqcn.enabled:
            self.rp: ReactionPoint | None = ReactionPoint(self.scaled, now,
                                                          max_samples=max_rate_samples)
            self.pacer = Pacer(self.rp.rc_bps, max_lag_s=nic.pacer.max_lag_s,
                               overhead_bytes=nic.pacer.overhead_bytes, start=now)
        else:
            self.rp = None
            if cap is not None:
                self.pacer = Pacer(top_bps, max_lag_s=nic.pacer.max_lag_s,
                                   overhead_bytes=nic.pacer.overhead_bytes, start=now)
        self._dcqcn_timer: Timer | None = None
        # responder
        self.epsn = config.remote_start_psn
        self.msn = 0
        self.nak_sent = False
        self._since_ack = 0
        self._rx_msg: dict[str, Any] | None = None
        self.cnp_gate = CnpGate(self.scaled.cnp_interval_s)
        self._cnp_timer: Timer | None = None

    # -- requester: work requests ---------------------------------------------

    def post(self, kind: str, size: int, now: float) -> int:
        """Queue a WRITE or SEND of ``size`` bytes; returns the message id."""
        if kind not in _SEGMENTS:
            raise QpError(f"QP {self.qpn}: unknown operation {kind!r} (write or send)")
        if size < 0:
            raise QpError(f"QP {self.qpn}: message size {size} is negative")
        if self.error:
            raise QpError(f"QP {self.qpn} is in the error state")
        if self.pacer is not None and self.snd >= self.end_seq:
            # Idle until now: no credit for a burst.
            self.pacer.free_at = max(self.pacer.free_at, now)
        npkts = max(1, -(-size // self.mtu))
        msg_id = self._next_msg_id
        self._next_msg_id += 1
        self.msgs.append(Message(msg_id, kind, size, npkts, self.end_seq, now))
        self.end_seq += npkts
        self.counters.messages_posted += 1
        self.counters.bytes_posted += size
        return msg_id

    @property
    def outstanding_messages(self) -> int:
        return len(self.msgs)

    def has_tx(self) -> bool:
        """Data waiting that the window allows (pacing aside)."""
        if self.snd >= self.end_seq or self.error:
            return False
        return not self.max_outstanding or self.snd - self.una < self.max_outstanding

    def next_frame(self, now: float) -> bytes:
        """Build and account the next data packet; the NIC sends it now."""
        seq = self.snd
        msg = self.msgs[self._tx_index]
        k = seq - msg.first_seq
        n = msg.npkts
        mtu = self.mtu
        codes = msg.codes
        last = k == n - 1
        if n == 1:
            opcode, plen = codes[_ONLY], msg.size
        elif k == 0:
            opcode, plen = codes[_FIRST], mtu
        elif last:
            opcode, plen = codes[_LAST], msg.size - k * mtu
        else:
            opcode, plen = codes[_MIDDLE], mtu
        ack_req = last or (seq + 1) % self.ack_req_every == 0
        frame = self.frames.data(opcode, (self.psn0 + seq) & MAX_PSN, plen, ack_req, msg.size)
        self.snd = seq + 1
        if last:
            self._tx_index += 1
        size = len(frame)
        c = self.counters
        c.packets_sent += 1
        c.bytes_sent += size
        c.payload_bytes_sent += plen
        if seq < self.max_sent:
            c.retransmit_packets += 1
            self.series.add(RETX_BYTES, now, plen)
        else:
            c.first_tx_packets += 1
            c.payload_bytes_first_tx += plen
            self.series.add(TX_BYTES, now, plen)
            self.max_sent = seq + 1
            if k == 0:
                msg.first_tx_at = now
            if ack_req and self._rtt_seq is None:
                self._rtt_seq, self._rtt_sent_at = seq, now
        if ack_req:
            if seq > self._last_ack_req:
                self._last_ack_req = seq
            if self.rto_at is None:
                self._arm_rto(now + self.rto_s, now)
        pacer = self.pacer
        if pacer is not None:
            pacer.consume(size, now)
            rp = self.rp
            if rp is not None:
                rp.on_sent(size, now)
                if rp.rc_bps != pacer.rate_bps:
                    pacer.set_rate(rp.rc_bps)
        return frame

    # -- requester: acknowledgements -------------------------------------------

    def on_ack(self, psn: int, syndrome: int, now: float) -> None:
        """An RC ACKNOWLEDGE for ``psn`` with AETH ``syndrome`` arrived."""
        if self.error:
            return
        c = self.counters
        kind = syndrome_kind(syndrome)
        seq = self._to_seq(psn)
        if kind == KIND_ACK:
            c.acks_rx += 1
            if seq < self.una - 1 or seq >= self.max_sent:
                c.stale_acks_rx += 1
                return
            self._acknowledge(seq + 1, now)
            return
        c.naks_rx += 1
        if kind == KIND_NAK and syndrome_value(syndrome) == NAK_PSN_SEQUENCE_ERROR \
                or kind == KIND_RNR_NAK:
            if kind == KIND_NAK:
                c.naks_seq_rx += 1
            if seq < self.una or seq > self.max_sent:
                c.stale_acks_rx += 1
                return
            self._acknowledge(seq, now)
            self._go_back(seq)
            return
        self._fail(now)  # invalid request, remote access or operational error: fatal

    def _acknowledge(self, new_una: int, now: float) -> None:
        if new_una <= self.una:
            return
        c = self.counters
        if self._rtt_seq is not None and new_una > self._rtt_seq:
            self._rtt_sample(now - self._rtt_sent_at)
            self._rtt_seq = None
        acked = 0
        for msg in self.msgs:
            if msg.first_seq >= new_una:
                break
            lo = max(self.una, msg.first_seq) - msg.first_seq
            hi = min(new_una, msg.end_seq) - msg.first_seq
            acked += min(msg.size, hi * self.mtu) - min(msg.size, lo * self.mtu)
        c.bytes_acked += acked
        self.una = new_una
        self.retries = 0
        self.rto_s = self._base_rto()
        while self.msgs and self.msgs[0].end_seq <= new_una:
            msg = self.msgs.popleft()
            self._tx_index = max(0, self._tx_index - 1)
            c.messages_completed += 1
            self.log.add_sent(self._record(msg, "ok", now))
        if self.snd < new_una:
            self.snd = new_una
            self._seek_tx_index()
        self._arm_rto(now + self.rto_s if self.una <= self._last_ack_req else None, now)

    def _go_back(self, seq: int) -> None:
        if seq >= self.snd:
            return
        self.snd = seq
        self.counters.go_back_n += 1
        self._seek_tx_index()
        if self._rtt_seq is not None and self._rtt_seq >= seq:
            self._rtt_seq = None  # Karn: no sample from what is sent again

    def _seek_tx_index(self) -> None:
        index = 0
        for index, msg in enumerate(self.msgs):
            if msg.end_seq > self.snd:
                break
        else:
            index = len(self.msgs)
        self._tx_index = index

    def _to_seq(self, psn: int) -> int:
        """The unwrapped seq of a 24-bit PSN, taken nearest to ``una``."""
        d = (psn - self.psn0 - self.una) & MAX_PSN
        if d >= HALF_PSN_SPACE:
            d -= PSN_SPACE
        return self.una + d

    # -- requester: timeouts -----------------------------------------------------

    def _base_rto(self) -> float:
        if self.srtt is None:
            return self.base_rto_s
        t = self.config.transport
        rto = max(t.rtt_timeout_factor * self.srtt, self.srtt + 4 * self.rttvar)
        return min(t.max_timeout_ms / 1e3, max(t.min_timeout_ms / 1e3, rto))

    def _rtt_sample(self, sample: float) -> None:
        # RFC 6298 §2: SRTT and RTTVAR; samples from first transmissions only
        # (Karn), so they include the queueing delay the path has now.
        self.counters.rtt_samples += 1
        if self.srtt is None:
            self.srtt = sample
            self.rttvar = sample / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - sample)
            self.srtt = 0.875 * self.srtt + 0.125 * sample

    def _paused_s(self, now: float) -> float:
        """How long the NIC has held our priority paused, in all (PFC)."""
        pause = self.nic.pause
        if pause.mask:
            pause.expire(now)
        return pause.total_paused_s_of(self.priority, now)

    def _arm_rto(self, at: float | None, now: float) -> None:
        self.rto_at = at
        if at is None:
            return
        self._rto_paused0 = self._paused_s(now)
        timer = self._rto_timer
        if timer is None or not timer.alive or timer.when > at:
            if timer is not None:
                timer.cancel()
            self._rto_timer = self.timers.schedule(at, self._on_rto_timer)

    def _on_rto_timer(self, when: float) -> None:
        self._rto_timer = None
        if self.rto_at is None or self.error:
            return
        # The time our priority was PFC-paused since the timer was set does
        # not count: nothing could leave, so no ACK could be owed for it.
        paused = self._paused_s(when)
        if paused > self._rto_paused0:
            self.rto_at += paused - self._rto_paused0
            self._rto_paused0 = paused
        wake = self.rto_at
        if self.nic.pause.paused(self.priority):  # still paused: look again when it ends
            wake = max(wake, self.nic.pause.until[self.priority])
        if wake > when:  # pushed back by progress or a pause since it was set
            self._rto_timer = self.timers.schedule(wake, self._on_rto_timer)
            return
        if self.una > self._last_ack_req:
            self.rto_at = None
            return
        if self.retries >= self.config.transport.retry_count:
            self.counters.retry_exceeded += 1
            self._fail(when)
            return
        self.retries += 1
        self.counters.timeouts += 1
        self.rto_s = min(self.config.transport.max_timeout_ms / 1e3, self.rto_s * 2)
        self._go_back(self.una)
        self._arm_rto(when + self.rto_s, when)

    def _fail(self, now: float) -> None:
        self.error = True
        self.rto_at = None
        c = self.counters
        while self.msgs:
            c.messages_failed += 1
            self.log.add_sent(self._record(self.msgs.popleft(), "error", now))
        self._tx_index = 0

    # -- congestion notification ---------------------------------------------------

    def on_cnp(self, now: float) -> None:
        self.counters.cnps_rx += 1
        self.series.add(CNPS_RX, now, 1)
        rp = self.rp
        if rp is None:
            return
        rp.on_cnp(now)
        self.pacer.set_rate(rp.rc_bps)
        self._schedule_dcqcn()

    def _schedule_dcqcn(self) -> None:
        rp = self.rp
        when = rp.next_event()
        timer = self._dcqcn_timer
        if timer is not None and timer.alive:
            if timer.when == when:
                return
            timer.cancel()
        self._dcqcn_timer = None if when == math.inf else self.timers.schedule(
            when, self._on_dcqcn_timer)

    def _on_dcqcn_timer(self, when: float) -> None:
        self._dcqcn_timer = None
        self.rp.advance(when)
        self.pacer.set_rate(self.rp.rc_bps)
        self._schedule_dcqcn()

    def _on_cnp_timer(self, when: float) -> None:
        # The interval ended with marks suppressed in it: send their one CNP.
        self._cnp_timer = None
        gate = self.cnp_gate
        if gate.fire(when):
            self.counters.cnps_sent += 1
            self.counters.cnps_deferred += 1
            self.series.add(CNPS_SENT, when, 1)
            self.nic.send_control(self.frames.cnp_frame, self.cnp_priority)
        elif gate.pending:
            self._cnp_timer = self.timers.schedule(gate.due, self._on_cnp_timer)

    # -- responder -----------------------------------------------------------------

    def on_request(self, opcode: int, psn: int, ack_req: bool, ecn: int, payload_len: int,
                   now: float) -> None:
        """A SEND or WRITE packet (BTH ``opcode``, ``psn``, AckReq; IPv4
        ``ecn``; ``payload_len`` bytes of data) arrived for this QP."""
        c = self.counters
        c.data_packets_rx += 1
        if ecn == ECN_CE:
            c.ce_packets_rx += 1
            self.series.add(CE_PACKETS, now, 1)
            gate = self.cnp_gate
            if gate.allow(now):
                c.cnps_sent += 1
                self.series.add(CNPS_SENT, now, 1)
                self.nic.send_control(self.frames.cnp_frame, self.cnp_priority)
            else:
                c.cnps_suppressed += 1
                if self._cnp_timer is None:
                    self._cnp_timer = self.timers.schedule(gate.due, self._on_cnp_timer)
        d = (psn - self.epsn) & MAX_PSN
        if d == 0:
            kind, pos = REQUEST_OPCODES[opcode]
            rx = self._rx_msg
            if rx is None:
                valid = pos in (_FIRST, _ONLY)
            else:
                valid = pos in (_MIDDLE, _LAST) and rx["op"] == kind
            if not valid:
                c.opcode_errors += 1
                return
            c.accepted_packets += 1
            c.payload_bytes_rx += payload_len
            self.series.add(RX_BYTES, now, payload_len)
            self.epsn = (self.epsn + 1) & MAX_PSN
            self.nak_sent = False
            if rx is None:
                rx = self._rx_msg = {"qpn": self.qpn, "op": kind, "size": 0,
                                     "first_at": now + self.wall}
            rx["size"] += payload_len
            if pos in (_LAST, _ONLY):
                self.msn = (self.msn + 1) & MAX_PSN
                c.messages_rx += 1
                rx["last_at"] = now + self.wall
                rx["msn"] = self.msn
                self._rx_msg = None
                self.log.add_received(rx)
            self._since_ack += 1
            if ack_req or (self.ack_every and self._since_ack >= self.ack_every):
                self._since_ack = 0
                c.acks_sent += 1
                self.nic.send_control(self.frames.ack(psn, self.msn, self._ack_syndrome),
                                      self.priority)
        elif d < HALF_PSN_SPACE:
            c.out_of_order_packets += 1
            if not self.nak_sent:
                self.nak_sent = True
                c.naks_sent += 1
                self.nic.send_control(
                    self.frames.ack(self.epsn, self.msn, _NAK_SEQ),
                    self.priority)
        else:
            c.duplicate_packets += 1
            if ack_req:
                c.acks_sent += 1
                self.nic.send_control(
                    self.frames.ack((self.epsn - 1) & MAX_PSN, self.msn, self._ack_syndrome),
                    self.priority)

    # -- reporting -------------------------------------------------------------------

    def _record(self, msg: Message, status: str, now: float) -> dict[str, Any]:
        first = None if msg.first_tx_at is None else msg.first_tx_at + self.wall
        done = now + self.wall
        return {"qpn": self.qpn, "id": msg.id, "op": msg.op, "size": msg.size,
                "packets": msg.npkts, "status": status, "posted_at": msg.posted_at + self.wall,
                "first_tx_at": first, "acked_at": done if status == "ok" else None,
                "fct_s": None if first is None or status != "ok" else done - first}

    def snapshot(self, now: float) -> dict[str, Any]:
        out: dict[str, Any] = {
            "qpn": self.qpn, "nic": self.nic.config.name, "remote_ip": self.config.remote_ip,
            "remote_qpn": self.remote_qpn, "priority": self.priority, "error": self.error,
            "messages_outstanding": len(self.msgs), "psn_next": (self.psn0 + self.snd) & MAX_PSN,
            "psn_expected": self.epsn, "srtt_s": self.srtt,
            "rttvar_s": self.rttvar, "rto_s": self.rto_s,
            "counters": self.counters.to_dict(), "series": self.series.to_dict(self.wall),
            "dcqcn": None, "rate_samples": []}
        if self.rp is not None:
            out["dcqcn"] = self.rp.to_dict(now)
            out["dcqcn"]["scaled"] = self.scaled.to_dict()
            out["rate_samples"] = [[t + self.wall, rc, rt, a] for t, rc, rt, a in self.rp.samples]
        return out
