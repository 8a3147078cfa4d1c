"""A ``PACKET_MMAP`` transmit ring (``TPACKET_V2``) for a NIC: frames are
written into memory shared with the kernel and leave with one system call
per flush (per service pass) instead of one ``send()`` each.

**Slots** (:class:`TxSlots`, no socket: the unit tests play the kernel).
The ring is ``frames`` slots of ``slot_bytes``; a slot is a
``tpacket2_hdr`` (its status and ``tp_len``) and, at offset 32
(``TPACKET2_HDRLEN − sizeof(sockaddr_ll)``, where the kernel reads TX
data), the frame. :meth:`TxSlots.put` writes a frame into the next slot
and marks it ``TP_STATUS_SEND_REQUEST``; on the next flush the kernel
sends the marked slots in ring order and marks each
``TP_STATUS_AVAILABLE`` when done with it. :meth:`TxSlots.reclaim` takes
back, oldest first, the slots the kernel is done with; a slot is written
again only after that, so a full ring refuses a frame rather than
overwrite one not yet sent. (The kernel sends ring frames zero-copy; the
root test checks, with a receiver that reads long after the ring wrapped,
that every frame arrives as written.)

The ring has a socket of its own (protocol 0: it receives nothing) beside
the NIC's, which keeps receiving with ``recv()``.

**Never a frame lost silently.** A frame longer than a slot goes by
``fallback`` (plain ``send()``) after a flush, so in order; a frame that
finds the ring full even after a flush is refused (``refused``; the
caller counts it lost, as a refused ``send()``). ``PACKET_LOSS`` is set
so that a frame the kernel cannot parse does not stall the ring; the
kernel then skips it, and the bytes it took from the ring but did not
send count in ``dropped_bytes``. A flush that fails (``ENETDOWN``, a qdisc drop) counts
in ``errors``; the ring is then given up (``abandoned``): the frames
still waiting in it are handed to ``fallback`` in order, and so is
everything after, as on a NIC without the ring.

Measured on a veth here (2-core VM, CPU time of the sender per frame, 1 KB
frames, flushes of 32): about 3.2 µs with the ring against 1.9 µs for
``send()``: the Python work of filling a slot costs more than the system
call it saves, so the agent's default is ``send()`` (``run.tx_ring``);
``benchmarks/agent_pps.py`` measures both.
"""

from __future__ import annotations

import mmap
import socket
import struct
from typing import Callable

SOL_PACKET = 263
PACKET_LOSS = 14
PACKET_VERSION = 10
PACKET_TX_RING = 13
TPACKET_V2 = 1
TP_STATUS_AVAILABLE = 0
TP_STATUS_SEND_REQUEST = 1
TP_STATUS_SENDING = 2
TP_STATUS_WRONG_FORMAT = 4
# where TX data starts in a TPACKET_V2 slot: TPACKET2_HDRLEN (52) less a sockaddr_ll (20)
DATA_OFFSET = 32
PAGE_BYTES = mmap.PAGESIZE
# tp_status, tp_len of struct tpacket2_hdr
_STATUS_LEN = struct.Struct("=II")
_STATUS = struct.Struct("=I")


def slot_size(max_frame_bytes: int) -> int:
    """The smallest power of two (at least 2 KB) holding a frame of
    ``max_frame_bytes`` with its slot header."""
    size = 2048
    while size < DATA_OFFSET + max_frame_bytes:
        size <<= 1
    return size


