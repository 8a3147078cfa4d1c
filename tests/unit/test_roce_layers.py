"""RoCEv2 layers, bindings, ICRC and the fast frame builder/parser.

Expected bytes are assembled by hand from the field layouts (IBA vol. 1
chapter 9, RoCEv2 Annex A17); the ICRC values in them come from
``scapy.contrib.roce``, which the tests also use as the reference for ~200
random packets of the fast path.
"""

from __future__ import annotations

import random
import zlib

import pytest
from scapy.compat import raw
from scapy.contrib.roce import AETH, BTH, CNPPadding, _bth_opcodes, cnp
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Padding, Raw

from emulator.traffic.layers import aeth as aeth_codes
from emulator.traffic.layers import opcodes as op
from emulator.traffic.layers.atomic import AtomicAckAETH, AtomicAckETH, AtomicETH
from emulator.traffic.layers.bind import layer_after_bth
from emulator.traffic.layers.deth import DETH
from emulator.traffic.layers.icrc import compute_icrc, icrc_ok
from emulator.traffic.layers.immdt import ImmDt
from emulator.traffic.layers.reth import RETH
from emulator.traffic.roce import (
    ECN_CE,
    ECN_ECT0,
    RoceFlow,
    RoceFormatError,
    ack_packet,
    cnp_packet,
    parse,
    roce_packet,
)

MAC_A, MAC_B = "02:00:00:00:00:01", "02:00:00:00:00:02"
IP_A, IP_B = "10.0.0.1", "10.0.0.2"
SPORT = 50000

# RC RDMA WRITE FIRST, 8 bytes of payload, A -> B.
WRITE_FIRST = bytes.fromhex(
    "020000000002 020000000001 0800"  # Ether: dst, src, IPv4
    # IPv4: version/IHL, TOS = DSCP 26 | ECT(0), length 68, ID 0, DF, TTL 64, UDP, checksum
    "45 6a 0044 0000 4000 40 11 263d"
    "0a000001 0a000002"  # src 10.0.0.1, dst 10.0.0.2
    "c350 12b7 0030 0000"  # UDP: sport 50000, dport 4791, len 48, csum 0
    # BTH: opcode, SE/M/PadCnt/TVer, P_Key, F/B/resv6, dest QP, AckReq/resv7, PSN 77
    "06 00 ffff 00 001234 80 00004d"
    "0000000000001000 00000abc 00002000"  # RETH: VA, R_Key, DMA length 8192
    "0001020304050607"  # payload
    "921cc916"  # ICRC, least significant byte first
)

# RC ACKNOWLEDGE, B -> A: ACK with credit code 0x1f (invalid), MSN 7.
ACK = bytes.fromhex(
    "020000000001 020000000002 0800"
    "45 6a 0030 0000 4000 40 11 2651 0a000002 0a000001"  # len 48
    "c350 12b7 001c 0000"  # UDP len 28
    "11 00 ffff 00 000100 00 00004d"  # BTH: ACKNOWLEDGE, dest QP 0x100, PSN 77
    "1f 000007"  # AETH: syndrome, MSN
    "3de364e1"
)

# CNP, B -> A: DSCP 48, not ECT; BTH opcode 0x81 with BECN; 16 reserved bytes.
CNP_FRAME = bytes.fromhex(
    "020000000001 020000000002 0800"
    "45 c0 003c 0000 4000 40 11 25ef 0a000002 0a000001"  # TOS 48<<2, len 60
    "c350 12b7 0028 0000"
    "81 00 ffff 40 000100 00 000000"  # BTH: CNP, BECN=1 (0x40), dest QP 0x100, PSN 0
    "00000000000000000000000000000000"
    "31b87b93"
)


