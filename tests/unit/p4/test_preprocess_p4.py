"""The P4 preprocessor: includes, guards, macros, conditionals, source map."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.p4.errors import CompileError, UnsupportedError
from emulator.p4.preprocessor import BUILTIN_INCLUDE_DIR, preprocess, preprocess_text, strip_comments


def lines(result) -> list[str]:
    return [line.rstrip() for line in result.text.splitlines()]


def code(result) -> list[str]:
    """Output lines that are not blank."""
    return [line.strip() for line in result.text.splitlines() if line.strip()]


def test_plain_text_passes_through_with_one_origin_per_line():
    result = preprocess_text("a;\nb;\n", "x.p4")
    assert lines(result) == ["a;", "b;"]
    assert [(o.file, o.line) for o in result.lines] == [("x.p4", 1), ("x.p4", 2)]
    assert result.lines[1].text == "b;"


def test_comments_are_blanked_keeping_lines_columns_and_strings():
    text = 'a /* one\ntwo */ b; // tail\n"http://x" /* c */ d;\n'
    stripped, problems = strip_comments(text)
    assert problems == []
    assert stripped.splitlines() == ["a       ", "       b;        ", '"http://x"         d;']


def test_directives_inside_comments_are_ignored():
    result = preprocess_text("/*\n#error no\n*/\n// #define X 1\nX;\n")
    assert code(result) == ["X;"]


def test_unterminated_comment_is_an_error():
    with pytest.raises(CompileError, match="unterminated comment"):
        preprocess_text("a; /* never closed\n", "c.p4")


def test_object_macros_substitute_whole_tokens_but_not_strings():
    src = '#define W 16\n#define WIDTH W\nbit<WIDTH> x; bit<W> y; "W" W_1 16w5;\n'
    assert code(preprocess_text(src)) == ['bit<16> x; bit<16> y; "W" W_1 16w5;']


def test_macro_expansion_maps_columns_back_to_the_use():
    src = "#define LONG_NAME_WIDTH 8\nbit<LONG_NAME_WIDTH> x;\n"
    result = preprocess_text(src, "m.p4")
    out = result.text.splitlines()[0]
    assert out == "bit<8> x;"
    x_col = out.index("x") + 1
    loc = result.location(1, x_col)
    assert (loc.file, loc.line, loc.col) == ("m.p4", 2, 22)
    assert loc.source_line == "bit<LONG_NAME_WIDTH> x;"
    # Every column of the expansion points at the macro's name.
    assert result.location(1, out.index("8") + 1).col == 5


def test_function_like_macros():
    src = "#define ADD(a, b) ((a) + (b))\n#define TWICE(x) ADD(x, x)\nc = TWICE(f(1, 2));\nADD;\n"
    assert code(preprocess_text(src)) == ["c = ((f(1, 2)) + (f(1, 2)));", "ADD;"]


def test_function_like_macro_with_stringizing_is_unsupported():
    with pytest.raises(UnsupportedError, match="not supported"):
        preprocess_text("#define S(x) #x\n")


def test_macro_call_spanning_lines_is_unsupported():
    with pytest.raises(UnsupportedError, match="same line"):
        preprocess_text("#define F(x) x\nF(1,\n2);\n")


def test_recursive_macro_does_not_loop():
    assert code(preprocess_text("#define A B\n#define B A\nA;\n")) == ["A;"]


def test_undef():
    assert code(preprocess_text("#define A 1\n#undef A\nA;\n")) == ["A;"]


@pytest.mark.parametrize("cond, taken", [
    ("1", True), ("0", False), ("defined(X)", True), ("defined Y", False), ("!defined(Y)", True),
    ("X == 3 && X * 2 > 5", True), ("X >= 4 || 0", False), ("(X << 2) == 12 ? 1 : 0", True),
    ("UNKNOWN", False), ("UNKNOWN == 0", True), ("0x10 == 16", True), ("010 == 8", True),
    ("-1 < 0", True), ("~0 == -1", True), ("7 / 2 == 3 && 7 % 2 == 1", True),
])
def test_if_expressions(cond, taken):
    src = f"#define X 3\n#if {cond}\nyes;\n#else\nno;\n#endif\n"
    assert code(preprocess_text(src)) == (["yes;"] if taken else ["no;"])


def test_elif_chain_and_nesting():
    src = """#define V 2
