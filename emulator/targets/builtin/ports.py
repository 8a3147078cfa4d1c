"""Port back ends of the built-in switch and their counters.

A back end moves frames; the data plane decides everything else. Every back
end has ``name``, ``fileno()`` (a descriptor that polls readable when
``recv`` may return a frame; None for ports fed by method calls),
``recv() -> bytes | None`` (non-blocking; None when nothing is waiting),
``send(frame) -> bool`` (False: the frame was not sent) and ``close()``.

- :class:`RawPort`: an ``AF_PACKET`` socket bound to an interface (all
  EtherTypes, promiscuous, our own outgoing frames ignored via
  ``PACKET_IGNORE_OUTGOING``, a large receive buffer, non-blocking). The
  kernel strips a received 802.1Q tag into the socket's auxiliary data
  before any tap sees the frame; with ``keep_vlan`` (default) the port asks
  for ``PACKET_AUXDATA`` and puts the tag back, so P4 parses what was on the
  wire. With ``timestamps`` (default) the kernel stamps each frame as it
  enters the receive path (``SO_TIMESTAMPNS``) and the port measures how
  long it waited before the switch read it (``rx_wait``, a
  :class:`~.tally.LatenessTally`, read as a
  :class:`~emulator.fidelity.LatenessHistogram`): the time a busy switch
  leaves frames in the socket. With ``ring`` (default) frames are read from
  a ``PACKET_MMAP`` receive ring (:mod:`.ring`: no system call per frame,
  the same timestamps and VLAN tags from the ring's slot headers); where
  the ring cannot be set up the port reads with ``recvmsg``. With
  ``tx_ring`` (off by default: on a veth here it costs more CPU per frame
  than ``send``, see :mod:`.ring`) frames are sent through a ``PACKET_MMAP`` transmit
  ring on a second socket of the interface (:class:`~.ring.TxRing`):
  ``send`` writes the frame into the ring, ``flush`` (the switch's loop
  calls it once a pass and before it waits) hands every frame written
  since to the kernel in one system call. A frame the ring cannot take
  (longer than the MTU, the ring full) is sent with ``send`` after a flush
  (refused if that flush is: it would overtake the frames in the ring), so
  a port's frames still leave in order, and a refusal is a failed send
  (``tx_error``) as before; where the ring cannot be set up the port sends
  with ``send``. Hosts should
  turn off TSO/GSO on their veths: an AF_PACKET socket
  reads a GSO super-frame as one frame, which the switch forwards as is
  (and the send fails above the MTU: a ``tx_error`` drop).
- :class:`FakePort`: in memory, for tests (``inject`` to receive, ``sent``
  to see what left and when).
- :class:`CpuPort`: the ``--cpu-port``; frames sent to it go to a callback
  (the P4Runtime server's packet-in), packet-out enters through the switch.

:class:`PortCounters` are the port-level counters the data plane keeps;
``drops`` counts by cause (:data:`DROP_CAUSES`).
"""

from __future__ import annotations

import os
import socket
import struct
import time
from collections import deque
from typing import Callable

from emulator.targets.builtin.ring import RxRing, TxRing, interface_mtu
from emulator.targets.builtin.tally import LatenessTally

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_AUXDATA = 8
PACKET_STATISTICS = 6
PACKET_IGNORE_OUTGOING = 23
SO_RCVBUFFORCE = 33
SO_TIMESTAMPNS = 35  # SCM_TIMESTAMPNS: a struct timespec of CLOCK_REALTIME
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
_AUXDATA = struct.Struct("=IIIHHHH")  # struct tpacket_auxdata
_TIMESPEC = struct.Struct("=qq")
_ANC_SIZE = socket.CMSG_SPACE(_AUXDATA.size) + socket.CMSG_SPACE(_TIMESPEC.size)
_VLAN_TAG = struct.Struct("!HH")
_PACKET_STATS = struct.Struct("=II")  # struct tpacket_stats: tp_packets, tp_drops
MAX_FRAME = 65_535
_MSG_TRUNC = int(socket.MSG_TRUNC)  # a plain int: IntFlag.__and__ costs microseconds

# Why a frame was dropped, port by port (ingress or egress port as noted).
DROP_CAUSES = (
    "no_program",      # ingress: no P4 program loaded (--no-p4)
    "pipeline",        # ingress or egress: the P4 program dropped it
    "pipeline_error",  # ingress or egress: the executor raised
    "tail",            # egress: a lossy queue over its dynamic threshold, static cap or
                       # the shared pool (per priority in the queue counters)
    "headroom_overflow",  # ingress: a lossless frame the priority group's headroom
                          # could not take (per priority in the buffer's counters)
    "bad_priority",    # egress: priority >= --priority-queues
    "tx_error",        # egress: the socket refused the frame
    "truncated",       # ingress: longer than the receive buffer
    "rx_overrun",      # ingress: the kernel dropped it, the socket's buffer was full
)


