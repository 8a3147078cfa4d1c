"""P4-16 source text to syntax tree: the parser driver.

Pipeline: :func:`preprocess` (``preprocessor.py``) → :func:`tokenize`
(``lexer.py``, which also tells type names from other names) → the Lark LALR
parser driven token by token (``grammar/p4.lark``) → the tree built by
:class:`_Builder` (``tree_builder.py``, nodes of the ``ast`` package).

Syntax errors become diagnostics at the original file, line and column; after
an error the driver resumes at the next ``;`` or ``}`` of the same block, so
one run reports several errors.
"""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path
from types import MappingProxyType
from typing import Iterable, Mapping

from lark import Lark
from lark.exceptions import UnexpectedToken
from lark.lexer import Lexer

from emulator.p4 import ast
from emulator.p4.errors import CompileError, Diagnostic, SourceLocation, UnsupportedError
from emulator.p4.lexer import _KEYWORD_TYPE, _PUNCT_TYPE, NAME_TYPES, P4Token, tokenize
from emulator.p4.preprocessor import PreprocessedSource, preprocess
from emulator.p4.tree_builder import _Builder, _BuildError

__all__ = ["DEFAULT_DEFINES", "GRAMMAR_PATH", "parse_program", "parse_source", "parse_text", "tokenize"]

GRAMMAR_PATH = Path(__file__).resolve().parent / "grammar" / "p4.lark"
MAX_ERRORS = 20

# p4c-bm2-ss (the BMv2 back end) predefines this macro; we emulate that target.
DEFAULT_DEFINES: Mapping[str, str] = MappingProxyType({"__TARGET_BMV2__": "1"})


def parse_program(
    path: str | os.PathLike[str],
    include_dirs: Iterable[str | os.PathLike[str]] = (),
    defines: Mapping[str, str] | None = None,
) -> ast.Program:
    """Preprocess and parse the P4 file at ``path``."""
    source = preprocess(path, tuple(include_dirs), DEFAULT_DEFINES if defines is None else defines)
    return parse_source(source)


def parse_text(
    text: str,
    filename: str = "<string>",
    include_dirs: Iterable[str | os.PathLike[str]] = (),
    defines: Mapping[str, str] | None = None,
) -> ast.Program:
    """Preprocess and parse ``text``, reporting locations in ``filename``."""
    source = preprocess(filename, tuple(include_dirs), DEFAULT_DEFINES if defines is None else defines, text=text)
    return parse_source(source)


def parse_source(source: PreprocessedSource) -> ast.Program:
    """Parse preprocessed source; raises :class:`CompileError` with every error found."""
    diagnostics: list[Diagnostic] = []
    tokens = tokenize(source, diagnostics)
    program = _Driver(tokens, source, diagnostics).run()
    if diagnostics or program is None:
        unsupported = bool(diagnostics) and all(_is_unsupported(d) for d in diagnostics)
        raise (UnsupportedError if unsupported else CompileError)(diagnostics)
    return program


def _is_unsupported(diagnostic: Diagnostic) -> bool:
    return "not supported by the built-in target" in diagnostic.message


# --------------------------------------------------------------------------
# Parser driver and error reporting


class _NoLexer(Lexer):
    """Placeholder: tokens are fed to the parser one by one by :class:`_Driver`."""

    def __init__(self, lexer_conf: object) -> None:
        pass

    def lex(self, data: object):  # pragma: no cover - never called
        return iter(())




@functools.lru_cache(maxsize=1)
def _lark() -> Lark:
    # Built once per process (about half a second); the builder is stateless.
    return Lark(GRAMMAR_PATH.read_text(encoding="utf-8"), parser="lalr", lexer=_NoLexer,
                transformer=_Builder(), maybe_placeholders=True)


_BRACKETS = ("LBRACE", "RBRACE", "SEMI")


