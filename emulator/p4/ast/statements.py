"""Statement nodes: assignment, method call, block, if, switch, exit,
return and the empty statement."""

from __future__ import annotations

from emulator.p4.ast.annotations import Annotations
from emulator.p4.ast.base import Node, syntax_node
from emulator.p4.ast.expressions import CallExpr, Expression


@syntax_node
class Statement(Node):
    pass


@syntax_node
class AssignmentStmt(Statement):
    """``target = value;``; ``op`` is ``=`` or a compound operator such as ``+=``."""

    target: Expression
    value: Expression
    op: str = "="


@syntax_node
class MethodCallStmt(Statement):
    call: CallExpr


@syntax_node
class BlockStmt(Statement):
    statements: tuple[Node, ...]
    annotations: Annotations = ()


@syntax_node
class IfStmt(Statement):
    cond: Expression
    then: Statement
    else_: Statement | None = None


@syntax_node
class SwitchCase(Node):
    """``label: body``; ``body`` is None for a label that falls through."""

    label: Expression
    body: BlockStmt | None


@syntax_node
class SwitchStmt(Statement):
    expr: Expression
    cases: tuple[SwitchCase, ...]


@syntax_node
class ExitStmt(Statement):
    pass


@syntax_node
class ReturnStmt(Statement):
    value: Expression | None = None


@syntax_node
class EmptyStmt(Statement):
    pass
