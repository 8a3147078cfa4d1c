"""The PACKET_MMAP rings' framing, without root, over anonymous mappings.

Transmit: a fake kernel walks the slots as af_packet's ``tpacket_snd``
does (from its head, while a slot is marked ``TP_STATUS_SEND_REQUEST``:
frame length from the header, the frame at :data:`TX_DATA_OFFSET`, the
slot handed back), so what the ring writes, in which order, and what it
does when the kernel is behind or refuses, is checked against the layout
the kernel reads. Receive: slots filled as ``tpacket_rcv`` fills them
(data, then the header with ``TP_STATUS_USER``), holes included."""

from __future__ import annotations

import mmap
import struct

import pytest

from emulator.targets.builtin.ring import (
    TP_STATUS_AVAILABLE, TP_STATUS_SEND_REQUEST, TP_STATUS_SENDING, TX_DATA_OFFSET, TxRing,
    ring_request, slot_bytes,
)

ETH = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"
HDR = struct.Struct("=IIIHHIIHH")  # struct tpacket2_hdr


class FakeKernel:
    """The sending half of af_packet over an anonymous mapping."""

    def __init__(self, slot: int, frames: int) -> None:
        self.slot = slot
        self.frames = frames
        self.buffer = mmap.mmap(-1, slot * frames)
        self.head = 0
        self.sent: list[bytes] = []
        self.refuse: OSError | None = None
        self.hold = False        # leave sent slots SENDING (the skb still alive)
        self.calls = 0

    def send(self, data: bytes, flags: int) -> int:
        self.calls += 1
        assert data == b"" and flags
        if self.refuse is not None:
            raise self.refuse
        total = 0
        while True:
            offset = self.head * self.slot
            status, length, snaplen, *_ = HDR.unpack_from(self.buffer, offset)
            if status != TP_STATUS_SEND_REQUEST:
                return total
            assert snaplen == length
            start = offset + TX_DATA_OFFSET
            self.sent.append(bytes(self.buffer[start:start + length]))
            struct.pack_into("=I", self.buffer, offset,
                             TP_STATUS_SENDING if self.hold else TP_STATUS_AVAILABLE)
            self.head = (self.head + 1) % self.frames
            total += length

    def release(self) -> None:
        """The held frames' buffers freed: their slots are available again."""
        for i in range(self.frames):
            if struct.unpack_from("=I", self.buffer, i * self.slot)[0] == TP_STATUS_SENDING:
                struct.pack_into("=I", self.buffer, i * self.slot, TP_STATUS_AVAILABLE)


def ring(frames: int = 8, slot: int = 2048, max_frame: int = 1518) -> tuple[TxRing, FakeKernel]:
    kernel = FakeKernel(slot, frames)
    return TxRing(kernel.buffer, slot, frames, max_frame, kernel.send), kernel


def frame(i: int, size: int = 64) -> bytes:
    return ETH + i.to_bytes(4, "big") + bytes(size - len(ETH) - 4)