def _spec_icrc(frame: bytes) -> bytes:
    """Annex A17.3.3 spelt out on a plain IPv4 frame: mask, prepend 8 x 0xFF, CRC-32."""
    ip_len = int.from_bytes(frame[16:18], "big")
    pseudo = bytearray(frame[14 : 14 + ip_len - 4])
    pseudo[1] = 0xFF  # TOS
    pseudo[8] = 0xFF  # TTL
    pseudo[10:12] = b"\xff\xff"  # IP checksum
    pseudo[26:28] = b"\xff\xff"  # UDP checksum
    pseudo[32] = 0xFF  # BTH FECN/BECN/resv6
    return zlib.crc32(b"\xff" * 8 + pseudo).to_bytes(4, "little")


def _ip_header_sums_to_ones(frame: bytes) -> bool:
    words = [int.from_bytes(frame[i : i + 2], "big") for i in range(14, 34, 2)]
    total = sum(words)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


# ---------------------------------------------------------------- layers


@pytest.mark.parametrize(
    ("layer", "expected"),
    [
        # VA (64) | R_Key (32) | DMA length (32)
        (RETH(va=0x0123456789ABCDEF, rkey=0xDEADBEEF, dma_len=4096),
         "0123456789abcdef" "deadbeef" "00001000"),
        # Q_Key (32) | reserved (8) | source QP (24)
        (DETH(qkey=0x80010000, src_qp=0xABC), "80010000" "00" "000abc"),
        # immediate data (32)
        (ImmDt(imm=0xCAFEF00D), "cafef00d"),
        # VA (64) | R_Key (32) | swap/add data (64) | compare data (64)
        (AtomicETH(va=0x10, rkey=0x20, swap_data=0x30, cmp_data=0xFFFFFFFFFFFFFFFF),
         "0000000000000010" "00000020" "0000000000000030" "ffffffffffffffff"),
        # original remote data (64)
        (AtomicAckETH(orig_remote_data=0x1122334455667788), "1122334455667788"),
    ],
)
def test_layer_bytes_follow_the_spec_layout(layer, expected):
    assert raw(layer) == bytes.fromhex(expected)
    again = type(layer)(raw(layer))
    names = [f.name for f in layer.fields_desc]
    assert [again.getfieldval(n) for n in names] == [layer.getfieldval(n) for n in names]


def test_known_frames_have_valid_ip_checksums_and_the_spec_icrc():
    for frame in (WRITE_FIRST, ACK, CNP_FRAME):
        assert _ip_header_sums_to_ones(frame)
        assert frame[-4:] == _spec_icrc(frame)
        assert icrc_ok(frame)
        assert compute_icrc(frame).to_bytes(4, "little") == frame[-4:]


def test_write_first_dissects_to_reth_and_raw_with_the_icrc_as_trailer():
    pkt = Ether(WRITE_FIRST)
    assert [type(layer) for layer in pkt.iterpayloads()] == [Ether, IP, UDP, BTH, RETH, Raw]
    assert pkt[BTH].opcode == op.RC_RDMA_WRITE_FIRST
    assert (pkt[BTH].dqpn, pkt[BTH].psn, pkt[BTH].ackreq) == (0x1234, 77, 1)
    assert (pkt[RETH].va, pkt[RETH].rkey, pkt[RETH].dma_len) == (0x1000, 0xABC, 8192)
    assert pkt[Raw].load == bytes(range(8))
    # Scapy reads the trailer with "!I", so its field is the byte-swapped CRC.
    assert pkt[BTH].icrc == int.from_bytes(WRITE_FIRST[-4:], "big")
    assert pkt[BTH].compute_icrc(b"") == WRITE_FIRST[-4:]
    assert icrc_ok(pkt) and icrc_ok(pkt[IP])
    assert raw(pkt) == WRITE_FIRST