#if V == 1
one;
#elif V == 2
two;
#ifdef NOPE
nope;
#else
inner;
#endif
#elif V == 2
again;
#else
other;
#endif
"""
    assert code(preprocess_text(src)) == ["two;", "inner;"]


def test_skipped_groups_ignore_unknown_directives_and_errors():
    src = "#if 0\n#error no\n#bogus\n#endif\nok;\n"
    assert code(preprocess_text(src)) == ["ok;"]


def test_bad_if_expression_and_unbalanced_conditionals():
    with pytest.raises(CompileError) as exc:
        preprocess_text("#if 1 +\n#endif\n#endif\n#if 1\n", "b.p4")
    text = str(exc.value)
    assert "b.p4:1:2: error: invalid #if expression" in text
    assert "b.p4:3:2: error: #endif without #if" in text
    assert "b.p4:4:2: error: unterminated conditional directive" in text


def test_error_directive_reports_every_error():
    with pytest.raises(CompileError) as exc:
        preprocess_text("#error first\n#error second problem\n#warning careful\n", "e.p4")
    assert [d.message for d in exc.value.diagnostics] == ["#error first", "#error second problem"]
    assert str(exc.value).splitlines()[:3] == ["e.p4:1:2: error: #error first", "#error first", " ^"]


def test_warning_line_and_pragma_are_accepted():
    result = preprocess_text("#warning be careful\n#line 10 \"x\"\n#pragma foo\nok;\n")
    assert code(result) == ["ok;"]
    assert [w.message for w in result.warnings] == ["#warning be careful"]


def test_unknown_directive_is_an_error():
    with pytest.raises(CompileError, match="unknown preprocessing directive '#frobnicate'"):
        preprocess_text("#frobnicate\n")


def test_continuation_lines_in_directives():
    src = "#define LONG 1 + \\\n  2\nx = LONG;\n"
    assert [" ".join(line.split()) for line in code(preprocess_text(src))] == ["x = 1 + 2;"]


def test_defines_argument():
    assert code(preprocess_text("#ifdef T\nX;\n#endif\n", defines={"T": "1", "X": "7"})) == ["7;"]


def test_include_relative_then_include_dirs_with_guard(tmp_path: Path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "sys").mkdir()
    (tmp_path / "lib" / "types.p4").write_text("#ifndef TYPES\n#define TYPES\ntypedef bit<8> t;\n#endif\n")
    (tmp_path / "lib" / "a.p4").write_text('#include "types.p4"\nconst t A = 1;\n')
    (tmp_path / "sys" / "arch.p4").write_text("#pragma once\narch;\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "lib/a.p4"\n#include "lib/types.p4"\n#include <arch.p4>\n#include <arch.p4>\nmain;\n')
    result = preprocess(main, include_dirs=[tmp_path / "sys"])
    assert code(result) == ["typedef bit<8> t;", "const t A = 1;", "arch;", "main;"]
    origins = [(Path(o.file).name, o.line) for o in result.lines if o.text.strip() and not o.text.startswith("#")]
    assert origins == [("types.p4", 3), ("a.p4", 2), ("arch.p4", 2), ("main.p4", 5)]


def test_missing_include_points_at_the_directive(tmp_path: Path):
    main = tmp_path / "main.p4"
    main.write_text('\n#include "nothere.p4"\n')
    with pytest.raises(CompileError) as exc:
        preprocess(main)
    diag = exc.value.diagnostics[0]
    assert diag.message == "'nothere.p4' file not found"
    assert (diag.location.line, diag.location.col) == (2, 2)


def test_self_include_stops_at_the_depth_limit(tmp_path: Path):
    loop = tmp_path / "loop.p4"
    loop.write_text('#include "loop.p4"\n')
    with pytest.raises(CompileError, match="nested too deeply"):
        preprocess(loop)


def test_missing_main_file_is_a_compile_error(tmp_path: Path):
    with pytest.raises(CompileError, match="cannot read"):
        preprocess(tmp_path / "absent.p4")


def test_bundled_headers_define_the_v1model_version():
    assert (BUILTIN_INCLUDE_DIR / "core.p4").is_file()
    result = preprocess_text("#include <v1model.p4>\nV1MODEL_VERSION __v1model_version;\n")
    assert code(result)[-1] == "20180101 __v1model_version;"
    newer = preprocess_text("#define V1MODEL_VERSION 20200408\n#include <v1model.p4>\n")
    assert "extern register<T, I>" in newer.text
    assert "typedef bit<9> PortId_t;" in newer.text