class PortCounters:
    """rx/tx frames and bytes as the socket saw them, drops by cause, and PFC
    frames received (consumed by the MAC) and sent (emitted by P4)."""

    __slots__ = ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "drops",
                 "pfc_rx_frames", "pfc_tx_frames")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.rx_packets = self.rx_bytes = self.tx_packets = self.tx_bytes = 0
        self.pfc_rx_frames = self.pfc_tx_frames = 0
        self.drops: dict[str, int] = dict.fromkeys(DROP_CAUSES, 0)

    def to_dict(self) -> dict[str, object]:
        return {"rx_packets": self.rx_packets, "rx_bytes": self.rx_bytes,
                "tx_packets": self.tx_packets, "tx_bytes": self.tx_bytes,
                "pfc_rx_frames": self.pfc_rx_frames, "pfc_tx_frames": self.pfc_tx_frames,
                "drops": dict(self.drops)}


class RawPort:
    """An ``AF_PACKET`` socket on interface ``iface`` (needs root or
    CAP_NET_RAW)."""

    def __init__(self, iface: str, *, rcvbuf_bytes: int = 8 << 20, keep_vlan: bool = True,
                 timestamps: bool = True, ring: bool = True, tx_ring: bool = False) -> None:
        self.name = iface
        self.errors = 0
        self.last_error: OSError | None = None
        # Protocol 0 receives nothing until bind, so no frame of another
        # interface slips in between socket() and bind().
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        self.rx_wait: LatenessTally | None = LatenessTally() if timestamps else None
        self._ring: RxRing | None = None
        self.tx_ring: TxRing | None = None
        self._tx_sock: socket.socket | None = None
        mtu = 0
        try:
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            try:
                sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf_bytes)
            except PermissionError:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf_bytes)
            if ring and keep_vlan:  # the ring's slots carry the tag and timestamp
                mtu = interface_mtu(sock, iface)
                try:
                    self._ring = RxRing.open(sock, mtu, self.rx_wait, ring_bytes=rcvbuf_bytes)
                except OSError:
                    self._ring = None
            if self._ring is None:
                if keep_vlan:
                    sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
                if timestamps:
                    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            sock.bind((iface, ETH_P_ALL))
            mreq = struct.pack("iHH8s", socket.if_nametoindex(iface), PACKET_MR_PROMISC, 0, b"")
            sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            sock.setblocking(False)
            if tx_ring:
                self._open_tx_ring(iface, mtu or interface_mtu(sock, iface))
        except BaseException:
            if self._ring is not None:
                self._ring.close()
            self._close_tx_ring()
            sock.close()
            raise
        self._sock = sock
        self._recvmsg_needed = keep_vlan or timestamps
        if self._ring is not None:
            self.recv = self._ring.recv  # type: ignore[method-assign]
        self._recv = sock.recv
        self._recvmsg = sock.recvmsg
        self._send = sock.send
        self._truncated = 0
        self.overruns = 0

    @property
    def truncated(self) -> int:
        """Frames longer than the receive buffer (or ring slot), skipped."""
        return self._truncated + (self._ring.truncated if self._ring is not None else 0)

    @truncated.setter
    def truncated(self, value: int) -> None:
        self._truncated = value
        if self._ring is not None:
            self._ring.truncated = 0

    @property
    def uses_ring(self) -> bool:
        return self._ring is not None

    @property
    def rx_ring(self) -> RxRing | None:
        """The receive ring (None: the port reads with ``recvmsg``)."""
        return self._ring

    def _open_tx_ring(self, iface: str, mtu: int) -> None:
        # Protocol 0: this socket receives nothing; the receive socket's
        # PACKET_IGNORE_OUTGOING keeps it from reading what this one sends.
        tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        try:
            self.tx_ring = TxRing.open(tx, mtu)
            tx.bind((iface, 0))
        except OSError:
            if self.tx_ring is not None:
                self.tx_ring.close()
                self.tx_ring = None
            tx.close()
            return
        self._tx_sock = tx
        self.send = self._send_ring  # type: ignore[method-assign]
        self.flush = self._flush_ring  # type: ignore[method-assign]

    def _close_tx_ring(self) -> None:
        if self.tx_ring is not None:
            self.tx_ring.close()
            self.tx_ring = None
        if self._tx_sock is not None:
            self._tx_sock.close()
            self._tx_sock = None

    def poll_overruns(self) -> int:
        """Frames the kernel dropped because this socket's receive buffer was
        full (the switch fell behind), since the last reset. Reading the
        kernel's count resets it, so it is accumulated here."""
        try:
            raw = self._sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, _PACKET_STATS.size)
        except OSError:
            return self.overruns
        self.overruns += _PACKET_STATS.unpack(raw)[1]
        return self.overruns

    def fileno(self) -> int:
        return self._sock.fileno()

    def recv(self) -> bytes | None:
        try:
            if not self._recvmsg_needed:
                return self._recv(MAX_FRAME)
            data, anc, flags, _addr = self._recvmsg(MAX_FRAME, _ANC_SIZE)
        except BlockingIOError:
            return None
        except OSError as exc:  # e.g. ENETDOWN once when the interface goes away
            self.errors += 1
            self.last_error = exc
            return None
        if flags & _MSG_TRUNC:
            self._truncated += 1
            return None
        for level, kind, cdata in anc:
            if kind == SO_TIMESTAMPNS and level == socket.SOL_SOCKET:
                sec, nsec = _TIMESPEC.unpack_from(cdata)
                if self.rx_wait is not None:
                    self.rx_wait.record_s(time.time() - sec - nsec * 1e-9)
            # Byte 0 of tp_status (little-endian) holds TP_STATUS_VLAN_VALID.
            elif kind == PACKET_AUXDATA and cdata[0] & TP_STATUS_VLAN_VALID:
                status, _l, _s, _m, _n, tci, tpid = _AUXDATA.unpack_from(cdata)
                if not status & TP_STATUS_VLAN_TPID_VALID:
                    tpid = 0x8100
                data = data[:12] + _VLAN_TAG.pack(tpid, tci) + data[12:]
        return data

    def send(self, frame: bytes) -> bool:
        try:
            self._send(frame)
            return True
        except OSError as exc:  # EAGAIN, ENOBUFS, EMSGSIZE, ENETDOWN, ENXIO
            self.errors += 1
            self.last_error = exc
            return False

    def flush(self) -> bool:
        """Hand the frames sent since the last flush to the kernel; False
        when it refused them (they stay in the ring for the next flush).
        Nothing to do without a transmit ring."""
        return True

    def _send_ring(self, frame: bytes) -> bool:
        ring = self.tx_ring
        if ring.put(frame):  # type: ignore[union-attr]
            return True
        # Not taken (too long, ring full): after the frames before it, or
        # not at all while they cannot leave (it would overtake them).
        if not self._flush_ring():
            return False
        try:
            self._send(frame)
            return True
        except OSError as exc:
            self.errors += 1
            self.last_error = exc
            return False

    def _flush_ring(self) -> bool:
        ring = self.tx_ring
        if ring.pending and not ring.flush():  # type: ignore[union-attr]
            self.errors += 1
            self.last_error = ring.last_error  # type: ignore[union-attr]
            return False
        return True

    def close(self) -> None:
        if self._ring is not None:
            self.recv = lambda: None  # type: ignore[method-assign]
            self._ring.close()
            self._ring = None
        if self.tx_ring is not None:
            self._flush_ring()
            self.send = lambda frame: False  # type: ignore[method-assign]
            self.flush = lambda: True  # type: ignore[method-assign]
            self._close_tx_ring()
        self._sock.close()


