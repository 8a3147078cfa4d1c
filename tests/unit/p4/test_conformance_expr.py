"""Conformance: expressions with P4-16 width semantics (§8), as BMv2 computes
them. Each program reads an input header ``d`` and writes results into
``r.r0``..``r.r7`` (bit<32> each); expected values are worked out from the
spec, not from the executor."""

import pytest

from tests.unit.p4.conformance_kit import ETH_HDR, Switch, compile_errors, v1switch

HEADERS = """
header data_t { bit<32> a; bit<32> b; bit<8> c; bit<8> x; }
header res_t { bit<32> r0; bit<32> r1; bit<32> r2; bit<32> r3;
               bit<32> r4; bit<32> r5; bit<32> r6; bit<32> r7; }
struct headers { eth_t eth; data_t d; res_t r; }
"""
PARSER = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.d); pkt.extract(hdr.r); transition accept; }
}"""


def run(body: str, a: int = 0, b: int = 0, c: int = 0, x: int = 0, decls: str = "",
        locals_: str = "") -> list[int]:
    text = v1switch(decls, headers=HEADERS, parser=PARSER,
                    ingress=f"{locals_}\napply {{ sm.egress_spec = 1;\n{body}\n}}")
    sw = Switch.build(text)
    data = (bytes.fromhex(ETH_HDR + "1234") + a.to_bytes(4, "big") + b.to_bytes(4, "big")
            + bytes([c, x]) + bytes(32))
    out = bytes.fromhex(sw.one(0, data))
    res = out[14 + 10:]
    return [int.from_bytes(res[i:i + 4], "big") for i in range(0, 32, 4)]


def test_unsigned_arithmetic_wraps_at_the_width():
    r = run("""
        bit<8> u = hdr.d.c;
        hdr.r.r0 = (bit<32>)(u + 8w100);
        hdr.r.r1 = (bit<32>)(u - 8w250);
        hdr.r.r2 = (bit<32>)(u * 8w3);
        hdr.r.r3 = hdr.d.a + hdr.d.b;
        hdr.r.r4 = hdr.d.a - hdr.d.b;
        hdr.r.r5 = (bit<32>)(-u);
        hdr.r.r6 = (bit<32>)(~u);
        hdr.r.r7 = hdr.d.a * hdr.d.b;
    """, a=0xFFFFFFF0, b=0x20, c=200)
    assert r == [(200 + 100) % 256, (200 - 250) % 256, 600 % 256, 0x10, 0xFFFFFFD0,
                 256 - 200, 0xFF ^ 200, (0xFFFFFFF0 * 0x20) % 2**32]


def test_saturating_operators_bit_and_int():
    r = run("""
        bit<8> u = hdr.d.c;
        int<8> s = (int<8>)hdr.d.x;
        hdr.r.r0 = (bit<32>)(u |+| 8w100);
        hdr.r.r1 = (bit<32>)(u |-| 8w250);
        hdr.r.r2 = (bit<32>)(bit<8>)(s |+| 8s100);
        hdr.r.r3 = (bit<32>)(bit<8>)(s |-| 8s100);
        hdr.r.r4 = (bit<32>)(8w10 |+| 8w20);
        hdr.r.r5 = (bit<32>)(bit<8>)(-8s100 |-| 8s100);
    """, c=200, x=100)
    assert r[:6] == [255, 0, 127, 0, 30, 0x80]


def test_signed_arithmetic_and_arithmetic_shift():
    r = run("""
        int<8> s = (int<8>)hdr.d.x;      // 0x9c = -100
        hdr.r.r0 = (bit<32>)(bit<8>)(s >> 2);          // -25
        hdr.r.r1 = (bit<32>)(bit<8>)(s << 1);          // -200 wraps to 56
        hdr.r.r2 = (bit<32>)(bit<8>)(s + 8s127);       // 27
        hdr.r.r3 = (bit<32>)(bit<8>)(-s);              // 100
        hdr.r.r4 = (bit<32>)(bit<8>)(~s);              // 99
        int<16> wide = (int<16>)s;                     // sign-extends
        hdr.r.r5 = (bit<32>)(bit<16>)wide;
        hdr.r.r6 = (bit<32>)(bit<8>)(s * 8s3);         // -300 wraps to -44
        hdr.r.r7 = (bit<32>)(bit<8>)(-8s127 - 8s2);    // wraps to 127
    """, x=0x9C)
    assert r == [256 - 25, 56, 27, 100, 99, 0xFF9C, 256 - 44, 127]


def test_comparisons_signed_and_unsigned():
    r = run("""
        int<8> s = (int<8>)hdr.d.x;       // -1
        bit<8> u = hdr.d.x;               // 255
        hdr.r.r0 = (bit<32>)(bit<1>)(s < 8s0);
        hdr.r.r1 = (bit<32>)(bit<1>)(u < 8w1);
        hdr.r.r2 = (bit<32>)(bit<1>)(s >= -8s1);
        hdr.r.r3 = (bit<32>)(bit<1>)(hdr.d.a > hdr.d.b);
        hdr.r.r4 = (bit<32>)(bit<1>)(hdr.d.a != hdr.d.b);
        hdr.r.r5 = (bit<32>)(bit<1>)(hdr.d.a <= 5);
    """, x=0xFF, a=5, b=4)
    assert r[:6] == [1, 0, 1, 1, 1, 1]


@pytest.mark.parametrize("amount,expect", [
    (0, [0xB5, 0xB5, 0xFFFFFFB5]), (1, [0x6A, 0x5A, 0xFFFFFFDA]), (7, [0x80, 0x01, 0xFFFFFFFF]),
    (8, [0, 0, 0xFFFFFFFF]), (9, [0, 0, 0xFFFFFFFF]), (200, [0, 0, 0xFFFFFFFF]),
])
def test_shifts_by_run_time_amounts_including_width_or_more(amount, expect):
    r = run("""
        bit<8> u = hdr.d.c;
        int<8> s = (int<8>)hdr.d.c;
        hdr.r.r0 = (bit<32>)(u << hdr.d.x);
        hdr.r.r1 = (bit<32>)(u >> hdr.d.x);
        hdr.r.r2 = (bit<32>)(int<32>)(s >> hdr.d.x);
    """, c=0xB5, x=amount)
    assert r[:3] == expect


def test_shift_by_constants_at_and_beyond_width():
    r = run("""
        bit<8> u = hdr.d.c;
        hdr.r.r0 = (bit<32>)(u << 8);
        hdr.r.r1 = (bit<32>)(u >> 8);
        hdr.r.r2 = hdr.d.a << 31;
        hdr.r.r3 = hdr.d.a >> 31;
        hdr.r.r4 = (bit<32>)(bit<8>)((int<8>)u >> 7);
    """, c=0x81, a=3)
    assert r[:5] == [0, 0, 0x80000000, 0, 0xFF]


def test_slices_read_and_write():
    r = run("""
        hdr.r.r0 = (bit<32>)hdr.d.a[31:24];
        hdr.r.r1 = (bit<32>)hdr.d.a[7:4];
        hdr.r.r2 = hdr.d.b;
        hdr.r.r2[15:8] = 8w0xAB;
        hdr.r.r3 = 0;
        hdr.r.r3[31:31] = 1;
        hdr.r.r3[3:0] = hdr.d.a[3:0];
        bit<8> v = hdr.d.c;
        v[7:4] = v[3:0];
        hdr.r.r4 = (bit<32>)v;
        hdr.r.r5 = (bit<32>)hdr.d.a[15:0][11:8];
    """, a=0x12345678, b=0xFFFFFFFF, c=0x3C)
    assert r[:6] == [0x12, 0x7, 0xFFFFABFF, 0x80000008, 0xCC, 0x6]


def test_concatenation_widths_and_sign():
    r = run("""
        hdr.r.r0 = hdr.d.c ++ hdr.d.x ++ 16w0xBEEF;
        bit<4> n = hdr.d.c[3:0];
        hdr.r.r1 = (bit<32>)(n ++ hdr.d.x);
        int<4> sn = (int<4>)hdr.d.c[7:4];
        int<8> joined = sn ++ hdr.d.c[3:0];       // signed: the left operand is
        hdr.r.r2 = (bit<32>)(int<32>)joined;
    """, c=0xA5, x=0x0F)
    assert r[:3] == [0xA50FBEEF, 0x50F, 0xFFFFFFA5]


def test_casts_between_widths_signedness_and_bool():
    r = run("""
        bit<16> w = hdr.d.a[15:0];
        hdr.r.r0 = (bit<32>)(bit<8>)w;                 // truncates
        hdr.r.r1 = (bit<32>)(int<32>)(int<16>)w;       // sign-extends 0x8001
        hdr.r.r2 = (bit<32>)(bit<1>)(hdr.d.c == 8w7);
        bool t = (bool)hdr.d.x[0:0];
        hdr.r.r3 = t ? 32w11 : 32w22;
        hdr.r.r4 = (bit<32>)((bit<1>)true ++ (bit<1>)false);
        int<8> neg = -8s3;
        hdr.r.r5 = (bit<32>)(bit<8>)neg;
        hdr.r.r6 = (bit<32>)((bit<8>)(int<8>)-3);
        hdr.r.r7 = (bit<32>)(bit<4>)(int<4>)8;
    """, a=0x00018001, c=7, x=1)
    assert r == [0x01, 0xFFFF8001, 1, 11, 2, 0xFD, 0xFD, 8]


def test_conditional_operator_and_short_circuit_laziness():
    r = run("""
        hdr.r.r0 = (hdr.d.a > hdr.d.b) ? hdr.d.a : hdr.d.b;
        hdr.r.r1 = hdr.d.c == 0 ? 32w1 : (hdr.d.c == 1 ? 32w2 : 32w3);
        bool ok = hdr.d.x != 0 && (hdr.d.a / 4 > 0);
        hdr.r.r2 = ok ? 32w1 : 32w0;
        hdr.r.r3 = (bit<32>)(bit<1>)(true || hdr.d.a == 0);
    """, a=9, b=12, c=1)
    assert r[:4] == [12, 2, 0, 1]


def test_power_of_two_division_and_modulo():
    r = run("""
        hdr.r.r0 = hdr.d.a / 8;
        hdr.r.r1 = hdr.d.a % 16;
        hdr.r.r2 = 32w100 / 7;
        hdr.r.r3 = 32w100 % 7;
    """, a=1001)
    assert r[:4] == [125, 9, 14, 2]


def test_run_time_division_is_rejected_like_p4c_for_bmv2():
    text = v1switch(headers=HEADERS, parser=PARSER,
                    ingress="apply { hdr.r.r0 = hdr.d.a / hdr.d.b; }")
    assert "t.p4:" in compile_errors(text) and "compilation time" in compile_errors(text)


def test_compound_assignments():
    r = run("""
        hdr.r.r0 = hdr.d.a; hdr.r.r0 += 5;
        hdr.r.r1 = hdr.d.a; hdr.r.r1 -= 11;
        hdr.r.r2 = hdr.d.a; hdr.r.r2 <<= 4;
        hdr.r.r3 = hdr.d.a; hdr.r.r3 |= 32w0xF0000000;
        hdr.r.r4 = hdr.d.a; hdr.r.r4 &= 32w0x3;
        hdr.r.r5 = hdr.d.a; hdr.r.r5 ^= hdr.d.a;
        bit<8> s = 250; s |+|= 10; hdr.r.r6 = (bit<32>)s;
        hdr.r.r7 = hdr.d.a; hdr.r.r7 >>= 1;
    """, a=10)
    assert r == [15, 2**32 - 1, 160, 0xF000000A, 2, 0, 255, 5]


def test_integer_literal_forms_and_width_inference():
    r = run("""
        hdr.r.r0 = 0x10 + 0b101 + 0o17 + 1_000;
        hdr.r.r1 = (bit<32>)8w255 + 1;
        hdr.r.r2 = (bit<32>)(8w255 + 1);
        hdr.r.r3 = 32w5 - 6;
        hdr.r.r4 = (bit<32>)(bit<8>)(-4s1 ++ 4w0);
    """)
    assert r[:5] == [16 + 5 + 15 + 1000, 256, 0, 2**32 - 1, 0xF0]


def test_header_and_struct_equality_includes_validity():
    decls = "struct pair_t { bit<8> p; bit<8> q; }"
    r = run("""
        data_t t = hdr.d;
        hdr.r.r0 = (bit<32>)(bit<1>)(t == hdr.d);
        t.c = t.c + 1;
        hdr.r.r1 = (bit<32>)(bit<1>)(t != hdr.d);
        data_t inv;                       // invalid: equal only to invalid headers
        data_t inv2;
        hdr.r.r2 = (bit<32>)(bit<1>)(inv == inv2);
        hdr.r.r3 = (bit<32>)(bit<1>)(inv == hdr.d);
        pair_t p1 = { hdr.d.c, 8w1 };
        pair_t p2 = { p = hdr.d.c, q = 8w1 };
        hdr.r.r4 = (bit<32>)(bit<1>)(p1 == p2);
    """, c=3, decls=decls)
    assert r[:5] == [1, 1, 1, 0, 1]


def test_serializable_and_plain_enums_and_error_values():
    decls = """
        enum bit<8> Kind { A = 1, B = 0x20, C = 0xff }
        enum Color { Red, Green, Blue }
    """
    r = run("""
        Kind k = (Kind)hdr.d.c;
        hdr.r.r0 = (bit<32>)(bit<8>)k;
        hdr.r.r1 = k == Kind.B ? 32w1 : 32w0;
        hdr.r.r2 = (bit<32>)(bit<8>)Kind.C;
        Color col = Color.Green;
        if (hdr.d.x == 2) { col = Color.Blue; }
        hdr.r.r3 = col == Color.Blue ? 32w7 : 32w8;
        hdr.r.r4 = sm.parser_error == error.NoError ? 32w1 : 32w0;
        Kind unknown = (Kind)8w77;        // any value of the underlying type is valid
        hdr.r.r5 = (bit<32>)(bit<8>)unknown;
    """, c=0x20, x=2, decls=decls)
    assert r[:6] == [0x20, 1, 0xFF, 7, 1, 77]


def test_side_effects_are_ordered_left_to_right():
    decls = """
        bit<32> bump(inout bit<32> v) { v = v + 1; return v; }
        bool touch(inout bit<32> v) { v = 100; return true; }
    """
    r = run("""
        hdr.r.r0 = hdr.d.a + bump(hdr.d.a);       // a (5) + 6
        hdr.r.r1 = hdr.d.a;                       // 6
        bool t = false && touch(hdr.d.b);         // not evaluated
        bool u = true || touch(hdr.d.b);
        hdr.r.r2 = hdr.d.b;
        hdr.r.r3 = hdr.d.b == 9 ? bump(hdr.d.b) : bump(hdr.d.a);
        hdr.r.r4 = hdr.d.a;                       // 7: only the chosen branch ran
        hdr.r.r5 = hdr.d.b;
    """, a=5, b=9, decls=decls)
    assert r[:6] == [11, 6, 9, 10, 6, 10]


def test_lvalue_index_is_evaluated_before_the_right_side():
    # p4c gauntlet_index_7 / opassign2: ``a[f()] op= v`` evaluates the lvalue once.
    headers = """
    header v_t { bit<8> v; }
    struct headers { eth_t eth; v_t[4] s; }
    """
    parser = """
    parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
        state start { pkt.extract(hdr.eth); pkt.extract(hdr.s.next); pkt.extract(hdr.s.next);
                      pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); transition accept; }
    }"""
    decls = "bit<8> next_i(inout bit<8> i) { bit<8> old = i; i = i + 1; return old; }"
    ingress = """
    apply {
        sm.egress_spec = 1;
        bit<8> i = 1;
        hdr.s[next_i(i)].v = i;         // s[1] = 2
        hdr.s[next_i(i) & 3].v |= 8w0x40;   // s[2] |= 0x40, index read once
    }"""
    sw = Switch.build(v1switch(decls, headers=headers, parser=parser, ingress=ingress))
    assert sw.one(0, ETH_HDR + "1234" + "00000000")[28:] == "00024000"


@pytest.mark.parametrize("body,needle", [
    ("bit<8> v = hdr.d.a;", "cannot convert bit<32> to bit<8>"),
    ("hdr.r.r0 = hdr.d.a + hdr.d.c;", "different types"),
    ("hdr.r.r0 = (bit<32>)(int<8>)hdr.d.a;", "cannot cast"),
    ("bool b = hdr.d.c;", "cannot convert"),
    ("hdr.r.r0 = hdr.d.a[32:0];", "out of range"),
    ("hdr.r.r0 = undeclared_thing;", "'undeclared_thing' is not declared"),
    ("if (hdr.d.c) { }", "cannot convert bit<8> to bool"),
    ("hdr.r.r0 = 8w1 ++ 1;", "'++'"),
    ("int<8> s = -1; hdr.r.r0 = (bit<32>)(bit<8>)(s / 2);", "signed"),
    ("hdr.r.r0 = hdr.d.a / 0;", "division by zero"),
])
def test_type_errors_are_reported_with_a_location(body, needle):
    text = v1switch(headers=HEADERS, parser=PARSER, ingress=f"apply {{ {body} }}")
    message = compile_errors(text)
    assert needle in message
    assert message.startswith("t.p4:") and ": error: " in message.splitlines()[0]
