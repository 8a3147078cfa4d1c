"""Constant folding: P4 operators applied to constants, with the same width
semantics the executor applies at run time (P4-16 §8)."""

from __future__ import annotations

from emulator.p4 import ir
from emulator.p4.types import BOOL, BitsType, BoolType, EnumType, InfIntType, Type


def wrap(value: int, t: Type) -> int:
    """``value`` reduced to the range of ``t`` (two's complement for int<W>)."""
    b = t.underlying if isinstance(t, EnumType) and t.underlying is not None else t
    if isinstance(b, BitsType):
        value &= b.mask
        if b.signed and value >> (b.width - 1):
            value -= 1 << b.width
    return value


def as_unsigned(value: int, t: Type) -> int:
    if isinstance(t, BitsType):
        return value & t.mask
    return value


def fold_unary(op: str, c: ir.Const, t: Type) -> ir.Const:
    v = c.value
    if op == "!":
        return ir.Const(BOOL, not v)
    if op == "-":
        return ir.Const(t, wrap(-int(v), t))  # type: ignore[call-overload]
    if op == "+":
        return ir.Const(t, v)
    if op == "~":
        if isinstance(t, InfIntType):
            return ir.Const(t, ~int(v))  # type: ignore[call-overload]
        return ir.Const(t, wrap(~int(v), t))  # type: ignore[call-overload]
    raise ValueError(op)


def fold_binary(op: str, a: ir.Const, b: ir.Const, t: Type) -> ir.Const | None:
    """Fold ``a op b`` with result type ``t``; None when it cannot be folded
    (division by zero)."""
    x, y = a.value, b.value
    if op == "&&":
        return ir.Const(BOOL, bool(x) and bool(y))
    if op == "||":
        return ir.Const(BOOL, bool(x) or bool(y))
    if op in ("==", "!="):
        eq = x == y
        return ir.Const(BOOL, eq if op == "==" else not eq)
    if op in ("<", "<=", ">", ">="):
        result = {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]  # type: ignore[operator]
        return ir.Const(BOOL, result)
    x, y = int(x), int(y)  # type: ignore[call-overload]
    if op == "++":
        wb = b.type.width if isinstance(b.type, BitsType) else 0
        return ir.Const(t, wrap((as_unsigned(x, a.type) << wb) | as_unsigned(y, b.type), t))
    if op == "+":
        r = x + y
    elif op == "-":
        r = x - y
    elif op == "*":
        r = x * y
    elif op in ("/", "%"):
        if y == 0:
            return None
        if op == "/":
            r = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        else:
            r = x - y * (abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1))
    elif op == "&":
        r = x & y
    elif op == "|":
        r = x | y
    elif op == "^":
        r = x ^ y
    elif op == "<<":
        if isinstance(t, BitsType) and y >= t.width:
            r = 0
        else:
            r = x << y
    elif op == ">>":
        r = x >> y
    elif op in ("|+|", "|-|"):
        r = x + y if op == "|+|" else x - y
        if isinstance(t, BitsType):
            lo, hi = (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (0, t.mask)
            return ir.Const(t, min(max(r, lo), hi))
    else:
        raise ValueError(op)
    if isinstance(t, InfIntType):
        return ir.Const(t, r)
    return ir.Const(t, wrap(r, t))


def fold_cast(c: ir.Const, t: Type) -> ir.Const:
    v = c.value
    if isinstance(t, BoolType):
        return ir.Const(t, bool(v))
    if isinstance(v, bool):
        return ir.Const(t, int(v))
    if isinstance(t, (BitsType, EnumType)):
        return ir.Const(t, wrap(int(v), t))  # type: ignore[call-overload]
    return ir.Const(t, v)
