"""Conformance: parsers as BMv2 runs them (``src/bm_sim/parser.cpp``).

A parser error does not drop the packet in v1model: ingress runs with
``standard_metadata.parser_error`` set, the headers extracted so far stay
valid, and the deparsed packet is the valid headers followed by everything
after the last complete extract. Error codes: NoError 0, PacketTooShort 1,
NoMatch 2, StackOutOfBounds 3, HeaderTooShort 4, ParserTimeout 5,
ParserInvalidArgument 6, then the program's own errors.
"""

import pytest

from tests.unit.p4.conformance_kit import ETH_HDR, Switch, h, v1switch

# An 'info' header the ingress fills with the parser error and some flags.
INFO = "header info_t { bit<8> err; bit<8> a; bit<8> b; bit<8> c; }\n"
REPORT = """
apply {
    sm.egress_spec = 1;
    hdr.info.setValid();
    hdr.info.err = (bit<8>)(bit<32>)0;
    if (sm.parser_error == error.NoError) { hdr.info.err = 0; }
    else if (sm.parser_error == error.PacketTooShort) { hdr.info.err = 1; }
    else if (sm.parser_error == error.NoMatch) { hdr.info.err = 2; }
    else if (sm.parser_error == error.StackOutOfBounds) { hdr.info.err = 3; }
    else if (sm.parser_error == error.HeaderTooShort) { hdr.info.err = 4; }
    else if (sm.parser_error == error.ParserInvalidArgument) { hdr.info.err = 6; }
    else { hdr.info.err = 0xEE; }
    %s
}"""


def report(extra: str = "") -> str:
    return REPORT % extra


def build(parser: str, headers: str, decls: str = "", extra: str = "", deparser: str = "") -> Switch:
    return Switch.build(v1switch(INFO + decls, headers=headers, parser=parser,
                                 ingress=report(extra),
                                 deparser=deparser or "apply { pkt.emit(hdr.info); pkt.emit(hdr.eth); pkt.emit(hdr.rest); }"))


TWO = """
header b_t { bit<8> v; }
struct headers { info_t info; eth_t eth; b_t rest; }
"""


def select_program(cases: str, key: str = "hdr.eth.type") -> Switch:
    parser = f"""
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.eth); transition select({key}) {{ {cases} }} }}
    state one {{ pkt.extract(hdr.rest); transition accept; }}
}}"""
    return build(parser, TWO)


@pytest.mark.parametrize("ethertype,extracted", [
    ("0800", True), ("0806", True), ("86dd", False), ("8100", True), ("8101", True),
    ("8102", False), ("9000", True), ("9003", True), ("9004", False),
])
def test_select_values_masks_ranges_in_order(ethertype, extracted):
    sw = select_program("0x0800: one; 0x0806 &&& 0xffff: one; 0x8100 &&& 0xfffe: one; "
                        "0x9000 .. 0x9003: one; default: accept;")
    out = sw.one(3, ETH_HDR + ethertype + "aa" + "bbcc")
    assert out == h("00000000", ETH_HDR, ethertype, "aa", "bbcc") or not extracted
    if not extracted:
        assert out == h("00000000", ETH_HDR, ethertype, "aabbcc")


def test_select_without_match_is_no_match_error_and_packet_continues():
    sw = select_program("0x0800: one;")
    # err = 2 (NoMatch); eth valid; nothing else extracted: payload follows eth.
    assert sw.one(0, ETH_HDR + "1234" + "aabb") == h("02000000", ETH_HDR, "1234", "aabb")


def test_select_on_tuples_with_dont_care_and_default():
    parser = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type[15:8], hdr.eth.type[7:0]) {
            (0x08, 0x00): one;
            (0x86, _): two;
            (_, 0x01 &&& 0x0f): one;
            default: accept;
        }
    }
    state one { pkt.extract(hdr.rest); transition accept; }
    state two { pkt.extract(hdr.rest); pkt.extract(hdr.rest2); transition accept; }
}"""
    headers = """
header b_t { bit<8> v; }
struct headers { info_t info; eth_t eth; b_t rest; b_t rest2; }
"""
    sw = build(parser, headers, deparser="apply { pkt.emit(hdr); }")
    assert sw.one(0, ETH_HDR + "0800" + "1122") == h("00000000", ETH_HDR, "0800", "11", "22")
    assert sw.one(0, ETH_HDR + "86dd" + "1122") == h("00000000", ETH_HDR, "86dd", "1122")
    assert sw.one(0, ETH_HDR + "7771" + "1122") == h("00000000", ETH_HDR, "7771", "11", "22")
    assert sw.one(0, ETH_HDR + "7772" + "1122") == h("00000000", ETH_HDR, "7772", "1122")


def test_select_on_bool_and_on_lookahead():
    parser = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(pkt.lookahead<bit<8>>()) { 0xaa: one; default: two; }
    }
    state one { pkt.extract(hdr.rest); transition select(hdr.rest.v == 0xaa) { true: accept; false: reject; } }
    state two { bit<16> both = pkt.lookahead<bit<16>>(); hdr.info.b = both[7:0];
                pkt.advance(8); pkt.extract(hdr.rest); transition accept; }
}"""
    sw = build(parser, TWO)
    assert sw.one(0, ETH_HDR + "0000" + "aa55") == h("00000000", ETH_HDR, "0000", "aa", "55")
    # lookahead does not consume; advance(8) skips the first byte, which is lost
    # from the output (the deparser only emits headers, then the payload).
    assert sw.one(0, ETH_HDR + "0000" + "bb5566") == h("00000000", ETH_HDR, "0000", "55", "66")