def test_slot_sizes_and_ring_request_follow_the_kernel_rules():
    assert slot_bytes(1500) == 2048 and slot_bytes(9000) == 16384
    block, blocks, frames = ring_request(2048, 2 << 20)
    assert (block, blocks, frames) == (1 << 20, 2, 1024)
    assert block % 4096 == 0 and frames == blocks * (block // 2048)
    block, blocks, frames = ring_request(16384, 2 << 20)
    assert frames == 128 and block * blocks == 2 << 20


def test_frames_are_marked_then_leave_in_order_at_the_flush():
    tx, kernel = ring()
    frames = [frame(i, 60 + 100 * i) for i in range(5)]
    for f in frames:
        assert tx.put(f)
    assert tx.pending == 5 and kernel.sent == []
    assert [tx.slot_status(i) for i in range(5)] == [TP_STATUS_SEND_REQUEST] * 5
    assert tx.flush() and kernel.calls == 1
    assert kernel.sent == frames and tx.pending == 0
    assert tx.flush() and kernel.calls == 1, "nothing pending: no system call"


def test_the_ring_wraps_round_its_slots():
    tx, kernel = ring(frames=4)
    sent = []
    for i in range(11):
        f = frame(i)
        assert tx.put(f)
        sent.append(f)
        if i % 3 == 2:
            tx.flush()
    tx.flush()
    assert kernel.sent == sent
    assert all(tx.slot_status(i) == TP_STATUS_AVAILABLE for i in range(4))


def test_a_full_ring_flushes_then_refuses_and_counts():
    tx, kernel = ring(frames=4)
    kernel.hold = True                       # the kernel keeps the slots for a while
    for i in range(4):
        assert tx.put(frame(i))
    assert tx.put(frame(4)) is False         # flushed, slots still SENDING: refused
    assert tx.full == 1 and len(kernel.sent) == 4
    kernel.release()
    assert tx.put(frame(5)) and tx.flush()
    assert kernel.sent[-1] == frame(5) and tx.full == 1


def test_a_refused_flush_keeps_the_frames_for_the_next():
    tx, kernel = ring()
    kernel.refuse = OSError(100, "Network is down")
    assert tx.put(frame(0)) and tx.put(frame(1))
    assert tx.flush() is False
    assert tx.errors == 1 and tx.pending == 2 and kernel.sent == []
    assert isinstance(tx.last_error, OSError)
    kernel.refuse = None
    assert tx.flush() and kernel.sent == [frame(0), frame(1)] and tx.pending == 0


@pytest.mark.parametrize("size", [13, 1519])
def test_lengths_the_kernel_would_refuse_are_not_taken(size):
    tx, kernel = ring()
    assert tx.put(ETH[:13] if size == 13 else frame(0, size)) is False
    assert tx.pending == 0 and tx.full == 0
    assert tx.put(frame(1, 1518))
    tx.flush()
    assert kernel.sent == [frame(1, 1518)]


# ---- the receive ring's reader, over a fake kernel's slots -----------------------------
RX_MAC = 80  # where a fake kernel puts the frame in its slot


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def rx_ring(frames: int = 8, slot: int = 2048):  # type: ignore[no-untyped-def]
    from emulator.targets.builtin.ring import RxRing

    buffer = mmap.mmap(-1, slot * frames)
    clock = FakeClock()
    return RxRing(buffer, slot, frames, clock=clock), buffer, clock


def deliver(buffer: mmap.mmap, index: int, data: bytes, slot: int = 2048) -> None:
    """What the kernel does for a received frame: data, then the header."""
    offset = index * slot
    buffer[offset + RX_MAC:offset + RX_MAC + len(data)] = data
    HDR.pack_into(buffer, offset, 1, len(data), len(data), RX_MAC, RX_MAC, 0, 0, 0, 0)


def test_the_receive_ring_reads_in_order_and_hands_slots_back():
    from emulator.targets.builtin.ring import HOLE_WAIT_S

    ring_, buffer, clock = rx_ring()
    for i in range(3):
        deliver(buffer, i, frame(i))
    assert [ring_.recv() for _ in range(4)] == [frame(0), frame(1), frame(2), None]
    assert not ring_.hole_pending
    assert all(HDR.unpack_from(buffer, i * 2048)[0] == 0 for i in range(3))
    clock.now += 10 * HOLE_WAIT_S
    assert ring_.recv() is None and ring_.holes == 0, "an empty ring is no hole"


def test_a_hole_the_kernel_left_is_passed_once_it_has_lasted():
    from emulator.targets.builtin.ring import HOLE_WAIT_S

    ring_, buffer, clock = rx_ring()
    deliver(buffer, 1, frame(1))        # slot 0 left empty, slot 1 filled
    deliver(buffer, 2, frame(2))
    assert ring_.recv() is None and ring_.hole_pending
    clock.now += HOLE_WAIT_S / 2
    assert ring_.recv() is None, "maybe a copy under way: wait"
    clock.now += HOLE_WAIT_S
    assert ring_.recv() == frame(1) and ring_.holes == 1 and not ring_.hole_pending
    assert ring_.recv() == frame(2)


def test_a_slot_filled_while_waiting_is_read_in_its_place():
    ring_, buffer, clock = rx_ring()
    deliver(buffer, 1, frame(1))
    assert ring_.recv() is None and ring_.hole_pending
    deliver(buffer, 0, frame(0))        # the copy finished
    assert [ring_.recv(), ring_.recv()] == [frame(0), frame(1)] and ring_.holes == 0
