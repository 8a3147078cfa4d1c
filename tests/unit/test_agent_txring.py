"""The transmit ring's slot bookkeeping without a kernel: the test marks
slots done as the kernel would (``TP_STATUS_AVAILABLE``, or
``TP_STATUS_WRONG_FORMAT``) and checks what is written where, that a slot
is reused only once taken back, and that nothing is refused silently."""

from __future__ import annotations

import struct

import pytest

from emulator.traffic.agent.txring import (
    DATA_OFFSET, TP_STATUS_AVAILABLE, TP_STATUS_SEND_REQUEST, TP_STATUS_SENDING,
    TP_STATUS_WRONG_FORMAT, TxSlots, ring_request, slot_size,
)

SLOT = 2048


def slots(frames: int = 4) -> TxSlots:
    return TxSlots(bytearray(SLOT * frames), SLOT, frames)


def status(ring: TxSlots, index: int) -> tuple[int, int]:
    return struct.unpack_from("=II", ring.buf, index * SLOT)


def kernel_sends(ring: TxSlots, *indexes: int, to: int = TP_STATUS_AVAILABLE) -> None:
    for i in indexes:
        struct.pack_into("=I", ring.buf, i * SLOT, to)


def frame(i: int, n: int = 100) -> bytes:
    return bytes([i]) * n


def test_slot_and_ring_sizes():
    assert slot_size(1500 + 64) == 2048
    assert slot_size(2048 - DATA_OFFSET) == 2048
    assert slot_size(2048 - DATA_OFFSET + 1) == 4096
    assert slot_size(9000 + 64) == 16384
    block, blocks, slot, count = ring_request(1564, 512)
    assert slot == 2048 and block % 4096 == 0 and block % slot == 0
    assert count == blocks * (block // slot) >= 512
    block, blocks, slot, count = ring_request(9064, 3)
    assert block == slot == 16384 and blocks == count == 3


def test_a_frame_goes_after_the_slot_header_with_its_length_and_send_request():
    ring = slots()
    assert ring.put(frame(7, 60))
    assert status(ring, 0) == (TP_STATUS_SEND_REQUEST, 60)
    assert bytes(ring.buf[DATA_OFFSET:DATA_OFFSET + 60]) == frame(7, 60)
    assert ring.put(frame(8, 1000))
    assert status(ring, 1) == (TP_STATUS_SEND_REQUEST, 1000)
    assert bytes(ring.buf[SLOT + DATA_OFFSET:SLOT + DATA_OFFSET + 1000]) == frame(8, 1000)
    assert ring.used == 2 and ring.queued == 2


def test_too_long_for_a_slot_is_refused_and_nothing_is_written():
    ring = slots()
    assert not ring.put(bytes(SLOT - DATA_OFFSET + 1))
    assert ring.put(bytes(SLOT - DATA_OFFSET))
    assert ring.used == 1 and ring.queued == 1


def test_a_full_ring_refuses_until_the_kernel_is_done_and_slots_are_reused_in_order():
    ring = slots(4)
    for i in range(4):
        assert ring.put(frame(i))
    assert not ring.put(frame(4))            # all four still the kernel's
    kernel_sends(ring, 0, 1)
    kernel_sends(ring, 2, to=TP_STATUS_SENDING)  # in flight: not yet free
    assert ring.reclaim() == 200
    assert ring.used == 2
    assert ring.put(frame(4)) and ring.put(frame(5))
    assert not ring.put(frame(6))
    assert bytes(ring.buf[DATA_OFFSET:DATA_OFFSET + 100]) == frame(4)
    assert bytes(ring.buf[SLOT + DATA_OFFSET:SLOT + DATA_OFFSET + 100]) == frame(5)
    assert ring.waiting() == [frame(3), frame(4), frame(5)]  # 2 is sending, not waiting


def test_reclaim_stops_at_the_oldest_slot_not_done():
    ring = slots(4)
    for i in range(3):
        ring.put(frame(i))
    kernel_sends(ring, 1, 2)                 # out of order: 0 still waits
    assert ring.reclaim() == 0 and ring.used == 3
    kernel_sends(ring, 0)
    assert ring.reclaim() == 300 and ring.used == 0
    assert ring.waiting() == []


def test_a_slot_the_kernel_rejected_is_counted_and_freed():
    ring = slots(2)
    ring.put(frame(1))
    kernel_sends(ring, 0, to=TP_STATUS_WRONG_FORMAT)
    ring.reclaim()
    assert ring.rejected == 1 and status(ring, 0)[0] == TP_STATUS_AVAILABLE
    assert ring.put(frame(2)) and ring.put(frame(3))


@pytest.mark.parametrize("n", [1, 5, 9])
def test_the_ring_wraps(n):
    ring = slots(4)
    sent = []
    for i in range(40):
        if ring.used == 4:
            kernel_sends(ring, *range(4))
            if i % 8:
                ring.reclaim()   # else put() takes them back itself
        assert ring.put(frame(i, n))
        sent.append(i)
    waiting = ring.waiting()
    assert waiting == [frame(i, n) for i in sent[-len(waiting):]]
    assert ring.done_bytes == n * (40 - ring.used)   # every slot taken back, counted once
