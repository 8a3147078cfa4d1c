"""Expressions: typing (P4-16 §8), implicit conversion of untyped integer
literals, constant folding, and the IR they become. Calls are delegated to
:mod:`.calls`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.p4 import ast, ir
from emulator.p4.check.context import Scope
from emulator.p4.check.fold import fold_binary, fold_cast, fold_unary, wrap
from emulator.p4.types import (
    BOOL, BitsType, BoolType, EnumType, ErrorType, HeaderType, HeaderUnionType, InfIntType,
    MatchKindType, StackType, StringType, StructType, TupleType, Type, VarbitType,
)

if TYPE_CHECKING:
    from emulator.p4.check.program import Checker

ARITH = {"+", "-", "*", "/", "%", "|+|", "|-|"}
BITWISE = {"&", "|", "^"}
COMPARE = {"==", "!=", "<", "<=", ">", ">="}
U32 = BitsType(32)


def is_int_literal(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and isinstance(e.type, InfIntType)


def bits_of(t: Type) -> BitsType | None:
    if isinstance(t, BitsType):
        return t
    if isinstance(t, EnumType) and t.underlying is not None:
        return t.underlying
    return None


class ExprChecker:
    def __init__(self, checker: "Checker") -> None:
        self.c = checker
        # id(syntax node) → its IR, already checked (a compound assignment's target)
        self.prechecked: dict[int, ir.Expr] = {}
        # id of the expression a switch is on: the only place action_run may appear
        self.switch_subject: int | None = None

    # ---- entry points -------------------------------------------------------------
    def check(self, node: ast.Expression, scope: Scope, expected: Type | None = None) -> ir.Expr:
        done = self.prechecked.get(id(node))
        if done is not None:
            return done if expected is None else self.coerce(done, expected, node.loc)
        method = getattr(self, "_e_" + type(node).__name__, None)
        if method is None:
            raise self.c.diags.unsupported_error(node.loc, f"the expression {type(node).__name__}")
        e = method(node, scope, expected)
        if expected is not None:
            e = self.coerce(e, expected, node.loc)
        return e

    def coerce(self, e: ir.Expr, target: Type, loc) -> ir.Expr:  # type: ignore[no-untyped-def]
        """Implicit conversion of ``e`` to ``target`` (P4-16 §8.11.2): untyped
        literals to any integer type, serializable enums to their underlying type."""
        t = e.type
        if t == target or _typevar(target):
            return e
        if isinstance(t, InfIntType):
            tb = bits_of(target)
            if isinstance(target, InfIntType):
                return e
            if tb is not None and isinstance(e, ir.Const):
                if isinstance(target, EnumType):
                    raise self.c.diags.error(loc, f"cannot convert an integer to enum {target.name} implicitly; cast it")
                return ir.Const(target, wrap(int(e.value), target))  # type: ignore[call-overload]
        if isinstance(t, EnumType) and t.underlying is not None and target == t.underlying:
            if isinstance(e, ir.Const):
                return ir.Const(target, e.value)  # stays a constant (select keysets, entries)
            return ir.Cast(target, e)
        if isinstance(target, (StructType, HeaderType)) and isinstance(e, ir.ListExpr):
            return self.list_to_struct(e.elements, target, loc)
        if isinstance(target, TupleType) and isinstance(e, ir.ListExpr):
            if len(e.elements) != len(target.elements):
                raise self.c.diags.error(loc, f"a list of {len(e.elements)} cannot initialise {target}")
            elems = tuple(self.coerce(x, tt, loc) for x, tt in zip(e.elements, target.elements))
            return ir.ListExpr(target, elems)
        raise self.c.diags.error(loc, f"cannot convert {_show(t)} to {_show(target)}")

    def list_to_struct(self, elements: tuple[ir.Expr, ...], target: StructType | HeaderType,
                       loc) -> ir.StructExpr:  # type: ignore[no-untyped-def]
        if len(elements) != len(target.fields):
            raise self.c.diags.error(loc, f"{target.name} has {len(target.fields)} fields, "
                                          f"the initialiser has {len(elements)}")
        return ir.StructExpr(target, tuple((f.name, self.coerce(x, f.type, loc))
                                           for f, x in zip(target.fields, elements)))

    def const(self, node: ast.Expression, scope: Scope, expected: Type | None = None) -> ir.Const:
        e = self.check(node, scope, expected)
        if not isinstance(e, ir.Const):
            raise self.c.diags.error(node.loc, "a compile-time constant is required here")
        return e

    # ---- leaves --------------------------------------------------------------------
    def _e_IntLiteral(self, n: ast.IntLiteral, scope: Scope, expected: Type | None) -> ir.Expr:
        if n.width is None:
            return ir.Const(InfIntType(), n.value)
        t = BitsType(n.width, n.signed)
        if n.width <= 0:
            raise self.c.diags.error(n.loc, "an integer literal needs a positive width")
        return ir.Const(t, wrap(n.value, t))

    def _e_BoolLiteral(self, n: ast.BoolLiteral, scope: Scope, expected: Type | None) -> ir.Expr:
        return ir.Const(BOOL, n.value)

    def _e_StringLiteral(self, n: ast.StringLiteral, scope: Scope, expected: Type | None) -> ir.Expr:
        return ir.Const(StringType(), n.value)

    def _e_PathExpr(self, n: ast.PathExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        sym = scope.lookup(n.name)
        if sym is None:
            raise self.c.diags.error(n.loc, f"{n.name!r} is not declared")
        if sym.kind == "var":
            local: ir.Local = sym.value  # type: ignore[assignment]
            return ir.LocalRef(local.type, local)
        if sym.kind == "const":
            return sym.value  # type: ignore[return-value]
        if sym.kind == "match_kind":
            return ir.Const(MatchKindType(), n.name)
        if sym.kind == "instance":
            raise self.c.diags.unsupported_error(n.loc, f"passing the extern instance {n.name!r} as a value")
        raise self.c.diags.error(n.loc, f"{n.name!r} ({sym.kind}) cannot be used as a value here")

    def _e_TypeRefExpr(self, n: ast.TypeRefExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        raise self.c.diags.error(n.loc, "a type cannot be used as a value")

    def _e_DontCareExpr(self, n: ast.DontCareExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        if expected is None or _typevar(expected):
            raise self.c.diags.error(n.loc, "'_' needs a known type here")
        local = ir.Local("_", expected, loc=n.loc)
        return ir.LocalRef(expected, local)

    # ---- member access ---------------------------------------------------------------
    def _e_MemberExpr(self, n: ast.MemberExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        named = self._type_member(n, scope)
        if named is not None:
            return named
        if isinstance(n.base, ast.CallExpr) and isinstance(n.base.callee, ast.MemberExpr) \
                and n.base.callee.member == "apply" and n.member in ("hit", "miss", "action_run"):
            table = self.c.calls.table_of(n.base.callee.base, scope)
            if table is not None:
                if n.base.args:
                    raise self.c.diags.error(n.base.loc, "a table's apply takes no arguments")
                if n.member == "action_run" and id(n) != self.switch_subject:
                    raise self.c.diags.error(n.loc, "action_run is only allowed as the subject of a switch")
                t = BOOL if n.member != "action_run" else U32
                return ir.TableApplyResult(t, table, n.member)
        base = self.check(n.base, scope)
        bt = base.type
        if isinstance(bt, StackType):
            if n.member == "next":
                return ir.StackNext(bt.element, base)
            if n.member == "last":
                return ir.StackLast(bt.element, base)
            if n.member == "lastIndex":
                return ir.StackLastIndex(U32, base)
            if n.member == "nextIndex":
                return ir.StackNextIndex(U32, base)
            if n.member == "size":
                return ir.Const(U32, bt.size)
            raise self.c.diags.error(n.loc, f"a header stack has no member {n.member!r}")
        if isinstance(bt, (StructType, HeaderType, HeaderUnionType)):
            try:
                f = bt.field(n.member)
            except KeyError:
                raise self.c.diags.error(n.loc, f"{bt.name} has no field {n.member!r}") from None
            return ir.Member(f.type, base, n.member)
        if isinstance(bt, TupleType):
            raise self.c.diags.error(n.loc, "tuple elements are accessed by index")
        raise self.c.diags.error(n.loc, f"{_show(bt)} has no member {n.member!r}")

    def _type_member(self, n: ast.MemberExpr, scope: Scope) -> ir.Expr | None:
        """``E.member`` of an enum, ``error.X``, or a constant of a type."""
        base = n.base
        t: Type | None = None
        if isinstance(base, ast.TypeRefExpr):
            t = self.c.types.resolve(base.type, scope)
        elif isinstance(base, ast.PathExpr):
            sym = scope.lookup(base.name)
            if sym is not None and sym.kind == "type":
                t = sym.value  # type: ignore[assignment]
        if t is None:
            return None
        if isinstance(t, ErrorType):
            errors = self.c.error_type.members
            if n.member not in errors:
                raise self.c.diags.error(n.loc, f"error.{n.member} is not declared")
            return ir.Const(self.c.error_type, errors.index(n.member))
        if isinstance(t, EnumType):
            if n.member not in t.members:
                raise self.c.diags.error(n.loc, f"enum {t.name} has no member {n.member!r}")
            return ir.Const(t, t.value_of(n.member))
        raise self.c.diags.error(n.loc, f"type {_show(t)} has no member {n.member!r}")

    def _e_IndexExpr(self, n: ast.IndexExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        base = self.check(n.base, scope)
        if isinstance(base.type, StackType):
            index = self.check(n.index, scope)
            if is_int_literal(index) or isinstance(index, ir.Const):
                v = int(index.value)  # type: ignore[call-overload]
                if not 0 <= v < base.type.size:
                    raise self.c.diags.error(n.index.loc, f"index {v} out of bounds for a stack of {base.type.size}")
                index = ir.Const(U32, v)
            elif bits_of(index.type) is None:
                # p4c takes bit<W> and int<W> indices; a negative one is out of bounds.
                raise self.c.diags.error(n.index.loc, "a stack index must be an integer")
            return ir.StackElement(base.type.element, base, index)
        if isinstance(base.type, TupleType):
            index = self.const(n.index, scope)
            v = int(index.value)  # type: ignore[call-overload]
            if not 0 <= v < len(base.type.elements):
                raise self.c.diags.error(n.index.loc, f"tuple index {v} out of range")
            return ir.Member(base.type.elements[v], base, f"f{v}")
        raise self.c.diags.error(n.loc, f"{_show(base.type)} cannot be indexed")

    def _e_SliceExpr(self, n: ast.SliceExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        base = self.check(n.base, scope)
        hi = self.c.const_int(n.hi, scope, "a slice bound")
        lo = self.c.const_int(n.lo, scope, "a slice bound")
        return self._slice(base, hi, lo, n.loc)

    def _e_PlusSliceExpr(self, n: ast.PlusSliceExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        base = self.check(n.base, scope)
        lo = self.c.const_int(n.lo, scope, "a slice start")
        width = self.c.const_int(n.width, scope, "a slice width")
        return self._slice(base, lo + width - 1, lo, n.loc)

    def _slice(self, base: ir.Expr, hi: int, lo: int, loc) -> ir.Expr:  # type: ignore[no-untyped-def]
        b = bits_of(base.type)
        if b is None:
            if is_int_literal(base):
                b = BitsType(max(hi + 1, 1))
                base = ir.Const(b, int(base.value) & b.mask)  # type: ignore[call-overload]
            else:
                raise self.c.diags.error(loc, f"cannot slice {_show(base.type)}")
        if not (0 <= lo <= hi < b.width):
            raise self.c.diags.error(loc, f"slice [{hi}:{lo}] out of range for {b}")
        t = BitsType(hi - lo + 1)
        if isinstance(base, ir.Const):
            return ir.Const(t, (int(base.value) >> lo) & t.mask)  # type: ignore[call-overload]
        return ir.Slice(t, base, hi, lo)

    # ---- operators ---------------------------------------------------------------------
    def _e_UnaryExpr(self, n: ast.UnaryExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        operand = self.check(n.operand, scope)
        t = operand.type
        if n.op == "!":
            if not isinstance(t, BoolType):
                raise self.c.diags.error(n.loc, f"'!' needs a bool, not {_show(t)}")
            return fold_unary("!", operand, BOOL) if isinstance(operand, ir.Const) else ir.Unary(BOOL, "!", operand)
        if not (isinstance(t, (BitsType, InfIntType))):
            raise self.c.diags.error(n.loc, f"'{n.op}' needs an integer, not {_show(t)}")
        if n.op == "~" and isinstance(t, InfIntType):
            raise self.c.diags.error(n.loc, "'~' of an integer of unknown width; give it a width (e.g. 8w5)")
        if isinstance(operand, ir.Const):
            return fold_unary(n.op, operand, t)
        if n.op == "+":
            return operand
        return ir.Unary(t, n.op, operand)

    def _e_BinaryExpr(self, n: ast.BinaryExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        op = n.op
        left = self.check(n.left, scope)
        right = self.check(n.right, scope)
        d = self.c.diags
        if op in ("&&", "||"):
            for side in (left, right):
                if not isinstance(side.type, BoolType):
                    raise d.error(n.loc, f"'{op}' needs bool operands, not {_show(side.type)}")
            return self._fold(op, left, right, BOOL)
        if op in ("<<", ">>"):
            return self._shift(n, left, right)
        if op == "++":
            lb, rb = bits_of(left.type), bits_of(right.type)
            if lb is None or rb is None:
                raise d.error(n.loc, f"'++' needs bit<W> or int<W> operands, not "
                                     f"{_show(left.type)} and {_show(right.type)}")
            return self._fold(op, left, right, BitsType(lb.width + rb.width, lb.signed))
        left, right = self._unify(left, right, n)
        t = left.type
        if op in COMPARE:
            if op not in ("==", "!=") and not isinstance(t, (BitsType, InfIntType)):
                raise d.error(n.loc, f"'{op}' needs integer operands, not {_show(t)}")
            if isinstance(t, VarbitType) and not (isinstance(left, ir.Member) and isinstance(right, ir.Member)):
                raise d.unsupported_error(n.loc, "comparing varbit values other than header fields")
            return self._fold(op, left, right, BOOL)
        if not isinstance(t, (BitsType, InfIntType)):
            raise d.error(n.loc, f"'{op}' needs integer operands, not {_show(t)}")
        if op in ("/", "%") and isinstance(t, BitsType) and t.signed:
            raise d.error(n.loc, f"'{op}' is not defined for signed int<W> values")
        if op in ("/", "%") and isinstance(right, ir.Const) and int(right.value) == 0:  # type: ignore[call-overload]
            raise d.error(n.loc, "division by zero")
        if op in ("/", "%") and not (isinstance(left, ir.Const) and isinstance(right, ir.Const)):
            # p4c for simple_switch keeps only what strength reduction removes:
            # a power-of-two divisor (a shift or mask) or a zero dividend.
            pow2 = isinstance(right, ir.Const) and int(right.value) > 0 \
                and int(right.value) & (int(right.value) - 1) == 0  # type: ignore[call-overload]
            zero = isinstance(left, ir.Const) and int(left.value) == 0  # type: ignore[call-overload]
            if not (pow2 or zero):
                raise d.error(n.loc, f"'{op}': could not evaluate expression at compilation time "
                                     "(BMv2 has no run-time division; divide by a power of two)")
        if op in ("|+|", "|-|") and isinstance(t, InfIntType):
            raise d.error(n.loc, f"'{op}' needs operands of known width")
        return self._fold(op, left, right, t)

    def _fold(self, op: str, left: ir.Expr, right: ir.Expr, t: Type) -> ir.Expr:
        if isinstance(left, ir.Const) and isinstance(right, ir.Const):
            folded = fold_binary(op, left, right, t)
            if folded is not None:
                return folded
        return ir.Binary(t, op, left, right)

    def _shift(self, n: ast.BinaryExpr, left: ir.Expr, right: ir.Expr) -> ir.Expr:
        d = self.c.diags
        rb = right.type if isinstance(right.type, BitsType) else None
        if is_int_literal(right):
            if int(right.value) < 0:  # type: ignore[call-overload]
                raise d.error(n.right.loc, "shift by a negative amount")
            if isinstance(left.type, BitsType):
                right = ir.Const(BitsType(max(int(right.value).bit_length(), 1)), right.value)  # type: ignore[call-overload]
        elif rb is None or rb.signed:
            raise d.error(n.right.loc, "a shift amount must be an unsigned integer")
        if is_int_literal(left):
            if not isinstance(right, ir.Const):
                raise d.error(n.loc, "shifting an integer of unknown width by a non-constant; give it a width")
            if n.op == "<<" and int(left.value).bit_length() + int(right.value) > 2048:  # type: ignore[call-overload]
                raise d.error(n.loc, "the result is wider than 2048 bits")
            return self._fold(n.op, left, right, InfIntType())
        if not isinstance(left.type, BitsType):
            raise d.error(n.loc, f"cannot shift {_show(left.type)}")
        return self._fold(n.op, left, right, left.type)

    def _unify(self, left: ir.Expr, right: ir.Expr, n: ast.Node) -> tuple[ir.Expr, ir.Expr]:
        lt, rt = left.type, right.type
        if lt == rt:
            return left, right
        if isinstance(lt, InfIntType):
            return self.coerce(left, _scalar(rt), n.loc), self.coerce(right, _scalar(rt), n.loc)
        if isinstance(rt, InfIntType):
            return self.coerce(left, _scalar(lt), n.loc), self.coerce(right, _scalar(lt), n.loc)
        if isinstance(lt, EnumType) and lt.underlying == rt:
            return ir.Cast(rt, left), right
        if isinstance(rt, EnumType) and rt.underlying == lt:
            return left, ir.Cast(lt, right)
        raise self.c.diags.error(n.loc, f"operands of '{getattr(n, 'op', '?')}' have different types: "
                                        f"{_show(lt)} and {_show(rt)}")

    def _e_TernaryExpr(self, n: ast.TernaryExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        cond = self.check(n.cond, scope, BOOL)
        a = self.check(n.if_true, scope)
        b = self.check(n.if_false, scope)
        if is_int_literal(a) and is_int_literal(b) and expected is not None:
            a, b = self.coerce(a, expected, n.loc), self.coerce(b, expected, n.loc)
        a, b = self._unify(a, b, n)
        if is_int_literal(a) and not isinstance(cond, ir.Const):
            raise self.c.diags.error(n.loc, "'?:' with untyped integer branches needs a width")
        if isinstance(cond, ir.Const):
            return a if cond.value else b
        return ir.Mux(a.type, cond, a, b)

    def _e_CastExpr(self, n: ast.CastExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        target = self.c.types.resolve(n.type, scope)
        operand = self.check(n.expr, scope)
        src = operand.type
        if src == target:
            return operand
        if isinstance(operand, ir.ListExpr) and isinstance(target, (StructType, HeaderType, TupleType)):
            return self.coerce(operand, target, n.loc)
        ok = _cast_ok(src, target)
        if not ok:
            raise self.c.diags.error(n.loc, f"cannot cast {_show(src)} to {_show(target)}")
        if isinstance(operand, ir.Const):
            return fold_cast(operand, target)
        return ir.Cast(target, operand)

    def _e_ListExpr(self, n: ast.ListExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        if isinstance(expected, (StructType, HeaderType)):
            elems = tuple(self.check(e, scope, f.type) for e, f in zip(n.elements, expected.fields))
            return self.list_to_struct(elems, expected, n.loc)
        if isinstance(expected, TupleType) and len(expected.elements) == len(n.elements):
            elems = tuple(self.check(e, scope, t) for e, t in zip(n.elements, expected.elements))
            return ir.ListExpr(expected, elems)
        elems = tuple(self.check(e, scope) for e in n.elements)
        return ir.ListExpr(TupleType(tuple(e.type for e in elems)), elems)

    def _e_StructExpr(self, n: ast.StructExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        if not isinstance(expected, (StructType, HeaderType)):
            raise self.c.diags.error(n.loc, "a { field = value } initialiser needs a struct or header type here")
        given = {f.name: f for f in n.fields}
        names = [f.name for f in expected.fields]
        for f in n.fields:
            if f.name not in names:
                raise self.c.diags.error(f.loc, f"{expected.name} has no field {f.name!r}")
        missing = [x for x in names if x not in given]
        if missing:
            raise self.c.diags.error(n.loc, f"{expected.name} initialiser misses field {missing[0]!r}")
        fields = tuple((f.name, self.check(given[f.name].value, scope, f.type)) for f in expected.fields)
        return ir.StructExpr(expected, fields)

    def _e_CallExpr(self, n: ast.CallExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        result = self.c.calls.call(n, scope, as_value=True)
        assert isinstance(result, ir.Expr)
        return result

    def _e_DefaultExpr(self, n: ast.DefaultExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        raise self.c.diags.error(n.loc, "'default' can only be used as a label or keyset")

    def _e_MaskExpr(self, n: ast.MaskExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        raise self.c.diags.error(n.loc, "'&&&' can only be used in a keyset")

    def _e_RangeExpr(self, n: ast.RangeExpr, scope: Scope, expected: Type | None) -> ir.Expr:
        raise self.c.diags.error(n.loc, "'..' can only be used in a keyset")


def _scalar(t: Type) -> Type:
    return t


def _typevar(t: object) -> bool:
    return type(t).__name__ == "TypeVar"


def _cast_ok(src: Type, dst: Type) -> bool:
    sb, db = bits_of(src), bits_of(dst)
    if isinstance(src, InfIntType) and (db is not None or isinstance(dst, BoolType)):
        return True
    if isinstance(src, BitsType) and isinstance(dst, BitsType):
        return src.signed == dst.signed or src.width == dst.width
    if isinstance(src, BoolType) and isinstance(dst, BitsType):
        return dst.width == 1 and not dst.signed
    if isinstance(dst, BoolType) and isinstance(src, BitsType):
        return src.width == 1 and not src.signed
    if isinstance(dst, EnumType) and dst.underlying is not None:
        return sb is not None and sb.width == dst.underlying.width
    if isinstance(src, EnumType) and src.underlying is not None:
        return db is not None
    return False


def _show(t: Type) -> str:
    return str(t)
