"""Type nodes: types as written in the source (``bit<8>``, ``H[4]``,
``register<bit<32>>``, a type name). Resolving them is the checker's job
(:mod:`emulator.p4.check.typeres`, giving :mod:`emulator.p4.types`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.p4.ast.base import Node, syntax_node

if TYPE_CHECKING:
    from emulator.p4.ast.expressions import Expression


@syntax_node
class Type(Node):
    pass


@syntax_node
class BoolType(Type):
    pass


@syntax_node
class StringType(Type):
    pass


@syntax_node
class ErrorType(Type):
    """The ``error`` type."""


@syntax_node
class MatchKindType(Type):
    pass


@syntax_node
class VoidType(Type):
    pass


@syntax_node
class DontCareType(Type):
    """``_`` as a type argument (inferred)."""


@syntax_node
class IntType(Type):
    """``int``: the arbitrary-precision integer type of untyped constants."""


@syntax_node
class BitsType(Type):
    """``bit<W>`` (``signed=False``) or ``int<W>`` (``signed=True``); ``bit`` is ``bit<1>``."""

    width: Expression
    signed: bool = False


@syntax_node
class VarbitType(Type):
    max_width: Expression


@syntax_node
class TypeName(Type):
    """A reference to a named type: typedef, header, struct, enum, extern,
    parser, control, package or a type variable."""

    name: str


@syntax_node
class SpecializedType(Type):
    """``base<args>``, for example ``register<bit<32>>``."""

    base: TypeName
    args: tuple[Type, ...]


@syntax_node
class HeaderStackType(Type):
    """``element[size]``."""

    element: Type
    size: Expression


@syntax_node
class TupleType(Type):
    elements: tuple[Type, ...]
