"""Calls: header and stack methods, table and sub-block ``apply``, actions,
functions, extern functions and extern methods, with generic type
inference (P4-16 §8.17, §14.2.1: copy-in/copy-out, named and default
arguments)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.p4 import ast, ir
from emulator.p4.check.context import Scope, Symbol
from emulator.p4.check.expr import U32, is_int_literal
from emulator.p4.check.typeres import TypeVar
from emulator.p4.types import (
    BOOL, VOID, BitsType, ExternType, HeaderType, HeaderUnionType, StackType, StructType, Type,
    VarbitType, VoidType,
)

if TYPE_CHECKING:
    from emulator.p4.check.program import Checker

LVALUE_NODES = (ir.LocalRef, ir.Member, ir.StackElement, ir.Slice, ir.StackNext, ir.StackLast)


def is_lvalue(e: ir.Expr, readonly: set[int] | frozenset[int] = frozenset()) -> bool:
    """Whether ``e`` can be written: a path to storage whose root is not an
    ``in`` parameter nor one of ``readonly`` (ids of locals: action data and
    function parameters without direction, which behave as ``in``)."""
    if isinstance(e, ir.Slice):
        return is_lvalue(e.base, readonly)
    if isinstance(e, (ir.Member, ir.StackElement, ir.StackNext, ir.StackLast)):
        return is_lvalue(e.base, readonly)
    if isinstance(e, ir.LocalRef):
        return e.local.direction != "in" and id(e.local) not in readonly
    return False


class CallChecker:
    def __init__(self, checker: "Checker") -> None:
        self.c = checker

    # ---- helpers used by expressions ------------------------------------------------
    def table_of(self, node: ast.Expression, scope: Scope) -> ir.Table | None:
        if isinstance(node, ast.PathExpr):
            sym = scope.lookup(node.name)
            if sym is not None and sym.kind == "table":
                return sym.value  # type: ignore[return-value]
        return None

    # ---- dispatch -----------------------------------------------------------------------
    def call(self, n: ast.CallExpr, scope: Scope, as_value: bool) -> ir.Expr | ir.Stmt:
        d = self.c.diags
        callee = n.callee
        if isinstance(callee, ast.MemberExpr):
            method = callee.member
            table = self.table_of(callee.base, scope)
            if table is not None:
                if method != "apply":
                    raise d.error(callee.loc, f"a table has no method {method!r}")
                if n.args:
                    raise d.error(n.loc, "a table's apply takes no arguments")
                if as_value:
                    raise d.error(n.loc, "use t.apply().hit, .miss or .action_run")
                return ir.TableApply(table, loc=n.loc)
            block = self._block_of(callee.base, scope)
            if block is not None:
                if method != "apply":
                    raise d.error(callee.loc, f"{block.name} has no method {method!r}")
                return self._sub_apply(n, block, scope, as_value)
            instance = self._instance_of(callee.base, scope)
            if instance is not None:
                return self._extern_method(n, instance, instance.type, method, scope, as_value)
            base = self.c.exprs.check(callee.base, scope)
            bt = base.type
            if isinstance(bt, (HeaderType, HeaderUnionType)) or isinstance(bt, StackType):
                return self._header_method(n, base, method, scope, as_value)
            if isinstance(bt, ExternType):
                return self._extern_method(n, base, bt, method, scope, as_value)
            if method in ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"):
                return self._size_method(n, bt, method)
            raise d.error(callee.loc, f"{bt} has no method {method!r}")
        if isinstance(callee, ast.PathExpr):
            sym = scope.lookup(callee.name)
            if sym is None:
                raise d.error(callee.loc, f"{callee.name!r} is not declared")
            if sym.kind == "action":
                if as_value:
                    raise d.error(n.loc, "an action call is a statement, not a value")
                action = self.c.blocks.action_for(sym, callee.loc)
                args = self._args(n, action.params, scope, {})
                return ir.ActionCall(action, args, loc=n.loc)
            if sym.kind == "function":
                return self._function_call(n, sym, scope, as_value)
            if sym.kind == "extern_function":
                return self._extern_function(n, sym, scope, as_value)
            raise d.error(callee.loc, f"{callee.name!r} cannot be called")
        raise d.error(n.loc, "this expression cannot be called")

    def _block_of(self, node: ast.Expression, scope: Scope) -> ir.Control | ir.Parser | None:
        if isinstance(node, ast.PathExpr):
            sym = scope.lookup(node.name)
            if sym is not None and sym.kind == "instance" and isinstance(sym.value, (ir.Control, ir.Parser)):
                return sym.value
            if sym is not None and sym.kind in ("control", "parser"):
                return self.c.blocks.direct_instance(sym, node.name, scope, node.loc)
        return None

    def _instance_of(self, node: ast.Expression, scope: Scope) -> ir.Instance | None:
        if isinstance(node, ast.PathExpr):
            sym = scope.lookup(node.name)
            if sym is not None and sym.kind == "instance" and isinstance(sym.value, ir.Instance):
                return sym.value
        return None

    # ---- header/stack methods ---------------------------------------------------------------
    def _header_method(self, n: ast.CallExpr, base: ir.Expr, method: str, scope: Scope,
                       as_value: bool) -> ir.Expr | ir.Stmt:
        d = self.c.diags
        bt = base.type
        if method == "isValid" and not isinstance(bt, StackType):
            if n.args:
                raise d.error(n.loc, "isValid takes no arguments")
            return ir.IsValid(BOOL, base)
        if as_value:
            raise d.error(n.loc, f"{method} is a statement, not a value")
        if not is_lvalue(base, self.c.readonly):
            raise d.error(n.loc, f"{method} changes a value that cannot be written here (an 'in' parameter?)")
        if method in ("setValid", "setInvalid") and isinstance(bt, HeaderType):
            if n.args:
                raise d.error(n.loc, f"{method} takes no arguments")
            return ir.HeaderMethod(base, method, loc=n.loc)
        if method in ("push_front", "pop_front") and isinstance(bt, StackType):
            if len(n.args) != 1:
                raise d.error(n.loc, f"{method} takes one argument, the count")
            count = self.c.const_int(n.args[0].value, scope, "a count")
            if count < 0:
                raise d.error(n.args[0].loc, "the count must not be negative")
            return ir.HeaderMethod(base, method, count, loc=n.loc)
        if method in ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"):
            return self._size_method(n, bt, method)
        raise d.error(n.callee.loc, f"{bt} has no method {method!r}")

    def _size_method(self, n: ast.CallExpr, t: Type, method: str) -> ir.Const:
        bits = _size_bits(t, method.startswith("max"))
        if bits is None:
            raise self.c.diags.error(n.loc, f"{t} has no size")
        value = bits if method.endswith("Bits") else (bits + 7) // 8
        return ir.Const(BitsType(32), value)  # p4c types these as int; 32 bits hold them

    # ---- sub-blocks --------------------------------------------------------------------------
    def _sub_apply(self, n: ast.CallExpr, block: ir.Control | ir.Parser, scope: Scope,
                   as_value: bool) -> ir.Stmt:
        if as_value:
            raise self.c.diags.error(n.loc, "apply of a control or parser is a statement")
        args = self._args(n, block.params, scope, {})
        return ir.SubApply(block, args, loc=n.loc)

    # ---- functions -------------------------------------------------------------------------------
    def _function_call(self, n: ast.CallExpr, sym: Symbol, scope: Scope, as_value: bool) -> ir.Expr | ir.Stmt:
        fn = self.c.blocks.function_for(sym, n.loc)
        args = self._args(n, fn.params, scope, {})
        call = ir.FunctionCall(fn.return_type, fn, args, loc=n.loc)
        if as_value:
            if isinstance(fn.return_type, VoidType):
                raise self.c.diags.error(n.loc, f"{fn.name} returns nothing")
            return call
        return ir.ExprStmt(call, loc=n.loc)

    # ---- externs ---------------------------------------------------------------------------------
    def _extern_function(self, n: ast.CallExpr, sym: Symbol, scope: Scope, as_value: bool) -> ir.Expr | ir.Stmt:
        decls = sym.decl if isinstance(sym.decl, list) else [sym.decl]
        decl = self._pick_overload(decls, n, sym.value if not isinstance(sym.value, list) else "")
        params, ret, type_args, args = self._generic_call(n, decl.params, decl.type_params,
                                                          decl.return_type, {}, scope)
        if decl.name == "static_assert":
            # evaluated by the compiler (P4-16 §17.3.3)
            if not isinstance(args[0], ir.Const):
                raise self.c.diags.error(n.loc, "static_assert needs a compile-time condition")
            if not args[0].value:
                what = args[1].value if len(args) > 1 and isinstance(args[1], ir.Const) else "static_assert failed"
                raise self.c.diags.error(n.loc, f"static_assert failed: {what}")
            return ir.Const(BOOL, True) if as_value else ir.Block(loc=n.loc)
        call = ir.ExternCall(ret, None, decl.name, args, params, type_args, loc=n.loc)
        return self._finish(call, n, as_value)

    def _extern_method(self, n: ast.CallExpr, target: ir.Instance | ir.Expr, et: ExternType,
                       method: str, scope: Scope, as_value: bool) -> ir.Expr | ir.Stmt:
        d = self.c.diags
        sym = self.c.globals.lookup(et.name)
        if sym is None or sym.kind != "extern":
            raise d.error(n.loc, f"{et.name} has no methods")
        decl: ast.ExternDecl = sym.decl  # type: ignore[assignment]
        methods = [m for m in decl.methods if m.name == method and m.return_type is not None]
        if not methods:
            raise d.error(n.callee.loc, f"extern {et.name} has no method {method!r}")
        m = self._pick_overload(methods, n, method)
        bindings: dict[str, Type] = {}
        for name, t in zip((p.name for p in decl.type_params), et.type_args):
            if not isinstance(t, TypeVar):
                bindings[name] = t
        params, ret, type_args, args = self._generic_call(
            n, m.params, tuple(decl.type_params) + tuple(m.type_params), m.return_type, bindings, scope,
            instance_params=tuple(p.name for p in decl.type_params))
        call = ir.ExternCall(ret, target, method, args, params, type_args, loc=n.loc)
        if et.name == "packet_in" and method == "extract":
            dest = params[0].type
            if not isinstance(dest, HeaderType):
                raise d.error(n.loc, f"extract needs a header, not {dest}")
            if len(args) == 2 and not dest.has_varbit:
                raise d.error(n.loc, f"extract with a length needs a header with a varbit field; {dest} has none")
            if len(args) == 1 and dest.has_varbit:
                raise d.error(n.loc, f"{dest} has a varbit field: extract it with a length")
        return self._finish(call, n, as_value)

    def _finish(self, call: ir.ExternCall, n: ast.CallExpr, as_value: bool) -> ir.Expr | ir.Stmt:
        if as_value:
            if isinstance(call.type, VoidType):
                raise self.c.diags.error(n.loc, f"{call.method} returns nothing")
            return call
        return ir.ExprStmt(call, loc=n.loc)

    def _pick_overload(self, decls: list, n: ast.CallExpr, name: str):  # type: ignore[no-untyped-def]
        count = len(n.args)
        names = {a.name for a in n.args if a.name}
        fits = []
        for decl in decls:
            required = sum(1 for p in decl.params if p.default is None and not _optional(p))
            if required <= count <= len(decl.params) and names <= {p.name for p in decl.params}:
                fits.append(decl)
        if not fits:
            arities = sorted({len(x.params) for x in decls})
            raise self.c.diags.error(n.loc, f"{decls[0].name} takes {' or '.join(map(str, arities))} "
                                            f"arguments, got {count}")
        exact = [x for x in fits if len(x.params) == count]
        return (exact or fits)[0]

    def _generic_call(self, n: ast.CallExpr, params: tuple[ast.Param, ...],
                      type_params: tuple[ast.TypeParam, ...], return_type: ast.Type | None,
                      bindings: dict[str, Type], scope: Scope,
                      instance_params: tuple[str, ...] = ()
                      ) -> tuple[tuple[ir.Local, ...], Type, tuple[Type, ...], tuple[ir.Expr, ...]]:
        d = self.c.diags
        own = [tp.name for tp in type_params if tp.name not in instance_params]
        if n.type_args:
            if len(n.type_args) != len(own):
                raise d.error(n.loc, f"expected {len(own)} type arguments, got {len(n.type_args)}")
            for name, t in zip(own, n.type_args):
                bindings[name] = self.c.types.resolve(t, scope)
        sig_scope = self.c.globals.child()
        variables: dict[str, TypeVar] = {}
        for tp in type_params:
            if tp.name in bindings:
                sig_scope.names[tp.name] = Symbol("type", bindings[tp.name])
            else:
                variables[tp.name] = TypeVar(tp.name)
                sig_scope.names[tp.name] = Symbol("typevar", variables[tp.name])
        ptypes = [self.c.types.resolve(p.type, sig_scope) for p in params]
        ordered = self._order_args(n, params)
        # Typed arguments first, so untyped literals can take their types.
        checked: list[ir.Expr | None] = [None] * len(params)
        var_of = {id(v): name for name, v in variables.items()}
        for pass_literals in (False, True):
            for i, (p, node) in enumerate(zip(params, ordered)):
                if checked[i] is not None or node is None:
                    continue
                pt = ptypes[i]
                if isinstance(pt, TypeVar):
                    name = var_of.get(id(pt), pt.name)
                    if name in bindings:
                        checked[i] = self.c.exprs.check(node, scope, bindings[name])
                        continue
                    e = self.c.exprs.check(node, scope)
                    if is_int_literal(e) and not pass_literals:
                        continue
                    if is_int_literal(e):
                        raise d.error(node.loc, f"cannot infer the type of {p.name!r} from an untyped "
                                                f"integer; give it a width (e.g. (bit<32>){e.value})")
                    bindings[name] = e.type
                    checked[i] = e
                else:
                    checked[i] = self.c.exprs.check(node, scope, pt)
        locals_ = []
        args = []
        for i, p in enumerate(params):
            pt = ptypes[i]
            if isinstance(pt, TypeVar):
                pt = bindings.get(var_of.get(id(pt), pt.name), pt)  # type: ignore[assignment]
            e = checked[i]
            if e is None:
                if p.default is None and _optional(p):
                    raise d.unsupported_error(n.loc, f"leaving out the @optional argument {p.name!r}")
                if p.default is None:
                    raise d.error(n.loc, f"missing argument for {p.name!r}")
                e = self.c.exprs.check(p.default, sig_scope, pt)
            if p.direction in ("out", "inout") and not is_lvalue(e, self.c.readonly):
                raise d.error(_arg_loc(n, i, params), f"argument for {p.direction} parameter {p.name!r} "
                                                      "must be assignable")
            locals_.append(ir.Local(p.name, pt, p.direction))  # type: ignore[arg-type]
            args.append(e)
        ret: Type = VOID
        if return_type is not None:
            ret_scope = sig_scope.child()
            for name, t in bindings.items():
                ret_scope.names[name] = Symbol("type", t)
            ret = self.c.types.resolve(return_type, ret_scope)
            if isinstance(ret, TypeVar):
                raise d.error(n.loc, "cannot infer the return type; give type arguments")
        type_args = tuple(bindings.get(name, VOID) for name in own)
        return tuple(locals_), ret, type_args, tuple(args)

    def _order_args(self, n: ast.CallExpr, params: tuple[ast.Param, ...]) -> list[ast.Expression | None]:
        out: list[ast.Expression | None] = [None] * len(params)
        names = [p.name for p in params]
        positional = True
        for i, a in enumerate(n.args):
            if a.name is None:
                if not positional:
                    raise self.c.diags.error(a.loc, "positional argument after a named one")
                if i >= len(params):
                    raise self.c.diags.error(a.loc, "too many arguments")
                out[i] = a.value
            else:
                positional = False
                if a.name not in names:
                    raise self.c.diags.error(a.loc, f"no parameter named {a.name!r}")
                out[names.index(a.name)] = a.value
        return out

    def _args(self, n: ast.CallExpr, params: tuple[ir.Local, ...], scope: Scope,
              _bindings: dict) -> tuple[ir.Expr, ...]:
        d = self.c.diags
        defaults = self.c.param_defaults
        required = sum(1 for p in params if id(p) not in defaults)
        if not required <= len(n.args) <= len(params) and not any(a.name for a in n.args):
            raise d.error(n.loc, f"expected {len(params)} arguments, got {len(n.args)}")
        by_name = {p.name: i for i, p in enumerate(params)}
        ordered: list[ast.Expression | None] = [None] * len(params)
        for i, a in enumerate(n.args):
            index = by_name.get(a.name, -1) if a.name else i
            if index < 0 or index >= len(params):
                raise d.error(a.loc, f"no parameter {a.name or i!r}")
            ordered[index] = a.value
        out = []
        for p, node in zip(params, ordered):
            if node is None and id(p) in defaults:
                default, decl_scope = defaults[id(p)]
                out.append(self.c.exprs.check(default, decl_scope, p.type))
                continue
            if node is None:
                raise d.error(n.loc, f"missing argument for {p.name!r}")
            e = self.c.exprs.check(node, scope, p.type)
            if p.direction in ("out", "inout") and not is_lvalue(e, self.c.readonly):
                raise d.error(node.loc, f"argument for {p.direction} parameter {p.name!r} must be assignable")
            out.append(e)
        return tuple(out)


def _optional(p: ast.Param) -> bool:
    return any(a.name == "optional" for a in p.annotations)


def _arg_loc(n: ast.CallExpr, i: int, params: tuple[ast.Param, ...]):  # type: ignore[no-untyped-def]
    return n.args[i].loc if i < len(n.args) else n.loc


def _size_bits(t: Type, maximum: bool) -> int | None:
    if isinstance(t, BitsType):
        return t.width
    if isinstance(t, VarbitType):
        return t.max_width if maximum else 0
    if isinstance(t, (HeaderType, StructType)):
        total = 0
        for f in t.fields:
            b = _size_bits(f.type, maximum)
            if b is None:
                return None
            total += b
        return total
    if isinstance(t, StackType):
        b = _size_bits(t.element, maximum)
        return None if b is None else b * t.size
    return None


__all__ = ["CallChecker", "is_lvalue", "U32"]