def test_scapy_builds_the_known_frames():
    write = (Ether(src=MAC_A, dst=MAC_B)
             / IP(src=IP_A, dst=IP_B, tos=0x6A, id=0, flags="DF")
             / UDP(sport=SPORT, chksum=0)
             / BTH(opcode=op.RC_RDMA_WRITE_FIRST, dqpn=0x1234, psn=77, ackreq=1)
             / RETH(va=0x1000, rkey=0xABC, dma_len=8192) / Raw(bytes(range(8))))
    assert raw(write) == WRITE_FIRST
    ack = (Ether(src=MAC_B, dst=MAC_A) / IP(src=IP_B, dst=IP_A, tos=0x6A, id=0, flags="DF")
           / UDP(sport=SPORT, chksum=0) / BTH(dqpn=0x100, psn=77) / AETH(syndrome=0x1F, msn=7))
    assert raw(ack) == ACK  # opcode from the RC default binding
    notify = (Ether(src=MAC_B, dst=MAC_A) / IP(src=IP_B, dst=IP_A, tos=0xC0, id=0, flags="DF")
              / UDP(sport=SPORT, chksum=0) / cnp(0x100))
    assert raw(notify) == CNP_FRAME


def test_fast_constructors_produce_the_known_frames():
    write = roce_packet(MAC_A, MAC_B, IP_A, IP_B, SPORT, op.RC_RDMA_WRITE_FIRST, 0x1234, 77,
                        bytes(range(8)), reth=(0x1000, 0xABC, 8192), ack_req=True)
    assert write == WRITE_FIRST
    assert ack_packet(MAC_B, MAC_A, IP_B, IP_A, SPORT, 0x100, 77, 7) == ACK
    assert cnp_packet(MAC_B, MAC_A, IP_B, IP_A, SPORT, 0x100) == CNP_FRAME


# ------------------------------------------------------------- bindings


def _stack(pkt):
    return [type(layer) for layer in pkt.iterpayloads()][3:]  # from the BTH up


@pytest.mark.parametrize(
    ("upper", "expected"),
    [
        (BTH(opcode=op.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE) / RETH() / ImmDt() / Raw(b"abcd"),
         [BTH, RETH, ImmDt, Raw]),
        (BTH(opcode=op.UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE) / RETH() / ImmDt() / Raw(b"abcd"),
         [BTH, RETH, ImmDt, Raw]),
        (BTH(opcode=op.RC_RDMA_READ_REQUEST) / RETH(), [BTH, RETH]),
        (BTH(opcode=op.UC_RDMA_WRITE_FIRST) / RETH() / Raw(b"abcd"), [BTH, RETH, Raw]),
        (BTH(opcode=op.RC_SEND_LAST_WITH_IMMEDIATE) / ImmDt() / Raw(b"abcd"),
         [BTH, ImmDt, Raw]),
        (BTH(opcode=op.UD_SEND_ONLY) / DETH() / Raw(b"abcd"), [BTH, DETH, Raw]),
        (BTH(opcode=op.UD_SEND_ONLY_WITH_IMMEDIATE) / DETH() / ImmDt() / Raw(b"abcd"),
         [BTH, DETH, ImmDt, Raw]),
        (BTH(opcode=op.RC_RDMA_READ_RESPONSE_FIRST) / AETH() / Raw(b"abcd"), [BTH, AETH, Raw]),
        (BTH(opcode=op.RC_RDMA_READ_RESPONSE_MIDDLE) / Raw(b"abcd"), [BTH, Raw]),
        (BTH(opcode=op.RC_ACKNOWLEDGE) / AETH(), [BTH, AETH]),
        (BTH(opcode=op.RC_ATOMIC_ACKNOWLEDGE) / AETH() / AtomicAckETH(),
         [BTH, AtomicAckAETH, AtomicAckETH]),
        (BTH(opcode=op.RC_FETCH_ADD) / AtomicETH(), [BTH, AtomicETH]),
        (cnp(7), [BTH, CNPPadding]),
    ],
)
def test_every_opcode_family_dissects_to_its_headers(upper, expected):
    frame = raw(Ether(src=MAC_A, dst=MAC_B) / IP() / UDP(sport=0xC000) / upper)
    pkt = Ether(frame)
    assert _stack(pkt) == expected
    assert raw(pkt) == frame
    assert icrc_ok(pkt)


