from emulator.p4.errors import CompileError, Diagnostic, SourceLocation


def test_diagnostic_format_has_location_source_line_and_caret():
    loc = SourceLocation("prog.p4", 3, 5, "    bit<8 x;\n")
    text = Diagnostic(loc, "expected '>'").format()
    assert text.splitlines() == ["prog.p4:3:5: error: expected '>'", "    bit<8 x;", "    ^"]


def test_compile_error_joins_all_diagnostics():
    err = CompileError([Diagnostic(SourceLocation("a.p4", 1, 1), "one"),
                        Diagnostic(SourceLocation("a.p4", 2, 1), "two")])
    assert str(err) == "a.p4:1:1: error: one\na.p4:2:1: error: two"
    assert err.exit_code == 1