def test_value_set_matches_control_plane_members():
    parser = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) tunnel_types;
    state start { pkt.extract(hdr.eth); transition select(hdr.eth.type) { tunnel_types: one; default: accept; } }
    state one { pkt.extract(hdr.rest); transition accept; }
}"""
    sw = build(parser, TWO)
    assert sw.one(0, ETH_HDR + "1234" + "ab") == h("00000000", ETH_HDR, "1234ab")
    vs = sw.pipe.value_sets["P.tunnel_types"]
    vs.members.append(((0x1234, 0xFFFF),))
    vs.members.append(((0x5500, 0xFF00),))
    assert sw.one(0, ETH_HDR + "1234" + "ab") == h("00000000", ETH_HDR, "1234", "ab")
    assert sw.one(0, ETH_HDR + "55ee" + "ab") == h("00000000", ETH_HDR, "55ee", "ab")


def test_packet_too_short_in_the_middle_of_a_header():
    headers = """
header ip_t { bit<32> a; bit<32> b; bit<32> c; bit<32> d; bit<32> e; }
struct headers { info_t info; eth_t eth; ip_t ip; }
"""
    parser = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.ip); transition accept; }
}"""
    sw = build(parser, headers, extra="hdr.info.a = (bit<8>)(bit<1>)hdr.ip.isValid();",
               deparser="apply { pkt.emit(hdr); }")
    # 10 of the 20 ip bytes: ip stays invalid, the 10 bytes are payload.
    assert sw.one(0, ETH_HDR + "0800" + "00" * 9 + "77") == h("01000000", ETH_HDR, "0800", "00" * 9, "77")
    # A frame shorter than ethernet: nothing extracted, all bytes are payload.
    assert sw.one(0, "0102030405") == h("01000000", "0102030405")


def test_verify_sets_the_given_error_and_stops_the_parser():
    decls = "error { BadVersion, Other }\n"
    parser = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); verify(hdr.eth.type != 0xdead, error.BadVersion);
                  pkt.extract(hdr.rest); transition accept; }
}"""
    extra = "if (sm.parser_error == error.BadVersion) { hdr.info.c = 0x77; }"
    sw = build(parser, TWO, decls=decls, extra=extra)
    assert sw.one(0, ETH_HDR + "dead" + "11") == h("ee000077", ETH_HDR, "dead", "11")
    assert sw.one(0, ETH_HDR + "beef" + "11") == h("00000000", ETH_HDR, "beef", "11")


def test_explicit_reject_is_accept_on_bmv2():
    # p4c for BMv2 warns that an explicit transition to reject is not
    # supported and turns it into the end of parsing without an error.
    sw = select_program("0x0800: reject; default: one;")
    assert sw.one(0, ETH_HDR + "0800" + "11") == h("00000000", ETH_HDR, "0800", "11")


STACK = """
header b_t { bit<8> v; }
struct headers { info_t info; eth_t eth; b_t[3] s; b_t rest; }
"""
STACK_PARSER = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition more; }
    state more {
        pkt.extract(hdr.s.next);
        transition select(hdr.s.last.v) { 0: done; default: more; }
    }
    state done { hdr.info.setValid(); hdr.info.a = (bit<8>)hdr.s.lastIndex; transition accept; }
}"""


def test_stack_next_last_last_index_and_overflow():
    extra = "hdr.info.b = (bit<8>)(bit<1>)hdr.s[2].isValid();"
    sw = build(STACK_PARSER, STACK, extra=extra, deparser="apply { pkt.emit(hdr); }")
    # stops at the element whose v is 0: lastIndex 1
    assert sw.one(0, ETH_HDR + "0000" + "0500ff") == h("00", "01", "00", "00", ETH_HDR, "0000", "0500", "ff")
    # three non-zero elements then a fourth: StackOutOfBounds, the fourth byte is payload
    assert sw.one(0, ETH_HDR + "0000" + "01020304") == h("03000100", ETH_HDR, "0000", "010203", "04")


def test_push_front_and_pop_front_in_a_control():
    extra = """
        hdr.s.push_front(1);
        hdr.s[0].setValid();
        hdr.s[0].v = 0x99;
        hdr.info.a = (bit<8>)(bit<1>)hdr.s[2].isValid();
        if (hdr.eth.type == 1) { hdr.s.pop_front(2); }
    """
    sw = build(STACK_PARSER, STACK, extra=extra, deparser="apply { pkt.emit(hdr); }")
    assert sw.one(0, ETH_HDR + "0000" + "0700") == h("00010000", ETH_HDR, "0000", "990700")
    assert sw.one(0, ETH_HDR + "0001" + "0700") == h("00010000", ETH_HDR, "0001", "00")