def test_atomic_ack_aeth_is_found_as_aeth():
    pkt = Ether(raw(Ether(src=MAC_A, dst=MAC_B) / IP() / UDP(sport=0xC000)
                    / BTH(opcode=op.RC_ATOMIC_ACKNOWLEDGE)
                    / AETH(syndrome=0x1F, msn=9) / AtomicAckETH(orig_remote_data=5)))
    assert pkt[AETH].msn == 9
    assert pkt[AtomicAckETH].orig_remote_data == 5


def test_build_defaults_pick_rc_opcodes():
    assert (BTH() / AETH()).opcode == op.RC_ACKNOWLEDGE  # Scapy alone says RD (0x51)
    assert (BTH() / RETH()).opcode == op.RC_RDMA_WRITE_ONLY
    assert (BTH() / DETH()).opcode == op.UD_SEND_ONLY
    assert (BTH() / AtomicETH()).opcode == op.RC_COMPARE_SWAP


def test_every_opcode_binds_the_header_its_table_names():
    for opcode, headers in op.EXT_HEADERS.items():
        layer = layer_after_bth(opcode)
        if not headers:
            assert layer is None
        else:
            assert ({"opcode": opcode}, layer) in BTH.payload_guess


# -------------------------------------------------------------- opcodes


def test_opcode_names_agree_with_scapy():
    for opcode in op.EXT_HEADERS:
        assert op.opcode_name(opcode) == _bth_opcodes[opcode]
    assert op.opcode_name(op.UD_SEND_ONLY_WITH_IMMEDIATE) == "UD_SEND_ONLY_WITH_IMMEDIATE"
    assert len(op.EXT_HEADERS) == 21 + 12 + 2 + 1


def test_opcode_helpers():
    assert op.ext_headers(op.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE) == (
        op.ExtHeader.RETH, op.ExtHeader.IMMDT)
    assert op.ext_header_bytes(op.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE) == 20
    assert op.ext_header_bytes(op.RC_ATOMIC_ACKNOWLEDGE) == 12
    assert op.ext_header_bytes(op.UD_SEND_ONLY_WITH_IMMEDIATE) == 12
    assert op.ext_header_bytes(op.CNP) == 16
    assert op.carries_payload(op.RC_RDMA_READ_RESPONSE_LAST)
    assert not op.carries_payload(op.RC_RDMA_READ_REQUEST)
    assert op.transport(op.UC_SEND_ONLY) == op.TRANSPORT_UC
    assert op.transport(op.UD_SEND_ONLY) == op.TRANSPORT_UD
    assert not op.is_known(0x40)  # RD SEND FIRST: not supported
    with pytest.raises(ValueError):
        op.ext_headers(0x2C)  # UC has no RDMA READ


def test_aeth_syndromes():
    assert aeth_codes.ack_syndrome() == 0x1F
    assert aeth_codes.nak_syndrome(aeth_codes.NAK_PSN_SEQUENCE_ERROR) == 0x60
    assert aeth_codes.nak_syndrome(aeth_codes.NAK_REMOTE_ACCESS_ERROR) == 0x62
    assert aeth_codes.rnr_nak_syndrome(0x0E) == 0x2E
    assert aeth_codes.syndrome_kind(0x62) == aeth_codes.KIND_NAK
    assert aeth_codes.syndrome_value(0x62) == 2
    with pytest.raises(ValueError):
        aeth_codes.ack_syndrome(32)


# ----------------------------------------------------------------- ICRC


def test_ecn_dscp_ttl_and_becn_changes_keep_the_icrc():
    frame = bytearray(WRITE_FIRST)
    frame[15] = (frame[15] & 0xFC) | ECN_CE  # a switch marks CE
    assert icrc_ok(bytes(frame))
    frame[15] = 0x00  # DSCP rewritten too
    frame[22] = 3  # TTL decremented along the way
    frame[24:26] = b"\x12\x34"  # IP checksum (not recomputed: masked anyway)
    frame[40:42] = b"\xab\xcd"  # UDP checksum
    frame[46] = 0xC0  # FECN and BECN
    assert icrc_ok(bytes(frame))
    marked = Ether(WRITE_FIRST)
    marked[IP].tos = 0x6B
    assert raw(marked)[-4:] == WRITE_FIRST[-4:]


