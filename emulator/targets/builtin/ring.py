"""``PACKET_MMAP`` rings (``TPACKET_V2``) of a raw port: frames read from
and written to shared memory, no system call per frame.

Receive (:class:`RxRing`). The kernel copies each received frame into the
next free slot of a ring mapped into this process and marks it
``TP_STATUS_USER``; :meth:`RxRing.recv` takes the slot at the reader's
index if it is marked, copies the frame out, hands the slot back (status
0) and moves on. The socket still polls readable while a marked slot
waits, so the switch's epoll loop is unchanged. The slot header carries
what ``recvmsg`` needed ancillary data for: the kernel's receive timestamp
(CLOCK_REALTIME, for the port's ``rx_wait``) and a stripped 802.1Q tag
(put back, as the plain port does). A frame longer than a slot is counted
(``truncated``) and skipped; the kernel's drops for a full ring are the
socket's ``PACKET_STATISTICS`` as before. Measured on a veth here: 1.8 µs
a frame against 3.6 µs for ``recvmsg`` with ancillary data.

Transmit (:class:`TxRing`, on a socket of its own that receives nothing).
:meth:`TxRing.put` writes a frame into the next slot the kernel has handed
back (status ``TP_STATUS_AVAILABLE``), at the offset the kernel reads it
from (:data:`TX_DATA_OFFSET`), and marks it ``TP_STATUS_SEND_REQUEST``;
:meth:`TxRing.flush` (one ``send`` of nothing) makes the kernel send every
marked slot in ring order, so a port's frames leave in the order written.
The kernel marks a slot available again once it is done with the frame.
What the ring does not take is refused, never lost: ``put`` returns False
when the next slot is still the kernel's after a flush (``full`` counts
them) and for a frame that does not fit a slot or the interface's MTU
(the caller sends those another way). A flush the kernel refuses (the
interface down, its peer's queue full) leaves the frames marked, and the
next flush tries again. ``PACKET_LOSS`` is set so that a frame the kernel
finds malformed cannot stop the ring; the length checks in ``put`` are
what the kernel would refuse.

Measured on a veth here (2-core VM, CPU time per 1 KB frame): ``put``
0.65-0.9 µs and the kernel's share of a flush 1.2-1.4 µs (batches of 8 to
128), against 1.3-1.7 µs for one ``send``; a switch forwarding on two veths
spent about 28-32 µs a frame with the ring against 23-28 µs without. The
system call is not what a frame costs the kernel, so the ring saves
nothing here and the switch sends with ``send`` unless asked
(``SwitchOptions.tx_ring``, ``--tx-ring``).

Slots are the smallest power of two that holds an MTU-sized frame with its
header (2 KB at MTU 1500); the receive ring is about ``ring_bytes`` (8 MB),
the transmit ring about 2 MB.
"""

from __future__ import annotations

import fcntl
import mmap
import socket
import struct
import time
from typing import Any, Callable

SOL_PACKET = 263
PACKET_RX_RING = 5
PACKET_VERSION = 10
PACKET_TX_RING = 13
PACKET_LOSS = 14
TPACKET_V2 = 1
TP_STATUS_USER = 0x1
TP_STATUS_AVAILABLE = 0x0
TP_STATUS_SEND_REQUEST = 0x1
TP_STATUS_SENDING = 0x2
TP_STATUS_WRONG_FORMAT = 0x4
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
BLOCK_BYTES = 1 << 20
# struct tpacket2_hdr: status, len, snaplen, mac, net, sec, nsec, vlan_tci, vlan_tpid
_HDR = struct.Struct("=IIIHHIIHH")
_STATUS = struct.Struct("=I")
_TX_HEADER = struct.Struct("=III")  # tp_status, tp_len, tp_snaplen
# Where the kernel reads a frame to send in a slot (no PACKET_TX_HAS_OFF):
# TPACKET2_HDRLEN - sizeof(struct sockaddr_ll) = 52 - 20.
TX_DATA_OFFSET = 32
ETH_HLEN = 14
VLAN_HLEN = 4
TX_RING_BYTES = 2 << 20
HOLE_WAIT_S = 0.001   # how long an empty slot before filled ones may be a copy under way
_MSG_DONTWAIT = int(socket.MSG_DONTWAIT)  # a plain int, as ports.py's flags
_VLAN_TAG = struct.Struct("!HH")
HEADROOM = 128  # tpacket2_hdr, sockaddr_ll and alignment before the frame


