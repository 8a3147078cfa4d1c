"""The typed intermediate representation: what the type checker produces and
what the executor and the P4Info generator consume.

The IR is the program after name resolution, type checking and constant
folding:

- every expression carries its resolved :mod:`emulator.p4.types` type, and
  integer literals have their final width (no ``InfIntType`` survives);
- ``const`` declarations, enum members, ``error.X`` and compile-time methods
  (``minSizeInBits`` …) are folded into :class:`Const`;
- every name refers to its declaration object (:class:`Local`,
  :class:`Action`, :class:`Table`, :class:`Instance` …), never to a string;
- tables, actions and extern instances carry the control-plane name p4c gives
  them (``MyIngress.ipv4_lpm``, ``NoAction``), with ``@name`` applied;
- instantiated sub-controls and sub-parsers become their own :class:`Control`
  / :class:`Parser` objects (one per instance, objects named with the
  instance path) applied with :class:`SubApply`.

Object identity matters: a :class:`Local` is one storage slot, an
:class:`Action` is one action; compare them with ``is``. Nodes are built once
by the checker and not mutated afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from emulator.p4.errors import SourceLocation
from emulator.p4.types import Annotation, ExternType, Type

# --------------------------------------------------------------------------
# Storage


@dataclass(eq=False)
class Local:
    """A storage slot: a parameter, a local variable of a parser, control,
    action or function, or a block-scoped variable. ``direction`` is "" for
    variables and directionless parameters, else "in", "out" or "inout"."""

    name: str
    type: Type
    direction: str = ""
    annotations: tuple[Annotation, ...] = ()
    loc: SourceLocation | None = field(default=None, kw_only=True)


# --------------------------------------------------------------------------
# Expressions. ``type`` is the expression's resolved type.


@dataclass(eq=False)
class Expr:
    type: Type


@dataclass(eq=False)
class Const(Expr):
    """A constant: ``int`` for bit/int/enum/error/match_kind values, ``bool``
    for booleans, ``str`` for strings. Signed values are stored as Python
    signed integers within the type's range."""

    value: object


@dataclass(eq=False)
class LocalRef(Expr):
    local: Local


@dataclass(eq=False)
class Member(Expr):
    """``base.name`` where base is a struct, header or header union."""

    base: Expr
    name: str


@dataclass(eq=False)
class StackElement(Expr):
    """``stack[index]``; an out-of-range index raises StackOutOfBounds when
    read in a parser and is a no-op/undefined value in controls (BMv2 errors)."""

    base: Expr
    index: Expr


@dataclass(eq=False)
class StackNext(Expr):
    """``stack.next`` (parsers only): the element at nextIndex."""

    base: Expr


@dataclass(eq=False)
class StackLast(Expr):
    """``stack.last``: the element at nextIndex - 1."""

    base: Expr


@dataclass(eq=False)
class StackLastIndex(Expr):
    """``stack.lastIndex`` (bit<32>): nextIndex - 1."""

    base: Expr


@dataclass(eq=False)
class StackNextIndex(Expr):
    """``stack.nextIndex`` (bit<32>)."""

    base: Expr


@dataclass(eq=False)
class IsValid(Expr):
    """``h.isValid()`` for a header or header union (type bool)."""

    base: Expr


@dataclass(eq=False)
class Slice(Expr):
    """``base[hi:lo]``; ``type`` is ``bit<hi-lo+1>``."""

    base: Expr
    hi: int
    lo: int


@dataclass(eq=False)
class Unary(Expr):
    """``op`` is one of ``-`` (negation), ``~`` (complement), ``!`` (not)."""

    op: str
    operand: Expr


# Binary operators as they appear in source: arithmetic "+ - * / % |+| |-|",
# shifts "<< >>", bitwise "& | ^", concatenation "++", comparisons
# "== != < <= > >=", logical "&& ||". Operand types follow P4-16 §8: for
# arithmetic and bitwise ops both operands have the result's type; for shifts
# the right operand is unsigned of any width; "++" widths add up.
BINARY_OPS = frozenset(
    "+ - * / % |+| |-| << >> & | ^ ++ == != < <= > >= && ||".split()
)


@dataclass(eq=False)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Cast(Expr):
    """``(type) operand``: between bit/int widths, bool and bit<1>, enums
    and their underlying type, and struct-like retyping of lists."""

    operand: Expr


@dataclass(eq=False)
class Mux(Expr):
    cond: Expr
    then: Expr
    otherwise: Expr


@dataclass(eq=False)
class ListExpr(Expr):
    """``{a, b, c}`` typed as a tuple (or as the struct/header it initialises,
    in which case the checker emits :class:`StructExpr` instead)."""

    elements: tuple[Expr, ...]


@dataclass(eq=False)
class StructExpr(Expr):
    """A struct or header value built from named field values, in the type's
    field order. A header built this way is valid."""

    fields: tuple[tuple[str, Expr], ...]


@dataclass(eq=False)
class TableApplyResult(Expr):
    """``t.apply().hit`` / ``.miss`` / ``.action_run``. Evaluating it applies
    the table. ``action_run`` is only used as the subject of :class:`Switch`."""

    table: "Table"
    member: str