@pytest.mark.parametrize("offset", [18, 20, 26, 30, 34, 38, 42, 45, 49, 53, 60, 70, 77])
def test_any_covered_byte_change_breaks_the_icrc(offset):
    frame = bytearray(WRITE_FIRST)
    frame[offset] ^= 0x01
    assert not icrc_ok(bytes(frame))


def test_icrc_ignores_ethernet_padding_and_a_vlan_tag():
    short = roce_packet(MAC_A, MAC_B, IP_A, IP_B, SPORT, op.RC_SEND_ONLY, 5, 1)
    assert len(short) == 58
    padded = short + b"\x00\x00"
    assert icrc_ok(padded)
    assert parse(padded).payload_len == 0
    pkt = Ether(padded)
    assert pkt.haslayer(Padding) and icrc_ok(pkt)
    tagged = short[:12] + b"\x81\x00" + (3 << 13 | 10).to_bytes(2, "big") + short[12:]
    assert Ether(tagged)[Dot1Q].prio == 3
    assert icrc_ok(tagged)
    assert parse(tagged).dest_qp == 5


def test_ipv6_icrc_matches_scapy():
    rng = random.Random(6)
    for _ in range(20):
        pkt = (Ether(src=MAC_A, dst=MAC_B)
               / IPv6(src="fd00::1", dst="fd00::2", tc=rng.randrange(256),
                      fl=rng.randrange(1 << 20), hlim=rng.randrange(256))
               / UDP(sport=rng.randrange(0xC000, 0x10000))
               / BTH(opcode=op.RC_SEND_ONLY, dqpn=rng.randrange(1 << 24),
                     psn=rng.randrange(1 << 24))
               / Raw(rng.randbytes(rng.randrange(1, 64))))
        frame = raw(pkt)
        assert compute_icrc(frame).to_bytes(4, "little") == frame[-4:]
        assert icrc_ok(frame)


def test_icrc_ok_rejects_what_is_not_roce():
    with pytest.raises(ValueError):
        icrc_ok(raw(Ether(src=MAC_A, dst=MAC_B) / IP() / UDP(sport=1000, dport=53)
                    / Raw(b"x" * 30)))
    with pytest.raises(ValueError):
        icrc_ok(b"\x00" * 10)


# ------------------------------------------------- fast path vs Scapy

_HEADER_LAYERS = {
    op.ExtHeader.RETH: lambda v: RETH(va=v["reth"][0], rkey=v["reth"][1], dma_len=v["reth"][2]),
    op.ExtHeader.IMMDT: lambda v: ImmDt(imm=v["imm"]),
    op.ExtHeader.AETH: lambda v: AETH(syndrome=v["aeth"][0], msn=v["aeth"][1]),
    op.ExtHeader.DETH: lambda v: DETH(qkey=v["deth"][0], src_qp=v["deth"][1]),
    op.ExtHeader.ATOMIC_ETH: lambda v: AtomicETH(va=v["atomic"][0], rkey=v["atomic"][1],
                                                 swap_data=v["atomic"][2], cmp_data=v["atomic"][3]),
    op.ExtHeader.ATOMIC_ACK_ETH: lambda v: AtomicAckETH(orig_remote_data=v["atomic_ack"]),
    op.ExtHeader.CNP_RESERVED: lambda v: CNPPadding(),
}


