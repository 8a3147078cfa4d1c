"""The base of every syntax-tree node, and what works on any node.

:class:`Node` and the :func:`syntax_node` decorator that makes each node
class a frozen, slotted dataclass comparing by identity; the generic
traversals :func:`children` and :func:`walk`; :func:`dump`, the
location-free rendering tests compare; and :func:`parse_integer_text`, the
value of P4 integer literal text (used by the tree builder, annotations and
P4Info).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterator

from emulator.p4.errors import SourceLocation

syntax_node = dataclass(frozen=True, eq=False, slots=True)


@syntax_node
class Node:
    loc: SourceLocation = field(kw_only=True, repr=False)


def parse_integer_text(text: str) -> tuple[int, int | None, bool] | None:
    """``(value, width, signed)`` of a P4 integer literal such as ``8w0xFF``.

    Returns None when ``text`` is not a well-formed literal.
    """
    width: int | None = None
    signed = False
    digits = text.replace("_", "")
    for marker in ("w", "s"):
        head, sep, tail = digits.partition(marker)
        if sep and head.isdigit():
            width, signed, digits = int(head), marker == "s", tail
            break
    base = 10
    if len(digits) > 2 and digits[0] == "0" and digits[1] in "xXbBoOdD":
        base = {"x": 16, "b": 2, "o": 8, "d": 10}[digits[1].lower()]
        digits = digits[2:]
    try:
        return int(digits, base), width, signed
    except ValueError:
        return None


def children(node: Node) -> Iterator[Node]:
    """The direct child nodes of ``node``, in field order."""
    for f in dataclasses.fields(node):
        if f.name == "loc":
            continue
        value = getattr(node, f.name)
        if isinstance(value, Node):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, Node):
                    yield item


def walk(node: Node) -> Iterator[Node]:
    """``node`` and all its descendants, depth first, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(children(current))))


def dump(node: object) -> str:
    """A compact, location-free rendering of a tree, for tests and debugging."""
    if isinstance(node, Node):
        parts = []
        for f in dataclasses.fields(node):
            if f.name == "loc":
                continue
            value = getattr(node, f.name)
            if f.default is not dataclasses.MISSING and value == f.default:
                continue
            parts.append(f"{f.name}={dump(value)}")
        return f"{type(node).__name__}({', '.join(parts)})"
    if isinstance(node, tuple):
        return "[" + ", ".join(dump(item) for item in node) + "]"
    return repr(node)