class FakePort:
    """An in-memory port: ``inject(frame)`` (any thread) makes it receive a
    frame; ``sent`` lists ``(clock(), frame)`` of every frame it sent."""

    def __init__(self, name: str = "fake", clock: Callable[[], float] | None = None,
                 fail_sends: bool = False) -> None:
        self.name = name
        self._clock = clock
        self._rx: deque[bytes] = deque()
        self._fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.sent: list[tuple[float, bytes]] = []
        self.fail_sends = fail_sends
        self.closed = False

    def inject(self, frame: bytes) -> None:
        self._rx.append(bytes(frame))
        os.eventfd_write(self._fd, 1)

    def fileno(self) -> int:
        return self._fd

    def recv(self) -> bytes | None:
        try:
            return self._rx.popleft()
        except IndexError:
            pass
        # Clear readiness, then look again: an inject between the two steps
        # is either seen now or leaves the eventfd readable.
        try:
            os.eventfd_read(self._fd)
        except BlockingIOError:
            pass
        try:
            return self._rx.popleft()
        except IndexError:
            return None

    def send(self, frame: bytes) -> bool:
        if self.fail_sends:
            return False
        self.sent.append((self._clock() if self._clock else 0.0, frame))
        return True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self._fd)


class CpuPort:
    """The CPU port: ``send`` hands the frame to ``handler`` (packet-in);
    without a handler the frame is dropped (``tx_error``)."""

    def __init__(self, name: str = "cpu", handler: Callable[[bytes], None] | None = None) -> None:
        self.name = name
        self.handler = handler

    def fileno(self) -> None:
        return None

    def recv(self) -> None:
        return None

    def send(self, frame: bytes) -> bool:
        handler = self.handler
        if handler is None:
            return False
        try:
            handler(frame)
        except Exception:  # the listener's fault; the data plane goes on
            return False
        return True

    def close(self) -> None:
        self.handler = None
