"""The CRCs' memo of answers by input (emulator.p4.exec.externs.CrcSpec):
the same answers as the CRC computed afresh and as an independent bitwise
CRC-16/ARC, across the point where the memo starts over."""

import zlib

from emulator.p4.exec import externs
from emulator.p4.exec.externs import CrcSpec
from tests.unit.p4.conformance_kit import crc16_arc


def test_memo_answers_as_computed_and_starts_over_when_full(monkeypatch) -> None:
    monkeypatch.setattr(externs, "CRC_MEMO_ENTRIES", 8)
    crc = CrcSpec(16, 0x8005, 0x0000, 0x0000, True, True)
    inputs = [bytes([i, i * 7 & 0xFF, 0x11]) for i in range(20)]
    for _round in range(3):  # second and third rounds: from the memo or after a start-over
        for data in inputs:
            assert crc(data) == crc._compute(data) == crc16_arc(data)
            assert len(crc._memo) <= 8
    assert crc(b"") == crc16_arc(b"")


def test_memo_is_per_crc() -> None:
    # one input to two CRCs: each its own answer, twice (computed, then remembered)
    data = b"\x0a\x00\x00\x01\x0a\x00\x00\x02\x11"
    for _ in range(2):
        assert externs.CRC32_CUSTOM_DEFAULT(data) == zlib.crc32(data)
    assert externs.CRC16(data) == crc16_arc(data)
    assert externs.CRC16(data) == crc16_arc(data)  # the memo's answer
