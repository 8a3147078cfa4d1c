"""Parsers, controls, actions, functions, tables and extern instances.

Each instantiation of a parser or control yields its own IR block whose
tables, actions and extern instances carry p4c's control-plane names:
``<prefix>.<name>`` where the prefix of a top-level block is its type name
and a nested instance adds its instance name; ``@name("x")`` replaces the
last part, ``@name(".x")`` the whole name; global actions keep their name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.p4 import ast, ir
from emulator.p4.check.context import Abort, Scope, Symbol, annotation_string, declare
from emulator.p4.check.stmt import Where, always_returns
from emulator.p4.check.typeres import annotations_of
from emulator.p4.types import (
    BOOL, BitsType, BoolType, EnumType, ErrorType, ExternType, InfIntType, StringType, Type, VoidType,
)

if TYPE_CHECKING:
    from emulator.p4.check.program import Checker

MATCH_KINDS = {"exact", "ternary", "lpm", "range", "optional", "selector"}


def control_plane_name(prefix: str, local: str, annotations: tuple[ast.Annotation, ...]) -> str:
    given = annotation_string(annotations, "name")
    if given is not None:
        if given.startswith("."):
            return given[1:]
        local = given
    return f"{prefix}.{local}" if prefix else local


class BlockChecker:
    def __init__(self, checker: "Checker") -> None:
        self.c = checker
        self._global_actions: dict[int, ir.Action] = {}
        self._functions: dict[int, ir.Function] = {}
        self.instantiated: set[int] = set()  # ids of the parser/control declarations instantiated
        self._instantiating: set[int] = set()  # those being checked now (no recursion)

    # ---- actions and functions ----------------------------------------------------------
    def action_for(self, sym: Symbol, loc) -> ir.Action:  # type: ignore[no-untyped-def]
        if isinstance(sym.value, ir.Action):
            return sym.value
        decl: ast.ActionDecl = sym.value  # type: ignore[assignment]
        cached = self._global_actions.get(id(decl))
        if cached is None:
            cached = self.action(decl, self.c.globals, "")
            self._global_actions[id(decl)] = cached
        return cached

    def action(self, decl: ast.ActionDecl, scope: Scope, prefix: str) -> ir.Action:
        inner = scope.child()
        params = self._params(decl.params, inner, allow_directionless=True)
        seen_directionless = False
        for p in params:
            if not p.direction:
                seen_directionless = True
            elif seen_directionless:
                raise self.c.diags.error(decl.loc, f"action {decl.name}: directional parameters "
                                                   "must come before directionless ones")
        for p in params:
            # p4c: action data is bit<>, int<>, bool, a newtype or a serializable enum
            if not p.direction and not isinstance(p.type, (BitsType, BoolType)) and not (
                    isinstance(p.type, EnumType) and p.type.underlying is not None):
                raise self.c.diags.error(p.loc, f"action {decl.name}: parameter {p.name} of type {p.type} "
                                                "cannot be action data; give it a direction")
        body = self.c.stmts.block(decl.body.statements, inner, Where("action"))
        action = ir.Action(control_plane_name(prefix, decl.name, decl.annotations), decl.name,
                           tuple(params), body, annotations_of(decl.annotations), loc=decl.loc)
        self.c.all_actions.append(action)
        return action

    def function_for(self, sym: Symbol, loc) -> ir.Function:  # type: ignore[no-untyped-def]
        decls = sym.value if isinstance(sym.value, list) else [sym.value]
        decl: ast.FunctionDecl = decls[0]  # type: ignore[assignment]
        if decl.type_params:
            raise self.c.diags.unsupported_error(loc, "a generic function")
        cached = self._functions.get(id(decl))
        if cached is not None and id(decl) in self._instantiating:
            raise self.c.diags.error(loc, f"{decl.name} calls itself (recursion is not allowed in P4)")
        if cached is None:
            inner = self.c.globals.child()
            params = self._params(decl.params, inner, allow_directionless=True)
            rt = self.c.types.resolve(decl.return_type, self.c.globals)
            fn = ir.Function(decl.name, tuple(params), rt, ir.Block(), loc=decl.loc)
            self._functions[id(decl)] = fn
            self._instantiating.add(id(decl))
            try:
                fn.body = self.c.stmts.block(decl.body.statements, inner, Where("function", rt))
            finally:
                self._instantiating.discard(id(decl))
            if not isinstance(rt, VoidType) and not always_returns(fn.body.stmts):
                self.c.diags.error(decl.loc, f"function {decl.name} does not return a value on all paths")
            cached = fn
        return cached

    def _params(self, params: tuple[ast.Param, ...], scope: Scope,
                allow_directionless: bool) -> list[ir.Local]:
        out = []
        for p in params:
            t = self.c.types.resolve(p.type, scope)
            if not p.direction and not allow_directionless and not isinstance(t, ExternType):
                raise self.c.diags.error(p.loc, f"parameter {p.name} needs a direction")
            if p.direction and isinstance(t, (ExternType, StringType)):
                raise self.c.diags.error(p.loc, f"parameter {p.name} of type {t} cannot have a direction")
            local = ir.Local(p.name, t, p.direction, annotations_of(p.annotations), loc=p.loc)
            declare(scope, self.c.diags, p.name, Symbol("var", local, p), p.loc)
            if p.default is not None:
                self.c.param_defaults[id(local)] = (p.default, scope)
            if not p.direction and allow_directionless and not isinstance(t, ExternType):
                self.c.readonly.add(id(local))
            out.append(local)
        return out

    # ---- controls and parsers -------------------------------------------------------------------
    def instantiate(self, decl: ast.ControlDecl | ast.ParserDecl, prefix: str,
                    ctor_args: tuple[ast.Argument, ...], caller: Scope, loc) -> ir.Control | ir.Parser:  # type: ignore[no-untyped-def]
        d = self.c.diags
        self.instantiated.add(id(decl))
        if id(decl) in self._instantiating:
            raise d.error(loc, f"{decl.name} instantiates itself")
        if decl.type_params:
            raise d.unsupported_error(loc, f"a generic {type(decl).__name__[:-4].lower()}")
        scope = self.c.globals.child(owner=prefix)
        if len(ctor_args) != len(decl.ctor_params):
            raise d.error(loc, f"{decl.name} takes {len(decl.ctor_params)} constructor arguments, "
                               f"got {len(ctor_args)}")
        for p, a in zip(decl.ctor_params, ctor_args):
            t = self.c.types.resolve(p.type, scope)
            value = self.c.exprs.const(a.value, caller, t)
            scope.names[p.name] = Symbol("const", value, p)
        params = self._params(decl.params, scope, allow_directionless=False)
        self._instantiating.add(id(decl))
        try:
            if isinstance(decl, ast.ControlDecl):
                return self._control(decl, prefix, scope, params)
            return self._parser(decl, prefix, scope, params)
        finally:
            self._instantiating.discard(id(decl))

    def direct_instance(self, sym: Symbol, name: str, scope: Scope, loc) -> ir.Control | ir.Parser:  # type: ignore[no-untyped-def]
        """``D.apply(...)`` on a control/parser type: an instance named after
        the type, inside the current block."""
        key = (scope.owner, name)
        block = self.c.direct_instances.get(key)
        if block is None:
            block = self.instantiate(sym.decl, f"{scope.owner}.{name}", (), scope, loc)  # type: ignore[arg-type]
            self.c.direct_instances[key] = block
            self.c.late_sub_blocks.setdefault(scope.owner, []).append(block)
        return block

    def _locals(self, decl: ast.ControlDecl | ast.ParserDecl, prefix: str, scope: Scope,
                ) -> tuple[list[ir.Stmt], list[ir.Action], list[ir.Table], list[ir.Instance], list[ir.ValueSet]]:
        var_decls: list[ir.Stmt] = []
        actions: list[ir.Action] = []
        tables: list[ir.Table] = []
        instances: list[ir.Instance] = []
        value_sets: list[ir.ValueSet] = []
        self.c.sub_blocks_stack.append([])
        for local in decl.locals:
            try:
                if isinstance(local, ast.VariableDecl):
                    var_decls.append(self.c.stmts.var_decl(local, scope))
                elif isinstance(local, ast.ConstantDecl):
                    self.c.declare_const(local, scope)
                elif isinstance(local, ast.ActionDecl):
                    action = self.action(local, scope, prefix)
                    declare(scope, self.c.diags, local.name, Symbol("action", action, local), local.loc)
                    actions.append(action)
                elif isinstance(local, ast.TableDecl):
                    table = self.c.tables.table(local, scope, prefix, instances)
                    declare(scope, self.c.diags, local.name, Symbol("table", table, local), local.loc)
                    tables.append(table)
                    self.c.all_tables.append(table)
                elif isinstance(local, ast.Instantiation):
                    inst = self.instance(local, scope, prefix)
                    declare(scope, self.c.diags, local.name, Symbol("instance", inst, local), local.loc)
                    if isinstance(inst, ir.Instance):
                        instances.append(inst)
                    else:
                        self.c.sub_blocks_stack[-1].append(inst)
                elif isinstance(local, ast.ValueSetDecl):
                    vs = self._value_set(local, scope, prefix)
                    declare(scope, self.c.diags, local.name, Symbol("value_set", vs, local), local.loc)
                    value_sets.append(vs)
                else:
                    raise self.c.diags.unsupported_error(local.loc, f"the declaration {type(local).__name__} here")
            except Abort:
                continue
        return var_decls, actions, tables, instances, value_sets

    def _control(self, decl: ast.ControlDecl, prefix: str, scope: Scope,
                 params: list[ir.Local]) -> ir.Control:
        var_decls, actions, tables, instances, _vs = self._locals(decl, prefix, scope)
        body = self.c.stmts.block(decl.body.statements, scope, Where("control"))
        subs = self.c.sub_blocks_stack.pop()
        return ir.Control(prefix, tuple(params), tuple(var_decls), body, tuple(actions),
                          tuple(tables), tuple(instances), annotations_of(decl.annotations),
                          tuple(subs), loc=decl.loc)

    def _parser(self, decl: ast.ParserDecl, prefix: str, scope: Scope,
                params: list[ir.Local]) -> ir.Parser:
        var_decls, _a, _t, instances, value_sets = self._locals(decl, prefix, scope)
        names = {s.name for s in decl.states}
        for s in decl.states:
            declare(scope, self.c.diags, s.name, Symbol("state", s.name, s), s.loc)
        if "start" not in names:
            raise self.c.diags.error(decl.loc, f"parser {decl.name} has no start state")
        states: dict[str, ir.ParserState] = {}
        for s in decl.states:
            try:
                inner = scope.child()  # the state's variables are visible in its select
                stmts = self.c.stmts.block(s.statements, inner, Where("parser"), new_scope=False).stmts
                transition = self._transition(s, inner, names)
                states[s.name] = ir.ParserState(s.name, stmts, transition,
                                                annotations_of(s.annotations), loc=s.loc)
            except Abort:
                continue
        subs = self.c.sub_blocks_stack.pop()
        return ir.Parser(prefix, tuple(params), tuple(var_decls), states, tuple(instances),
                         tuple(value_sets), annotations_of(decl.annotations), tuple(subs),
                         loc=decl.loc)

    def _transition(self, s: ast.ParserState, scope: Scope, names: set[str]) -> str | ir.Select:
        t = s.transition
        d = self.c.diags
        if t is None:
            return "reject"
        if isinstance(t, ast.PathExpr):
            return self._state_name(t, names)
        if isinstance(t, ast.SelectExpr):
            keys = tuple(self.c.exprs.check(k, scope) for k in t.keys)
            for k in keys:
                if not isinstance(k.type, (BitsType, BoolType, EnumType, ErrorType)):
                    raise d.error(t.loc, f"select on {k.type} is not allowed")
            cases = []
            for case in t.cases:
                keysets = self.c.tables.keysets(case.keysets, [k.type for k in keys], scope, case.loc)
                cases.append(ir.SelectCase(tuple(keysets), self._state_name(
                    ast.PathExpr(case.state, loc=case.loc), names)))
            return ir.Select(keys, tuple(cases), loc=t.loc)
        raise d.error(t.loc, "a transition goes to a state name or a select")

    def _state_name(self, t: ast.PathExpr, names: set[str]) -> str:
        if t.name in ("accept", "reject") or t.name in names:
            return t.name
        raise self.c.diags.error(t.loc, f"unknown parser state {t.name!r}")

    def _value_set(self, n: ast.ValueSetDecl, scope: Scope, prefix: str) -> ir.ValueSet:
        t = self.c.types.resolve(n.element_type, scope)
        size = self.c.const_int(n.size, scope, "a value_set size")
        vs = ir.ValueSet(control_plane_name(prefix, n.name, n.annotations), t, size,
                         annotations_of(n.annotations))
        self.c.all_value_sets.append(vs)
        return vs

    # ---- extern instances ----------------------------------------------------------------------
    def instance(self, n: ast.Instantiation, scope: Scope, prefix: str) -> ir.Instance | ir.Control | ir.Parser:
        d = self.c.diags
        base = n.type.base if isinstance(n.type, ast.SpecializedType) else n.type
        if not isinstance(base, ast.TypeName):
            raise d.error(n.loc, "only externs, parsers and controls can be instantiated")
        sym = scope.lookup(base.name)
        if sym is None:
            raise d.error(n.type.loc, f"unknown type {base.name!r}")
        if sym.kind in ("control", "parser"):
            # A top-level instance is not inlined: p4c names its objects after
            # the control/parser type, whatever the instance is called.
            inner_prefix = control_plane_name(prefix, n.name, n.annotations) if prefix \
                else sym.decl.name  # type: ignore[union-attr]
            return self.instantiate(sym.decl, inner_prefix, n.args, scope, n.loc)  # type: ignore[arg-type]
        if sym.kind != "extern":
            raise d.error(n.type.loc, f"{base.name!r} cannot be instantiated")
        if n.initializer is not None:
            raise d.unsupported_error(n.loc, "an extern instance with abstract method implementations")
        name = control_plane_name(prefix, n.name, n.annotations)
        return self.extern_instance(n.type, n.args, n.annotations, name, n.name, scope, n.loc)

    def extern_instance(self, type_node: ast.Type, args: tuple[ast.Argument, ...],
                        annotations: tuple[ast.Annotation, ...], name: str, local_name: str,
                        scope: Scope, loc) -> ir.Instance:  # type: ignore[no-untyped-def]
        d = self.c.diags
        et = self.c.types.resolve(type_node, scope)
        if not isinstance(et, ExternType):
            raise d.error(loc, f"{type_node} is not an extern type")
        sym = self.c.globals.lookup(et.name)
        decl: ast.ExternDecl = sym.decl  # type: ignore[union-attr,assignment]
        ctors = [m for m in decl.methods if m.return_type is None and m.name == decl.name]
        fits = [m for m in ctors if len(m.params) == len(args)]
        if not fits:
            raise d.error(loc, f"{et.name} has no constructor taking {len(args)} arguments")
        ctor = fits[0]
        ctor_scope = self.c.globals.child()
        for tp, t in zip(decl.type_params, et.type_args):
            ctor_scope.names[tp.name] = Symbol("type", t)
        values = []
        for p, a in zip(ctor.params, args):
            pt = self.c.types.resolve(p.type, ctor_scope)
            if type(pt).__name__ == "TypeVar":
                values.append(self.c.exprs.const(a.value, scope))
            else:
                values.append(self.c.exprs.const(a.value, scope, pt))
        inst = ir.Instance(name, local_name, et, tuple(values), annotations_of(annotations), loc=loc)
        self.c.all_instances.append(inst)
        return inst


__all__ = ["BlockChecker", "MATCH_KINDS", "control_plane_name", "BOOL", "InfIntType", "Type",
           "VoidType"]