@dataclass(eq=False)
class ExternCall(Expr):
    """A call of an extern method or extern function.

    ``target`` is the object whose method is called: an :class:`Instance`
    (``reg.read(...)``), an expression of extern type (``packet.extract(...)``
    where ``packet`` is a ``packet_in`` parameter), or ``None`` for extern
    functions (``mark_to_drop``, ``hash``, ``verify``, ``clone`` …).
    ``method`` is the method or function name. ``args`` are in parameter
    order with defaults filled in; ``params`` gives each one's direction and
    declared type after type-variable substitution. ``type`` is the return
    type (``VoidType`` for statements)."""

    target: "Instance | Expr | None"
    method: str
    args: tuple[Expr, ...]
    params: tuple[Local, ...] = ()
    type_args: tuple[Type, ...] = ()
    loc: SourceLocation | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class FunctionCall(Expr):
    """A call of a user-defined function (copy-in/copy-out)."""

    function: "Function"
    args: tuple[Expr, ...]
    loc: SourceLocation | None = field(default=None, kw_only=True)


# --------------------------------------------------------------------------
# Statements


@dataclass(eq=False)
class Stmt:
    loc: SourceLocation | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class Assign(Stmt):
    """``lhs = rhs``; whole-struct/header assignment copies (header validity
    included)."""

    lhs: Expr
    rhs: Expr


@dataclass(eq=False)
class VarDecl(Stmt):
    """Declares ``local``; without ``init`` a bit/int variable starts at 0 and
    a header invalid, as BMv2 does."""

    local: Local
    init: Expr | None = None


@dataclass(eq=False)
class ExprStmt(Stmt):
    """A call evaluated for its effect: :class:`ExternCall`,
    :class:`FunctionCall` or :class:`TableApplyResult` (``t.apply().hit;``
    is legal)."""

    expr: Expr


@dataclass(eq=False)
class HeaderMethod(Stmt):
    """``h.setValid()``, ``h.setInvalid()``, ``stack.push_front(n)``,
    ``stack.pop_front(n)``. ``count`` is the constant argument of push/pop."""

    base: Expr
    method: str
    count: int = 0


@dataclass(eq=False)
class ActionCall(Stmt):
    """A direct call of an action from a control body or another action: all
    parameters, directionless included, get arguments."""

    action: "Action"
    args: tuple[Expr, ...]


@dataclass(eq=False)
class TableApply(Stmt):
    table: "Table"


@dataclass(eq=False)
class SubApply(Stmt):
    """``instance.apply(args)`` of a sub-control or sub-parser instance."""

    block: "Control | Parser"
    args: tuple[Expr, ...]


@dataclass(eq=False)
class Block(Stmt):
    stmts: tuple[Stmt, ...] = ()


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Block
    otherwise: Block | None = None


@dataclass(eq=False)
class SwitchCase:
    """``labels`` are :class:`Action` objects when switching on
    ``action_run``, constant :class:`Const` values otherwise; ``default`` marks
    the default label. ``body`` None means fall through to the next case."""

    labels: tuple["Action | Const", ...]
    body: Block | None
    default: bool = False


@dataclass(eq=False)
class Switch(Stmt):
    subject: Expr
    cases: tuple[SwitchCase, ...]