def ring_request(slot: int, ring_bytes: int) -> tuple[int, int, int]:
    """(block bytes, blocks, frames) of a ring of ``slot``-byte slots in
    about ``ring_bytes``: 1 MB blocks (one slot when a slot is larger)."""
    per_block = BLOCK_BYTES // slot if slot <= BLOCK_BYTES else 1
    block = max(BLOCK_BYTES, slot)
    blocks = max(1, ring_bytes // block)
    return block, blocks, blocks * per_block


def slot_bytes(mtu: int) -> int:
    size = 1 << 11
    while size < mtu + 18 + HEADROOM:  # Ethernet header and a VLAN tag
        size <<= 1
    return size


SIOCGIFMTU = 0x8921


def interface_mtu(sock: socket.socket, iface: str, default: int = 9000) -> int:
    """The MTU of ``iface`` in ``sock``'s network namespace (``default``,
    large enough for jumbo frames, when it cannot be read)."""
    try:
        ifreq = fcntl.ioctl(sock.fileno(), SIOCGIFMTU, struct.pack("16si", iface.encode(), 0))
        return struct.unpack("16si", ifreq)[1]
    except OSError:
        return default


class RxRing:
    """A receive ring of ``frames`` slots of ``slot`` bytes in ``buffer``
    (the kernel's mapping; :meth:`open` sets one up); ``rx_wait`` (a
    :class:`~.tally.LatenessTally` or None) gets how long each frame waited.

    Holes: with frames delivered by more than one CPU and the ring full,
    the kernel can leave a slot empty (status 0) behind slots it filled
    later; a reader that waits at the empty slot waits forever while the
    ring holds frames (measured here: a blast of 100 k frames/s from two
    senders stalled the switch for good). A slot the kernel is still
    copying into looks the same for a few microseconds, so :meth:`recv`
    moves past an empty slot followed by a filled one only once it has
    stayed so for :data:`HOLE_WAIT_S`, and counts it (``holes``); while
    one waits, ``hole_pending`` is true and the switch's loop comes back
    to the port by then even if the socket does not poll readable."""

    def __init__(self, buffer: Any, slot: int, frames: int, rx_wait: Any = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.slot = slot
        self.frames = frames
        self._map = buffer
        self._view = memoryview(buffer)
        self._index = 0
        self.rx_wait = rx_wait
        self._waits: dict[int, int] | None = None if rx_wait is None else rx_wait.counts
        self.truncated = 0
        self.holes = 0
        self._clock = clock
        self._hole_at = -1        # the empty slot seen before filled ones, since
        self._hole_since = 0.0

    @classmethod
    def open(cls, sock: socket.socket, mtu: int, rx_wait: Any = None, *,
             ring_bytes: int = 8 << 20) -> "RxRing":
        """The ring of ``sock`` (an ``AF_PACKET`` socket, set up before it
        receives) for frames up to an ``mtu`` payload."""
        slot = slot_bytes(mtu)
        block, blocks, frames = ring_request(slot, ring_bytes)
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        sock.setsockopt(SOL_PACKET, PACKET_RX_RING, struct.pack("IIII", block, blocks, slot, frames))
        buffer = mmap.mmap(sock.fileno(), block * blocks, mmap.MAP_SHARED,
                           mmap.PROT_READ | mmap.PROT_WRITE)
        return cls(buffer, slot, frames, rx_wait)

    def recv(self) -> bytes | None:
        """The next frame, or None when the ring holds none."""
        ring = self._map
        offset = self._index * self.slot
        status, length, snaplen, mac, _net, sec, nsec, tci, tpid = _HDR.unpack_from(ring, offset)
        if not status & TP_STATUS_USER:
            return self._hole(ring, offset)
        start = offset + mac
        data = bytes(self._view[start:start + snaplen])
        _STATUS.pack_into(ring, offset, 0)   # the slot is the kernel's again
        index = self._index + 1
        self._index = index if index < self.frames else 0
        if snaplen < length:
            self.truncated += 1
            return self.recv()
        waits = self._waits
        if waits is not None:  # LatenessTally.record_s, inline
            wait_s = time.time() - sec - nsec * 1e-9
            wait_us = int(wait_s * 1e6) if wait_s > 0 else 0
            waits[wait_us] = waits.get(wait_us, 0) + 1
        if status & TP_STATUS_VLAN_VALID:
            if not status & TP_STATUS_VLAN_TPID_VALID:
                tpid = 0x8100
            data = data[:12] + _VLAN_TAG.pack(tpid, tci) + data[12:]
        return data

    @property
    def hole_pending(self) -> bool:
        """An empty slot at the reader's index with a filled one after it:
        call :meth:`recv` again within :data:`HOLE_WAIT_S` (the socket may
        not poll readable while the kernel's newest slot has been read)."""
        return self._hole_at >= 0

    def _hole(self, ring: Any, offset: int) -> bytes | None:
        """None; or, at an empty slot followed by a filled one that has
        lasted (see the class docstring), the frame after it."""
        index = self._index
        after = index + 1 if index + 1 < self.frames else 0
        if not ring[after * self.slot] & TP_STATUS_USER:
            self._hole_at = -1
            return None          # nothing after it: the ring is empty
        now = self._clock()
        if self._hole_at != index:
            self._hole_at = index
            self._hole_since = now
            return None
        if now - self._hole_since < HOLE_WAIT_S:
            return None
        self._hole_at = -1
        self.holes += 1
        self._index = after
        return self.recv()

    def close(self) -> None:
        self._view.release()
        self._map.close()


class TxRing:
    """A transmit ring of ``frames`` slots of ``slot`` bytes in ``buffer``
    (the kernel's mapping; :meth:`open` sets one up), frames up to
    ``max_frame`` bytes, flushed with ``send(b"", MSG_DONTWAIT)``."""

    def __init__(self, buffer: Any, slot: int, frames: int, max_frame: int,
                 send: Callable[[bytes, int], int]) -> None:
        self.slot = slot
        self.frames = frames
        self.max_frame = max_frame
        self._map = buffer
        self._send = send
        self._index = 0
        self.pending = 0          # frames marked since the last flush the kernel took
        self.full = 0             # frames refused: the next slot was still the kernel's
        self.flushes = 0          # flushes the kernel took
        self.errors = 0           # flushes the kernel refused (their frames stay marked)
        self.last_error: OSError | None = None

    @classmethod
    def open(cls, sock: socket.socket, mtu: int, *,
             ring_bytes: int = TX_RING_BYTES) -> "TxRing":
        """The ring of ``sock`` (an ``AF_PACKET`` socket with no ring yet) for
        frames up to an ``mtu`` payload (an Ethernet header and one VLAN tag
        on top)."""
        slot = slot_bytes(mtu)
        block, blocks, frames = ring_request(slot, ring_bytes)
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        sock.setsockopt(SOL_PACKET, PACKET_LOSS, 1)
        sock.setsockopt(SOL_PACKET, PACKET_TX_RING, struct.pack("IIII", block, blocks, slot, frames))
        buffer = mmap.mmap(sock.fileno(), block * blocks, mmap.MAP_SHARED,
                           mmap.PROT_READ | mmap.PROT_WRITE)
        return cls(buffer, slot, frames, min(slot - TX_DATA_OFFSET, mtu + ETH_HLEN + VLAN_HLEN),
                   sock.send)

    def put(self, frame: bytes) -> bool:
        """Mark ``frame`` for sending at the next :meth:`flush`; False when its
        length is not one the ring takes (an Ethernet header at least,
        ``max_frame`` at most) or the ring has no free slot."""
        n = len(frame)
        if n > self.max_frame or n < ETH_HLEN:
            return False
        ring = self._map
        offset = self._index * self.slot
        if ring[offset] & 0x7:   # SEND_REQUEST, SENDING or WRONG_FORMAT: the kernel's
            self.flush()
            if ring[offset] & 0x7:
                self.full += 1
                return False
        start = offset + TX_DATA_OFFSET
        ring[start:start + n] = frame
        # Status, tp_len, tp_snaplen in one write: the kernel reads the slot
        # only in our own flush (a system call, after this returns).
        _TX_HEADER.pack_into(ring, offset, TP_STATUS_SEND_REQUEST, n, n)
        index = self._index + 1
        self._index = index if index < self.frames else 0
        self.pending += 1
        return True

    def flush(self) -> bool:
        """Have the kernel send every marked slot; False if it refused (the
        frames stay marked for the next flush)."""
        if not self.pending:
            return True
        try:
            self._send(b"", _MSG_DONTWAIT)
        except OSError as exc:  # ENOBUFS (peer queue full), ENETDOWN, ENXIO
            self.errors += 1
            self.last_error = exc
            return False
        self.pending = 0
        self.flushes += 1
        return True

    def slot_status(self, index: int) -> int:
        """The status word of slot ``index`` (tests, diagnostics)."""
        return _STATUS.unpack_from(self._map, index * self.slot)[0]

    def close(self) -> None:
        self._map.close()
