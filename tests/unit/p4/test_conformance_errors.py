"""Conformance: programs p4c (with the BMv2 back end) rejects are rejected
with ``file:line:col: error:`` diagnostics; valid P4 beyond the built-in
target is refused as "not supported by the built-in target"."""

import pytest

from emulator.p4.errors import CompileError, UnsupportedError
from emulator.p4.frontend import compile_text
from tests.unit.p4.conformance_kit import compile_errors, v1switch

HEADERS = """
header r_t { bit<8> a; bit<16> b; bit<32> c; }
struct headers { eth_t eth; r_t r; }
"""
PARSER = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.r); transition accept; }
}"""


def program(**kw: str) -> str:
    kw.setdefault("headers", HEADERS)
    kw.setdefault("parser", PARSER)
    return v1switch(**kw)


def first_error(text: str) -> str:
    message = compile_errors(text)
    line = message.splitlines()[0]
    assert line.startswith("t.p4:") and ": error: " in line, message
    return message


@pytest.mark.parametrize("ingress,needle", [
    ("apply { hdr.r.a = hdr.r.b; }", "cannot convert bit<16> to bit<8>"),
    ("apply { hdr.r.b = hdr.r.a + hdr.r.b; }", "different types"),
    ("apply { hdr.r.c = nothing_here; }", "'nothing_here' is not declared"),
    ("apply { hdr.r.zz = 1; }", "has no field 'zz'"),
    ("action a(bit<8> x) { } apply { a(); }", "arguments"),
    ("action a(in bit<8> x) { x = 2; } apply { a(1); }", "assignable"),
    ("apply { mark_to_drop(); mark_to_drop(sm, sm); }", "arguments"),
    ("apply { hdr.r.setValid(1); }", "takes no arguments"),
    ("apply { bit<8> x = 1; bit<8> x = 2; }", "already declared"),
    ("table t { key = { hdr.r.a : exact; } actions = { } } apply { hdr.r.c = t.apply().action_run; }",
     "only allowed as the subject of a switch"),
    ("action a() { } table t { actions = { a; } } action b() { t.apply(); } apply { b(); }",
     "apply cannot be called from an action"),
    ("action a() { switch (hdr.r.a) { 1: { } } } apply { a(); }", "not allowed in actions"),
    ("apply { switch (hdr.r.a) { default: { } 1: { } } }", "follows the 'default' label"),
    ("apply { verify(true, error.NoError); }", "only be called in a parser"),
    ("apply { recirculate_preserving_field_list(0); }", "only be called in egress"),
    ("apply { clone(CloneType.E2E, 1); }", "only be called in egress"),
    ("apply { bit<8> v = 1; resubmit_preserving_field_list(v); }", "must be a constant"),
    ("apply { hdr.r.c = 1985245330 << 903012108; }", "2048"),
    ("action a(headers h) { } apply { }", "cannot be action data"),
])
def test_control_errors(ingress, needle):
    assert needle in first_error(program(ingress=ingress))


def test_egress_only_and_parser_only_rules():
    assert "only be called in ingress" in first_error(program(egress="apply { resubmit_preserving_field_list(0); }"))
    assert "only be called in ingress" in first_error(program(egress="apply { clone(CloneType.I2E, 1); }"))
    bad_parser = PARSER.replace("pkt.extract(hdr.r);", "pkt.extract(hdr.r.a);")
    assert "extract needs a header" in first_error(program(parser=bad_parser))
    bad_parser = PARSER.replace("pkt.extract(hdr.r);", "pkt.extract(hdr.r, 32);")
    assert "varbit" in first_error(program(parser=bad_parser))
    bad_parser = PARSER.replace("transition accept;", "transition nowhere;")
    assert "unknown parser state 'nowhere'" in first_error(program(parser=bad_parser))


@pytest.mark.parametrize("decls,needle", [
    ("header odd_t { bit<7> x; }", "whole number of bytes"),
    ("header two_t { varbit<8> a; varbit<8> b; }", "at most one varbit"),
    ("struct s_t { bit<8> a; bit<8> a; }", "duplicate field"),
    ("enum bit<8> E { A = 1, B }", "expected '='"),
    ("bit<8> f(in bit<8> x) { if (x == 1) { return 1; } }", None),
    ("const bit<8> C = 256;", None),
])
def test_declaration_errors(decls, needle):
    text = program(headers=HEADERS + decls, ingress="apply { hdr.r.a = f(1); }" if "f(" in decls else "apply { }")
    if needle is None:
        try:
            compile_text(text, "t.p4")
        except CompileError as exc:
            assert "t.p4:" in str(exc)
        return
    assert needle in first_error(text)


def test_missing_return_in_a_called_function():
    text = program(headers=HEADERS + "bit<8> f(in bit<8> x) { if (x == 1) { return 1; } }",
                   ingress="apply { hdr.r.a = f(hdr.r.a); }")
    assert "does not return a value on all paths" in first_error(text)


def test_syntax_errors_point_at_the_token_and_report_several():
    text = program(ingress="apply { hdr.r.a = ; hdr.r.b = 1 }")
    message = compile_errors(text)
    lines = [line for line in message.splitlines() if ": error: " in line]
    assert len(lines) >= 2 and all(line.startswith("t.p4:") for line in lines)
    assert "^" in message                               # the caret under the column


@pytest.mark.parametrize("ingress,what", [
    ("apply { for (bit<8> i = 0; i < 4; i = i + 1) { } }", "'for' loops"),
    ("table t { key = { hdr.r.a : exact; } actions = { NoAction; } entries = { 1 : NoAction(); } }"
     " apply { t.apply(); }", "non-const table entries"),
])
def test_valid_but_unsupported_is_refused_as_such(ingress, what):
    with pytest.raises(UnsupportedError) as info:
        compile_text(program(ingress=ingress), "t.p4")
    assert what in str(info.value) and "not supported by the built-in target" in str(info.value)


def test_duplicate_control_plane_names_are_rejected():
    ingress = """
    @name(".same") action a() { }
    @name(".same") action b() { }
    table t { key = { hdr.r.a : exact; } actions = { a; b; } }
    apply { t.apply(); }"""
    assert "conflicting control-plane name" in first_error(program(ingress=ingress))


def test_default_action_must_repeat_the_bound_arguments():
    ingress = """
    action set(inout bit<8> v, bit<8> x) { v = x; }
    table t { key = { hdr.r.a : exact; } actions = { set(hdr.r.a); } default_action = set(hdr.r.a, 1); }
    table u { key = { hdr.r.a : exact; } actions = { set(hdr.r.a); } default_action = set(meta_x, 1); }
    bit<8> meta_x = 0;
    apply { t.apply(); }"""
    assert "'meta_x' is not declared" in first_error(program(ingress=ingress))
    ingress = """
    bit<8> other = 0;
    action set(inout bit<8> v, bit<8> x) { v = x; }
    table u { key = { hdr.r.a : exact; } actions = { set(hdr.r.a); } default_action = set(other, 1); }
    apply { u.apply(); }"""
    assert "does not match the one in the actions list" in first_error(program(ingress=ingress))


@pytest.mark.parametrize("entries,needle", [
    ("0x0a000000 &&& 0xff00ff00 : set(1);", "invalid mask"),
])
def test_invalid_const_entry_keysets(entries, needle):
    ingress = f"""
    action set(bit<8> v) {{ hdr.r.a = v; }}
    table t {{ key = {{ hdr.r.c : lpm; }} actions = {{ set; }} const entries = {{ {entries} }} }}
    apply {{ t.apply(); }}"""
    assert needle in first_error(program(ingress=ingress))
    ingress = """
    action set(bit<8> v) { hdr.r.a = v; }
    table t { key = { hdr.r.c : optional; } actions = { set; } const entries = { 5 &&& 7 : set(1); } }
    apply { t.apply(); }"""
    assert "optional" in first_error(program(ingress=ingress))
    ingress = """
    action set(bit<8> v) { hdr.r.a = v; }
    table t { key = { hdr.r.c : exact; } actions = { set; @defaultonly NoAction; }
              const entries = { 5 : NoAction(); } }
    apply { t.apply(); }"""
    assert "@defaultonly" in first_error(program(ingress=ingress))


def test_recursion_is_rejected():
    decls = "bit<8> f(in bit<8> x) { return f(x); }"
    assert "calls itself" in first_error(program(headers=HEADERS + decls, ingress="apply { hdr.r.a = f(1); }"))
    decls = "control C() { C() again; apply { again.apply(); } }"
    assert "instantiates itself" in first_error(program(headers=HEADERS + decls))


def test_errors_in_declarations_the_package_does_not_use():
    # p4c type-checks every declaration, used or not
    decls = "control Unused(inout r_t r) { apply { r.a = r.b; } }"
    assert "cannot convert bit<16> to bit<8>" in first_error(program(headers=HEADERS + decls))
    decls = "action unused_action() { undeclared_call(); }"
    assert "'undeclared_call' is not declared" in first_error(program(headers=HEADERS + decls))
