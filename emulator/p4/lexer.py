"""P4-16 lexer: source text to tokens, annotations folded into one token,
and every identifier classified as a type name or not.

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
"""

from __future__ import annotations

import re

from lark import Token

from emulator.p4 import ast
from emulator.p4.errors import Diagnostic, SourceLocation
from emulator.p4.preprocessor import PreprocessedSource

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
