"""The syntax tree of a P4-16 program, as the parser builds it.

Every node is a frozen dataclass with a ``loc`` (the original file, line and
column, mapped back through the preprocessor). Nodes compare and hash by
identity, so a later pass can keep facts about a node (its type, the
declaration a name refers to) in a dict keyed by the node itself; use
:func:`dump` to compare trees by structure.

Names are plain strings; the node's ``loc`` points at the name for
declarations, at the operator for unary and binary expressions and at the
first token otherwise. Sequences are tuples. Nothing here resolves names or
checks types: that is the next pass's job.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterator, Union

from emulator.p4.errors import SourceLocation

_node = dataclass(frozen=True, eq=False, slots=True)


@_node
class Node:
    loc: SourceLocation = field(kw_only=True, repr=False)


# --------------------------------------------------------------------------
# Annotations


@_node
class AnnotationToken(Node):
    """One token of an unparsed annotation body.

    ``kind`` is ``"string"`` (``text`` without the quotes), ``"integer"``,
    ``"name"`` or ``"symbol"`` (punctuation and keywords, ``text`` as written).
    """

    kind: str
    text: str


@_node
class Annotation(Node):
    """``@name``, ``@name(tokens...)`` or ``@name[tokens...]`` (``structured``).

    The body is kept as raw tokens, as p4c does, because an annotation's
    meaning (and so how to parse its body) depends on its name.
    """

    name: str
    body: tuple[AnnotationToken, ...] = ()
    structured: bool = False

    @property
    def string_value(self) -> str | None:
        """The string of a body made of exactly one string literal."""
        if len(self.body) == 1 and self.body[0].kind == "string":
            return self.body[0].text
        return None

    @property
    def integer_values(self) -> tuple[int, ...] | None:
        """The values of a body of comma-separated integer literals, else None."""
        values: list[int] = []
        expect_value = True
        for tok in self.body:
            if expect_value and tok.kind == "integer":
                value = parse_integer_text(tok.text)
                if value is None:
                    return None
                values.append(value[0])
            elif not expect_value and tok.text == ",":
                pass
            else:
                return None
            expect_value = not expect_value
        if expect_value and values:
            return None  # trailing comma
        return tuple(values)


Annotations = tuple[Annotation, ...]


def find_annotation(annotations: Annotations, name: str) -> Annotation | None:
    for annotation in annotations:
        if annotation.name == name:
            return annotation
    return None


# --------------------------------------------------------------------------
# Types


@_node
class Type(Node):
    pass


@_node
class BoolType(Type):
    pass


@_node
class StringType(Type):
    pass


@_node
class ErrorType(Type):
    """The ``error`` type."""


@_node
class MatchKindType(Type):
    pass


@_node
class VoidType(Type):
    pass


@_node
class DontCareType(Type):
    """``_`` as a type argument (inferred)."""


@_node
class IntType(Type):
    """``int``: the arbitrary-precision integer type of untyped constants."""


@_node
class BitsType(Type):
    """``bit<W>`` (``signed=False``) or ``int<W>`` (``signed=True``); ``bit`` is ``bit<1>``."""

    width: Expression
    signed: bool = False


@_node
class VarbitType(Type):
    max_width: Expression


@_node
class TypeName(Type):
    """A reference to a named type: typedef, header, struct, enum, extern,
    parser, control, package or a type variable."""

    name: str


@_node
class SpecializedType(Type):
    """``base<args>``, for example ``register<bit<32>>``."""

    base: TypeName
    args: tuple[Type, ...]


@_node
class HeaderStackType(Type):
    """``element[size]``."""

    element: Type
    size: Expression


@_node
class TupleType(Type):
    elements: tuple[Type, ...]


# --------------------------------------------------------------------------
# Expressions


@_node
class Expression(Node):
    pass


@_node
class IntLiteral(Expression):
    """An integer literal; ``width`` is None for untyped literals (type ``int``)."""

    value: int
    width: int | None = None
    signed: bool = False
    text: str = ""


@_node
class BoolLiteral(Expression):
    value: bool


@_node
class StringLiteral(Expression):
    """``value`` is the text between the quotes, escapes left as written."""

    value: str


@_node
class PathExpr(Expression):
    """A name used as a value: a variable, constant, parameter, action,
    instance, table, parser state or function."""

    name: str


@_node
class TypeRefExpr(Expression):
    """A type used where an expression is expected: the ``T`` of ``T.member``
    (enum members, ``error.NoError``)."""

    type: Type


@_node
class ThisExpr(Expression):
    pass


@_node
class MemberExpr(Expression):
    """``base.member``; ``loc`` points at the member name."""

    base: Expression
    member: str


@_node
class IndexExpr(Expression):
    """``base[index]`` (header stack element)."""

    base: Expression
    index: Expression


@_node
class SliceExpr(Expression):
    """``base[hi:lo]``."""

    base: Expression
    hi: Expression
    lo: Expression


@_node
class PlusSliceExpr(Expression):
    """``base[lo +: width]``."""

    base: Expression
    lo: Expression
    width: Expression


@_node
class Argument(Node):
    """A call argument; ``name`` is set for ``f(name = value)``."""

    value: Expression
    name: str | None = None


@_node
class CallExpr(Expression):
    """``callee<type_args>(args)``: method, function, action or extern call."""

    callee: Expression
    args: tuple[Argument, ...]
    type_args: tuple[Type, ...] = ()


@_node
class ConstructorCallExpr(Expression):
    """``Type(args)``, for example ``action_selector(...)`` or ``MyParser()``."""

    type: Type
    args: tuple[Argument, ...]


@_node
class UnaryExpr(Expression):
    """``op`` is one of ``! ~ - +``."""

    op: str
    operand: Expression


@_node
class BinaryExpr(Expression):
    """``op`` as written: ``* / % + - |+| |-| ++ << >> & ^ | < <= > >= == != && ||``."""

    op: str
    left: Expression
    right: Expression


@_node
class TernaryExpr(Expression):
    cond: Expression
    if_true: Expression
    if_false: Expression


@_node
class CastExpr(Expression):
    type: Type
    expr: Expression


@_node
class ListExpr(Expression):
    """``{a, b, c}``: a tuple or list value, or an initialiser."""

    elements: tuple[Expression, ...]


@_node
class NamedExpr(Node):
    name: str
    value: Expression


@_node
class StructExpr(Expression):
    """``{f = 1, g = 2}``: a structure-valued expression."""

    fields: tuple[NamedExpr, ...]


@_node
class DontCareExpr(Expression):
    """``_`` as an argument."""


@_node
class DefaultExpr(Expression):
    """``default`` or ``_`` in a select case, a table entry or a switch label."""


@_node
class MaskExpr(Expression):
    """``value &&& mask`` in a keyset."""

    value: Expression
    mask: Expression


@_node
class RangeExpr(Expression):
    """``lo .. hi`` in a keyset."""

    lo: Expression
    hi: Expression


# --------------------------------------------------------------------------
# Statements


@_node
class Statement(Node):
    pass


@_node
class AssignmentStmt(Statement):
    """``target = value;``; ``op`` is ``=`` or a compound operator such as ``+=``."""

    target: Expression
    value: Expression
    op: str = "="


@_node
class MethodCallStmt(Statement):
    call: CallExpr


@_node
class BlockStmt(Statement):
    statements: tuple[Node, ...]
    annotations: Annotations = ()


@_node
class IfStmt(Statement):
    cond: Expression
    then: Statement
    else_: Statement | None = None


@_node
class SwitchCase(Node):
    """``label: body``; ``body`` is None for a label that falls through."""

    label: Expression
    body: BlockStmt | None


@_node
class SwitchStmt(Statement):
    expr: Expression
    cases: tuple[SwitchCase, ...]


@_node
class ExitStmt(Statement):
    pass


@_node
class ReturnStmt(Statement):
    value: Expression | None = None


@_node
class EmptyStmt(Statement):
    pass


# --------------------------------------------------------------------------
# Declarations


@_node
class Declaration(Node):
    """Something with a name; ``loc`` points at the name."""

    name: str


@_node
class TypeParam(Declaration):
    pass


@_node
class Param(Declaration):
    """``direction`` is ``""`` (directionless), ``"in"``, ``"out"`` or ``"inout"``."""

    type: Type
    direction: str = ""
    default: Expression | None = None
    annotations: Annotations = ()


@_node
class ConstantDecl(Declaration):
    type: Type
    value: Expression
    annotations: Annotations = ()


@_node
class VariableDecl(Declaration):
    type: Type
    init: Expression | None = None
    annotations: Annotations = ()


@_node
class Instantiation(Declaration):
    """``Type(args) name;``; ``initializer`` holds the declarations of an
    ``= { ... }`` block (implementations of abstract methods)."""

    type: Type
    args: tuple[Argument, ...]
    annotations: Annotations = ()
    initializer: tuple[Declaration, ...] | None = None


@_node
class StructField(Declaration):
    type: Type
    annotations: Annotations = ()


@_node
class StructLikeDecl(Declaration):
    fields: tuple[StructField, ...]
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@_node
class HeaderTypeDecl(StructLikeDecl):
    pass


@_node
class HeaderUnionDecl(StructLikeDecl):
    pass


@_node
class StructTypeDecl(StructLikeDecl):
    pass


@_node
class EnumMember(Declaration):
    value: Expression | None = None


@_node
class EnumDecl(Declaration):
    """``enum E { A, B }`` or, with ``underlying`` set, ``enum bit<8> E { A = 1 }``."""

    members: tuple[EnumMember, ...]
    underlying: Type | None = None
    annotations: Annotations = ()


@_node
class DeclaredId(Declaration):
    """A member of an ``error`` or ``match_kind`` declaration."""


@_node
class ErrorDecl(Node):
    members: tuple[DeclaredId, ...]


@_node
class MatchKindDecl(Node):
    members: tuple[DeclaredId, ...]


@_node
class TypedefDecl(Declaration):
    """``typedef type name;``; ``type`` may be a struct-like or enum declaration."""

    type: Union[Type, StructLikeDecl, EnumDecl]
    annotations: Annotations = ()


@_node
class NewTypeDecl(Declaration):
    """``type type name;``."""

    type: Type
    annotations: Annotations = ()


@_node
class MethodDecl(Declaration):
    """An extern method; ``return_type`` is None for a constructor."""

    return_type: Type | None
    params: tuple[Param, ...]
    type_params: tuple[TypeParam, ...] = ()
    is_abstract: bool = False
    annotations: Annotations = ()

    @property
    def is_constructor(self) -> bool:
        return self.return_type is None


@_node
class ExternDecl(Declaration):
    """``extern Name<T> { methods }``."""

    methods: tuple[MethodDecl, ...]
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@_node
class ExternFunctionDecl(Declaration):
    return_type: Type
    params: tuple[Param, ...]
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@_node
class FunctionDecl(Declaration):
    return_type: Type
    params: tuple[Param, ...]
    body: BlockStmt
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@_node
class ActionDecl(Declaration):
    params: tuple[Param, ...]
    body: BlockStmt
    annotations: Annotations = ()


@_node
class ParserTypeDecl(Declaration):
    params: tuple[Param, ...]
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@_node
class ControlTypeDecl(Declaration):
    params: tuple[Param, ...]
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@_node
class PackageTypeDecl(Declaration):
    params: tuple[Param, ...]
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@_node
class ValueSetDecl(Declaration):
    """``value_set<element_type>(size) name;``."""

    element_type: Type
    size: Expression
    annotations: Annotations = ()


@_node
class SelectCase(Node):
    """``keysets : state;``; one keyset per select key (a 1-tuple for one key)."""

    keysets: tuple[Expression, ...]
    state: str


@_node
class SelectExpr(Expression):
    keys: tuple[Expression, ...]
    cases: tuple[SelectCase, ...]


@_node
class ParserState(Declaration):
    """``transition`` is a :class:`PathExpr` (next state), a :class:`SelectExpr`
    or None (no transition statement: the state goes to reject)."""

    statements: tuple[Node, ...]
    transition: Expression | None
    annotations: Annotations = ()


@_node
class ParserDecl(Declaration):
    params: tuple[Param, ...]
    locals: tuple[Declaration, ...]
    states: tuple[ParserState, ...]
    ctor_params: tuple[Param, ...] = ()
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@_node
class KeyElement(Node):
    """``expr : match_kind @annotations;``."""

    expr: Expression
    match_kind: str
    annotations: Annotations = ()


@_node
class ActionRef(Node):
    """An action named in a table: ``name`` or ``name(args)`` (``args`` None
    when written without parentheses)."""

    name: str
    args: tuple[Argument, ...] | None = None
    annotations: Annotations = ()


@_node
class Entry(Node):
    """A constant table entry; one keyset per key element."""

    keysets: tuple[Expression, ...]
    action: ActionRef
    priority: Expression | None = None
    is_const: bool = False
    annotations: Annotations = ()


@_node
class TableProperty(Node):
    name: str
    is_const: bool = False
    annotations: Annotations = ()


@_node
class KeyProperty(TableProperty):
    elements: tuple[KeyElement, ...] = ()


@_node
class ActionsProperty(TableProperty):
    actions: tuple[ActionRef, ...] = ()


@_node
class EntriesProperty(TableProperty):
    entries: tuple[Entry, ...] = ()


@_node
class DefaultActionProperty(TableProperty):
    action: ActionRef | None = None


@_node
class ExpressionProperty(TableProperty):
    """Any other property: ``size = 1024;``, ``counters = c;``,
    ``implementation = action_selector(...);``, ``default_action`` values that
    are not an action call."""

    value: Expression | None = None


@_node
class TableDecl(Declaration):
    properties: tuple[TableProperty, ...]
    annotations: Annotations = ()

    def get_property(self, name: str) -> TableProperty | None:
        for prop in self.properties:
            if prop.name == name:
                return prop
        return None

    @property
    def key(self) -> tuple[KeyElement, ...]:
        prop = self.get_property("key")
        return prop.elements if isinstance(prop, KeyProperty) else ()

    @property
    def actions(self) -> tuple[ActionRef, ...]:
        prop = self.get_property("actions")
        return prop.actions if isinstance(prop, ActionsProperty) else ()

    @property
    def default_action(self) -> ActionRef | None:
        prop = self.get_property("default_action")
        return prop.action if isinstance(prop, DefaultActionProperty) else None

    @property
    def entries(self) -> tuple[Entry, ...]:
        prop = self.get_property("entries")
        return prop.entries if isinstance(prop, EntriesProperty) else ()


@_node
class ControlDecl(Declaration):
    params: tuple[Param, ...]
    locals: tuple[Declaration, ...]
    body: BlockStmt
    ctor_params: tuple[Param, ...] = ()
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@_node
class Program(Node):
    """A whole program, core.p4 and the architecture file included."""

    declarations: tuple[Node, ...]


# --------------------------------------------------------------------------
# Helpers


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