class _Driver:
    """Feeds tokens to the LALR parser; on a syntax error records a
    diagnostic, restores the parser as it was after the last ';', '{' or '}'
    of the enclosing block and skips to that block's next ';' or '}'.

    A checkpoint is just the parser's state stack: after the first error the
    tree is thrown away anyway, so the parser goes on without building it.
    """

    def __init__(self, tokens: list[P4Token], source: PreprocessedSource, diagnostics: list[Diagnostic]) -> None:
        self.tokens = tokens
        self.source = source
        self.diagnostics = diagnostics
        self.depth_before: list[int] = []
        depth = 0
        for tok in tokens:
            self.depth_before.append(depth)
            if tok.type == "LBRACE":
                depth += 1
            elif tok.type == "RBRACE":
                depth = max(depth - 1, 0)
        self.template = _lark().parse_interactive("")
        self.syntax_only = copy.copy(self.template.parser_state.parse_conf)
        self.syntax_only.callbacks = {}

    def _restore(self, states: list) -> object:
        """A parser in the given state, checking syntax only."""
        parser = self.template.copy(deepcopy_values=False)
        state = parser.parser_state
        state.state_stack = list(states)
        state.value_stack = [None] * (len(states) - 1)
        state.parse_conf = self.syntax_only
        return parser

    def run(self) -> ast.Program | None:
        tokens, n = self.tokens, len(self.tokens)
        parser = self.template.copy(deepcopy_values=False)
        checkpoints: list[tuple[int, int, list]] = [(0, 0, list(parser.parser_state.state_stack))]
        i, quiet_until, last_failure = 0, -1, -1
        errors_before = len(self.diagnostics)
        result = None
        while True:
            try:
                if i >= n:
                    result = parser.feed_eof(tokens[-1] if tokens else None)
                    break
                tok = tokens[i]
                parser.feed_token(tok)
            except UnexpectedToken as exc:
                if i >= n or i >= quiet_until:
                    expected = self._expected(checkpoints[-1], i) or set(exc.expected)
                    self._syntax_error(tokens[i] if i < n else None, expected, i)
                if i >= n:
                    break
            except _BuildError as exc:
                self.diagnostics.append(Diagnostic(exc.loc, exc.message))
            else:
                i += 1
                if tok.type in _BRACKETS:
                    depth = self.depth_before[i] if i < n else 0
                    while checkpoints and checkpoints[-1][0] >= depth:
                        checkpoints.pop()
                    checkpoints.append((depth, i, list(parser.parser_state.state_stack)))
                continue
            if len(self.diagnostics) - errors_before >= MAX_ERRORS:
                break
            depth, _, states = checkpoints[-1]
            resume = self._skip_for_loop(i) if tokens[i].type == "FOR" else self._resume_index(i, depth)
            if resume <= i and last_failure == i:
                resume = i + 1  # failed twice on this token: drop it
            last_failure = i
            parser = self._restore(states)
            checkpoints[-1] = (depth, resume, states)
            i, quiet_until = resume, resume + 3
        if len(self.diagnostics) > errors_before:
            return None
        return result  # type: ignore[no-any-return]

    def _expected(self, checkpoint: tuple[int, int, list], i: int) -> set[str]:
        """The terminals that would have let the parser go on before token ``i``.

        The failing state's table lists lookaheads merged by LALR (so after
        ``if (x == 1`` it would also offer ';' and ','); replaying from the
        checkpoint and trying each terminal gives only the real ones.
        """
        _, start, states = checkpoint
        replay = self._restore(states)
        try:
            for k in range(start, i):
                replay.feed_token(self.tokens[k])  # type: ignore[attr-defined]
            return set(replay.accepts())  # type: ignore[attr-defined]
        except UnexpectedToken:  # the replay is best effort: fall back to the table's set
            return set()

    def _skip_for_loop(self, i: int) -> int:
        """The index after a whole ``for (...) statement`` (reported as unsupported)."""
        k = self._after_group(i + 1) if i + 1 < len(self.tokens) and self.tokens[i + 1].type == "LPAREN" else i + 1
        if k < len(self.tokens) and self.tokens[k].type == "LBRACE":
            return self._after_group(k)
        return self._resume_index(k, self.depth_before[k]) if k < len(self.tokens) else k

    def _after_group(self, start: int) -> int:
        """The index after the bracket group opened at ``start``."""
        opener = self.tokens[start].type
        closer = {"LPAREN": "RPAREN", "LBRACE": "RBRACE", "LBRACKET": "RBRACKET"}[opener]
        depth = 0
        for k in range(start, len(self.tokens)):
            if self.tokens[k].type == opener:
                depth += 1
            elif self.tokens[k].type == closer:
                depth -= 1
                if depth == 0:
                    return k + 1
        return len(self.tokens)

    def _resume_index(self, i: int, depth: int) -> int:
        tokens = self.tokens
        d = self.depth_before[i]
        for k in range(i, len(tokens)):
            t = tokens[k].type
            if t == "LBRACE":
                d += 1
            elif t == "RBRACE":
                if d <= depth:
                    return k
                d -= 1
                if d == depth:
                    return k + 1
            elif t == "SEMI" and d == depth:
                return k + 1
        return len(tokens)

    def _syntax_error(self, tok: P4Token | None, expected: Iterable[str], index: int) -> None:
        prev = self.tokens[index - 1] if 0 < index <= len(self.tokens) else None
        if tok is None:
            loc = self._end_location()
            phrases = _summarise(set(expected))
            message = "unexpected end of file" + (f"; expected {_join(phrases)}" if phrases else "")
            if "SEMI" in expected and prev is not None and prev.type not in ("SEMI", "RBRACE", "LBRACE"):
                message = "expected ';'"
        elif tok.type in _UNSUPPORTED_TOKENS:
            loc, message = tok.loc, _UNSUPPORTED_TOKENS[tok.type]
        else:
            loc = tok.loc
            expected = set(expected)
            if "SEMI" in expected and prev is not None and (prev.loc.file, prev.loc.line) != (
                    tok.loc.file, tok.loc.line):
                loc = _after(prev)
                message = "expected ';'"
            else:
                phrases = _summarise(expected)
                message = f"unexpected {_describe(tok)}" + (f"; expected {_join(phrases)}" if phrases else "")
        self.diagnostics.append(Diagnostic(loc, message))

    def _end_location(self) -> SourceLocation:
        if self.tokens:
            return _after(self.tokens[-1])
        return self.source.location(len(self.source.lines), 1)


