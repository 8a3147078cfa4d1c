"""Conformance: statements (P4-16 §12) — if/else, switch on ``action_run``
(fall-through, default) and on values, ``exit`` in actions and controls
(out/inout parameters are still copied back, p4c issue2225), ``return``,
functions with out parameters, and direct sub-control application."""

from tests.unit.p4.conformance_kit import ETH_HDR, Switch, compile_errors, h, v1switch

HEADERS = """
header r_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers { eth_t eth; r_t r; }
"""
PARSER = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.r); transition accept; }
}"""


def build(ingress: str, decls: str = "", egress: str = "apply { }") -> Switch:
    return Switch.build(v1switch(decls, headers=HEADERS, parser=PARSER, ingress=ingress, egress=egress))


def pkt(a: int, b: int = 0, c: int = 0, d: int = 0, ethertype: str = "0000") -> str:
    return ETH_HDR + ethertype + bytes([a, b, c, d]).hex()


SWITCH_TABLE = """
    action a1() { hdr.r.b = 1; }
    action a2() { hdr.r.b = 2; }
    action a3() { hdr.r.b = 3; }
    action nop() { }
    table t {
        key = { hdr.r.a : exact; }
        actions = { a1; a2; a3; nop; }
        default_action = nop();
        const entries = { 1 : a1(); 2 : a2(); 3 : a3(); }
    }
    apply {
        sm.egress_spec = 1;
        switch (t.apply().action_run) {
            a1:
            a2: { hdr.r.c = 0x12; }
            a3: { hdr.r.c = 0x30; }
            default: { hdr.r.c = 0xdd; }
        }
    }
