"""Frame I/O of a NIC: a raw socket on an interface, or an in-memory fake.

A back end moves frames and nothing else. Each has ``name``, ``fileno()``
(readable when ``recv`` may return a frame; None for a fake driven by a
virtual clock), ``recv() -> bytes | None`` (non-blocking), ``send(frame) ->
bool`` (False: the frame was not sent; the caller counts it lost),
``flush()`` (frames ``send`` queued leave now; the NIC calls it at the end
of each service pass), ``tx_stats()`` (how it sent, for the stats; None
for a fake) and ``close()``.

- :class:`RawNic`: an ``AF_PACKET`` socket bound to the interface, all
  EtherTypes (IPv4 for RoCE, 0x8808 for PFC), our own outgoing frames
  ignored (``PACKET_IGNORE_OUTGOING``), large buffers, non-blocking. Needs
  root or CAP_NET_RAW in the server's namespace. Optionally binds UDP port
  4791 on the NIC's address so the kernel's stack, which sees every RoCE
  packet too, drops them into a small buffer instead of answering with ICMP
  port unreachable. With ``tx_ring`` frames are sent through a
  ``PACKET_MMAP`` transmit ring (:mod:`.txring`), one system call per
  flush; without it, or when the ring cannot be set up, one ``send()`` per
  frame (``tx_stats()`` says which, and why). A frame the interface
  refuses as too long (``EMSGSIZE``: its MTU is below the frame) is
  counted in ``refused`` (:class:`Refusals`: how many, the longest, the
  MTU); the agent's stats carry it and a live run names it in results'
  ``errors`` (:func:`refusal_line`), since every retransmission of that
  frame is refused again and the flow stalls.
- :class:`FakeNic`: in memory, for tests: ``inject(frame)`` makes it receive,
  ``sent`` lists ``(clock(), frame)``; ``on_send`` (if set) is called with
  each frame, which is how :mod:`.sim` wires two fakes together. With
  ``mtu`` it refuses, as a raw socket does, frames longer than the MTU
  plus the Ethernet header (counted in ``refused``).
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import struct
from collections import deque
from typing import Callable

from emulator.traffic.agent.txring import TxRing
from emulator.traffic.layers.icrc import ROCE_UDP_PORT

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
SO_RCVBUFFORCE = 33
SO_SNDBUFFORCE = 32
MAX_FRAME = 65_535
SIOCGIFMTU = 0x8921


class Refusals:
    """Frames an interface refused as longer than its MTU (``EMSGSIZE``)."""

    __slots__ = ("frames", "largest_bytes", "mtu")

    def __init__(self) -> None:
        self.frames = 0
        self.largest_bytes = 0
        self.mtu: int | None = None   # read at the first refusal (None: unreadable)

    def add(self, frame_bytes: int, mtu: Callable[[], int | None]) -> None:
        if not self.frames:
            self.mtu = mtu()
        self.frames += 1
        self.largest_bytes = max(self.largest_bytes, frame_bytes)

    def to_dict(self) -> dict[str, int | None]:
        return {"frames": self.frames, "largest_bytes": self.largest_bytes, "mtu": self.mtu}


def refusal_line(nic: dict) -> str | None:
    """One line for results' ``errors`` when NIC snapshot ``nic`` (its
    ``refused``) says frames were refused as too long; None otherwise."""
    refused = nic.get("refused") or {}
    frames = refused.get("frames", 0)
    if not frames:
        return None
    mtu = refused.get("mtu")
    # an Ethernet frame carries MTU bytes of IP packet plus its 14-byte header
    limit = "an unknown MTU" if mtu is None else f"MTU {mtu} (frames up to {mtu + 14} B)"
    return (f"NIC {nic.get('name', '?')}: the interface refused {frames} frame(s) of up to "
            f"{refused.get('largest_bytes', 0)} B, longer than its {limit}: raise the "
            f"interface MTU or lower hosts.mtu; the flows on it stalled")


def interface_mtu(sock: socket.socket, iface: str) -> int | None:
    """The MTU of ``iface`` (SIOCGIFMTU on ``sock``), None when unreadable."""
    try:
        request = struct.pack("16si", iface.encode()[:15], 0)
        return struct.unpack("16si", fcntl.ioctl(sock.fileno(), SIOCGIFMTU, request))[1]
    except (OSError, ValueError):   # ValueError: the socket is closed
        return None


class RawNic:
    """``AF_PACKET`` I/O on interface ``iface`` of the current namespace."""

    def __init__(self, iface: str, *, ip: str | None = None, swallow_udp: bool = True,
                 rcvbuf_bytes: int = 8 << 20, sndbuf_bytes: int = 4 << 20,
                 max_frame_bytes: int = MAX_FRAME, tx_ring: bool = False,
                 tx_ring_frames: int = 512) -> None:
        self.name = iface
        # recv() allocates this much per call: the NIC's MTU plus headers
        # suffices (a longer frame is cut and then fails to parse)
        self.max_frame_bytes = max_frame_bytes
        self.errors = 0
        self.last_error: OSError | None = None
        self.refused = Refusals()
        # Protocol 0 receives nothing until bind: no frame of another
        # interface slips in between socket() and bind().
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        try:
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            for force, plain, size in ((SO_RCVBUFFORCE, socket.SO_RCVBUF, rcvbuf_bytes),
                                       (SO_SNDBUFFORCE, socket.SO_SNDBUF, sndbuf_bytes)):
                try:
                    sock.setsockopt(socket.SOL_SOCKET, force, size)
                except PermissionError:
                    sock.setsockopt(socket.SOL_SOCKET, plain, size)
            sock.bind((iface, ETH_P_ALL))
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._recv = sock.recv
        self._send = sock.send
        self.ring: TxRing | None = None
        self.ring_error: str | None = None if tx_ring else "off"
        if tx_ring:
            try:
                self.ring = TxRing(iface, max_frame_bytes, self._plain_send,
                                   frames=tx_ring_frames, sndbuf_bytes=sndbuf_bytes)
            except OSError as exc:
                self.ring_error = str(exc)
        if self.ring is not None:
            self.send = self.ring.send      # type: ignore[method-assign]
            self.flush = self.ring.flush    # type: ignore[method-assign]
        self._udp: socket.socket | None = None
        try:
            if swallow_udp and ip is not None:
                self._udp = _udp_sink(ip)
        except BaseException:
            self.close()
            raise

    def fileno(self) -> int:
        return self._sock.fileno()

    def recv(self) -> bytes | None:
        try:
            return self._recv(self.max_frame_bytes)
        except BlockingIOError:
            return None
        except OSError as exc:  # ENETDOWN when the interface goes away
            self.errors += 1
            self.last_error = exc
            return None

    def _plain_send(self, frame: bytes) -> bool:
        try:
            self._send(frame)
            return True
        except OSError as exc:  # ENOBUFS (peer backlog full), EMSGSIZE, ENETDOWN
            self.errors += 1
            self.last_error = exc
            if exc.errno == errno.EMSGSIZE:
                self.refused.add(len(frame), lambda: interface_mtu(self._sock, self.name))
            return False

    send = _plain_send   # the ring's send when there is one (see __init__)

    def flush(self) -> None:
        """Nothing to do without the ring (each frame left in ``send``)."""

    def tx_stats(self) -> dict[str, object]:
        if self.ring is None:
            return {"mode": "send", "ring_error": self.ring_error}
        return self.ring.stats()

    def close(self) -> None:
        if self.ring is not None:
            self.ring.close()
        self._sock.close()
        if self._udp is not None:
            self._udp.close()


def _udp_sink(ip: str) -> socket.socket | None:
    """A UDP socket on ``ip``:4791 with a tiny buffer, or None when the
    address is not configured here (then the kernel drops the packets as not
    its own, silently)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
        sock.bind((ip, ROCE_UDP_PORT))
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EADDRNOTAVAIL, errno.EADDRINUSE):
            return None
        raise
    return sock