def _after(tok: P4Token) -> SourceLocation:
    loc = tok.loc
    width = len(tok.value) if "\n" not in tok.value else 1
    return SourceLocation(loc.file, loc.line, loc.col + width, loc.source_line)


_UNSUPPORTED_TOKENS = {
    "FOR": "'for' loops are not supported by the built-in target",
    "BREAK": "'break' is not supported by the built-in target",
    "CONTINUE": "'continue' is not supported by the built-in target",
    "DOTS": "'...' is not supported by the built-in target",
    "LIST": "'list' types are not supported by the built-in target",
}

_DISPLAY = {t: f"'{p}'" for p, t in _PUNCT_TYPE.items() if t != "COMPOUND_ASSIGN"}
_DISPLAY.update({t: f"'{kw}'" for kw, t in _KEYWORD_TYPE.items()})
_DISPLAY.update({
    "NAME": "a name", "TYPE_NAME": "a type name", "INTEGER": "an integer", "STRING_LITERAL": "a string",
    "ANNOTATION": "an annotation", "LT_ARGS": "'<'", "SHR_GT": "'>'", "COMPOUND_ASSIGN": "an assignment operator",
    "$END": "end of file",
})
_EXPR_START = frozenset(("NAME", "INTEGER", "LPAREN", "TRUE", "FALSE", "NOT", "TILDE", "MINUS", "PLUS",
                         "STRING_LITERAL", "LBRACE", "THIS", "TYPE_NAME", "ERROR", "APPLY", "KEY", "ACTIONS",
                         "ENTRIES", "STATE", "PRIORITY", "TYPE"))
_OPERATORS = frozenset(("PLUS", "MINUS", "STAR", "SLASH", "PERCENT", "SHL", "SHR_GT", "LT", "GT", "LE", "GE",
                        "EQ", "NE", "AMP", "PIPE", "CARET", "AND", "OR", "PP", "PLUS_SAT", "MINUS_SAT",
                        "QUESTION", "DOT", "LBRACKET", "LPAREN", "LT_ARGS", "MASK", "RANGE", "PLUS_COLON"))
_TYPE_START = frozenset(("TYPE_NAME", "BIT", "INT", "BOOL", "VARBIT", "STRING", "ERROR", "TUPLE", "MATCH_KIND"))
_DECL_START = frozenset(("HEADER", "HEADER_UNION", "STRUCT", "ENUM", "CONTROL", "PARSER", "PACKAGE", "EXTERN",
                         "TYPEDEF", "TYPE", "CONST", "ACTION", "MATCH_KIND", "ERROR", "VOID", "ANNOTATION",
                         "SEMI"))
_STMT_START = frozenset(("IF", "RETURN", "EXIT", "SWITCH", "LBRACE", "SEMI", "THIS", "LPAREN", "CONST",
                         "ANNOTATION")) | NAME_TYPES | _TYPE_START


def _summarise(expected: set[str]) -> list[str]:
    """Expected terminals in words: categories first, then a few tokens."""
    left = set(expected) - {"ANNOTATION"}
    phrases: list[str] = []
    if {"HEADER", "STRUCT", "CONTROL"} <= left:
        phrases.append("a declaration")
        left -= _DECL_START | _TYPE_START
    if {"IF", "RETURN", "EXIT"} <= left:
        phrases.append("a statement")
        left -= _STMT_START
    if {"NAME", "INTEGER", "LPAREN"} <= left:
        phrases.append("an expression")
        left -= _EXPR_START
    if {"TYPE_NAME", "BIT", "BOOL"} <= left:
        phrases.append("a type")
        left -= _TYPE_START
    if len(left & _OPERATORS) >= 5:
        phrases.append("an operator")
        left -= _OPERATORS
    if "NAME" in left:
        phrases.append("a name")
        left -= NAME_TYPES
    words = sorted((_DISPLAY.get(t, t.lower()) for t in left), key=lambda w: (w != "';'", w))
    phrases.extend(words)
    if len(phrases) > 6:
        phrases = phrases[:5] + ["..."]
    return phrases


def _join(phrases: list[str]) -> str:
    if len(phrases) <= 1:
        return "".join(phrases)
    if phrases[-1] == "...":
        return ", ".join(phrases)
    return ", ".join(phrases[:-1]) + " or " + phrases[-1]


def _describe(tok: P4Token) -> str:
    if tok.type in ("NAME", "TYPE_NAME"):
        return f"name '{tok.value}'"
    if tok.type == "INTEGER":
        return f"integer '{tok.value}'"
    if tok.type == "STRING_LITERAL":
        return f"string {tok.value}"
    if tok.type == "ANNOTATION":
        return f"annotation '{tok.value}'"
    return f"'{tok.value}'"
