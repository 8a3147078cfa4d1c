"""Annotations of the front end's IR as P4Info shows them.

p4c prints an annotation in P4Info as its ``ToP4`` pass prints it: the
annotations p4c parses (``@noWarn``, ``@controller_header``, ...) as
expressions joined by ``", "``, the others token by token
(``Annotation.tokens``).  Structured annotations (``@x[...]``) are
evaluated (literals, unary/binary operators and parentheses).  Also here:
what the converter (:mod:`.from_ir`) reads from annotations -- ``@id``,
``@hidden``, ``@name`` (the control-plane name) and integer or string
arguments.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from emulator.p4 import types as T
from emulator.p4.ast import parse_integer_text

from . import model as m
from .ids import P4InfoError

#: Annotations whose body p4c parses as expressions before P4Info is built
#: (frontends/p4/parseAnnotations.cpp, control-plane/p4RuntimeAnnotations.h).
_PARSED_EXPRESSIONS = frozenset({
    "name", "deprecated", "noWarn", "length", "match", "synchronous", "field_list",
    "command_line", "controller_header", "id", "brief", "description", "max_group_size",
    "selector_size_semantics", "max_member_weight", "p4runtime_translation",
})
#: Annotations p4c parses as ``key=value`` lists.
PARSED_KV = frozenset({"pkginfo", "platform_property"})

_OPEN = {"(": ")", "[": "]", "{": "}"}


def body_tokens(a: T.Annotation) -> tuple[str, ...]:
    """The body tokens of ``a`` (string literals in double quotes)."""
    if a.tokens:
        return a.tokens
    if a.args:  # an annotation built without the parser (tests, irkit)
        out: list[str] = []
        for i, v in enumerate(a.args):
            if i:
                out.append(",")
            out.append('"%s"' % v if isinstance(v, str) else str(v))
        return tuple(out)
    return tuple(a.raw.split()) if a.raw else ()


def split_commas(tokens: Sequence[str]) -> list[list[str]]:
    """Top-level comma-separated groups of ``tokens``."""
    groups: list[list[str]] = [[]]
    depth = 0
    for tok in tokens:
        if tok in _OPEN:
            depth += 1
        elif tok in (")", "]", "}"):
            depth -= 1
        if tok == "," and depth == 0:
            groups.append([])
        else:
            groups[-1].append(tok)
    if groups == [[]]:
        return []
    return groups


def _is_word(tok: str) -> bool:
    return bool(tok) and (tok[0].isalnum() or tok[0] in "_$")


def _print_expr(tokens: Sequence[str]) -> str:
    """An expression's tokens spaced as p4c's ToP4 prints the expression."""
    out = ""
    prev: Optional[str] = None
    prev2: Optional[str] = None
    for tok in tokens:
        glue = (
            prev is None
            or tok in (")", "]", ".", ",")
            or prev in ("(", "[", ".")
            or (tok in ("(", "[") and prev is not None and (_is_word(prev) or prev in (")", "]")))
            or (prev in ("-", "!", "~") and (prev2 is None or not (
                _is_word(prev2) or prev2 in (")", "]") or prev2.startswith('"'))))
        )
        out += tok if glue else " " + tok
        prev2, prev = prev, tok
    return out


def render_annotation(a: T.Annotation) -> m.Annotation:
    """The unstructured annotation ``a`` as p4c prints it in P4Info."""
    tokens = body_tokens(a)
    if not tokens:
        return m.Annotation(a.name)
    if a.name in _PARSED_EXPRESSIONS:
        return m.Annotation.from_exprs(a.name, [_print_expr(g) for g in split_commas(tokens)])
    if a.name in PARSED_KV:
        parts = []
        for g in split_commas(tokens):
            if len(g) >= 2 and g[1] == "=":
                parts.append("%s=%s" % (g[0], _print_expr(g[2:])))
            else:
                parts.append(_print_expr(g))
        return m.Annotation(a.name, "@%s(%s)" % (a.name, ", ".join(parts)))
    return m.Annotation.from_tokens(a.name, tokens)


# ---- structured annotations: compile-time values of token expressions


class _ExprParser:
    """Evaluates a structured annotation expression (literals and operators,
    as p4c's constant folding does before serializing them)."""

    _BINARY = [
        ("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("|",), ("^",), ("&",),
        ("<<", ">>"), ("+", "-", "++"), ("*", "/", "%"),
    ]

    def __init__(self, tokens: Sequence[str], where: str) -> None:
        self.toks = list(tokens)
        self.i = 0
        self.where = where

    def fail(self, what: str) -> P4InfoError:
        return P4InfoError(f"{self.where}: {what}: structured annotation expression "
                           "should be a literal")

    def peek(self) -> Optional[str]:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise self.fail("unexpected end")
        self.i += 1
        return tok

    def parse(self) -> m.StructuredValue:
        value = self.binary(0)
        if self.peek() is not None:
            raise self.fail(f"unexpected {self.peek()!r}")
        return value

    def binary(self, level: int) -> m.StructuredValue:
        if level == len(self._BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self._BINARY[level]:
            op = self.take()
            right = self.binary(level + 1)
            left = self.apply(op, left, right)
        return left

    def apply(self, op: str, a: m.StructuredValue, b: m.StructuredValue) -> m.StructuredValue:
        if op in ("==", "!="):
            return (a == b) == (op == "==")
        if op in ("&&", "||"):
            if not isinstance(a, bool) or not isinstance(b, bool):
                raise self.fail(op)
            return (a and b) if op == "&&" else (a or b)
        if op == "++" and isinstance(a, str) and isinstance(b, str):
            return a + b
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, int) \
                or not isinstance(b, int):
            raise self.fail(op)
        if op in ("/", "%") and b == 0:
            raise self.fail("division by zero")
        return {
            "<": lambda: a < b, "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b,
            "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
            "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
            "*": lambda: a * b, "/": lambda: a // b, "%": lambda: a % b,
        }[op]()

    def unary(self) -> m.StructuredValue:
        tok = self.take()
        if tok == "(":
            value = self.binary(0)
            if self.take() != ")":
                raise self.fail("missing ')'")
            return value
        if tok in ("-", "!", "~"):
            value = self.unary()
            if tok == "!" and isinstance(value, bool):
                return not value
            if tok != "!" and isinstance(value, int) and not isinstance(value, bool):
                return -value if tok == "-" else ~value
            raise self.fail(tok)
        if tok.startswith('"') and tok.endswith('"') and len(tok) >= 2:
            return tok[1:-1]
        if tok in ("true", "false"):
            return tok == "true"
        parsed = parse_integer_text(tok)
        if parsed is not None:
            return parsed[0]
        raise self.fail(repr(tok))


def _structured(a: T.Annotation, where: str) -> m.StructuredAnnotation:
    groups = split_commas(body_tokens(a))
    if groups and all(len(g) >= 2 and _is_word(g[0]) and g[1] == "=" for g in groups):
        pairs = tuple((g[0], _ExprParser(g[2:], where).parse()) for g in groups)
        return m.StructuredAnnotation(a.name, kv_pairs=pairs)
    values = tuple(_ExprParser(g, where).parse() for g in groups)
    return m.StructuredAnnotation(a.name, expressions=values)


def string_arg(a: T.Annotation) -> Optional[str]:
    if a.args and isinstance(a.args[0], str):
        return a.args[0]
    toks = body_tokens(a)
    if len(toks) == 1 and toks[0].startswith('"') and toks[0].endswith('"'):
        return toks[0][1:-1]
    return None


def int_arg(a: T.Annotation, where: str) -> int:
    if a.args and isinstance(a.args[0], int) and not isinstance(a.args[0], bool):
        return a.args[0]
    toks = body_tokens(a)
    if len(toks) == 1:
        parsed = parse_integer_text(toks[0])
        if parsed is not None:
            return parsed[0]
    raise P4InfoError(f"{where}: @{a.name} needs an integer argument")


def convert_annotations(annotations: Iterable[T.Annotation], where: str = "") -> dict:
    """``annotations`` as the keyword arguments of :class:`~.model.Annotated`:
    ``annotations``, ``structured_annotations``, ``brief`` and
    ``description``."""
    plain: list[m.Annotation] = []
    structured: list[m.StructuredAnnotation] = []
    brief = description = None
    for a in annotations:
        if a.structured:
            structured.append(_structured(a, where))
            continue
        if a.name == "brief":
            brief = string_arg(a)
        elif a.name == "description":
            description = string_arg(a)
        plain.append(render_annotation(a))
    return dict(annotations=plain, structured_annotations=structured, brief=brief,
                description=description)


def plain_annotation(annotations: Iterable[T.Annotation], name: str) -> Optional[T.Annotation]:
    for a in annotations:
        if a.name == name and not a.structured:
            return a
    return None


def annotated_id(annotations: Iterable[T.Annotation], where: str) -> Optional[int]:
    a = plain_annotation(annotations, "id")
    return None if a is None else int_arg(a, where)


def is_hidden(annotations: Iterable[T.Annotation]) -> bool:
    return plain_annotation(annotations, "hidden") is not None


def control_plane_name(name: str, annotations: Iterable[T.Annotation]) -> str:
    """p4c ``controlPlaneName``: the ``@name`` string (one leading dot
    dropped) or the identifier."""
    a = plain_annotation(annotations, "name")
    given = None if a is None else string_arg(a)
    if given is None:
        return name
    return given[1:] if given.startswith(".") else given
