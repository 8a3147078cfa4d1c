"""Conformance: v1model externs as simple_switch runs them.

Hash inputs are packed as BMv2's ``BufBuilder`` does: fields back to back,
most significant bit first, zero-padded to a whole byte, fields of invalid
headers left out; ``hash()`` is ``base + h % max`` (``max`` 0 counts as 1).
The expected hash values are computed here with independent bit-by-bit
implementations of the algorithms (BMv2 ``calculations.cpp``).
"""

import zlib

import pytest

from emulator.p4.errors import ExecutionError
from emulator.p4.exec.externs import MeterCell
from tests.unit.p4.conformance_kit import ETH_HDR, StepClock, Switch, crc16_arc, v1switch

HEADERS = """
header d_t { bit<32> a; bit<16> b; bit<8> c; bit<8> x; }
header r_t { bit<32> r0; bit<32> r1; bit<32> r2; bit<32> r3; }
header opt_t { bit<16> v; }
struct headers { eth_t eth; d_t d; opt_t opt; r_t r; }
"""
PARSER = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.d);
                  transition select(hdr.d.x) { 1: with_opt; default: rest; } }
    state with_opt { pkt.extract(hdr.opt); transition rest; }
    state rest { pkt.extract(hdr.r); transition accept; }
}"""


def build(ingress: str, decls: str = "", **kw: str) -> Switch:
    return Switch.build(v1switch(decls, headers=HEADERS, parser=PARSER, ingress=ingress, **kw))


def frame(a: int, b: int, c: int, x: int = 0, opt: int | None = None) -> bytes:
    data = bytes.fromhex(ETH_HDR + "0000") + a.to_bytes(4, "big") + b.to_bytes(2, "big") + bytes([c, x])
    if opt is not None:
        data += opt.to_bytes(2, "big")
    return data + bytes(16)


def results(sw: Switch, data: bytes) -> list[int]:
    out = bytes.fromhex(sw.one(0, data))
    r = out[-16:]
    return [int.from_bytes(r[i:i + 4], "big") for i in range(0, 16, 4)]


def csum16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def xor16(data: bytes) -> int:
    v = 0
    for i in range(0, len(data), 2):
        v ^= int.from_bytes(data[i:i + 2].ljust(2, b"\0"), "big")
    return v


ALGOS = {
    "crc32": zlib.crc32, "crc32_custom": zlib.crc32, "crc16": crc16_arc, "crc16_custom": crc16_arc,
    "identity": lambda d: int.from_bytes(d[:8], "big"), "csum16": csum16, "xor16": xor16,
}


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_hash_every_algorithm_with_base_and_modulo(algo):
    sw = build(f"""apply {{
        sm.egress_spec = 1;
        hash(hdr.r.r0, HashAlgorithm.{algo}, 32w0, {{ hdr.d.a, hdr.d.c }}, 32w0xffffffff);
        hash(hdr.r.r1, HashAlgorithm.{algo}, 32w100, {{ hdr.d.a, hdr.d.c }}, 32w1000);
        hash(hdr.r.r2, HashAlgorithm.{algo}, 32w7, {{ hdr.d.b[3:0], hdr.d.b[15:4], hdr.d.c[2:0] }}, 32w0);
        bit<16> narrow;
        hash(narrow, HashAlgorithm.{algo}, 16w0, {{ hdr.d.a }}, 32w0xffffffff);
        hdr.r.r3 = (bit<32>)narrow;
    }}""")
    a, b, c = 0xC0A80101, 0xABCD, 0x5F
    fn = ALGOS[algo]
    five = a.to_bytes(4, "big") + bytes([c])
    # b[3:0] ++ b[15:4] ++ c[2:0]: 19 bits, padded with 5 zero bits
    bits19 = (((b & 0xF) << 12 | (b >> 4)) << 3) | (c & 7)
    packed = (bits19 << 5).to_bytes(3, "big")
    r = results(sw, frame(a, b, c))
    assert r[0] == fn(five) % 0xFFFFFFFF
    assert r[1] == 100 + fn(five) % 1000
    assert r[2] == 7 + fn(packed) % 1             # max 0 is taken as 1
    assert r[3] == (fn(a.to_bytes(4, "big")) % 0xFFFFFFFF) & 0xFFFF


def test_hash_leaves_out_fields_of_invalid_headers():
    sw = build("""apply {
        sm.egress_spec = 1;
        hash(hdr.r.r0, HashAlgorithm.crc32, 32w0, { hdr.d.c, hdr.opt.v, hdr.d.x }, 32w0xffffffff);
    }""")
    assert results(sw, frame(1, 2, 0x11, 1, 0xBEEF))[0] == zlib.crc32(bytes([0x11, 0xBE, 0xEF, 1]))
    assert results(sw, frame(1, 2, 0x11, 0))[0] == zlib.crc32(bytes([0x11, 0]))


IPV4 = """
header ipv4_t { bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
                bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
                bit<32> srcAddr; bit<32> dstAddr; }
