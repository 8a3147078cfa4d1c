"""802.1Qbb PFC frames: exact bytes, padding, and reading the quanta back."""

from __future__ import annotations

import random

import pytest
from scapy.compat import raw
from scapy.contrib.mac_control import MACControlClassBasedFlowControl, MACControlPause
from scapy.layers.l2 import Ether

from emulator.traffic.layers.pfc import (
    PFC_FRAME_BYTES,
    pause_duration_s,
    pfc_frame,
    pfc_pause_quanta,
)

SRC = "02:00:00:00:00:01"

# Pause priority 3 for 0xffff quanta, XON priority 4.
PFC_P3_XOFF_P4_XON = bytes.fromhex(
    "0180c2000001"  # dst: the MAC control multicast address
    "020000000001"  # src
    "8808"  # EtherType: MAC control
    "0101"  # opcode: class-based flow control (PFC)
    "00" "18"  # priority-enable vector: reserved byte, e[7..0] = 0001_1000
    "0000" "0000" "0000" "ffff"  # pause time, priorities 0..3
    "0000" "0000" "0000" "0000"  # pause time, priorities 4..7
    + "00" * 26  # padding to 60 bytes (64 on the wire with the FCS)
)


def test_frame_bytes_follow_802_1qbb():
    frame = raw(pfc_frame(SRC, {3: 0xFFFF, 4: 0}))
    assert len(frame) == PFC_FRAME_BYTES == 60
    assert frame == PFC_P3_XOFF_P4_XON


def test_all_priorities_and_order_of_times():
    quanta = {p: 0x0100 * (p + 1) + p for p in range(8)}
    frame = raw(pfc_frame(SRC, quanta))
    assert frame[14:18] == bytes.fromhex("0101 00ff")
    assert frame[18:34] == bytes.fromhex("0100 0201 0302 0403 0504 0605 0706 0807")
    assert frame[34:] == bytes(26)


def test_quanta_read_back_from_bytes_and_from_scapy():
    assert pfc_pause_quanta(PFC_P3_XOFF_P4_XON) == {3: 0xFFFF, 4: 0}
    dissected = Ether(PFC_P3_XOFF_P4_XON)
    assert dissected.haslayer(MACControlClassBasedFlowControl)
    assert pfc_pause_quanta(dissected) == {3: 0xFFFF, 4: 0}
    rng = random.Random(8021)
    for _ in range(100):
        wanted = {p: rng.randrange(0x10000) for p in rng.sample(range(8), rng.randrange(1, 9))}
        frame = raw(pfc_frame(SRC, wanted))
        assert pfc_pause_quanta(frame) == wanted
        assert pfc_pause_quanta(Ether(frame)) == wanted
        # Receivers see 64 bytes with the FCS; the trailing 4 bytes are ignored.
        assert pfc_pause_quanta(frame + b"\xde\xad\xbe\xef") == wanted


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        pfc_frame(SRC, {8: 1})
    with pytest.raises(ValueError):
        pfc_frame(SRC, {0: 0x10000})
    with pytest.raises(ValueError):
        pfc_frame(SRC, {})


def test_what_is_not_pfc_is_rejected():
    pause_8023x = raw(Ether(dst="01:80:c2:00:00:01", src=SRC) / MACControlPause(pause_time=5))
    with pytest.raises(ValueError, match="opcode"):
        pfc_pause_quanta(pause_8023x)
    with pytest.raises(ValueError):
        pfc_pause_quanta(Ether(pause_8023x))
    not_mac_control = PFC_P3_XOFF_P4_XON[:12] + b"\x08\x00" + PFC_P3_XOFF_P4_XON[14:]
    with pytest.raises(ValueError, match="EtherType"):
        pfc_pause_quanta(not_mac_control)
    with pytest.raises(ValueError):
        pfc_pause_quanta(PFC_P3_XOFF_P4_XON[:20])


def test_pause_duration():
    # One quantum is 512 bit times: 5.12 ns at 100 Gb/s.
    assert pause_duration_s(1, 100e9) == pytest.approx(5.12e-9)
    assert pause_duration_s(0xFFFF, 100e9) == pytest.approx(335.5392e-6)
    assert pause_duration_s(0, 10e9) == 0
    with pytest.raises(ValueError):
        pause_duration_s(1, 0)