def ring_request(max_frame_bytes: int, frames: int) -> tuple[int, int, int, int]:
    """``struct tpacket_req`` (block bytes, blocks, slot bytes, slots) for at
    least ``frames`` slots: blocks of a page or one slot, whichever is larger."""
    slot = slot_size(max_frame_bytes)
    block = max(PAGE_BYTES, slot)
    per_block = block // slot
    blocks = max(1, -(-frames // per_block))
    return block, blocks, slot, blocks * per_block


class TxSlots:
    """The slots of a transmit ring in ``buf`` (see the module docstring)."""

    __slots__ = ("buf", "slot", "frames", "max_frame", "_head", "_tail", "_used",
                 "_lengths", "_offsets", "queued", "rejected", "done_bytes")

    def __init__(self, buf: mmap.mmap | bytearray, slot_bytes: int, frames: int) -> None:
        self.buf = buf
        self.slot = slot_bytes
        self.frames = frames
        self.max_frame = slot_bytes - DATA_OFFSET
        self._head = 0      # oldest slot not yet taken back
        self._tail = 0      # next slot to write
        self._used = 0      # slots written and not taken back
        self._lengths = [0] * frames  # frame bytes per slot
        self._offsets = [i * slot_bytes for i in range(frames)]
        self.queued = 0     # frames written into the ring
        self.rejected = 0   # slots the kernel marked TP_STATUS_WRONG_FORMAT
        self.done_bytes = 0  # frame bytes of the slots taken back

    @property
    def used(self) -> int:
        return self._used

    def put(self, frame: bytes) -> bool:
        """Write ``frame`` into the next slot for the kernel to send; False
        (nothing written) when it does not fit or no slot is free."""
        n = len(frame)
        if n > self.max_frame or self._used == self.frames and not self.reclaim():
            return False
        # the slot at the tail is free: reclaim took it back from the kernel
        tail = self._tail
        offset = self._offsets[tail]
        buf = self.buf
        buf[offset + DATA_OFFSET:offset + DATA_OFFSET + n] = frame
        # the status last: the slot is the kernel's from here on
        _STATUS_LEN.pack_into(buf, offset, TP_STATUS_SEND_REQUEST, n)
        self._lengths[tail] = n
        tail += 1
        self._tail = tail if tail < self.frames else 0
        self._used += 1
        self.queued += 1
        return True

    def reclaim(self) -> int:
        """Take back, oldest first, the slots the kernel is done with; returns
        the frame bytes they held (those the kernel took)."""
        buf, slot, frames = self.buf, self.slot, self.frames
        taken = 0
        head = self._head
        while self._used:
            offset = head * slot
            status = _STATUS.unpack_from(buf, offset)[0]
            if status == TP_STATUS_SEND_REQUEST or status & TP_STATUS_SENDING:
                break
            if status & TP_STATUS_WRONG_FORMAT:
                self.rejected += 1
                _STATUS.pack_into(buf, offset, TP_STATUS_AVAILABLE)
            taken += self._lengths[head]
            head += 1
            if head == frames:
                head = 0
            self._used -= 1
        self._head = head
        self.done_bytes += taken
        return taken

    def waiting(self) -> list[bytes]:
        """The frames still marked for sending, oldest first (after reclaim)."""
        out = []
        index = self._head
        for _ in range(self._used):
            offset = index * self.slot
            if _STATUS.unpack_from(self.buf, offset)[0] == TP_STATUS_SEND_REQUEST:
                data = offset + DATA_OFFSET
                out.append(bytes(self.buf[data:data + self._lengths[index]]))
            index = index + 1 if index + 1 < self.frames else 0
        return out


class TxRing:
    """The transmit ring of interface ``iface`` (in this namespace), with
    ``fallback`` (a plain ``send``) for the frames it gives up on.

    Raises OSError when the ring cannot be set up (no root, an old kernel):
    the caller then sends without it."""

    def __init__(self, iface: str, max_frame_bytes: int, fallback: Callable[[bytes], bool],
                 *, frames: int = 512, sndbuf_bytes: int = 4 << 20) -> None:
        self.fallback = fallback
        self.flushes = 0
        self.errors = 0
        self.last_error: OSError | None = None
        self.sent_bytes = 0        # what the kernel said its flushes sent
        self.abandoned = False
        self.fallback_frames = 0   # frames handed to plain send() (too long, abandoned)
        self.refused = 0           # frames refused: too long for a slot, or the ring full
        self._unflushed = 0
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        try:
            try:
                sock.setsockopt(socket.SOL_SOCKET, 32, sndbuf_bytes)  # SO_SNDBUFFORCE
            except PermissionError:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf_bytes)
            sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
            sock.setsockopt(SOL_PACKET, PACKET_LOSS, 1)
            block, blocks, slot, count = ring_request(max_frame_bytes, frames)
            sock.setsockopt(SOL_PACKET, PACKET_TX_RING, struct.pack("IIII", block, blocks, slot,
                                                                    count))
            sock.bind((iface, 0))
            sock.setblocking(False)
            self._map = mmap.mmap(sock.fileno(), block * blocks, mmap.MAP_SHARED,
                                  mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._send = sock.send
        self.slots = TxSlots(self._map, slot, count)

    def send(self, frame: bytes) -> bool:
        """Queue ``frame`` (it leaves on the next :meth:`flush`); False when it
        was refused (the caller counts it lost)."""
        if self.abandoned:
            self.fallback_frames += 1
            return self.fallback(frame)
        slots = self.slots
        if slots.put(frame):
            self._unflushed += 1
            return True
        if len(frame) > slots.max_frame:   # longer than a slot: by send(), in order
            self.flush()
            self.fallback_frames += 1
            return self.fallback(frame)
        if self._unflushed:
            self.flush()            # full of frames not yet flushed: send them, then retry
            if self.abandoned:
                self.fallback_frames += 1
                return self.fallback(frame)
            if slots.put(frame):
                self._unflushed += 1
                return True
        self.refused += 1
        return False

    def flush(self) -> None:
        """One system call: the kernel sends every frame waiting in the ring."""
        if self.abandoned or not self._unflushed:
            return
        self.flushes += 1
        self._unflushed = 0
        slots = self.slots
        try:
            sent = self._send(b"")
        except BlockingIOError:   # socket buffer full: what is left goes next time
            slots.reclaim()
            self._unflushed = slots.used
            return
        except OSError as exc:
            # The kernel may have stopped at a frame it dropped, its ring
            # index where no frame waits: give the ring up, keep the order.
            self.errors += 1
            self.last_error = exc
            self._abandon()
            return
        self.sent_bytes += sent
        slots.reclaim()
        if slots.used:
            self._unflushed = slots.used

    def _abandon(self) -> None:
        slots = self.slots
        slots.reclaim()
        waiting = slots.waiting()
        self.abandoned = True
        self._close_ring()
        for frame in waiting:
            self.fallback_frames += 1
            if not self.fallback(frame):
                self.refused += 1

    @property
    def dropped_bytes(self) -> int:
        """Bytes the kernel took from the ring but did not send (it skipped
        them, ``PACKET_LOSS``); a slot still in flight counts once taken
        back, so this is a floor until the ring is idle."""
        return max(0, self.slots.done_bytes - self.sent_bytes)

    def stats(self) -> dict[str, object]:
        s = self.slots
        return {"mode": "send" if self.abandoned else "ring", "ring_frames": s.frames,
                "queued": s.queued, "flushes": self.flushes, "refused": self.refused,
                "rejected": s.rejected, "dropped_bytes": self.dropped_bytes,
                "sent_bytes": self.sent_bytes,
                "errors": self.errors, "abandoned": self.abandoned,
                "fallback_frames": self.fallback_frames,
                "last_error": None if self.last_error is None else str(self.last_error)}

    def _close_ring(self) -> None:
        if self._map is not None:
            self.slots.buf = bytearray(self.slots.slot * self.slots.frames)
            self._map.close()
            self._map = None
            self._sock.close()

    def close(self) -> None:
        """Flush what waits (what the kernel would not take goes by plain
        ``send()``), then release the ring."""
        if self._map is None:
            return
        if not self.abandoned:
            self.flush()
        if not self.abandoned:
            self.slots.reclaim()
            if self.slots.waiting():
                self._abandon()
                return
        self._close_ring()
