"""Parser, control and table nodes, and the whole :class:`Program`: parser
states with their select transitions, table properties (key, actions,
entries, default action, any other) and control declarations."""

from __future__ import annotations

from emulator.p4.ast.annotations import Annotations
from emulator.p4.ast.base import Node, syntax_node
from emulator.p4.ast.declarations import Declaration, Param, TypeParam
from emulator.p4.ast.expressions import Argument, Expression
from emulator.p4.ast.statements import BlockStmt


@syntax_node
class SelectCase(Node):
    """``keysets : state;``; one keyset per select key (a 1-tuple for one key)."""

    keysets: tuple[Expression, ...]
    state: str


@syntax_node
class SelectExpr(Expression):
    keys: tuple[Expression, ...]
    cases: tuple[SelectCase, ...]


@syntax_node
class ParserState(Declaration):
    """``transition`` is a :class:`PathExpr` (next state), a :class:`SelectExpr`
    or None (no transition statement: the state goes to reject)."""

    statements: tuple[Node, ...]
    transition: Expression | None
    annotations: Annotations = ()


@syntax_node
class ParserDecl(Declaration):
    params: tuple[Param, ...]
    locals: tuple[Declaration, ...]
    states: tuple[ParserState, ...]
    ctor_params: tuple[Param, ...] = ()
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@syntax_node
class KeyElement(Node):
    """``expr : match_kind @annotations;``."""

    expr: Expression
    match_kind: str
    annotations: Annotations = ()


@syntax_node
class ActionRef(Node):
    """An action named in a table: ``name`` or ``name(args)`` (``args`` None
    when written without parentheses)."""

    name: str
    args: tuple[Argument, ...] | None = None
    annotations: Annotations = ()


@syntax_node
class Entry(Node):
    """A constant table entry; one keyset per key element."""

    keysets: tuple[Expression, ...]
    action: ActionRef
    priority: Expression | None = None
    is_const: bool = False
    annotations: Annotations = ()


@syntax_node
class TableProperty(Node):
    name: str
    is_const: bool = False
    annotations: Annotations = ()


@syntax_node
class KeyProperty(TableProperty):
    elements: tuple[KeyElement, ...] = ()


@syntax_node
class ActionsProperty(TableProperty):
    actions: tuple[ActionRef, ...] = ()


@syntax_node
class EntriesProperty(TableProperty):
    entries: tuple[Entry, ...] = ()


@syntax_node
class DefaultActionProperty(TableProperty):
    action: ActionRef | None = None


@syntax_node
class ExpressionProperty(TableProperty):
    """Any other property: ``size = 1024;``, ``counters = c;``,
    ``implementation = action_selector(...);``, ``default_action`` values that
    are not an action call."""

    value: Expression | None = None


@syntax_node
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


@syntax_node
class ControlDecl(Declaration):
    params: tuple[Param, ...]
    locals: tuple[Declaration, ...]
    body: BlockStmt
    ctor_params: tuple[Param, ...] = ()
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@syntax_node
class Program(Node):
    """A whole program, core.p4 and the architecture file included."""

    declarations: tuple[Node, ...]