def _random_case(rng: random.Random) -> dict:
    opcode = rng.choice(sorted(op.EXT_HEADERS))
    headers = op.ext_headers(opcode)
    case = {
        "flow": {
            "src_mac": ":".join(f"{rng.randrange(256):02x}" for _ in range(6)),
            "dst_mac": ":".join(f"{rng.randrange(256):02x}" for _ in range(6)),
            "src_ip": ".".join(str(rng.randrange(256)) for _ in range(4)),
            "dst_ip": ".".join(str(rng.randrange(256)) for _ in range(4)),
            "udp_sport": rng.randrange(0xC000, 0x10000),
            "dscp": rng.randrange(64),
            "ecn": rng.randrange(4),
            "ttl": rng.randrange(256),
        },
        "opcode": opcode,
        "dest_qp": rng.randrange(1 << 24),
        "psn": rng.randrange(1 << 24),
        "payload": rng.randbytes(rng.randrange(0, 300)) if op.carries_payload(opcode) else b"",
        "ack_req": rng.random() < 0.5,
        "solicited": rng.random() < 0.5,
        "becn": rng.random() < 0.5,
        "pkey": rng.choice([0xFFFF, rng.randrange(1 << 16)]),
        "ext": {},
    }
    ext = case["ext"]
    if op.ExtHeader.RETH in headers:
        ext["reth"] = (rng.randrange(1 << 64), rng.randrange(1 << 32), rng.randrange(1 << 32))
    if op.ExtHeader.IMMDT in headers:
        ext["imm"] = rng.randrange(1 << 32)
    if op.ExtHeader.AETH in headers:
        ext["aeth"] = (rng.randrange(256), rng.randrange(1 << 24))
    if op.ExtHeader.DETH in headers:
        ext["deth"] = (rng.randrange(1 << 32), rng.randrange(1 << 24))
    if op.ExtHeader.ATOMIC_ETH in headers:
        ext["atomic"] = tuple(rng.randrange(1 << n) for n in (64, 32, 64, 64))
    if op.ExtHeader.ATOMIC_ACK_ETH in headers:
        ext["atomic_ack"] = rng.randrange(1 << 64)
    return case


def _scapy_frame(case: dict) -> bytes:
    flow, payload = case["flow"], case["payload"]
    pad = -len(payload) & 3
    pkt = (Ether(src=flow["src_mac"], dst=flow["dst_mac"])
           / IP(src=flow["src_ip"], dst=flow["dst_ip"], tos=flow["dscp"] << 2 | flow["ecn"],
                ttl=flow["ttl"], id=0, flags="DF")
           / UDP(sport=flow["udp_sport"], chksum=0)
           / BTH(opcode=case["opcode"], dqpn=case["dest_qp"], psn=case["psn"],
                 ackreq=int(case["ack_req"]), solicited=int(case["solicited"]),
                 becn=int(case["becn"]), pkey=case["pkey"], padcount=pad))
    for header in op.ext_headers(case["opcode"]):
        pkt = pkt / _HEADER_LAYERS[header](case["ext"])
    if payload:
        pkt = pkt / Raw(payload + bytes(pad))
    return raw(pkt)


def _fast_frame(case: dict) -> bytes:
    flow = RoceFlow(**case["flow"])
    return flow.packet(case["opcode"], case["dest_qp"], case["psn"], case["payload"],
                       ack_req=case["ack_req"], solicited=case["solicited"],
                       becn=case["becn"], pkey=case["pkey"], **case["ext"])


def test_fast_builder_equals_scapy_for_random_packets():
    rng = random.Random(4791)
    for _ in range(200):
        case = _random_case(rng)
        fast = _fast_frame(case)
        assert fast == _scapy_frame(case), case
        assert fast[-4:] == _spec_icrc(fast)


