"""The struct-based plans for header extract/emit and field-list packing
(:mod:`emulator.p4.exec.bytepack`), against a bit-by-bit reference, and the
headers generated from them: odd widths, signed and bool fields, fields that
straddle bytes, wide fields."""

from __future__ import annotations

import random
import struct

import pytest

from emulator.p4.exec import bytepack
from emulator.p4.exec.externs import csum16, pack_bits
from tests.unit.p4.conformance_kit import Switch, v1switch


def random_widths(rng: random.Random) -> list[int]:
    """Field widths (1..80 bits, some 0-free runs) adding up to whole bytes."""
    widths = [rng.choice([1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 19, 24, 32, 48, 64, 80])
              for _ in range(rng.randint(1, 9))]
    pad = -sum(widths) % 8
    if pad:
        widths.append(pad)
    return widths


def test_plan_cuts_at_byte_boundaries_and_merges_odd_groups():
    assert bytepack.struct_format(bytepack.plan([4, 4, 6, 2, 16, 16, 3, 13, 8, 8, 16, 32, 32])) \
        == ">BBHHHBBHII"  # IPv4
    assert bytepack.struct_format(bytepack.plan([48, 48, 16])) == ">6sQ"  # Ethernet: src+type in one Q
    # BTH: resv6 + 24-bit QPN, ack_req/resv7 + 24-bit PSN as 32-bit items
    assert bytepack.struct_format(bytepack.plan([8, 1, 1, 2, 4, 16, 1, 1, 6, 24, 1, 7, 24])) \
        == ">BBHII"
    assert bytepack.struct_format(bytepack.plan([128])) == ">16s"
    assert bytepack.plan([3]) is None and bytepack.plan([]) is None and bytepack.plan([12, 3]) is None
    groups = bytepack.plan([1, 7, 0])
    assert groups is not None and sum(g.count for g in groups) == 3


@pytest.mark.parametrize("seed", range(40))
def test_pack_and_unpack_agree_with_a_bit_by_bit_reference(seed):
    rng = random.Random(seed)
    widths = random_widths(rng)
    values = [rng.getrandbits(w) if w else 0 for w in widths]
    groups = bytepack.plan(widths)
    assert groups is not None
    assert sum(g.nbytes for g in groups) * 8 == sum(widths)
    assert [i for g in groups for i in range(g.first, g.first + g.count)] == list(range(len(widths)))
    fmt = bytepack.struct_format(groups)
    names = [f"v{i}" for i in range(len(widths))]
    packed = eval(f"pack({bytepack.pack_args(groups, names, widths)})",  # noqa: S307 - our plan
                  {"pack": struct.Struct(fmt).pack, **dict(zip(names, values))})
    assert packed == pack_bits(list(zip(values, widths)))
    items = struct.Struct(fmt).unpack_from(b"\xee" + packed, 1)
    got = []
    for g, item in zip(groups, items):
        value = item if g.native else int.from_bytes(item, "big")
        for i in range(g.first, g.first + g.count):
            got.append(eval(bytepack.field_from_group(g, i, "x", widths), {"x": value}))  # noqa: S307
    assert got == values


HEADERS = """
header odd_t { bit<3> a; int<5> b; bool c; bit<7> d; bit<48> e; int<16> f; bit<24> g; bit<8> h; }
struct headers { eth_t eth; odd_t odd; }
"""
PARSER = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.odd); transition accept; }
}"""


def odd_switch(ingress: str) -> Switch:
    return Switch.build(v1switch(headers=HEADERS, parser=PARSER, ingress=ingress))


@pytest.mark.parametrize("seed", range(8))
def test_generated_header_round_trips_odd_signed_and_bool_fields(seed):
    sw = odd_switch("apply { sm.egress_spec = 1; }")
    rng = random.Random(seed)
    frame = bytes(rng.getrandbits(8) for _ in range(14 + 14 + 5))  # eth, odd, payload
    assert sw.one(0, frame) == frame.hex()


def test_generated_header_fields_hold_their_values():
    # 14 bytes: a = 5, b = -3 (11101), c = true, d = 0x55, e, f = -2, g, h
    bits = "101" "11101" "1" "1010101" + format(0x0A0B0C0D0E0F, "048b") \
        + format(0xFFFE, "016b") + format(0x123456, "024b") + format(0x99, "08b")
    odd = int(bits, 2).to_bytes(len(bits) // 8, "big")
    frame = bytes(12) + b"\x08\x00" + odd
    sw = odd_switch("""apply {
        sm.egress_spec = 1;
        if (hdr.odd.a == 5 && hdr.odd.b == -3 && hdr.odd.c && hdr.odd.d == 0x55
            && hdr.odd.e == 0x0A0B0C0D0E0F && hdr.odd.f == -2 && hdr.odd.g == 0x123456
            && hdr.odd.h == 0x99) {
            hdr.odd.b = hdr.odd.b + 1;   // -2: 11110
            hdr.odd.f = hdr.odd.f - 1;   // -3: 0xFFFD
            hdr.odd.c = false;
        }
    }""")
    out = bytes.fromhex(sw.one(0, frame))
    bits_out = "101" "11110" "0" "1010101" + format(0x0A0B0C0D0E0F, "048b") \
        + format(0xFFFD, "016b") + format(0x123456, "024b") + format(0x99, "08b")
    assert out[14:] == int(bits_out, 2).to_bytes(len(bits_out) // 8, "big")


def test_checksum_of_a_header_packs_its_fields_as_bmv2():
    sw = Switch.build(v1switch(headers=HEADERS, parser=PARSER, ingress="apply { sm.egress_spec = 1; }",
                               compute="""apply {
        update_checksum(hdr.odd.isValid(), { hdr.odd.a, hdr.odd.b, hdr.odd.c, hdr.odd.d, hdr.odd.e,
                                             hdr.odd.g, hdr.odd.h }, hdr.odd.f, HashAlgorithm.csum16);
    }"""))
    rng = random.Random(7)
    odd = bytes(rng.getrandbits(8) for _ in range(14))  # the header, no payload
    out = bytes.fromhex(sw.one(0, bytes(12) + b"\x08\x00" + odd))[14:]
    fields = out[:8] + out[10:]  # everything but f (bytes 8 and 9)
    words = fields + b"\x00" if len(fields) % 2 else fields
    total = sum(int.from_bytes(words[i:i + 2], "big") for i in range(0, len(words), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    assert int.from_bytes(out[8:10], "big") == ~total & 0xFFFF


def _csum16_by_words(data: bytes) -> int:
    """RFC 1071 the long way: 16-bit big-endian words, end-around carry."""
    if len(data) & 1:
        data += b"\x00"
    total = 0
    for i in range(0, len(data), 2):
        total += (data[i] << 8) | data[i + 1]
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x00", b"\xff\xff", b"\xff\xff\xff\xff",
                                  b"\x00\x01\xff\xfe", b"\xff", b"\x01\x02\x03"])
def test_csum16_edge_cases_match_the_word_by_word_sum(data):
    assert csum16(data) == _csum16_by_words(data)


def test_csum16_matches_the_word_by_word_sum_on_random_bytes():
    rng = random.Random(16)
    for _ in range(3000):
        data = rng.randbytes(rng.randrange(0, 80))
        assert csum16(data) == _csum16_by_words(data), data.hex()
    # A valid IPv4 header (checksum in place) sums to zero.
    header = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    fixed = header[:10] + csum16(header).to_bytes(2, "big") + header[12:]
    assert csum16(fixed) == 0 and csum16(header) == 0xB861