header flag_t { bit<8> bad; }
struct headers { eth_t eth; ipv4_t ipv4; flag_t flag; }
"""
IP_PARSER = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.ipv4); transition accept; }
}"""
IP_FIELDS = """{ hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
                 hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
                 hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr }"""

# Ingress that shows the verify's outcome (hdr.flag.bad) and changes the TTL.
FLAG_INGRESS = """apply {
    sm.egress_spec = 1;
    hdr.flag.setValid();
    hdr.flag.bad = (bit<8>)sm.checksum_error;
    hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
}"""


def test_ipv4_checksum_verify_and_update():
    text = v1switch(
        headers=IPV4, parser=IP_PARSER,
        verify=f"apply {{ verify_checksum(hdr.ipv4.isValid(), {IP_FIELDS}, hdr.ipv4.hdrChecksum, HashAlgorithm.csum16); }}",
        ingress=FLAG_INGRESS,
        compute=f"apply {{ update_checksum(hdr.ipv4.isValid(), {IP_FIELDS}, hdr.ipv4.hdrChecksum, HashAlgorithm.csum16); }}")
    sw = Switch.build(text)
    ip = bytearray.fromhex("45000054 abcd 4000 40 01 0000 0a000001 0a000002".replace(" ", ""))
    ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
    out = bytes.fromhex(sw.one(0, bytes.fromhex(ETH_HDR + "0800") + bytes(ip)))
    exp = bytearray(ip)
    exp[8] = 0x3F
    exp[10:12] = b"\0\0"
    exp[10:12] = csum16(bytes(exp)).to_bytes(2, "big")
    assert out[14:34] == bytes(exp) and out[34] == 0
    bad = bytearray(ip)
    bad[10] ^= 0xFF
    out = bytes.fromhex(sw.one(0, bytes.fromhex(ETH_HDR + "0800") + bytes(bad)))
    assert out[34] == 1
    assert out[24:26] == exp[10:12]           # update_checksum fixes it anyway


def test_checksum_with_payload_covers_the_unparsed_bytes():
    text = v1switch(
        headers="header c_t { bit<16> sum; }\nstruct headers { eth_t eth; c_t c; }",
        parser="""
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.c); transition accept; }
}""",
        ingress="apply { sm.egress_spec = 1; }",
        compute="apply { update_checksum_with_payload(true, { hdr.eth.type }, hdr.c.sum, HashAlgorithm.csum16); }")
    sw = Switch.build(text)
    payload = bytes.fromhex("0102030405")
    out = bytes.fromhex(sw.one(0, bytes.fromhex(ETH_HDR + "1234" + "0000") + payload))
    assert out[14:16] == csum16(bytes.fromhex("1234") + payload).to_bytes(2, "big")
    assert out[16:] == payload


def test_registers_read_write_and_out_of_bounds():
    sw = build("""
    register<bit<32>>(4) regs;
    apply {
        sm.egress_spec = 1;
        regs.read(hdr.r.r0, (bit<32>)hdr.d.c);
        regs.write((bit<32>)hdr.d.c, hdr.d.a);
        hdr.r.r1 = 0x55;
        regs.read(hdr.r.r1, 32w9);            // out of bounds: r1 unchanged
        regs.write(32w9, 1);                  // ignored
    }""")
    assert results(sw, frame(0x1111, 0, 2))[:2] == [0, 0x55]
    assert results(sw, frame(0x2222, 0, 2))[:2] == [0x1111, 0x55]
    assert sw.pipe.registers["I.regs"].values == [0, 0, 0x2222, 0]


