"""A NIC reads the common RoCEv2 frame in place and everything else through
``roce.parse``: both ways must count and dispatch a frame alike. Each frame
below is classified by the rules the NIC had before the in-place reader
(``parse``, then address, ICRC, QP, opcode) and must land in that counter,
and a QP must see the same fields."""

from __future__ import annotations

import struct

import pytest

from emulator.traffic.agent.config import parse_config
from emulator.traffic.agent.qp import QueuePair
from emulator.traffic.agent.sim import SimNetwork, mark_ce
from emulator.traffic.layers.aeth import ack_syndrome
from emulator.traffic.layers.pfc import pfc_frame
from emulator.traffic.roce import RoceFlow, RoceFormatError, parse
from scapy.compat import raw
from tests.unit.test_agent_support import IP, MAC, QPN, host_config, write_frame


def reference_counter(frame: bytes, ip: str, qpns: set[int], check_icrc: bool) -> str:
    """The counter the NIC bumped for ``frame`` before the in-place reader."""
    if frame[12:14] == b"\x88\x08":
        return "pfc_rx"
    if frame[12:14] != b"\x08\x00":
        return "other_rx"
    try:
        view = parse(frame, check_icrc=check_icrc)
    except RoceFormatError:
        return "other_rx"
    if view.dst_ip != ip:
        return "not_for_us_rx"
    if view.icrc_ok is False:
        return "bad_icrc_rx"
    if view.dest_qp not in qpns:
        return "unknown_qp_rx"
    if view.opcode <= 0x0B or view.opcode in (0x11, 0x81):
        return "roce_rx"
    return "malformed_rx"


def with_ip_options(frame: bytes) -> bytes:
    """The same packet with 4 bytes of IPv4 options (NOPs), lengths and checksum redone."""
    ip = bytearray(frame[14:34])
    ip[0] = 0x46
    total = struct.unpack("!H", ip[2:4])[0] + 4
    ip[2:4] = struct.pack("!H", total)
    ip[10:12] = b"\0\0"
    header = bytes(ip) + b"\x01\x01\x01\x01"
    s = sum(struct.unpack("!12H", header))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    header = header[:10] + struct.pack("!H", ~s & 0xFFFF) + header[12:]
    return frame[:14] + header + frame[34:]


def frames() -> list[bytes]:
    flow = RoceFlow(MAC["a"], MAC["b"], IP["a"], IP["b"], 0xC011)
    stranger = RoceFlow(MAC["a"], MAC["b"], IP["a"], "10.0.0.9", 0xC011)
    good = write_frame(0, ack_req=True)
    bad_icrc = good[:-1] + bytes([good[-1] ^ 1])
    out = [good, bad_icrc, mark_ce(write_frame(0)), with_ip_options(write_frame(0)),
           flow.ack(QPN["b"], 5, 1), flow.cnp(QPN["b"]), flow.packet(0x0C, QPN["b"], 0,
                                                                       reth=(0, 0, 64)),
           stranger.packet(0x0A, QPN["b"], 0, bytes(8), reth=(0, 0, 8)),
           flow.packet(0x0A, 0x77, 0, bytes(8), reth=(0, 0, 8)),
           flow.packet(0x64, QPN["b"], 0, bytes(8), deth=(1, 2)),  # UD: parsed, not spoken
           good[:40], good[:57], good[:14] + b"\x45" + good[15:23] + b"\x06" + good[24:],
           good[:36] + b"\x12\xb8" + good[38:], good[:42] + b"\xee" + good[43:],
           good[:16] + b"\x00\x10" + good[18:], good[:16] + b"\xff\xff" + good[18:],
           good + bytes(20),  # Ethernet padding after the datagram
           raw(pfc_frame(MAC["a"], {3: 100})), b"\x00" * 14 + b"\x86\xdd" + bytes(40),
           good[:12] + b"\x08\x00" + b"\x46" + good[15:]]
    # a WRITE ONLY whose IPv4 length leaves less than its RETH: a negative payload
    short = bytearray(flow.packet(0x0A, QPN["b"], 0, b"", reth=(0, 0, 0)))
    short[16:18] = struct.pack("!H", 20 + 8 + 12 + 4 + 8)
    out.append(bytes(short))
    return out


@pytest.mark.parametrize("check_icrc", [False, True])
def test_each_frame_lands_in_the_counter_parse_gives(check_icrc):
    net = SimNetwork()
    b = net.add_agent(parse_config(host_config("b", run={"check_icrc": check_icrc})))
    nic = b.nics[0]
    for i, frame in enumerate(frames()):
        before = nic.counters.to_dict()
        want = reference_counter(frame, IP["b"], {QPN["b"]}, check_icrc)
        b.on_frame(0, frame, 0.001 * i)
        after = nic.counters.to_dict()
        changed = {k for k in after if after[k] != before[k]} - {"rx_packets", "rx_bytes"}
        if want == "roce_rx":
            assert changed == {"roce_rx"}, (i, changed)
        elif want in ("other_rx", "pfc_rx"):
            assert want in changed and "roce_rx" not in changed, (i, changed)
        else:
            assert changed == {"roce_rx", want}, (i, want, changed)


def test_a_qp_sees_the_fields_parse_reads():
    net = SimNetwork()
    b = net.add_agent(parse_config(host_config("b")))
    seen = []
    qp = b.qps[QPN["b"]]

    class Seen(QueuePair):  # in the QP's place on its NIC: what the NIC hands it
        def __init__(self) -> None:  # (nothing of a QP's own: the NIC only calls these)
            pass

        def on_request(self, *args):  # type: ignore[no-untyped-def]
            seen.append(("req", *args))

        def on_ack(self, *args):  # type: ignore[no-untyped-def]
            seen.append(("ack", *args))
    qp.nic.qp_by_num[qp.qpn] = Seen()
    flow = RoceFlow(MAC["a"], MAC["b"], IP["a"], IP["b"], 0xC011)
    for frame in (mark_ce(write_frame(0x123456, ack_req=True, payload=bytes(61))),
                  with_ip_options(write_frame(7, payload=bytes(3))),
                  flow.packet(0x01, QPN["b"], 9, bytes(1024)),
                  flow.ack(QPN["b"], 0xABCDEF, 3, ack_syndrome())):
        view = parse(frame)
        b.on_frame(0, frame, 1.0)
        if view.opcode == 0x11:
            assert seen[-1] == ("ack", view.psn, view.aeth.syndrome, 1.0)
        else:
            assert seen[-1] == ("req", view.opcode, view.psn, view.ack_req, view.ecn,
                                view.payload_len, 1.0)
    assert len(seen) == 4