def test_parse_reads_back_what_was_built():
    rng = random.Random(17)
    for _ in range(200):
        case = _random_case(rng)
        frame = _fast_frame(case)
        view = parse(frame)
        flow, ext = case["flow"], case["ext"]
        assert (view.opcode, view.dest_qp, view.psn) == (
            case["opcode"], case["dest_qp"], case["psn"])
        assert (view.ack_req, view.solicited, view.becn, view.fecn) == (
            case["ack_req"], case["solicited"], case["becn"], False)
        assert (view.pkey, view.ecn, view.dscp, view.ttl) == (
            case["pkey"], flow["ecn"], flow["dscp"], flow["ttl"])
        assert (view.src_ip, view.dst_ip, view.udp_sport) == (
            flow["src_ip"], flow["dst_ip"], flow["udp_sport"])
        start = view.payload_offset
        assert frame[start : start + view.payload_len] == case["payload"]
        assert view.icrc_ok is True
        assert view.reth == ext.get("reth")
        assert view.imm == ext.get("imm")
        assert view.aeth == ext.get("aeth")
        assert view.deth == ext.get("deth")
        assert view.atomic == ext.get("atomic")
        assert view.atomic_ack == ext.get("atomic_ack")


def test_parse_reports_a_bad_icrc_and_skips_the_check_on_request():
    frame = bytearray(WRITE_FIRST)
    frame[-5] ^= 0xFF
    assert parse(bytes(frame)).icrc_ok is False
    assert parse(bytes(frame), check_icrc=False).icrc_ok is None


def test_parse_rejects_what_is_not_roce():
    with pytest.raises(RoceFormatError):
        parse(raw(Ether(src=MAC_A, dst=MAC_B) / IP() / UDP(sport=1000, dport=53) / Raw(b"x" * 30)))
    with pytest.raises(RoceFormatError):
        parse(WRITE_FIRST[:40])
    rd = bytearray(WRITE_FIRST)
    rd[42] = 0x40  # RD SEND FIRST
    with pytest.raises(RoceFormatError):
        parse(bytes(rd))
    with pytest.raises(ValueError):  # RoceFormatError is a ValueError
        parse(b"\x00" * 8)


def test_builder_checks_headers_against_the_opcode():
    flow = RoceFlow(MAC_A, MAC_B, IP_A, IP_B, SPORT, ecn=ECN_ECT0)
    with pytest.raises(ValueError, match="needs a RETH"):
        flow.packet(op.RC_RDMA_WRITE_FIRST, 1, 1, b"x")
    with pytest.raises(ValueError, match="takes only"):
        flow.packet(op.RC_RDMA_WRITE_MIDDLE, 1, 1, b"x", reth=(1, 2, 3))
    with pytest.raises(ValueError, match="carries no payload"):
        flow.packet(op.RC_RDMA_READ_REQUEST, 1, 1, b"x", reth=(1, 2, 3))
    with pytest.raises(ValueError, match="24 bits"):
        flow.packet(op.RC_SEND_ONLY, 1, 1 << 24)
    with pytest.raises(ValueError, match="out of range"):
        flow.packet(op.RC_SEND_ONLY_WITH_IMMEDIATE, 1, 1, imm=1 << 32)
    with pytest.raises(ValueError):
        flow.packet(0x40, 1, 1)
    with pytest.raises(ValueError):
        RoceFlow(MAC_A, MAC_B, "10.0.0", IP_B, SPORT)
    with pytest.raises(ValueError):
        RoceFlow("02:00", MAC_B, IP_A, IP_B, SPORT)
    with pytest.raises(ValueError):
        RoceFlow(MAC_A, MAC_B, IP_A, IP_B, SPORT, dscp=64)


def test_flow_ack_and_cnp_match_the_one_shot_functions():
    flow = RoceFlow(MAC_B, MAC_A, IP_B, IP_A, SPORT)
    assert flow.ack(0x100, 77, 7) == ACK
    nak = flow.ack(0x100, 77, 7, aeth_codes.nak_syndrome(aeth_codes.NAK_PSN_SEQUENCE_ERROR))
    assert parse(nak).aeth == (0x60, 7)
    cnp_flow = RoceFlow(MAC_B, MAC_A, IP_B, IP_A, SPORT, dscp=48, ecn=0)
    assert cnp_flow.cnp(0x100) == CNP_FRAME
    view = parse(CNP_FRAME)
    assert (view.opcode, view.becn, view.ecn, view.dscp, view.payload_len) == (0x81, True, 0, 48, 0)
