"""The parser as one generated function: states inlined along acyclic
transitions, a function per state (and a loop) where states can repeat;
fixed-width headers extracted inline."""

from __future__ import annotations

from emulator.p4.exec import blocks
from tests.unit.p4.conformance_kit import ETH_HDR, Switch, h, v1switch

# eth → (vlan →) ipv4 | arp; ipv4 is reached along two paths (a diamond).
DIAMOND = dict(
    decls="""
header vlan_t { bit<16> tci; bit<16> type; }
header ipv4_t { bit<8> vihl; bit<8> tos; bit<16> len; }
header arp_t { bit<16> op; }
""",
    headers="struct headers { eth_t eth; vlan_t vlan; ipv4_t ipv4; arp_t arp; }",
    parser="""
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x8100: vlan; 0x0800: ipv4; 0x0806: arp; default: accept; } }
    state vlan { pkt.extract(hdr.vlan);
        transition select(hdr.vlan.type) { 0x0800: ipv4; default: reject; } }
    state ipv4 { pkt.extract(hdr.ipv4); transition accept; }
    state arp { pkt.extract(hdr.arp); transition accept; }
}""",
    ingress="""apply {
        sm.egress_spec = 1;
        if (hdr.ipv4.isValid()) { hdr.ipv4.tos = 0xAA; }
        if (hdr.vlan.isValid()) { hdr.vlan.tci = 0xBBBB; }
        if (sm.parser_error != error.NoError) { sm.egress_spec = 2; }
    }""",
    deparser="apply { pkt.emit(hdr.eth); pkt.emit(hdr.vlan); pkt.emit(hdr.ipv4); pkt.emit(hdr.arp); }")

# A header stack filled by a state that transitions to itself.
LOOP = dict(
    decls="header tag_t { bit<7> v; bit<1> last; }\n",
    headers="struct headers { eth_t eth; tag_t[3] tags; }",
    parser="""
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition tag; }
    state tag { pkt.extract(hdr.tags.next);
        transition select(hdr.tags.last.last) { 1: accept; default: tag; } }
}""",
    ingress="apply { sm.egress_spec = 1; hdr.tags[0].v = 0x11; }")


def test_an_acyclic_parser_is_one_function_and_parses_every_path():
    sw = Switch.build(v1switch(**DIAMOND))
    source = sw.pipe.compiled.source
    assert "def st" not in source and "while st is not None" not in source
    assert "._ext(" not in source.split("def blk", 1)[1]  # fixed-width extracts inline too
    # plain IPv4, IPv4 behind a VLAN tag (the second path to the same state), ARP
    assert sw.one(0, h(ETH_HDR, "0800", "45 00 0014", "ff")) == h(ETH_HDR, "0800", "45 aa 0014", "ff")
    assert sw.one(0, h(ETH_HDR, "8100", "0001 0800", "45 00 0014")) == \
        h(ETH_HDR, "8100", "bbbb 0800", "45 aa 0014")
    assert sw.one(0, h(ETH_HDR, "0806", "0002", "ee")) == h(ETH_HDR, "0806", "0002", "ee")
    # an explicit reject in the VLAN state (BMv2: no error set, what was
    # extracted stays valid), and a packet too short for ipv4 behind it
    assert sw.send(0, h(ETH_HDR, "8100", "0001 86dd", "00")) == \
        [(1, h(ETH_HDR, "8100", "bbbb 86dd", "00"))]
    assert sw.send(0, h(ETH_HDR, "8100", "0001 0800", "45"))[0][0] == 2


def test_a_parser_with_a_loop_keeps_a_function_per_state():
    sw = Switch.build(v1switch(**LOOP))
    source = sw.pipe.compiled.source
    assert "while st is not None" in source and "def st" in source
    assert "stack_next(" in source  # a stack's next element through its method
    assert sw.one(0, h(ETH_HDR, "0000", "02 04 05")) == h(ETH_HDR, "0000", "22 04 05")  # v = 0x11, last 0
    assert sw.one(0, h(ETH_HDR, "0000", "03", "ffff")) == h(ETH_HDR, "0000", "23", "ffff")


def test_inlining_gives_up_on_loops_and_past_its_limits():
    bodies = {"a": ["x = 1", "if x:", "    return b", "return c"], "b": ["return c"],
              "c": ["y = 2", "return None"]}
    assert blocks._inline_states("a", bodies) == [
        "x = 1", "if x:", "    y = 2", "    return None", "y = 2", "return None"]
    assert blocks._inline_states("a", {**bodies, "c": ["return a"]}) is None  # a → c → a
    deep = {f"s{i}": ["if k:", f"    return s{i + 1}", "return None"] for i in range(100)}
    deep["s100"] = ["return None"]
    assert blocks._inline_states("s0", deep) is None  # deeper than CPython's indentation allows
    wide = {f"s{i}": ["if k:", f"    return s{i + 1}", f"return s{i + 1}"] for i in range(20)}
    wide["s20"] = ["return None"]
    assert blocks._inline_states("s0", wide) is None  # 2**20 copies of the last state
