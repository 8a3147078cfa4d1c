"""How the lexer tells type names from other names, type arguments from
'less than', and '>>' from two closing '>'."""

from __future__ import annotations

import logging

import pytest
from lark import Lark, logger

from emulator.p4 import ast
from emulator.p4.parser import GRAMMAR_PATH, tokenize, _NoLexer
from emulator.p4.preprocessor import preprocess_text


def kinds(src: str) -> list[tuple[str, str]]:
    tokens = tokenize(preprocess_text(src), [])
    return [(t.value, t.type) for t in tokens]


def kind_of(src: str, word: str, occurrence: int = 0) -> str:
    found = [k for v, k in kinds(src) if v == word]
    return found[occurrence]


def test_declared_types_become_type_names_after_their_declaration():
    src = "typedef bit<8> T; header H { T f; } struct S { H h; } enum E { A } T x;"
    toks = kinds(src)
    assert [k for v, k in toks if v == "T"] == ["NAME", "TYPE_NAME", "TYPE_NAME"]
    assert [k for v, k in toks if v == "H"] == ["NAME", "TYPE_NAME"]
    assert [k for v, k in toks if v == "E"] == ["NAME"]


def test_members_after_a_dot_are_never_type_names():
    assert kind_of("header T { bit<8> f; } const bit<8> x = h.T;", "T", 1) == "NAME"


def test_type_parameters_are_types_only_in_their_declaration():
    src = ("extern void f<M>(in M m);\n"
           "control C(inout bit<8> x) { apply { x = M; } }\n"
           "parser P<M>(out M m);\n")
    assert [k for v, k in kinds(src) if v == "M"] == ["TYPE_NAME", "TYPE_NAME", "NAME", "TYPE_NAME", "TYPE_NAME"]


def test_return_type_of_a_generic_function_is_its_type_parameter():
    assert [k for v, k in kinds("extern T id<T>(in T v);") if v == "T"] == ["TYPE_NAME"] * 3


def test_parameters_and_local_variables_hide_type_names():
    src = ("struct meta { bit<8> f; }\n"
           "control C(inout bit<8> meta) { apply { meta = 1; } }\n"
           "control D(inout bit<8> x) { apply { bit<8> meta = 2; x = meta; } }\n"
           "const bit<8> y = 3; meta z;")
    names = [k for v, k in kinds(src) if v == "meta"]
    # The declaring occurrence keeps its kind (the grammar takes either there).
    assert names == ["NAME", "TYPE_NAME", "NAME", "TYPE_NAME", "NAME", "TYPE_NAME"]


@pytest.mark.parametrize("src, expected", [
    ("x = a < b;", "LT"),
    ("x = a < 5;", "LT"),
    ("x = a < (bit<8>) b;", "LT"),
    ("x = a < E.A;", "LT"),
    ("f<bit<8>>(x);", "LT_ARGS"),
    ("f<T>(x);", "LT_ARGS"),
    ("f<_>(x);", "LT_ARGS"),
    ("x = p.lookahead<T>();", "LT_ARGS"),
    ("x = p.lookahead<bit<16>>();", "LT_ARGS"),
])
def test_less_than_or_type_arguments(src, expected):
    full = f"typedef bit<8> T; enum E {{ A }}\ncontrol C() {{ apply {{ {src} }} }}"
    body = kinds(full)
    body = body[[v for v, _ in body].index("apply"):]
    assert [k for v, k in body if v == "<"][0] == expected


def test_shift_right_and_nested_closing_angles():
    toks = kinds("const bit<8> a = b >> 2; register<bit<32>>(1) r; const bool c = a > > b;")
    angles = [k for v, k in toks if v == ">"]
    assert angles == ["GT", "SHR_GT", "GT", "SHR_GT", "GT", "GT", "GT"]


def test_annotations_fold_into_one_token():
    toks = kinds('@name("a.b") @id(1) const bit<8> x = 1;')
    assert toks[:2] == [("@name", "ANNOTATION"), ("@id", "ANNOTATION")]


def test_shadowed_type_name_parses_as_a_variable():
    from emulator.p4.parser import parse_text

    program = parse_text("header h_t { bit<8> f; }\n"
                         "control C(inout h_t h) { apply { bit<8> h_t = 1; h.f = h_t; } }\n")
    control = program.declarations[-1]
    assign = control.body.statements[1]
    assert ast.dump(assign.value) == "PathExpr(name='h_t')"


def test_grammar_has_no_conflict_but_the_dangling_else(caplog):
    caplog.set_level(logging.DEBUG, logger=logger.name)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        Lark(GRAMMAR_PATH.read_text(), parser="lalr", lexer=_NoLexer, debug=True, maybe_placeholders=True)
    finally:
        logger.setLevel(old)
    conflicts = [r.getMessage() for r in caplog.records if "conflict" in r.getMessage().lower()]
    assert len(conflicts) == 1 and "ELSE" in conflicts[0]


def test_every_grammar_rule_builds_a_tree_node():
    from emulator.p4.parser import _Builder, _lark

    missing = set()
    for rule in _lark().rules:
        name = str(rule.alias or rule.origin.name)
        if name.startswith("_") or (rule.options.expand1 and len(rule.expansion) == 1 and not rule.alias):
            continue  # Lark's helpers for '*' and '+', and '?rule: single' pass-throughs
        if not hasattr(_Builder, name):
            missing.add(name)
    assert not missing