@dataclass(eq=False)
class Exit(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Expr | None = None


# --------------------------------------------------------------------------
# Parsers


@dataclass(eq=False)
class KeysetDefault:
    """``default`` or ``_``: matches anything."""


@dataclass(eq=False)
class KeysetValue:
    value: int


@dataclass(eq=False)
class KeysetMask:
    """``value &&& mask``."""

    value: int
    mask: int


@dataclass(eq=False)
class KeysetRange:
    """``low .. high``, inclusive."""

    low: int
    high: int


@dataclass(eq=False)
class KeysetValueSet:
    value_set: "ValueSet"


Keyset = Union[KeysetDefault, KeysetValue, KeysetMask, KeysetRange, KeysetValueSet]


@dataclass(eq=False)
class SelectCase:
    """One row of a ``select``: one keyset per key expression (a single
    :class:`KeysetDefault` stands for ``default`` whatever the key count)."""

    keysets: tuple[Keyset, ...]
    next_state: str


@dataclass(eq=False)
class Select:
    keys: tuple[Expr, ...]
    cases: tuple[SelectCase, ...]
    loc: SourceLocation | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class ParserState:
    """``transition`` is a state name ("accept", "reject" or a state of this
    parser) or a :class:`Select`; no select match means reject with
    ``error.NoMatch``."""

    name: str
    stmts: tuple[Stmt, ...]
    transition: "str | Select"
    annotations: tuple[Annotation, ...] = ()
    loc: SourceLocation | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class ValueSet:
    """``value_set<T>(size) name;`` in a parser: the control plane fills it."""

    name: str
    element_type: Type
    size: int
    annotations: tuple[Annotation, ...] = ()


@dataclass(eq=False)
class Parser:
    name: str
    params: tuple[Local, ...]
    locals: tuple[Stmt, ...]
    states: dict[str, ParserState]
    instances: tuple["Instance", ...] = ()
    value_sets: tuple[ValueSet, ...] = ()
    annotations: tuple[Annotation, ...] = ()
    sub_blocks: tuple["Control | Parser", ...] = ()
    loc: SourceLocation | None = field(default=None, kw_only=True)


# --------------------------------------------------------------------------
# Controls, actions, tables, externs


@dataclass(eq=False)
class Instance:
    """An extern object (``register<bit<32>>(16) r;``, ``counter(…)``,
    ``action_selector(…)``) or a package/sub-block instance. ``name`` is the
    control-plane name; constructor arguments are folded constants."""

    name: str
    local_name: str
    type: ExternType
    ctor_args: tuple[Expr, ...]
    annotations: tuple[Annotation, ...] = ()
    loc: SourceLocation | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class Action:
    """``name`` is the control-plane name (``MyIngress.set_nhop``,
    ``NoAction``); directionless ``params`` are the action data."""

    name: str
    local_name: str
    params: tuple[Local, ...]
    body: Block
    annotations: tuple[Annotation, ...] = ()
    loc: SourceLocation | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class Function:
    name: str
    params: tuple[Local, ...]
    return_type: Type
    body: Block
    loc: SourceLocation | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class TableKey:
    """``expr : match_kind``; ``name`` is the control-plane match field name
    (``@name`` or the expression as p4c prints it, ``hdr.ipv4.dstAddr``)."""

    expr: Expr
    match_kind: str
    name: str
    annotations: tuple[Annotation, ...] = ()


@dataclass(eq=False)
class ActionRef:
    """An entry of a table's ``actions`` list (``@defaultonly``,
    ``@tableonly`` kept in ``annotations``). ``args`` are the arguments
    bound there to the action's directional parameters (``a(hdr.x)``)."""

    action: Action
    annotations: tuple[Annotation, ...] = ()
    args: tuple[Expr, ...] = ()


@dataclass(eq=False)
class BoundAction:
    """An action with its directionless arguments as constants (a default
    action or a const entry's action)."""

    action: Action
    args: tuple[Const, ...]


@dataclass(eq=False)
class TableEntry:
    """A ``const entries`` row: one keyset per key (``KeysetValue`` for
    exact, ``KeysetMask`` for ternary/lpm (lpm as prefix mask)/optional,
    ``KeysetRange`` for range, ``KeysetDefault`` for ``_``)."""

    keysets: tuple[Keyset, ...]
    action: BoundAction
    priority: int | None = None
    annotations: tuple[Annotation, ...] = ()
    loc: SourceLocation | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class Table:
    name: str
    local_name: str
    keys: tuple[TableKey, ...]
    actions: tuple[ActionRef, ...]
    default_action: BoundAction
    default_action_const: bool = False
    entries: tuple[TableEntry, ...] = ()
    entries_const: bool = False
    size: int = 1024
    implementation: Instance | None = None
    direct_counter: Instance | None = None
    direct_meter: Instance | None = None
    annotations: tuple[Annotation, ...] = ()
    other_properties: dict[str, Expr] = field(default_factory=dict)
    loc: SourceLocation | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class Control:
    """A control block. ``locals`` are the control's variable declarations
    (run at the start of every apply); ``body`` is the apply block.
    ``actions``, ``tables`` and ``instances`` are in declaration order (an
    extern built in a table property sits at its table's position);
    ``sub_blocks`` are the instantiated controls/parsers in declaration
    order, then those applied directly by type (``D.apply()``)."""

    name: str
    params: tuple[Local, ...]
    locals: tuple[Stmt, ...]
    body: Block
    actions: tuple[Action, ...] = ()
    tables: tuple[Table, ...] = ()
    instances: tuple[Instance, ...] = ()
    annotations: tuple[Annotation, ...] = ()
    sub_blocks: tuple["Control | Parser", ...] = ()
    loc: SourceLocation | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class Package:
    """The top-level package instantiation (``V1Switch(...) main;``):
    ``blocks`` in the package's parameter order; ``annotations`` those of
    the ``main`` declaration (``@pkginfo`` …)."""

    type_name: str
    blocks: tuple["Parser | Control", ...]
    annotations: tuple[Annotation, ...] = ()


@dataclass(eq=False)
class Program:
    """A checked program. ``types`` maps every named type (headers, structs,
    enums, typedef targets by their typedef name) to its type; ``errors``
    lists error members in order (their index is their value)."""

    source: str
    package: Package
    types: dict[str, Type]
    errors: tuple[str, ...]
    actions: tuple[Action, ...] = ()
    tables: tuple[Table, ...] = ()
    instances: tuple[Instance, ...] = ()
    value_sets: tuple[ValueSet, ...] = ()
    annotations: dict[str, tuple[Annotation, ...]] = field(default_factory=dict)

    def block(self, index: int) -> "Parser | Control":
        return self.package.blocks[index]
