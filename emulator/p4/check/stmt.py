"""Statements of apply blocks, actions, functions and parser states."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from emulator.p4 import ast, ir
from emulator.p4.check.calls import is_lvalue
from emulator.p4.check.context import Abort, Scope, Symbol, declare
from emulator.p4.check.typeres import annotations_of
from emulator.p4.types import BOOL, BitsType, EnumType, ErrorType, InfIntType, Type, VoidType

if TYPE_CHECKING:
    from emulator.p4.check.program import Checker

COMPOUND = {"+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "&=": "&", "|=": "|",
            "^=": "^", "<<=": "<<", ">>=": ">>", "|+|=": "|+|", "|-|=": "|-|"}


@dataclass
class Where:
    """What kind of body the statements are in: ``control`` (apply block),
    ``action``, ``function`` (with ``return_type``) or ``parser``."""

    kind: str
    return_type: Type | None = None


class StmtChecker:
    def __init__(self, checker: "Checker") -> None:
        self.c = checker

    def block(self, nodes: tuple[ast.Node, ...], scope: Scope, where: Where,
              new_scope: bool = True) -> ir.Block:
        """``new_scope`` False declares into ``scope`` itself (a parser state's
        variables are also visible in its transition)."""
        inner = scope.child() if new_scope else scope
        out: list[ir.Stmt] = []
        for node in nodes:
            try:
                s = self.stmt(node, inner, where)
            except Abort:
                continue
            if s is not None:
                out.append(s)
        return ir.Block(tuple(out))

    def stmt(self, n: ast.Node, scope: Scope, where: Where) -> ir.Stmt | None:
        d = self.c.diags
        ex = self.c.exprs
        if isinstance(n, ast.AssignmentStmt):
            target = ex.check(n.target, scope)
            if not is_lvalue(target, self.c.readonly):
                raise d.error(n.target.loc, "the left side of an assignment must be assignable "
                                            "(not a constant or an 'in' parameter)")
            if n.op != "=":
                op = COMPOUND.get(n.op)
                if op is None:
                    raise d.error(n.loc, f"unknown assignment operator {n.op}")
                value_node: ast.Expression = ast.BinaryExpr(op, n.target, n.value, loc=n.loc)
                # ``a[f()] += x`` evaluates the lvalue once: the re-read shares its IR.
                ex.prechecked[id(n.target)] = target
            else:
                value_node = n.value
            try:
                value = ex.check(value_node, scope, target.type)
            finally:
                ex.prechecked.pop(id(n.target), None)
            return ir.Assign(target, value, loc=n.loc)
        if isinstance(n, ast.MethodCallStmt):
            result = self.c.calls.call(n.call, scope, as_value=False)
            if isinstance(result, ir.ActionCall) and where.kind in ("parser", "function"):
                raise d.error(n.loc, f"actions cannot be called from a {where.kind}")
            if isinstance(result, (ir.TableApply, ir.SubApply)) and where.kind in ("action", "function"):
                raise d.error(n.loc, f"apply cannot be called from a{'n' if where.kind == 'action' else ''} "
                                     f"{where.kind}")
            if isinstance(result, ir.TableApply) and where.kind == "parser":
                raise d.error(n.loc, "tables cannot be applied in a parser")
            if isinstance(result, ir.Expr):
                return ir.ExprStmt(result, loc=n.loc)
            return result
        if isinstance(n, ast.BlockStmt):
            return self.block(n.statements, scope, where)
        if isinstance(n, ast.IfStmt):
            cond = ex.check(n.cond, scope, BOOL)
            then = self._as_block(n.then, scope, where)
            otherwise = self._as_block(n.else_, scope, where) if n.else_ is not None else None
            return ir.If(cond, then, otherwise, loc=n.loc)
        if isinstance(n, ast.SwitchStmt):
            return self._switch(n, scope, where)
        if isinstance(n, ast.ExitStmt):
            if where.kind == "function":
                raise d.error(n.loc, "exit is not allowed in a function")
            if where.kind == "parser":
                raise d.error(n.loc, "exit is not allowed in a parser")
            return ir.Exit(loc=n.loc)
        if isinstance(n, ast.ReturnStmt):
            if where.kind == "parser":
                raise d.error(n.loc, "return is not allowed in a parser")
            if where.kind == "function":
                rt = where.return_type
                if n.value is None:
                    if not isinstance(rt, VoidType):
                        raise d.error(n.loc, "this function must return a value")
                    return ir.Return(loc=n.loc)
                return ir.Return(ex.check(n.value, scope, rt), loc=n.loc)
            if n.value is not None:
                raise d.error(n.loc, "return with a value outside a function")
            return ir.Return(loc=n.loc)
        if isinstance(n, ast.EmptyStmt):
            return None
        if isinstance(n, ast.VariableDecl):
            return self.var_decl(n, scope)
        if isinstance(n, ast.ConstantDecl):
            self.c.declare_const(n, scope)
            return None
        if isinstance(n, ast.Instantiation):
            raise d.error(n.loc, "instantiations are not allowed inside a block")
        raise d.unsupported_error(getattr(n, "loc", None), f"the statement {type(n).__name__}")

    def var_decl(self, n: ast.VariableDecl, scope: Scope) -> ir.VarDecl:
        shadowed = scope.lookup(n.name)
        if shadowed is not None and shadowed.kind == "var" and isinstance(shadowed.value, ir.Local) \
                and (shadowed.value.direction or id(shadowed.value) in self.c.readonly) \
                and n.name not in scope.names:
            # p4c: an error for parameters (a warning for other declarations)
            raise self.c.diags.error(n.loc, f"declaration of {n.name!r} shadows a parameter")
        t = self.c.types.resolve(n.type, scope)
        init = self.c.exprs.check(n.init, scope, t) if n.init is not None else None
        local = ir.Local(n.name, t, "", annotations_of(n.annotations), loc=n.loc)
        declare(scope, self.c.diags, n.name, Symbol("var", local, n), n.loc)
        return ir.VarDecl(local, init, loc=n.loc)

    def _as_block(self, n: ast.Statement, scope: Scope, where: Where) -> ir.Block:
        if isinstance(n, ast.BlockStmt):
            return self.block(n.statements, scope, where)
        s = self.stmt(n, scope.child(), where)
        return ir.Block((s,) if s is not None else ())

    def _switch(self, n: ast.SwitchStmt, scope: Scope, where: Where) -> ir.Switch:
        d = self.c.diags
        if where.kind == "action":
            # p4c's BMv2 back end: "switch statements not supported in actions on this target"
            raise d.error(n.loc, "switch statements are not allowed in actions on BMv2")
        self.c.exprs.switch_subject = id(n.expr)
        try:
            subject = self.c.exprs.check(n.expr, scope)
        finally:
            self.c.exprs.switch_subject = None
        on_table = isinstance(subject, ir.TableApplyResult) and subject.member == "action_run"
        if not on_table:
            st = subject.type
            if not isinstance(st, (BitsType, EnumType, ErrorType)):
                raise d.error(n.expr.loc, "switch needs t.apply().action_run or a bit<W>, int<W> or enum value")
        cases: list[ir.SwitchCase] = []
        seen: set[object] = set()
        had_default = False
        for case in n.cases:
            if had_default:
                raise d.error(case.label.loc, "a switch label follows the 'default' label")
            body = self.block(case.body.statements, scope, where) if case.body is not None else None
            if isinstance(case.label, ast.DefaultExpr):
                had_default = True
                cases.append(ir.SwitchCase((), body if body is not None else ir.Block(), True))
                continue
            if on_table:
                label = self._action_label(case.label, subject.table, scope)  # type: ignore[union-attr]
                key: object = id(label)
            else:
                label = self.c.exprs.check(case.label, scope, subject.type)
                if not isinstance(label, ir.Const):
                    raise d.error(case.label.loc, "a switch label must be a constant")
                key = label.value
            if key in seen:
                raise d.error(case.label.loc, "duplicate switch label")
            seen.add(key)
            cases.append(ir.SwitchCase((label,), body))
        return ir.Switch(subject, tuple(cases), loc=n.loc)

    def _action_label(self, label: ast.Expression, table: ir.Table, scope: Scope) -> ir.Action:
        if not isinstance(label, ast.PathExpr):
            raise self.c.diags.error(label.loc, "a label of a switch on action_run must be an action name")
        for ref in table.actions:
            if ref.action.local_name == label.name or ref.action.name == label.name:
                return ref.action
        raise self.c.diags.error(label.loc, f"{label.name!r} is not an action of table {table.local_name}")


def always_returns(stmts: tuple[ir.Stmt, ...]) -> bool:
    """Whether every path through ``stmts`` ends in ``return`` or ``exit``."""
    for st in stmts:
        if isinstance(st, (ir.Return, ir.Exit)):
            return True
        if isinstance(st, ir.Block) and always_returns(st.stmts):
            return True
        if isinstance(st, ir.If) and st.otherwise is not None \
                and always_returns(st.then.stmts) and always_returns(st.otherwise.stmts):
            return True
        if isinstance(st, ir.Switch) and any(c.default for c in st.cases) and all(
                c.body is None or always_returns(c.body.stmts) for c in st.cases):
            return True
    return False


__all__ = ["StmtChecker", "Where", "InfIntType", "always_returns"]