def test_counters_count_packets_and_ingress_bytes():
    sw = build("""
    counter(32w8, CounterType.packets_and_bytes) ctr;
    apply { sm.egress_spec = 1; ctr.count((bit<32>)hdr.d.c); ctr.count(32w100); }""")
    sw.send(0, frame(0, 0, 3))
    sw.send(0, frame(0, 0, 3) + bytes(10))
    ctr = sw.pipe.counters["I.ctr"]
    assert (ctr.packets[3], ctr.bytes[3]) == (2, 2 * 38 + 10)


def test_meter_colours_peak_bucket_first_as_bmv2():
    sw = build("""
    meter(32w4, MeterType.packets) m;
    apply { sm.egress_spec = 1; bit<2> colour; m.execute_meter(32w1, colour); hdr.r.r0 = (bit<32>)colour;
            bit<2> untouched = 3; m.execute_meter(32w7, untouched); hdr.r.r1 = (bit<32>)untouched; }""")
    # committed: no refill, 2 tokens; peak: no refill, 3 tokens (control-plane order)
    sw.pipe.meters["I.m"].cells[1].configure([(0.0, 2), (0.0, 3)])
    colours = [results(sw, frame(0, 0, 0))[:2] for _ in range(4)]
    assert colours == [[0, 3], [0, 3], [1, 3], [2, 3]]   # GREEN, GREEN, YELLOW, RED


def test_meter_refills_from_the_clock():
    sw = Switch.build(v1switch(headers=HEADERS, parser=PARSER, ingress="""
    meter(32w1, MeterType.bytes) m;
    apply { sm.egress_spec = 1; bit<2> c; m.execute_meter(32w0, c); hdr.r.r0 = (bit<32>)c; }"""),
        clock=StepClock(10.0))
    size = len(frame(0, 0, 0))      # 38 bytes; 2 clock readings (ingress, egress) per packet
    sw.pipe.meters["I.m"].cells[0].configure([(1.0, 40), (2.0, 80)])
    got = [results(sw, frame(0, 0, 0))[0] for _ in range(3)]
    # t=10: buckets full (40/80) -> green, left 2/42; t=30: +20/+40 -> 22/80: peak ok (42),
    # committed short -> yellow; t=50: peak 42+40=80 (cap) -> 42, committed 22+20=42 -> green
    assert size == 38 and got == [0, 1, 0]


def test_direct_meter_on_a_table_hit():
    sw = build("""
    direct_meter<bit<2>>(MeterType.packets) dm;
    action colour() { dm.read(hdr.d.x[1:0]); }
    table t { key = { hdr.d.c : exact; } actions = { colour; NoAction; } meters = dm; default_action = NoAction(); }
    apply { sm.egress_spec = 1; t.apply(); }""")
    t = sw.pipe.table("I.t")
    sw.add("I.t", [5], "I.colour")
    cell = t.find((5,)).meter = MeterCell()
    cell.configure([(0.0, 1), (0.0, 1)])        # one token each: green, then red
    xs = [bytes.fromhex(sw.one(0, frame(0, 0, 5)))[21] for _ in range(2)]
    assert xs == [0, 2]


def test_random_is_in_range_and_repeatable_with_a_seed():
    ingress = """apply { sm.egress_spec = 1; random(hdr.r.r0, 32w10, 32w20);
        hdr.r.r1 = 77; random(hdr.r.r1, 32w5, 32w4); }"""
    text = v1switch(headers=HEADERS, parser=PARSER, ingress=ingress)
    a = [results(Switch.build(text, seed=3), frame(0, 0, 0)) for _ in range(2)]
    b = Switch.build(text, seed=3)
    seq = [results(b, frame(0, 0, 0))[0] for _ in range(20)]
    assert a[0] == a[1]
    assert all(10 <= v <= 20 for v in seq) and len(set(seq)) > 1
    assert a[0][1] == 77                     # lo > hi: BMv2 leaves the result alone