def test_varbit_extract_with_a_run_time_length():
    headers = """
header opt_t { bit<8> len; varbit<32> data; }
header b_t { bit<8> v; }
struct headers { info_t info; eth_t eth; opt_t opt; b_t rest; }
"""
    parser = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.opt, (bit<32>)pkt.lookahead<bit<8>>() * 8);
        pkt.extract(hdr.rest);
        transition accept;
    }
}"""
    sw = build(parser, headers, deparser="apply { pkt.emit(hdr); }")
    # len counts the bytes of data after the len byte... here it is read as the
    # varbit length, including itself: 8 * 3 bits => the header is 1 + 3 bytes.
    assert sw.one(0, ETH_HDR + "0000" + "03aabbcc" + "dd") == h("00000000", ETH_HDR, "0000", "03aabbcc", "dd")
    # 5 bytes of varbit > varbit<32>: HeaderTooShort (4), opt invalid
    assert sw.one(0, ETH_HDR + "0000" + "05aabbccddeeff") == h("04000000", ETH_HDR, "0000", "05aabbccddeeff")
    # not a whole number of bytes: ParserInvalidArgument (6)
    parser2 = parser.replace("* 8", "* 8 + 1")
    sw2 = build(parser2, headers, deparser="apply { pkt.emit(hdr); }")
    assert sw2.one(0, ETH_HDR + "0000" + "01aa") == h("06000000", ETH_HDR, "0000", "01aa")


def test_advance_not_a_multiple_of_8_and_past_the_end():
    parser = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.advance((bit<32>)hdr.eth.type); pkt.extract(hdr.rest); transition accept; }
}"""
    sw = build(parser, TWO)
    assert sw.one(0, ETH_HDR + "0010" + "aabbcc") == h("00000000", ETH_HDR, "0010", "cc")
    assert sw.one(0, ETH_HDR + "0004" + "aabbcc") == h("06000000", ETH_HDR, "0004", "aabbcc")
    assert sw.one(0, ETH_HDR + "0040" + "aabbcc") == h("01000000", ETH_HDR, "0040", "aabbcc")


def test_sub_parser_with_its_own_states():
    parser = """
parser Inner(packet_in pkt, inout headers hdr) {
    state start { pkt.extract(hdr.rest); transition select(hdr.rest.v) { 1: two; default: accept; } }
    state two { pkt.extract(hdr.rest2); transition accept; }
}
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Inner() inner;
    state start { pkt.extract(hdr.eth); inner.apply(pkt, hdr); transition accept; }
}"""
    headers = """
header b_t { bit<8> v; }
struct headers { info_t info; eth_t eth; b_t rest; b_t rest2; }
"""
    sw = build(parser, headers, deparser="apply { pkt.emit(hdr); }")
    assert sw.one(0, ETH_HDR + "0000" + "0102") == h("00000000", ETH_HDR, "0000", "01", "02")
    assert sw.one(0, ETH_HDR + "0000" + "0202") == h("00000000", ETH_HDR, "0000", "02", "02")


def test_header_union_extract_and_emit_only_the_valid_member():
    headers = """
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union u_t { a_t a; b_t b; }
struct headers { info_t info; eth_t eth; u_t u; }
"""
    parser = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition select(hdr.eth.type) { 1: pa; default: pb; } }
    state pa { pkt.extract(hdr.u.a); transition accept; }
    state pb { pkt.extract(hdr.u.b); transition accept; }
}"""
    extra = "if (hdr.eth.type == 2) { hdr.u.a.setValid(); hdr.u.a.x = 0x5a; }"
    sw = build(parser, headers, extra=extra, deparser="apply { pkt.emit(hdr); }")
    assert sw.one(0, ETH_HDR + "0001" + "aabbcc") == h("00000000", ETH_HDR, "0001", "aa", "bbcc")
    assert sw.one(0, ETH_HDR + "0003" + "aabbcc") == h("00000000", ETH_HDR, "0003", "aabb", "cc")
    # setting a valid makes b invalid
    assert sw.one(0, ETH_HDR + "0002" + "aabbcc") == h("00000000", ETH_HDR, "0002", "5a", "cc")


def test_extract_into_dont_care_and_lookahead_of_a_header():
    parser = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        eth_t peek = pkt.lookahead<eth_t>();
        hdr.info.c = (bit<8>)peek.type;
        pkt.extract<eth_t>(_);
        pkt.extract(hdr.rest);
        transition accept;
    }
}"""
    sw = build(parser, TWO, extra="hdr.info.a = hdr.info.c;")
    # info is made valid in ingress (setValid zeroes it): a reads 0
    assert sw.one(0, ETH_HDR + "0042" + "99") == h("00000000", "99")


def test_a_parser_state_variable_is_visible_in_its_select():
    parser = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        bit<8> low = hdr.eth.type[7:0];
        transition select(low) { 7: one; default: accept; }
    }
    state one { pkt.extract(hdr.rest); transition accept; }
}"""
    sw = build(parser, TWO)
    assert sw.one(0, ETH_HDR + "0007" + "11") == h("00000000", ETH_HDR, "0007", "11")
