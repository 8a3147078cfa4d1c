"""Syntax errors: compiler-style diagnostics at the original file, line and
column, in words, several per run, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.p4.errors import CompileError, UnsupportedError
from emulator.p4.parser import parse_program, parse_text


def errors(src: str, filename: str = "bad.p4") -> list[str]:
    with pytest.raises(CompileError) as exc:
        parse_text(src, filename)
    return [f"{d.location.line}:{d.location.col}: {d.message}" for d in exc.value.diagnostics]


def test_missing_semicolon_points_after_the_previous_token():
    src = "header h_t {\n    bit<8> a\n    bit<8> b;\n}\n"
    with pytest.raises(CompileError) as exc:
        parse_text(src, "h.p4")
    assert str(exc.value).splitlines() == [
        "h.p4:2:13: error: expected ';'",
        "    bit<8> a",
        "            ^",
    ]


def test_unexpected_token_lists_what_was_expected_in_words():
    assert errors("const bit<8> x = 1 + ;\n") == ["1:22: unexpected ';'; expected an expression"]
    assert errors("control C() { apply { if (true { } } }\n") == [
        "1:32: unexpected '{'; expected an operator or ')'"]
    assert errors("header h_t { bit<8> 5; }\n") == ["1:21: unexpected integer '5'; expected a name or '['"]
    assert errors("control C() { apply { x = 1 } }\n") == ["1:29: unexpected '}'; expected an operator or ';'"]


def test_unexpected_declaration_start():
    (message,) = errors("}\n")
    assert message.startswith("1:1: unexpected '}'; expected a declaration")


def test_several_errors_in_one_run():
    src = """header h_t {
    bit<8> a
    bit<8> b;
}
control C(inout h_t h) {
    action x() { h.a = 1 }
    apply {
        h.a = h.b + ;
        if (h.a == 1 {
            h.b = 2;
        }
        h.b = 3 3;
    }
}
const bit<8> K = 5
"""
    assert errors(src) == [
        "2:13: expected ';'",
        "6:26: unexpected '}'; expected an operator or ';'",
        "8:21: unexpected ';'; expected an expression",
        "9:22: unexpected '{'; expected an operator or ')'",
        "12:17: unexpected integer '3'; expected an operator or ';'",
        "15:19: expected ';'",
    ]


def test_unexpected_end_of_file():
    assert errors("control C() { apply {\n") == ["1:22: unexpected end of file; expected a statement or '}'"]


def test_lexical_errors_are_reported_and_parsing_goes_on():
    assert errors('const bit<8> x = 1 $ 2;\nconst bit<8> y = "open\n') == [
        "1:20: unexpected character '$'",
        "2:18: unterminated string literal",
        "1:22: unexpected integer '2'; expected an operator or ';'",
        "2:17: unexpected end of file; expected an expression",
    ]


def test_bad_annotation():
    assert errors("@ 5 const bit<8> x = 1;\n")[0] == "1:1: expected an annotation name after '@'"
    assert errors("@name(\"x\" const bit<8> x = 1;\n")[0] == "1:6: unterminated annotation '@name'"


def test_errors_in_included_files_name_that_file(tmp_path: Path):
    (tmp_path / "hdr.p4").write_text("#define W 16\nheader h_t {\n    bit<W> a\n}\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "hdr.p4"\nconst bit<W> k = W +;\n')
    with pytest.raises(CompileError) as exc:
        parse_program(main)
    first, second = exc.value.diagnostics
    assert Path(first.location.file).name == "hdr.p4" and (first.location.line, first.location.col) == (3, 13)
    assert first.location.source_line == "    bit<W> a"
    # The error after a macro use is reported in the original text's columns.
    assert Path(second.location.file).name == "main.p4"
    assert (second.location.line, second.location.col, second.message) == (
        2, 21, "unexpected ';'; expected an expression")


def test_unsupported_constructs_raise_unsupported_error():
    with pytest.raises(UnsupportedError) as exc:
        parse_text("control C(inout bit<8> x) { apply { for (bit<8> i = 0; i < 4; i = i + 1) { } } }\n", "f.p4")
    assert str(exc.value).splitlines()[0] == "f.p4:1:37: error: 'for' loops are not supported by the built-in target"


def test_error_limit_stops_the_run():
    src = "".join(f"const bit<8> x{i} = ;\n" for i in range(40))
    assert len(errors(src)) == 20


@pytest.mark.parametrize("src", [
    "", "}", "{", ")", "((((", "control", "control C(", "@", "@name(", "#include <core.p4>\nextern",
    "parser P() { state s { transition select(x) { ", "const bit<8> x = {{{{;", "table t { key = { x : exact } }",
    "header h { } } } }", "control C() { apply { switch (x) { a: b: } } }",
])
def test_garbage_never_raises_anything_but_compile_errors(src):
    try:
        parse_text(src)
    except CompileError as exc:
        assert exc.diagnostics and all(d.location is not None for d in exc.diagnostics)
