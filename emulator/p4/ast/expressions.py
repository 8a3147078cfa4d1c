"""Expression nodes: literals, names, member/index/slice access, calls,
operators, casts, list and structure expressions, and the keyset forms of
select cases and table entries (``default``, ``&&&``, ``..``). The select
expression itself lives with the parser nodes in :mod:`.blocks`."""

from __future__ import annotations

from emulator.p4.ast.base import Node, syntax_node
from emulator.p4.ast.types import Type


@syntax_node
class Expression(Node):
    pass


@syntax_node
class IntLiteral(Expression):
    """An integer literal; ``width`` is None for untyped literals (type ``int``)."""

    value: int
    width: int | None = None
    signed: bool = False
    text: str = ""


@syntax_node
class BoolLiteral(Expression):
    value: bool


@syntax_node
class StringLiteral(Expression):
    """``value`` is the text between the quotes, escapes left as written."""

    value: str


@syntax_node
class PathExpr(Expression):
    """A name used as a value: a variable, constant, parameter, action,
    instance, table, parser state or function."""

    name: str


@syntax_node
class TypeRefExpr(Expression):
    """A type used where an expression is expected: the ``T`` of ``T.member``
    (enum members, ``error.NoError``)."""

    type: Type


@syntax_node
class ThisExpr(Expression):
    pass


@syntax_node
class MemberExpr(Expression):
    """``base.member``; ``loc`` points at the member name."""

    base: Expression
    member: str


@syntax_node
class IndexExpr(Expression):
    """``base[index]`` (header stack element)."""

    base: Expression
    index: Expression


@syntax_node
class SliceExpr(Expression):
    """``base[hi:lo]``."""

    base: Expression
    hi: Expression
    lo: Expression


@syntax_node
class PlusSliceExpr(Expression):
    """``base[lo +: width]``."""

    base: Expression
    lo: Expression
    width: Expression


@syntax_node
class Argument(Node):
    """A call argument; ``name`` is set for ``f(name = value)``."""

    value: Expression
    name: str | None = None


@syntax_node
class CallExpr(Expression):
    """``callee<type_args>(args)``: method, function, action or extern call."""

    callee: Expression
    args: tuple[Argument, ...]
    type_args: tuple[Type, ...] = ()


@syntax_node
class ConstructorCallExpr(Expression):
    """``Type(args)``, for example ``action_selector(...)`` or ``MyParser()``."""

    type: Type
    args: tuple[Argument, ...]


@syntax_node
class UnaryExpr(Expression):
    """``op`` is one of ``! ~ - +``."""

    op: str
    operand: Expression


@syntax_node
class BinaryExpr(Expression):
    """``op`` as written: ``* / % + - |+| |-| ++ << >> & ^ | < <= > >= == != && ||``."""

    op: str
    left: Expression
    right: Expression


@syntax_node
class TernaryExpr(Expression):
    cond: Expression
    if_true: Expression
    if_false: Expression


@syntax_node
class CastExpr(Expression):
    type: Type
    expr: Expression


@syntax_node
class ListExpr(Expression):
    """``{a, b, c}``: a tuple or list value, or an initialiser."""

    elements: tuple[Expression, ...]


@syntax_node
class NamedExpr(Node):
    name: str
    value: Expression


@syntax_node
class StructExpr(Expression):
    """``{f = 1, g = 2}``: a structure-valued expression."""

    fields: tuple[NamedExpr, ...]


@syntax_node
class DontCareExpr(Expression):
    """``_`` as an argument."""


@syntax_node
class DefaultExpr(Expression):
    """``default`` or ``_`` in a select case, a table entry or a switch label."""


@syntax_node
class MaskExpr(Expression):
    """``value &&& mask`` in a keyset."""

    value: Expression
    mask: Expression


@syntax_node
class RangeExpr(Expression):
    """``lo .. hi`` in a keyset."""

    lo: Expression
    hi: Expression
