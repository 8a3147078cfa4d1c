"""P4-16 types as the type checker resolves them and the executor lays them out.

Every type is an immutable value object; two structurally equal types compare
equal except named types (header, struct, enum…), which compare by name since
P4 typing is nominal for them. Widths are in bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class BitsType:
    """``bit<W>`` (``signed=False``) or ``int<W>`` (``signed=True``)."""

    width: int
    signed: bool = False

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass(frozen=True)
class VarbitType:
    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class BoolType:
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class InfIntType:
    """The type of an integer literal without a width; folded away by the
    checker before anything reaches the executor."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class StringType:
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidType:
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class ErrorType:
    """The program's ``error`` type. ``members`` lists every error name in
    declaration order (core.p4's first); a value is its index."""

    members: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "error"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ErrorType)

    def __hash__(self) -> int:
        return hash("error")


@dataclass(frozen=True)
class MatchKindType:
    def __str__(self) -> str:
        return "match_kind"


@dataclass(frozen=True, eq=False)
class EnumType:
    """An enum. Without ``underlying`` its members are abstract and a value is
    the member's index; with one (``enum bit<8> E {…}``) a value is the
    member's integer and any integer of that width is a valid value."""

    name: str
    members: tuple[str, ...]
    underlying: BitsType | None = None
    values: tuple[int, ...] = ()

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EnumType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("enum", self.name))

    def value_of(self, member: str) -> int:
        index = self.members.index(member)
        return self.values[index] if self.underlying is not None else index


@dataclass(frozen=True)
class Field:
    name: str
    type: "Type"
    annotations: tuple["Annotation", ...] = ()


@dataclass(frozen=True, eq=False)
class _Aggregate:
    name: str
    fields: tuple[Field, ...]
    annotations: tuple["Annotation", ...] = ()

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.name == self.name  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name))

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


@dataclass(frozen=True, eq=False)
class HeaderType(_Aggregate):
    """Fields are ``BitsType``, ``VarbitType`` (at most one) or serializable
    ``EnumType``. ``width`` is the fixed part's width in bits."""

    @property
    def width(self) -> int:
        total = 0
        for f in self.fields:
            total += field_width(f.type)
        return total

    @property
    def has_varbit(self) -> bool:
        return any(isinstance(f.type, VarbitType) for f in self.fields)


@dataclass(frozen=True, eq=False)
class HeaderUnionType(_Aggregate):
    """Fields are headers; at most one is valid at a time."""


@dataclass(frozen=True, eq=False)
class StructType(_Aggregate):
    pass


@dataclass(frozen=True)
class TupleType:
    elements: tuple["Type", ...]

    def __str__(self) -> str:
        return f"tuple<{', '.join(map(str, self.elements))}>"


@dataclass(frozen=True)
class StackType:
    """``H[size]`` where ``H`` is a header or header union type."""

    element: "HeaderType | HeaderUnionType"
    size: int

    def __str__(self) -> str:
        return f"{self.element}[{self.size}]"


@dataclass(frozen=True)
class ExternType:
    """An extern object type, with its type arguments (``register<bit<32>>``)."""

    name: str
    type_args: tuple["Type", ...] = ()

    def __str__(self) -> str:
        if not self.type_args:
            return self.name
        return f"{self.name}<{', '.join(map(str, self.type_args))}>"


@dataclass(frozen=True)
class Annotation:
    """``@name(body)``. ``args`` holds the body's expressions when they are
    constants or strings (``@name("x")`` → ``("x",)``, ``@id(3)`` → ``(3,)``);
    ``raw`` holds the unparsed body text for any annotation. ``tokens`` are
    the body's tokens as written (string literals with their double quotes:
    ``raw`` is them joined by single spaces); ``structured`` marks
    ``@name[...]`` bodies (P4-16 structured annotations)."""

    name: str
    args: tuple[object, ...] = ()
    raw: str = ""
    tokens: tuple[str, ...] = ()
    structured: bool = False


Type = Union[
    BitsType, VarbitType, BoolType, InfIntType, StringType, VoidType, ErrorType,
    MatchKindType, EnumType, HeaderType, HeaderUnionType, StructType, TupleType,
    StackType, ExternType,
]

BOOL = BoolType()
VOID = VoidType()


def field_width(t: Type) -> int:
    """Width in bits of a header field's fixed-size type (varbit counts 0)."""
    if isinstance(t, BitsType):
        return t.width
    if isinstance(t, EnumType) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, VarbitType):
        return 0
    raise TypeError(f"{t} has no fixed width")


def find_annotation(annotations: tuple[Annotation, ...], name: str) -> Annotation | None:
    for a in annotations:
        if a.name == name:
            return a
    return None