def test_mark_to_drop_digest_log_msg_truncate_and_assert():
    decls = "struct learn_t { bit<48> src; bit<8> c; }"
    sw = build("""apply {
        sm.egress_spec = 1;
        if (hdr.d.c == 1) { mark_to_drop(sm); }
        if (hdr.d.c == 2) { digest<learn_t>(1, { hdr.eth.src, hdr.d.c }); }
        log_msg("c={} a={}", { hdr.d.c, hdr.d.a });
        if (hdr.d.c == 3) { truncate(20); truncate(30); }
        if (hdr.d.c == 4) { assert(hdr.d.a == 0); }
    }""", decls)
    assert sw.send(0, frame(0, 0, 1)) == []
    res = sw.pipe.process(0, frame(9, 0, 2))
    assert len(res.outputs) == 1 and res.logs == ["c=2 a=9"]
    (name, value), = res.digests
    assert name == "learn_t" and (value.src, value.c) == (2, 2)
    assert sw.one(0, frame(0, 0, 3)) == frame(0, 0, 3)[:20].hex()   # the smaller length wins
    with pytest.raises(ExecutionError):
        sw.send(0, frame(1, 0, 4))


def test_mark_to_drop_in_egress_and_multicast_cleared():
    sw = build("apply { sm.mcast_grp = 5; mark_to_drop(sm); }")
    sw.pipe.set_multicast_group(5, [(1, 0), (2, 0)])
    assert sw.send(0, frame(0, 0, 0)) == []
    sw2 = build("apply { sm.egress_spec = 3; }", egress="apply { if (hdr.d.c == 1) { mark_to_drop(sm); } }")
    assert sw2.send(0, frame(0, 0, 1)) == []
    assert [p for p, _ in sw2.send(0, frame(0, 0, 2))] == [3]


def test_checksum_over_ipv4_options_in_a_varbit_field():
    # the field list packs the varbit at its current width (p4c checksum1-bmv2)
    headers = """
header ipv4_t { bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<16> frag;
                bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst; varbit<320> options; }
struct headers { eth_t eth; ipv4_t ipv4; }
"""
    parser = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth);
                  pkt.extract(hdr.ipv4, (bit<32>)(((bit<16>)pkt.lookahead<bit<8>>()[3:0] - 5) * 32));
                  transition accept; }
}"""
    fields = """{ hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.len, hdr.ipv4.id, hdr.ipv4.frag,
                  hdr.ipv4.ttl, hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4.options }"""
    sw = Switch.build(v1switch(
        headers=headers, parser=parser, ingress="apply { sm.egress_spec = 1; hdr.ipv4.ttl = 1; }",
        compute=f"apply {{ update_checksum(hdr.ipv4.isValid(), {fields}, hdr.ipv4.csum, HashAlgorithm.csum16); }}"))
    ip = bytearray.fromhex("47000024 0001 0000 40 11 0000 0a000001 0a000002" "94040000" "01020304")
    out = bytes.fromhex(sw.one(0, bytes.fromhex(ETH_HDR + "0800") + bytes(ip)))
    ip[8] = 1
    ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
    assert out[14:] == bytes(ip)


def test_egress_starts_clean_of_what_ingress_asked_and_copies_keep_their_own_context():
    # A unicast packet takes its ingress context on into egress: the digest
    # and log ingress made are reported once, and egress sees neither; an
    # egress truncate of one multicast copy leaves the other copies whole.
    decls = "struct learn_t { bit<8> c; }"
    sw = build("""apply {
        digest<learn_t>(1, { hdr.d.c });
        log_msg("in");
        if (hdr.d.c == 7) { sm.mcast_grp = 9; } else { sm.egress_spec = 1; }
    }""", decls, egress="""apply {
        log_msg("out");
        if (sm.egress_port == 2) { truncate(16); }
        hdr.d.x = (bit<8>)sm.egress_port;
    }""")
    res = sw.pipe.process(0, frame(0, 0, 1))
    assert len(res.digests) == 1 and res.logs == ["in", "out"]
    assert [o.port for o in res.outputs] == [1]
    sw.pipe.set_multicast_group(9, [(1, 0), (2, 0), (3, 0)])
    res = sw.pipe.process(0, frame(0, 0, 7))
    assert len(res.digests) == 1 and res.logs == ["in", "out", "out", "out"]
    lengths = {o.port: len(o.data) for o in res.outputs}
    assert lengths == {1: len(frame(0, 0, 7)), 2: 16, 3: len(frame(0, 0, 7))}
    assert [o.data[21] for o in res.outputs if o.port != 2] == [1, 3]