class FakeNic:
    """An in-memory NIC back end (see the module docstring)."""

    def __init__(self, name: str = "fake", clock: Callable[[], float] | None = None,
                 *, keep_sent: bool = True, fail_sends: bool = False,
                 with_fd: bool = False, mtu: int | None = None) -> None:
        self.name = name
        self.mtu = mtu
        self.refused = Refusals()
        self._clock = clock
        self._rx: deque[bytes] = deque()
        self.sent: list[tuple[float, bytes]] = []
        self.keep_sent = keep_sent
        self.fail_sends = fail_sends
        self.on_send: Callable[[bytes], None] | None = None
        self._fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC) if with_fd else None
        self.closed = False

    def inject(self, frame: bytes) -> None:
        self._rx.append(bytes(frame))
        if self._fd is not None:
            os.eventfd_write(self._fd, 1)

    def pending(self) -> int:
        return len(self._rx)

    def fileno(self) -> int | None:
        return self._fd

    def recv(self) -> bytes | None:
        if self._rx:
            return self._rx.popleft()
        if self._fd is not None:
            try:
                os.eventfd_read(self._fd)
            except BlockingIOError:
                pass
            if self._rx:
                return self._rx.popleft()
        return None

    def flush(self) -> None:
        """Frames leave in ``send`` already."""

    def tx_stats(self) -> None:
        return None

    def send(self, frame: bytes) -> bool:
        if self.fail_sends:
            return False
        if self.mtu is not None and len(frame) > self.mtu + 14:
            self.refused.add(len(frame), lambda: self.mtu)
            return False
        if self.keep_sent:
            self.sent.append((self._clock() if self._clock else 0.0, frame))
        if self.on_send is not None:
            self.on_send(frame)
        return True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self._fd is not None:
                os.close(self._fd)
