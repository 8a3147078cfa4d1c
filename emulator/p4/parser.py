"""P4-16 source text to syntax tree: lexer, type-name tracking, LALR parser.

Pipeline: :func:`preprocess` (``preprocessor.py``) → :func:`tokenize` → the
Lark LALR parser driven token by token (``grammar/p4.lark``) → the tree
built by :class:`_Builder` (``ast.py`` nodes).

P4, like C, needs to know which identifiers name types: ``a < b`` is a
comparison but ``register<bit<32>>(16) r;`` is a type with arguments, and
``(T) -x`` is a cast while ``(x) - y`` is a subtraction. p4c's lexer asks a
symbol table that its parser fills as it goes. We do the equivalent before
parsing: :class:`_TypeScanner` walks the token list, finds every type
declaration (header, struct, enum, typedef, extern, parser, control,
package) and every type parameter with the range of tokens where it is in
scope, and where parameters and local variables shadow a type name. Each
identifier then becomes ``TYPE_NAME`` or ``NAME``; a ``<`` after a type name,
after ``bit``/``int``/``varbit``/``tuple``/``value_set``, or before a type
becomes ``LT_ARGS``; a ``>`` directly followed by ``>`` becomes ``SHR_GT``.

Syntax errors become diagnostics at the original file, line and column; after
an error the driver resumes at the next ``;`` or ``}`` of the same block, so
one run reports several errors.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from pathlib import Path
from types import MappingProxyType
from typing import Iterable, Mapping

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedToken
from lark.lexer import Lexer

from emulator.p4 import ast
from emulator.p4.errors import CompileError, Diagnostic, SourceLocation, UnsupportedError
from emulator.p4.preprocessor import PreprocessedSource, preprocess

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
# Lexer

KEYWORDS = frozenset((
    "abstract", "action", "actions", "apply", "bool", "bit", "break", "const", "continue", "control",
    "default", "else", "entries", "enum", "error", "exit", "extern", "false", "for", "header",
    "header_union", "if", "in", "inout", "int", "key", "list", "match_kind", "out", "parser",
    "package", "priority", "return", "select", "state", "string", "struct", "switch", "table",
    "this", "transition", "true", "tuple", "type", "typedef", "varbit", "value_set", "void",
))
_KEYWORD_TYPE = {kw: kw.upper() for kw in KEYWORDS}
_KEYWORD_TYPE["_"] = "DONTCARE"

_PUNCT_TYPE = {
    "{": "LBRACE", "}": "RBRACE", "(": "LPAREN", ")": "RPAREN", "[": "LBRACKET", "]": "RBRACKET",
    "<": "LT", ">": "GT", "<=": "LE", ">=": "GE", "<<": "SHL", "==": "EQ", "!=": "NE", "&&": "AND",
    "||": "OR", "!": "NOT", "~": "TILDE", "&": "AMP", "|": "PIPE", "^": "CARET", "+": "PLUS",
    "-": "MINUS", "*": "STAR", "/": "SLASH", "%": "PERCENT", "|+|": "PLUS_SAT", "|-|": "MINUS_SAT",
    "++": "PP", "&&&": "MASK", "..": "RANGE", "...": "DOTS", ".": "DOT", ",": "COMMA", ";": "SEMI",
    ":": "COLON", "?": "QUESTION", "=": "ASSIGN", "+:": "PLUS_COLON", "@": "AT",
}
for _op in ("+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "|+|=", "|-|="):
    _PUNCT_TYPE[_op] = "COMPOUND_ASSIGN"
del _op

_INT = (r"[0-9]+[ws](?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9_]+)"
        r"|0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*")
_PUNCT = "|".join(re.escape(p) for p in sorted(_PUNCT_TYPE, key=len, reverse=True))
_TOKEN_RE = re.compile(
    rf'(?P<ws>[ \t\r\f\v]+)|(?P<nl>\n)|(?P<int>{_INT})|(?P<name>[A-Za-z_][A-Za-z0-9_]*)'
    rf'|(?P<str>"(?:[^"\\]|\\.)*")|(?P<punct>{_PUNCT})'
)

# Tokens that can be used as a name (identifiers and the keywords p4c allows as names).
NAME_TYPES = frozenset(("NAME", "TYPE_NAME", "APPLY", "KEY", "ACTIONS", "ENTRIES", "STATE", "PRIORITY",
                        "TYPE", "LIST"))
_TYPE_ARG_START = frozenset(("BIT", "INT", "VARBIT", "BOOL", "TUPLE", "STRING", "VOID", "DONTCARE"))
_GENERIC_KEYWORDS = frozenset(("BIT", "INT", "VARBIT", "TUPLE", "VALUE_SET", "LIST"))
# Tokens that can end a type, so a name after them (and before ';' or '=') is declared.
_TYPE_END = frozenset(("NAME", "TYPE_NAME", "GT", "RBRACKET", "RPAREN", "BOOL", "BIT", "INT", "STRING",
                       "ERROR", "VARBIT"))


class P4Token(Token):
    """A Lark token that also knows its original location (and, for an
    ``ANNOTATION`` token, the :class:`ast.Annotation` it stands for)."""

    __slots__ = ("loc", "payload")

    loc: SourceLocation
    payload: object


def _token(type_: str, value: str, pos: int, line: int, col: int, loc: SourceLocation) -> P4Token:
    # Filled in directly: Token.__new__'s argument juggling costs more than the lexing.
    tok = str.__new__(P4Token, value)
    tok.type, tok.value, tok.start_pos, tok.end_pos = type_, value, pos, pos + len(value)
    tok.line, tok.column, tok.end_line, tok.end_column = line, col, line, col + len(value)
    tok.loc = loc
    tok.payload = None
    return tok


def tokenize(source: PreprocessedSource, diagnostics: list[Diagnostic]) -> list[P4Token]:
    """Lex, fold annotations and classify names, ``<`` and ``>``."""
    tokens = _lex(source, diagnostics)
    tokens = _fold_annotations(tokens, diagnostics)
    _classify(tokens)
    return tokens


def _lex(source: PreprocessedSource, diagnostics: list[Diagnostic]) -> list[P4Token]:
    text = source.text
    tokens: list[P4Token] = []
    pos, line, line_start = 0, 1, 0
    match_at = _TOKEN_RE.match
    while pos < len(text):
        m = match_at(text, pos)
        if m is None:
            col = pos - line_start + 1
            if text[pos] == '"':
                diagnostics.append(Diagnostic(source.location(line, col), "unterminated string literal"))
                end = text.find("\n", pos)
                pos = len(text) if end < 0 else end
            else:
                diagnostics.append(Diagnostic(source.location(line, col), f"unexpected character '{text[pos]}'"))
                pos += 1
            continue
        kind = m.lastgroup
        value = m.group()
        col = pos - line_start + 1
        if kind == "nl":
            line += 1
            line_start = m.end()
        elif kind != "ws":
            if kind == "name":
                type_ = _KEYWORD_TYPE.get(value, "NAME")
            elif kind == "int":
                type_ = "INTEGER"
            elif kind == "str":
                type_ = "STRING_LITERAL"
            else:
                type_ = _PUNCT_TYPE[value]
            tokens.append(_token(type_, value, pos, line, col, source.location(line, col)))
            if kind == "str" and "\n" in value:
                line += value.count("\n")
                line_start = pos + value.rfind("\n") + 1
        pos = m.end()
    return tokens


def _annotation_token(tok: P4Token) -> ast.AnnotationToken:
    if tok.type == "STRING_LITERAL":
        return ast.AnnotationToken("string", tok.value[1:-1], loc=tok.loc)
    if tok.type == "INTEGER":
        return ast.AnnotationToken("integer", tok.value, loc=tok.loc)
    if tok.type == "NAME":
        return ast.AnnotationToken("name", tok.value, loc=tok.loc)
    return ast.AnnotationToken("symbol", tok.value, loc=tok.loc)


def _fold_annotations(tokens: list[P4Token], diagnostics: list[Diagnostic]) -> list[P4Token]:
    """Replace each ``@name``, ``@name(...)``, ``@name[...]`` and ``@pragma ...``
    by one ANNOTATION token whose payload is the :class:`ast.Annotation`."""
    if not any(t.type == "AT" for t in tokens):
        return tokens
    out: list[P4Token] = []
    i, n = 0, len(tokens)
    while i < n:
        tok = tokens[i]
        if tok.type != "AT" or i + 1 >= n or not _is_word(tokens[i + 1]):
            if tok.type == "AT":
                diagnostics.append(Diagnostic(tok.loc, "expected an annotation name after '@'"))
                i += 1
                continue
            out.append(tok)
            i += 1
            continue
        name_tok = tokens[i + 1]
        j = i + 2
        body: list[P4Token] = []
        structured = False
        if name_tok.value == "pragma" and j < n and _is_word(tokens[j]):
            # P4-14 style '@pragma name tokens...' runs to the end of the line.
            name_tok = tokens[j]
            j += 1
            while j < n and tokens[j].line == name_tok.line:
                body.append(tokens[j])
                j += 1
        elif j < n and tokens[j].type in ("LPAREN", "LBRACKET"):
            structured = tokens[j].type == "LBRACKET"
            opener, closer = ("LBRACKET", "RBRACKET") if structured else ("LPAREN", "RPAREN")
            depth, k = 0, j
            while k < n:
                if tokens[k].type == opener:
                    depth += 1
                elif tokens[k].type == closer:
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            if k >= n:
                diagnostics.append(Diagnostic(tokens[j].loc, f"unterminated annotation '@{name_tok.value}'"))
                return out
            body = tokens[j + 1:k]
            j = k + 1
        annotation = ast.Annotation(name_tok.value, tuple(_annotation_token(t) for t in body), structured,
                                    loc=tok.loc)
        folded = _token("ANNOTATION", "@" + name_tok.value, tok.start_pos or 0, tok.line or 0, tok.column or 0,
                        tok.loc)
        folded.payload = annotation
        out.append(folded)
        i = j
    return out


def _is_word(tok: P4Token) -> bool:
    return tok.type in ("NAME", "DONTCARE") or tok.value in KEYWORDS


def _classify(tokens: list[P4Token]) -> None:
    scanner = _TypeScanner(tokens)
    scanner.scan()
    n = len(tokens)
    for i, tok in enumerate(tokens):
        if tok.type == "NAME" and scanner.is_type(tok.value, i) and (i == 0 or tokens[i - 1].type != "DOT"):
            tok.type = "TYPE_NAME"
    for i, tok in enumerate(tokens):
        if tok.type == "LT" and i > 0:
            prev = tokens[i - 1].type
            if prev == "TYPE_NAME" or prev in _GENERIC_KEYWORDS:
                tok.type = "LT_ARGS"
            elif prev == "NAME" and i + 1 < n:
                nxt = tokens[i + 1].type
                after = tokens[i + 2].type if i + 2 < n else ""
                if nxt in _TYPE_ARG_START or (nxt in ("TYPE_NAME", "ERROR") and after not in ("DOT", "LPAREN")):
                    tok.type = "LT_ARGS"
        elif tok.type == "GT" and i + 1 < n:
            nxt = tokens[i + 1]
            if nxt.type == "GT" and nxt.line == tok.line and nxt.column == (tok.column or 0) + 1:
                tok.type = "SHR_GT"


class _TypeScanner:
    """Finds, before parsing, which identifiers name types at which token.

    ``globals`` maps a top-level type name to the index of the first token
    where it is known (just after its declaration's name, as in p4c);
    ``scoped`` holds ``(start, end, is_type)`` ranges for type parameters
    (types) and for parameters and local variables (which hide a type).
    """

    def __init__(self, tokens: list[P4Token]) -> None:
        self.toks = tokens
        self.n = len(tokens)
        self.globals: dict[str, int] = {}
        self.scoped: dict[str, list[tuple[int, int, bool]]] = {}
        self.match = [-1] * self.n
        self.enclosing = [-1] * self.n  # index of the '}' closing the innermost block around a token
        stack: list[int] = []
        pairs = {"RPAREN": "LPAREN", "RBRACKET": "LBRACKET", "RBRACE": "LBRACE"}
        braces: list[int] = []
        for i, tok in enumerate(tokens):
            if tok.type in ("LPAREN", "LBRACKET", "LBRACE"):
                stack.append(i)
            elif tok.type in pairs:
                if stack and tokens[stack[-1]].type == pairs[tok.type]:
                    j = stack.pop()
                    self.match[i], self.match[j] = j, i
                else:
                    stack.clear()  # unbalanced: leave the rest unmatched
        for i in range(self.n):
            if tokens[i].type == "RBRACE" and braces:
                braces.pop()
            self.enclosing[i] = self.match[braces[-1]] if braces else -1
            if tokens[i].type == "LBRACE":
                braces.append(i)

    # -- queries ------------------------------------------------------------

    def is_type(self, name: str, index: int) -> bool:
        ranges = self.scoped.get(name)
        if ranges:
            best: tuple[int, int, bool] | None = None
            for entry in ranges:
                if entry[0] <= index < entry[1] and (best is None or entry[0] >= best[0]):
                    best = entry
            if best is not None:
                return best[2]
        start = self.globals.get(name)
        return start is not None and start <= index

    # -- recording ----------------------------------------------------------

    def _type(self, i: int) -> str:
        return self.toks[i].type if 0 <= i < self.n else "$END"

    def _declare_global(self, name_index: int) -> None:
        if 0 <= name_index < self.n and self.toks[name_index].type in NAME_TYPES:
            name = self.toks[name_index].value
            if name not in self.globals:
                self.globals[name] = name_index + 1

    def _declare_scoped(self, name_index: int, start: int, end: int, is_type: bool) -> None:
        if 0 <= name_index < self.n and self.toks[name_index].type in NAME_TYPES and end > start:
            self.scoped.setdefault(self.toks[name_index].value, []).append((start, end, is_type))

    # -- walking ------------------------------------------------------------

    def scan(self) -> None:
        i = 0
        while i < self.n:
            i = max(self._declaration(i), i + 1)
        self._locals()

    def _skip_annotations(self, i: int) -> int:
        while self._type(i) == "ANNOTATION":
            i += 1
        return i

    def _after(self, i: int) -> int:
        """The index after the bracket group opened at ``i``."""
        return self.match[i] + 1 if 0 <= i < self.n and self.match[i] > i else i + 1

    def _end_of_statement(self, i: int) -> int:
        """The index after the next ';' at this nesting level (or of an unmatched '}')."""
        while i < self.n:
            t = self.toks[i].type
            if t in ("LPAREN", "LBRACKET", "LBRACE") and self.match[i] > i:
                i = self.match[i] + 1
                continue
            if t == "SEMI":
                return i + 1
            if t == "RBRACE":
                return i
            i += 1
        return i

    def _declaration(self, i: int) -> int:
        i = self._skip_annotations(i)
        t = self._type(i)
        if t in ("HEADER", "HEADER_UNION", "STRUCT"):
            return self._struct_like(i)
        if t == "ENUM":
            return self._enum(i)
        if t in ("TYPEDEF", "TYPE"):
            return self._typedef(i)
        if t in ("ERROR", "MATCH_KIND") and self._type(i + 1) == "LBRACE":
            return self._after(i + 1)
        if t == "EXTERN":
            return self._extern(i + 1)
        if t in ("PARSER", "CONTROL", "PACKAGE"):
            return self._container(i)
        if t in ("SEMI", "$END", "RBRACE"):
            return i + 1
        if t in ("CONST", "ACTION"):
            return self._callable(i) if t == "ACTION" else self._end_of_statement(i)
        return self._callable(i)

    def _type_params(self, lt: int, start: int, end: int) -> int:
        """Record the names between '<' at ``lt`` and its '>' as types in
        [start, end); returns the index after the '>'."""
        k = lt + 1
        while k < self.n and self.toks[k].type != "GT":
            if self.toks[k].type in NAME_TYPES:
                self._declare_scoped(k, start, end, True)
            elif self.toks[k].type != "COMMA":
                break
            k += 1
        return k + 1

    def _angle_close(self, lt: int) -> int:
        depth = 0
        for k in range(lt, self.n):
            t = self.toks[k].type
            if t == "LT":
                depth += 1
            elif t == "GT":
                depth -= 1
                if depth == 0:
                    return k
            elif t in ("SEMI", "LBRACE", "RBRACE"):
                break
        return -1

    def _angle_open(self, gt: int, start: int) -> int:
        depth = 0
        for k in range(gt, start - 1, -1):
            t = self.toks[k].type
            if t == "GT":
                depth += 1
            elif t == "LT":
                depth -= 1
                if depth == 0:
                    return k
        return -1

    def _struct_like(self, i: int) -> int:
        self._declare_global(i + 1)
        j = i + 2
        lt = j if self._type(j) == "LT" else -1
        if lt >= 0:
            gt = self._angle_close(lt)
            j = gt + 1 if gt > 0 else j + 1
        end = self._after(j) if self._type(j) == "LBRACE" else self._end_of_statement(j)
        if lt >= 0:
            self._type_params(lt, lt, end)
        return end

    def _enum(self, i: int) -> int:
        k = i + 1
        while k < self.n and self.toks[k].type not in ("LBRACE", "SEMI", "RBRACE"):
            k += 1
        if self._type(k) != "LBRACE":
            return k
        self._declare_global(k - 1)
        return self._after(k)

    def _typedef(self, i: int) -> int:
        j = i + 1
        if self._type(j) in ("HEADER", "HEADER_UNION", "STRUCT", "ENUM"):
            j = self._struct_like(j) if self._type(j) != "ENUM" else self._enum(j)
        end = self._end_of_statement(j)
        if self._type(end - 1) == "SEMI":
            self._declare_global(end - 2)
        return end

    def _extern(self, j: int) -> int:
        j = self._skip_annotations(j)
        if self._type(j) in NAME_TYPES:
            nxt = self._type(j + 1)
            if nxt == "LBRACE":
                self._declare_global(j)
                self._extern_body(j + 1)
                return self._after(j + 1)
            if nxt == "SEMI":
                self._declare_global(j)
                return j + 2
            if nxt == "LT":
                gt = self._angle_close(j + 1)
                if gt > 0 and self._type(gt + 1) == "LBRACE":
                    self._declare_global(j)
                    end = self._after(gt + 1)
                    self._type_params(j + 1, j + 1, end)
                    self._extern_body(gt + 1)
                    return end
        return self._callable(j)

    def _extern_body(self, lbrace: int) -> None:
        close = self.match[lbrace] if self.match[lbrace] > lbrace else self.n
        k = lbrace + 1
        while k < close:
            k = self._skip_annotations(k)
            if self._type(k) == "ABSTRACT":
                k += 1
            k = max(self._callable(k), k + 1)

    def _callable(self, s: int) -> int:
        """A function, method, action or extern function (recording type
        parameters and parameters), or an instantiation; returns its end."""
        p = s
        while p < self.n and self.toks[p].type not in ("LPAREN", "SEMI", "LBRACE", "RBRACE"):
            p += 1
        if self._type(p) != "LPAREN":
            return self._end_of_statement(s)
        lt = -1
        name = p - 1
        if self._type(p - 1) == "GT":
            lt = self._angle_open(p - 1, s)
            name = lt - 1
        if name <= s or self._type(name) not in NAME_TYPES:
            return self._end_of_statement(s)  # 'Type(args) name;' or not a declaration
        close = self._after(p)
        if self._type(close) == "LBRACE":
            end = self._after(close)
        else:
            end = self._end_of_statement(close)
        if lt >= 0:
            self._type_params(lt, s, end)
        self._params(p, end)
        return end

    def _container(self, i: int) -> int:
        self._declare_global(i + 1)
        j = i + 2
        lt = j if self._type(j) == "LT" else -1
        if lt >= 0:
            gt = self._angle_close(lt)
            j = gt + 1 if gt > 0 else j + 1
        params = [j] if self._type(j) == "LPAREN" else []
        k = self._after(j) if params else j
        if self._type(k) == "LPAREN":
            params.append(k)
            k = self._after(k)
        end = self._after(k) if self._type(k) == "LBRACE" else self._end_of_statement(k)
        if lt >= 0:
            self._type_params(lt, lt, end)
        for lp in params:
            self._params(lp, end)
        return end

    def _params(self, lp: int, end: int) -> None:
        """Parameter names hide type names from their declaration to ``end``."""
        rp = self.match[lp]
        if rp < lp:
            return
        last, seen_assign, depth, angle = -1, False, 0, 0
        for k in range(lp + 1, rp + 1):
            t = self.toks[k].type
            if k == rp or (t == "COMMA" and depth == 0 and angle == 0):
                if last >= 0:
                    self._declare_scoped(last, last + 1, end, False)
                last, seen_assign, angle = -1, False, 0
            elif t in ("LPAREN", "LBRACKET", "LBRACE"):
                depth += 1
            elif t in ("RPAREN", "RBRACKET", "RBRACE"):
                depth -= 1
            elif seen_assign or depth:
                continue
            elif t == "LT":
                angle += 1
            elif t == "GT":
                angle -= 1
            elif t == "ASSIGN" and angle == 0:
                seen_assign = True
            elif angle == 0 and t in NAME_TYPES:
                last = k

    def _locals(self) -> None:
        """``T name;`` and ``T name = ...;`` inside a block hide a type ``name``;
        so do the parameters of actions declared inside controls."""
        toks = self.toks
        for i in range(1, self.n - 1):
            t = toks[i].type
            if t == "ACTION" and self.enclosing[i] >= 0 and self._type(i + 2) == "LPAREN":
                close = self._after(i + 2)
                self._params(i + 2, self._after(close) if self._type(close) == "LBRACE" else close)
            elif (t == "NAME" and toks[i + 1].type in ("SEMI", "ASSIGN") and toks[i - 1].type in _TYPE_END
                  and self.enclosing[i] >= 0 and toks[i].value in self.globals):
                self._declare_scoped(i, i + 1, self.enclosing[i], False)


# --------------------------------------------------------------------------
# Parser driver and error reporting


class _NoLexer(Lexer):
    """Placeholder: tokens are fed to the parser one by one by :class:`_Driver`."""

    def __init__(self, lexer_conf: object) -> None:
        pass

    def lex(self, data: object):  # pragma: no cover - never called
        return iter(())


class _BuildError(Exception):
    """A construct the grammar accepts but that is not valid P4 (or not supported)."""

    def __init__(self, loc: SourceLocation, message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message


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


# --------------------------------------------------------------------------
# Tree building: one method per grammar rule or alias. Children are the
# rule's symbols in order, tokens included; an absent [optional] is None.


class _Proto:
    """A function prototype, before it becomes a method, extern or function."""

    __slots__ = ("return_type", "name", "type_params", "params")

    def __init__(self, return_type: ast.Type, name: P4Token, type_params: tuple[ast.TypeParam, ...],
                 params: tuple[ast.Param, ...]) -> None:
        self.return_type, self.name, self.type_params, self.params = return_type, name, type_params, params


class _KeysetTuple(tuple):
    """The keysets of ``(a, b)`` in a select case or table entry."""


def _anns(value: object) -> tuple[ast.Annotation, ...]:
    return value if isinstance(value, tuple) else ()


def _start(node: ast.Node) -> SourceLocation:
    """Where an expression starts (a member expression's own loc is its member)."""
    while isinstance(node, (ast.MemberExpr, ast.IndexExpr, ast.SliceExpr, ast.PlusSliceExpr)):
        node = node.base
    if isinstance(node, ast.CallExpr):
        return _start(node.callee)
    return node.loc


def _tparams(value: object) -> tuple[ast.TypeParam, ...]:
    return value if isinstance(value, tuple) else ()


def _only(children: list, cls: type) -> tuple:
    return tuple(c for c in children if isinstance(c, cls))


def _keysets(keyset: object) -> tuple[ast.Expression, ...]:
    return tuple(keyset) if isinstance(keyset, _KeysetTuple) else (keyset,)  # type: ignore[arg-type]


class _Builder(Transformer):
    # -- program and names

    def start(self, c):
        decls = tuple(d for d in c if d is not None)
        return ast.Program(decls, loc=decls[0].loc if decls else SourceLocation("<empty>", 1, 1))

    def empty_decl(self, c):
        return None

    def path_expr(self, c):
        return ast.PathExpr(c[0].value, loc=c[0].loc)

    def annotations(self, c):
        return tuple(tok.payload for tok in c)

    # -- types

    def type_name(self, c):
        return ast.TypeName(c[0].value, loc=c[0].loc)

    def specialized_type(self, c):
        return ast.SpecializedType(c[0], c[2], loc=c[0].loc)

    def header_stack_type(self, c):
        return ast.HeaderStackType(c[0], c[2], loc=c[0].loc)

    def tuple_type(self, c):
        return ast.TupleType(c[2], loc=c[0].loc)

    def type_args(self, c):
        return _only(c, ast.Type)

    def void_type(self, c):
        return ast.VoidType(loc=c[0].loc)

    def dontcare_type(self, c):
        return ast.DontCareType(loc=c[0].loc)

    def bool_type(self, c):
        return ast.BoolType(loc=c[0].loc)

    def error_type(self, c):
        return ast.ErrorType(loc=c[0].loc)

    def string_type(self, c):
        return ast.StringType(loc=c[0].loc)

    def match_kind_type(self, c):
        return ast.MatchKindType(loc=c[0].loc)

    def int_type(self, c):
        return ast.IntType(loc=c[0].loc)

    def bit1_type(self, c):
        return ast.BitsType(ast.IntLiteral(1, text="1", loc=c[0].loc), loc=c[0].loc)

    def bit_type(self, c):
        return ast.BitsType(c[2], False, loc=c[0].loc)

    def signed_type(self, c):
        return ast.BitsType(c[2], True, loc=c[0].loc)

    def varbit_type(self, c):
        return ast.VarbitType(c[2], loc=c[0].loc)

    def type_params(self, c):
        return tuple(ast.TypeParam(t.value, loc=t.loc) for t in c[1:-1] if t.type != "COMMA")

    # -- declarations

    def constant_decl(self, c):
        return ast.ConstantDecl(c[3].value, c[2], c[5], _anns(c[0]), loc=c[3].loc)

    def variable_decl(self, c):
        return ast.VariableDecl(c[2].value, c[1], c[4], _anns(c[0]), loc=c[2].loc)

    def typedef_decl(self, c):
        return ast.TypedefDecl(c[3].value, c[2], _anns(c[0]), loc=c[3].loc)

    def newtype_decl(self, c):
        return ast.NewTypeDecl(c[3].value, c[2], _anns(c[0]), loc=c[3].loc)

    def _struct_like(self, cls, c):
        return cls(c[2].value, _only(c[5:-1], ast.StructField), _tparams(c[3]), _anns(c[0]), loc=c[2].loc)

    def header_decl(self, c):
        return self._struct_like(ast.HeaderTypeDecl, c)

    def header_union_decl(self, c):
        return self._struct_like(ast.HeaderUnionDecl, c)

    def struct_decl(self, c):
        return self._struct_like(ast.StructTypeDecl, c)

    def struct_field(self, c):
        return ast.StructField(c[2].value, c[1], _anns(c[0]), loc=c[2].loc)

    def enum_decl(self, c):
        members = tuple(ast.EnumMember(t.value, loc=t.loc) for t in c[4:-1]
                        if t is not None and t.type != "COMMA")
        return ast.EnumDecl(c[2].value, members, None, _anns(c[0]), loc=c[2].loc)

    def ser_enum_decl(self, c):
        return ast.EnumDecl(c[3].value, _only(c[5:-1], ast.EnumMember), c[2], _anns(c[0]), loc=c[3].loc)

    def enum_value(self, c):
        return ast.EnumMember(c[0].value, c[2], loc=c[0].loc)

    def error_decl(self, c):
        ids = tuple(ast.DeclaredId(t.value, loc=t.loc) for t in c[2:-1] if t is not None and t.type != "COMMA")
        return ast.ErrorDecl(ids, loc=c[0].loc)

    def match_kind_decl(self, c):
        ids = tuple(ast.DeclaredId(t.value, loc=t.loc) for t in c[2:-1] if t is not None and t.type != "COMMA")
        return ast.MatchKindDecl(ids, loc=c[0].loc)

    def extern_decl(self, c):
        return ast.ExternDecl(c[2].value, _only(c[5:-1], ast.MethodDecl), _tparams(c[3]), _anns(c[0]),
                              loc=c[2].loc)

    def extern_function_decl(self, c):
        p = c[2]
        return ast.ExternFunctionDecl(p.name.value, p.return_type, p.params, p.type_params, _anns(c[0]),
                                      loc=p.name.loc)

    def extern_forward_decl(self, c):
        return None  # as p4c: a forward declaration declares nothing

    def function_proto(self, c):
        return _Proto(c[0], c[1], _tparams(c[2]), c[4])

    def method_decl(self, c):
        p = c[1]
        return ast.MethodDecl(p.name.value, p.return_type, p.params, p.type_params, False, _anns(c[0]),
                              loc=p.name.loc)

    def abstract_method_decl(self, c):
        p = c[2]
        return ast.MethodDecl(p.name.value, p.return_type, p.params, p.type_params, True, _anns(c[0]),
                              loc=p.name.loc)

    def constructor_decl(self, c):
        return ast.MethodDecl(c[1].value, None, c[3], (), False, _anns(c[0]), loc=c[1].loc)

    def function_decl(self, c):
        p = c[1]
        return ast.FunctionDecl(p.name.value, p.return_type, p.params, c[2], p.type_params, _anns(c[0]),
                                loc=p.name.loc)

    def params(self, c):
        return _only(c, ast.Param)

    def param(self, c):
        direction = c[1].value if c[1] is not None else ""
        return ast.Param(c[3].value, c[2], direction, c[5], _anns(c[0]), loc=c[3].loc)

    def action_decl(self, c):
        return ast.ActionDecl(c[2].value, c[4], c[6], _anns(c[0]), loc=c[2].loc)

    def instantiation(self, c):
        return ast.Instantiation(c[5].value, c[1], c[3], _anns(c[0]), c[6], loc=c[5].loc)

    def obj_initializer(self, c):
        return tuple(d for d in c[2:-1] if isinstance(d, ast.Declaration))

    def package_type_decl(self, c):
        return ast.PackageTypeDecl(c[2].value, c[5], _tparams(c[3]), _anns(c[0]), loc=c[2].loc)

    # -- parsers

    def parser_type_decl(self, c):
        return ast.ParserTypeDecl(c[2].value, c[5], _tparams(c[3]), _anns(c[0]), loc=c[2].loc)

    def parser_decl(self, c):
        body = c[11:-1]
        states = _only(body, ast.ParserState)
        local_decls = tuple(d for d in body if isinstance(d, ast.Declaration) and not isinstance(d, ast.ParserState))
        ctor = c[8] if c[8] is not None else ()
        return ast.ParserDecl(c[2].value, c[5], local_decls, states, ctor, _tparams(c[3]), _anns(c[0]),
                              loc=c[2].loc)

    def value_set_decl(self, c):
        return ast.ValueSetDecl(c[8].value, c[3], c[6], _anns(c[0]), loc=c[8].loc)

    def parser_state(self, c):
        stmts = tuple(s for s in c[4:-2] if isinstance(s, ast.Node))
        return ast.ParserState(c[2].value, stmts, c[-2], _anns(c[0]), loc=c[2].loc)

    def transition_to(self, c):
        return ast.PathExpr(c[1].value, loc=c[1].loc)

    def transition(self, c):
        return c[1]

    def select_expr(self, c):
        return ast.SelectExpr(c[2], _only(c[5:-1], ast.SelectCase), loc=c[0].loc)

    def select_case(self, c):
        keysets = _keysets(c[0])
        return ast.SelectCase(keysets, c[2].value, loc=_start(keysets[0]) if keysets else c[1].loc)

    def expr_list(self, c):
        return _only(c, ast.Expression)

    def tuple_keyset(self, c):
        return _KeysetTuple(x for x in c[1:-1] if isinstance(x, ast.Expression))

    def mask_keyset(self, c):
        return ast.MaskExpr(c[0], c[2], loc=c[1].loc)

    def range_keyset(self, c):
        return ast.RangeExpr(c[0], c[2], loc=c[1].loc)

    def default_keyset(self, c):
        return ast.DefaultExpr(loc=c[0].loc)

    # -- controls and tables

    def control_type_decl(self, c):
        return ast.ControlTypeDecl(c[2].value, c[5], _tparams(c[3]), _anns(c[0]), loc=c[2].loc)

    def control_decl(self, c):
        local_decls = _only(c[11:-3], ast.Declaration)
        ctor = c[8] if c[8] is not None else ()
        return ast.ControlDecl(c[2].value, c[5], local_decls, c[-2], ctor, _tparams(c[3]), _anns(c[0]),
                               loc=c[2].loc)

    def table_decl(self, c):
        return ast.TableDecl(c[2].value, _only(c[4:-1], ast.TableProperty), _anns(c[0]), loc=c[2].loc)

    def key_property(self, c):
        return ast.KeyProperty("key", elements=_only(c[3:-1], ast.KeyElement), loc=c[0].loc)

    def actions_property(self, c):
        return ast.ActionsProperty("actions", actions=_only(c[3:-1], ast.ActionRef), loc=c[0].loc)

    def entries_property(self, c):
        return ast.EntriesProperty("entries", c[1] is not None, _anns(c[0]), entries=_only(c[5:-1], ast.Entry),
                                   loc=c[2].loc)

    def expr_property(self, c):
        name, value, is_const, anns = c[2].value, c[4], c[1] is not None, _anns(c[0])
        if name == "default_action":
            ref = _as_action_ref(value)
            if ref is not None:
                return ast.DefaultActionProperty(name, is_const, anns, action=ref, loc=c[2].loc)
        return ast.ExpressionProperty(name, is_const, anns, value=value, loc=c[2].loc)

    def key_element(self, c):
        return ast.KeyElement(c[0], c[2].value, _anns(c[3]), loc=_start(c[0]))

    def action_item(self, c):
        name, args = c[1]
        return ast.ActionRef(name.value, args, _anns(c[0]), loc=name.loc)

    def action_ref(self, c):
        return c[0], c[2]

    def entry(self, c):
        name, args = c[4]
        action = ast.ActionRef(name.value, args, loc=name.loc)
        keysets = _keysets(c[2])
        loc = _start(keysets[0]) if keysets else name.loc
        return ast.Entry(keysets, action, c[1], c[0] is not None, _anns(c[5]), loc=loc)

    def entry_priority(self, c):
        if len(c) == 4:
            return self.int_literal([c[2]])
        return c[3]

    # -- statements

    def assign_stmt(self, c):
        return ast.AssignmentStmt(c[0], c[2], c[1].value, loc=_start(c[0]))

    def call_stmt(self, c):
        call = ast.CallExpr(c[0], c[2], loc=_start(c[0]))
        return ast.MethodCallStmt(call, loc=call.loc)

    def generic_call_stmt(self, c):
        call = ast.CallExpr(c[0], c[5], c[2], loc=_start(c[0]))
        return ast.MethodCallStmt(call, loc=call.loc)

    def if_stmt(self, c):
        return ast.IfStmt(c[2], c[4], c[6], loc=c[0].loc)

    def empty_stmt(self, c):
        return ast.EmptyStmt(loc=c[0].loc)

    def block(self, c):
        return ast.BlockStmt(tuple(s for s in c[2:-1] if isinstance(s, ast.Node)), _anns(c[0]), loc=c[1].loc)

    def return_stmt(self, c):
        return ast.ReturnStmt(c[1], loc=c[0].loc)

    def exit_stmt(self, c):
        return ast.ExitStmt(loc=c[0].loc)

    def switch_stmt(self, c):
        return ast.SwitchStmt(c[2], _only(c[5:-1], ast.SwitchCase), loc=c[0].loc)

    def switch_case(self, c):
        return ast.SwitchCase(c[0], c[2], loc=_start(c[0]))

    # -- expressions

    def this_expr(self, c):
        return ast.ThisExpr(loc=c[0].loc)

    def member_expr(self, c):
        return ast.MemberExpr(c[0], c[2].value, loc=c[2].loc)

    def index_expr(self, c):
        return ast.IndexExpr(c[0], c[2], loc=c[1].loc)

    def slice_expr(self, c):
        return ast.SliceExpr(c[0], c[2], c[4], loc=c[1].loc)

    def plus_slice_expr(self, c):
        return ast.PlusSliceExpr(c[0], c[2], c[4], loc=c[1].loc)

    def paren_expr(self, c):
        return c[1]

    def ternary(self, c):
        return ast.TernaryExpr(c[0], c[2], c[4], loc=c[1].loc)

    def binary(self, c):
        return ast.BinaryExpr(c[1].value, c[0], c[2], loc=c[1].loc)

    def shr(self, c):
        return ast.BinaryExpr(">>", c[0], c[3], loc=c[1].loc)

    def unary(self, c):
        return ast.UnaryExpr(c[0].value, c[1], loc=c[0].loc)

    def cast(self, c):
        return ast.CastExpr(c[1], c[3], loc=c[0].loc)

    def call_expr(self, c):
        return ast.CallExpr(c[0], c[2], loc=_start(c[0]))

    def generic_call_expr(self, c):
        return ast.CallExpr(c[0], c[5], c[2], loc=_start(c[0]))

    def list_expr(self, c):
        return ast.ListExpr(_only(c[1:-1], ast.Expression), loc=c[0].loc)

    def struct_expr(self, c):
        return ast.StructExpr(_only(c[1:-1], ast.NamedExpr), loc=c[0].loc)

    def kv_pair(self, c):
        return ast.NamedExpr(c[0].value, c[2], loc=c[0].loc)

    def type_member(self, c):
        return ast.MemberExpr(ast.TypeRefExpr(c[0], loc=c[0].loc), c[2].value, loc=c[2].loc)

    def error_member(self, c):
        err = ast.ErrorType(loc=c[0].loc)
        return ast.MemberExpr(ast.TypeRefExpr(err, loc=c[0].loc), c[2].value, loc=c[2].loc)

    def constructor_call(self, c):
        return ast.ConstructorCallExpr(c[0], c[2], loc=c[0].loc)

    def int_literal(self, c):
        tok = c[0]
        parsed = ast.parse_integer_text(tok.value)
        if parsed is None:
            raise _BuildError(tok.loc, f"invalid integer literal '{tok.value}'")
        value, width, signed = parsed
        if width is not None and width == 0 and value != 0:
            raise _BuildError(tok.loc, f"integer literal '{tok.value}' has width 0")
        return ast.IntLiteral(value, width, signed, tok.value, loc=tok.loc)

    def bool_literal(self, c):
        return ast.BoolLiteral(c[0].type == "TRUE", loc=c[0].loc)

    def string_literal(self, c):
        return ast.StringLiteral(c[0].value[1:-1], loc=c[0].loc)

    def args(self, c):
        return _only(c, ast.Argument)

    def positional_arg(self, c):
        return ast.Argument(c[0], loc=_start(c[0]))

    def named_arg(self, c):
        value = c[2]
        if isinstance(value, Token):
            value = ast.DontCareExpr(loc=value.loc)
        return ast.Argument(value, c[0].value, loc=c[0].loc)

    def dontcare_arg(self, c):
        return ast.Argument(ast.DontCareExpr(loc=c[0].loc), loc=c[0].loc)


def _as_action_ref(value: ast.Expression) -> ast.ActionRef | None:
    if isinstance(value, ast.PathExpr):
        return ast.ActionRef(value.name, None, loc=value.loc)
    if isinstance(value, ast.CallExpr) and isinstance(value.callee, ast.PathExpr) and not value.type_args:
        return ast.ActionRef(value.callee.name, value.args, loc=value.callee.loc)
    return None