"""


def test_switch_on_action_run_with_fall_through_and_default():
    sw = build(SWITCH_TABLE)
    assert sw.one(0, pkt(1)) == h(ETH_HDR, "0000", "01011200")
    assert sw.one(0, pkt(2)) == h(ETH_HDR, "0000", "02021200")
    assert sw.one(0, pkt(3)) == h(ETH_HDR, "0000", "03033000")
    assert sw.one(0, pkt(9)) == h(ETH_HDR, "0000", "0900dd00")   # miss runs nop: default label


def test_switch_on_values_and_on_an_enum():
    decls = "enum Mode { Fast, Slow, Off }"
    ingress = """
    apply {
        sm.egress_spec = 1;
        switch (hdr.r.a) {
            0: { hdr.r.b = 10; }
            1:
            2: { hdr.r.b = 20; }
            default: { hdr.r.b = 99; }
        }
        Mode m = hdr.r.c == 0 ? Mode.Fast : Mode.Off;
        switch (m) {
            Mode.Fast: { hdr.r.d = 1; }
            Mode.Slow: { hdr.r.d = 2; }
        }
    }"""
    sw = build(ingress, decls)
    assert sw.one(0, pkt(0)) == h(ETH_HDR, "0000", "000a0001")
    assert sw.one(0, pkt(2)) == h(ETH_HDR, "0000", "02140001")
    assert sw.one(0, pkt(7, c=1)) == h(ETH_HDR, "0000", "07630100")


def test_exit_in_an_action_copies_out_and_stops_the_control():
    ingress = """
    action set_and_exit(inout bit<8> v) { v = 0x33; exit; }
    apply {
        sm.egress_spec = 1;
        hdr.r.b = 1;
        if (hdr.r.a == 1) { set_and_exit(hdr.r.c); }
        hdr.r.d = 0x44;
    }"""
    egress = "apply { hdr.r.a = hdr.r.a + 0x10; }"   # egress still runs after an ingress exit
    sw = build(ingress, egress=egress)
    assert sw.one(0, pkt(1)) == h(ETH_HDR, "0000", "11013300")
    assert sw.one(0, pkt(2)) == h(ETH_HDR, "0000", "12010044")


def test_exit_in_a_table_action_and_in_the_apply_block():
    ingress = """
    action stop() { hdr.r.b = 7; exit; }
    table t { key = { hdr.r.a : exact; } actions = { stop; NoAction; } default_action = NoAction();
              const entries = { 5 : stop(); } }
    apply {
        sm.egress_spec = 2;
        t.apply();
        if (hdr.r.a == 6) { exit; }
        hdr.r.c = 0xcc;
    }"""
    sw = build(ingress)
    assert sw.send(0, pkt(5)) == [(2, h(ETH_HDR, "0000", "05070000"))]
    assert sw.send(0, pkt(6)) == [(2, h(ETH_HDR, "0000", "06000000"))]
    assert sw.send(0, pkt(7)) == [(2, h(ETH_HDR, "0000", "0700cc00"))]


def test_return_in_control_and_functions_with_out_parameters():
    decls = """
    bit<8> pick(in bit<8> x, out bit<8> twice) {
        twice = x + x;
        if (x > 10) { return 1; }
        return 2;
    }
    void clear(out bit<8> y) { }                       // out: y becomes 0 on return
    """
    ingress = """
    apply {
        sm.egress_spec = 1;
        bit<8> t;
        hdr.r.b = pick(hdr.r.a, t);
        hdr.r.c = t;
        clear(hdr.r.d);
        if (hdr.r.a == 3) { return; }
        hdr.r.a = 0xff;
    }"""
    sw = build(ingress, decls)
    assert sw.one(0, pkt(3, d=9)) == h(ETH_HDR, "0000", "03020600")
    assert sw.one(0, pkt(20, d=9)) == h(ETH_HDR, "0000", "ff012800")


def test_actions_called_directly_with_in_out_and_data_arguments():
    ingress = """
    action add_to(inout bit<8> acc, bit<8> amount) { acc = acc + amount; }
    action swap2(inout bit<8> x, inout bit<8> y) { bit<8> t = x; x = y; y = t; }
    apply {
        sm.egress_spec = 1;
        add_to(hdr.r.a, 5);
        swap2(hdr.r.b, hdr.r.c);
        swap2(hdr.r.d, hdr.r.d);                     // copy-in/copy-out: unchanged
    }"""
    sw = build(ingress)
    assert sw.one(0, pkt(1, 2, 3, 4)) == h(ETH_HDR, "0000", "06030204")


def test_sub_controls_by_instance_and_direct_type_application():
    decls = """
    control Bump(inout bit<8> v)(bit<8> step) { apply { v = v + step; } }
    control Mark(inout r_t r) { apply { r.d = 0xee; } }
    """
    ingress = """
    Bump(3) by3;
    Bump(16) by16;
    apply {
        sm.egress_spec = 1;
        by3.apply(hdr.r.a);
        by16.apply(hdr.r.b);
        by3.apply(hdr.r.b);
        Mark.apply(hdr.r);
    }"""
    sw = Switch.build(v1switch(headers=HEADERS + decls, parser=PARSER, ingress=ingress))
    assert sw.one(0, pkt(1, 1)) == h(ETH_HDR, "0000", "041400ee")


def test_block_scoping_shadowing_and_uninitialised_locals_are_zero():
    ingress = """
    bit<8> ctl = 7;
    apply {
        sm.egress_spec = 1;
        bit<8> x;                       // BMv2 starts locals at 0
        hdr.r.a = x;
        { bit<8> ctl2 = ctl + 1; hdr.r.b = ctl2; }
        if (hdr.r.c == 0) { bit<8> y = 5; hdr.r.c = y; } else { bit<8> y = 6; hdr.r.c = y; }
        r_t tmp;                        // a local header starts invalid
        hdr.r.d = tmp.isValid() ? 8w1 : 8w2;
    }"""
    sw = build(ingress)
    assert sw.one(0, pkt(9, 9, 0, 9)) == h(ETH_HDR, "0000", "00080502")


def test_set_valid_zeroes_a_header_and_set_invalid_drops_it_from_the_output():
    ingress = """
    apply {
        sm.egress_spec = 1;
        if (hdr.r.a == 1) { hdr.r.setInvalid(); hdr.r.setValid(); }   // fields reset to 0
        if (hdr.r.a == 2) { hdr.r.setInvalid(); }
        if (hdr.r.a == 3) { hdr.r.setValid(); }                      // already valid: unchanged
    }"""
    sw = build(ingress)
    assert sw.one(0, pkt(1, 2, 3, 4)) == h(ETH_HDR, "0000", "00000000")
    assert sw.one(0, pkt(2, 2, 3, 4)) == h(ETH_HDR, "0000")
    assert sw.one(0, pkt(3, 2, 3, 4)) == h(ETH_HDR, "0000", "03020304")


def test_invalid_statements_are_rejected():
    base = dict(headers=HEADERS, parser=PARSER)
    msg = compile_errors(v1switch("bit<8> f(in bit<8> x) { if (x == 0) { return 1; } }",
                                  ingress="apply { hdr.r.a = f(hdr.r.a); }", **base))
    assert "does not return a value on all paths" in msg
    msg = compile_errors(v1switch("", ingress="action a(in bit<8> x) { x = 1; } apply { a(hdr.r.a); }", **base))
    assert "assignable" in msg
    msg = compile_errors(v1switch("", ingress="action a(bit<8> x) { x = 1; } apply { a(1); }", **base))
    assert "assignable" in msg
    msg = compile_errors(v1switch("", ingress="action a(inout bit<8> x) { } apply { a(8w1); }", **base))
    assert "assignable" in msg
    msg = compile_errors(v1switch("", ingress="action a(bit<8> x) { } apply { a(1, 2); }", **base))
    assert "arguments" in msg
    msg = compile_errors(v1switch("", ingress="apply { switch (hdr.r.a) { 1: { } 1: { } } }", **base))
    assert "duplicate" in msg
    msg = compile_errors(v1switch("", deparser="apply { hdr.r.a = 1; pkt.emit(hdr); }", **base))
    assert "assignable" in msg
