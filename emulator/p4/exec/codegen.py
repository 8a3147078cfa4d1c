"""Compiles the IR of parsers, controls, actions and functions to Python
source code, one Python function each.

Conventions of the generated code:

- A parser or control runs on a *frame* ``F``: an object with one slot per
  parameter and per block-level local, plus ``_ctx`` (the per-packet context
  of :mod:`.pipeline`). Actions take ``(F, *args)``; tables are functions of
  ``F`` returning the matched table entry (``.hit``, ``.aid``).
- Block-scoped variables and action/function parameters are Python locals.
- Scalars are ints in range (signed types as signed ints); every arithmetic
  result is wrapped to its width right where it is computed.
- ``exit`` raises :class:`ExitBlock`; parser errors raise :class:`ParserError`.
- Field lists (checksums, hashes) and fixed-width headers move to and from
  bytes with one :mod:`struct` call (plans in :mod:`.bytepack`); exact and
  memoised table lookups are one dict get in the table's function;
  counters and registers are indexed inline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

from emulator.p4 import ir
from emulator.p4.exec.decisions import is_volatile
from emulator.p4.exec.layout import Layouts, is_aggregate, py_ident
from emulator.p4.exec.statements import StatementCodegen, is_fresh, unsupported
from emulator.p4.types import (
    BitsType, BoolType, EnumType, HeaderType, HeaderUnionType, StackType, TupleType, Type, VarbitType,
)



def bits_of(t: Type) -> BitsType | None:
    """The bit-level type of a scalar (serializable enums as their underlying)."""
    if isinstance(t, BitsType):
        return t
    if isinstance(t, EnumType) and t.underlying is not None:
        return t.underlying
    return None


def fit(raw: str, t: Type) -> str:
    """Wrap the Python expression ``raw`` to the range of type ``t``."""
    b = bits_of(t)
    if b is None:
        return raw
    if b.signed:
        # (as a Python int: in C the unsigned arithmetic would not go negative)
        half = 1 << (b.width - 1)
        return f"(((_o({raw}) + {half}) & {b.mask}) - {half})"
    return f"(({raw}) & {b.mask})"


def unsigned(code: str, t: Type) -> str:
    """``code`` as the unsigned integer of the same width (for packing)."""
    if isinstance(t, BoolType):
        return f"int({code})"
    b = bits_of(t)
    if b is not None and b.signed:
        return f"(({code}) & {b.mask})"
    return code


@dataclass
class FuncScope:
    """What the code of one generated function can see."""

    frame_locals: set[int]
    names: dict[int, str] = field(default_factory=dict)
    return_outs: tuple[ir.Local, ...] = ()
    is_function: bool = False


class Codegen(StatementCodegen):
    """Holds the names of everything generated and the environment the
    generated module runs in (``env``: name → object)."""

    def __init__(self, layouts: Layouts, externs: "ExternLowering") -> None:
        self.layouts = layouts
        self.externs = externs
        self.env: dict[str, object] = {}
        self._obj_names: dict[tuple[int, str], str] = {}
        self._counter = 0
        self.lines: list[str] = []
        self.scope = FuncScope(set())
        self.pre: list[str] = []
        self._indent = ""
        # Blocks and functions referenced by generated code, generated later.
        self.pending_blocks: list[ir.Control | ir.Parser] = []
        self.pending_functions: list[ir.Function] = []
        self.pending_actions: list[ir.Action] = []  # top-level actions called directly
        # id(expr) → a temporary already holding its value (lvalue indices
        # evaluated once, before the right side of an assignment).
        self.pinned: dict[int, str] = {}
        # Why the program's ingress cannot be cached (see :mod:`.decisions`),
        # when generated code cannot mark a pass itself (a function has no frame).
        self.cache_blocked: str | None = None
        # Whether the code being generated may run in ingress, the one block
        # whose decisions are cached: only there are passes marked
        # (``F._ctx.nocache``) and counter bumps kept for replay.
        self.tracks_cache = True

    def obj(self, code: str) -> str:
        """``code`` as a Python int in the compiled executor's code, where C
        integer arithmetic would differ (see :mod:`.layout`); unchanged in
        Python's."""
        return f"_o({code})" if self.layouts.cython else code

    # ---- names -----------------------------------------------------------
    def fresh(self, hint: str) -> str:
        self._counter += 1
        return f"{py_ident(hint)}_{self._counter}"

    def name_of(self, obj: object, prefix: str, hint: str) -> str:
        key = (id(obj), prefix)
        if key not in self._obj_names:
            self._obj_names[key] = f"{prefix}{self._counter + 1}_{py_ident(hint)}"
            self._counter += 1
        return self._obj_names[key]

    def force_name(self, obj: object, prefix: str, name: str) -> None:
        """Give ``obj`` a fixed generated name (used for frame slots the
        architecture reads and writes directly)."""
        self._obj_names[(id(obj), prefix)] = name

    def bind(self, name: str, value: object) -> str:
        self.env[name] = value
        return name

    def local_name(self, local: ir.Local) -> str:
        if id(local) in self.scope.frame_locals:
            return f"F.{self.name_of(local, 'v', local.name)}"
        names = self.scope.names
        if id(local) not in names:
            names[id(local)] = self.fresh(local.name)
        return names[id(local)]

    def frame_slot(self, local: ir.Local) -> str:
        return self.name_of(local, "v", local.name)

    # ---- emission ----------------------------------------------------------
    def emit(self, line: str) -> None:
        for p in self.pre:
            self.lines.append(self._indent + p)
        self.pre.clear()
        self.lines.append(self._indent + line)

    def captured_lines(self, body: Callable[[], None]) -> list[str]:
        """The lines ``body`` emits, at indentation zero, kept out of the
        module (for the caller to place)."""
        lines, indent = self.lines, self._indent
        self.lines, self._indent = [], ""
        try:
            body()
            return self.lines or ["pass"]
        finally:
            self.lines, self._indent = lines, indent

    def emit_lines(self, lines: list[str], indent: str = "") -> None:
        """Lines (from :meth:`captured_lines`) at the current indentation plus ``indent``."""
        for line in lines:
            self.emit(indent + line)

    def indent(self) -> "_Indent":
        return _Indent(self)

    # ---- expressions -------------------------------------------------------
    def expr(self, e: ir.Expr) -> str:
        pinned = self.pinned.get(id(e))
        if pinned is not None:
            return pinned
        method: Callable[[ir.Expr], str] | None = getattr(self, "_x_" + type(e).__name__, None)
        if method is None:
            raise unsupported(f"expression {type(e).__name__}")
        return method(e)

    def captured(self, e: ir.Expr) -> tuple[str, list[str]]:
        """``e``'s code and the lines it needs first, without emitting them."""
        saved, self.pre = self.pre, []
        try:
            code = self.expr(e)
            return code, self.pre
        finally:
            self.pre = saved

    def in_order(self, exprs: list[ir.Expr]) -> list[str]:
        """Codes of ``exprs`` evaluated left to right (P4-16 §8.1): when a
        later one needs lines first (a call with side effects), earlier values
        are saved in temporaries before those lines run."""
        codes: list[str] = []
        for e in exprs:
            code, lines = self.captured(e)
            if lines:
                for i, prev in enumerate(codes):
                    if not _is_literal(prev):
                        tmp = self.fresh("seq")
                        self.pre.append(f"{tmp} = {prev}")
                        codes[i] = tmp
                self.pre.extend(lines)
            codes.append(code)
        return codes

    def _x_Const(self, e: ir.Const) -> str:
        if isinstance(e.value, bool):
            return "True" if e.value else "False"
        if isinstance(e.value, str):
            return repr(e.value)
        if isinstance(e.value, int):
            return str(e.value) if e.value >= 0 else f"({e.value})"
        if isinstance(e.value, tuple):
            return "(" + "".join(f"{v!r}, " for v in e.value) + ")"
        raise unsupported(f"constant {e.value!r}")

    def _x_LocalRef(self, e: ir.LocalRef) -> str:
        if e.local.name == "_" and id(e.local) not in self.scope.names \
                and id(e.local) not in self.scope.frame_locals:
            # A don't-care argument: a throwaway variable holding a default value.
            name = self.local_name(e.local)
            self.pre.append(f"{name} = {self.layouts.new_value(e.type)}")
            return name
        return self.local_name(e.local)

    def _x_Member(self, e: ir.Member) -> str:
        bt = e.base.type
        if isinstance(bt, TupleType):
            return f"{self.expr(e.base)}[{int(e.name.lstrip('f'))}]"
        if is_volatile(bt, e.name):
            self.mark_uncacheable(f"standard_metadata.{e.name}")
        return f"{self.expr(e.base)}.{py_ident(e.name)}"

    def _x_StackElement(self, e: ir.StackElement) -> str:
        base = self.expr(e.base)
        if isinstance(e.index, ir.Const):
            assert isinstance(e.base.type, StackType)
            if not 0 <= int(e.index.value) < e.base.type.size:  # type: ignore[arg-type]
                raise unsupported("a constant stack index out of bounds")
            return f"{base}.hs[{e.index.value}]"
        return f"stack_at({base}, {self.expr(e.index)})"

    def _x_StackNext(self, e: ir.StackNext) -> str:
        return f"stack_next({self.expr(e.base)})"

    def _x_StackLast(self, e: ir.StackLast) -> str:
        return f"stack_last({self.expr(e.base)})"

    def _x_StackLastIndex(self, e: ir.StackLastIndex) -> str:
        return f"(({self.expr(e.base)}.nxt - 1) & 0xffffffff)"

    def _x_StackNextIndex(self, e: ir.StackNextIndex) -> str:
        return f"{self.expr(e.base)}.nxt"

    def _x_IsValid(self, e: ir.IsValid) -> str:
        return f"{self.expr(e.base)}._v"

    def _x_Slice(self, e: ir.Slice) -> str:
        mask = (1 << (e.hi - e.lo + 1)) - 1
        base = self.expr(e.base)
        if e.lo == 0:
            return f"({base} & {mask})"
        return f"(({base} >> {e.lo}) & {mask})"

    def _x_Unary(self, e: ir.Unary) -> str:
        x = self.expr(e.operand)
        if e.op == "!":
            return f"(not {x})"
        b = bits_of(e.type)
        if b is None:
            raise unsupported(f"unary {e.op} on {e.type}")
        if e.op == "-":
            return fit(f"-{x}", e.type)
        if e.op == "~":
            return f"(~{x})" if b.signed else f"({x} ^ {b.mask})"
        if e.op == "+":
            return x
        raise unsupported(f"unary operator {e.op}")

    def _x_Binary(self, e: ir.Binary) -> str:
        op = e.op
        lt, rt = e.left.type, e.right.type
        if op in ("&&", "||"):
            left = self.expr(e.left)
            right, lines = self.captured(e.right)
            if not lines:
                return f"({left} {'and' if op == '&&' else 'or'} {right})"
            # The right side has side effects: run them only when it is evaluated.
            tmp = self.fresh("sc")
            self.pre.append(f"{tmp} = {left}")
            self.pre.append(f"if {'' if op == '&&' else 'not '}{tmp}:")
            self.pre.extend("    " + line for line in lines)
            self.pre.append(f"    {tmp} = {right}")
            return tmp
        left, right = self.in_order([e.left, e.right])
        if op in ("==", "!="):
            if is_aggregate(lt):
                code = f"{left}._eq({right})"
                return code if op == "==" else f"(not {code})"
            if isinstance(lt, VarbitType):
                # Equal varbits have the same current width and value.
                assert isinstance(e.left, ir.Member) and isinstance(e.right, ir.Member)
                code = (f"({left} == {right} and {self.expr(e.left.base)}._vw == "
                        f"{self.expr(e.right.base)}._vw)")
                return code if op == "==" else f"(not {code})"
            return f"({left} {op} {right})"
        if op in ("<", "<=", ">", ">="):
            return f"({left} {op} {right})"
        if op == "++":
            rb = bits_of(rt) or BitsType(1)
            b = bits_of(e.type)
            if b is not None and b.width > 64:
                left = self.obj(left)  # wider than a C integer
            code = f"(({unsigned(left, lt)} << {rb.width}) | {unsigned(right, rt)})"
            return fit(code, e.type) if b is not None and b.signed else code
        b = bits_of(e.type)
        if b is None:
            raise unsupported(f"operator {op} on {e.type}")
        if op in ("+", "-", "*"):
            return fit(f"{left} {op} {right}", e.type)
        if op in ("&", "|", "^"):
            return f"({left} {op} {right})"
        if op in ("/", "%"):
            fn = "p4_div" if op == "/" else "p4_mod"
            return f"{fn}({left}, {right})"
        if op in ("|+|", "|-|"):
            # Saturating: the exact sum or difference first (a Python int).
            raw = f"{self.obj(left)} {op[1]} {right}"
            if b.signed:
                half = 1 << (b.width - 1)
                return f"max(min({raw}, {half - 1}), {-half})"
            return f"min({raw}, {b.mask})" if op == "|+|" else f"max({raw}, 0)"
        if op == "<<":
            if isinstance(e.right, ir.Const):
                amount = int(e.right.value)  # type: ignore[arg-type]
                return "0" if amount >= b.width else fit(f"{left} << {amount}", e.type)
            return fit(f"shl({left}, {right}, {b.width})", e.type)
        if op == ">>":
            if isinstance(e.right, ir.Const) and int(e.right.value) < 64:  # type: ignore[arg-type]
                return f"({left} >> {right})"
            return f"({self.obj(left)} >> {right})"  # (C shifts by 64 or more are undefined)
        raise unsupported(f"binary operator {op}")

    def _x_Cast(self, e: ir.Cast) -> str:
        src, dst = e.operand.type, e.type
        x = self.expr(e.operand)
        if isinstance(dst, BoolType):
            return x if isinstance(src, BoolType) else f"({x} != 0)"
        if isinstance(src, BoolType):
            return f"int({x})"
        db, sb = bits_of(dst), bits_of(src)
        if db is not None and sb is not None:
            if db == sb:
                return x
            if not db.signed and not sb.signed and db.width >= sb.width:
                return self.obj(x) if db.width > 64 else x
            return fit(unsigned(x, src) if not db.signed else x, dst)
        return x

    def _x_Mux(self, e: ir.Mux) -> str:
        cond = self.expr(e.cond)
        then, then_lines = self.captured(e.then)
        other, other_lines = self.captured(e.otherwise)
        if not then_lines and not other_lines:
            # (compiled, both sides as objects: Cython wants one C type for both)
            return f"({self.obj(then)} if {cond} else {self.obj(other)})"
        # Only the chosen branch may run its side effects.
        tmp = self.fresh("mux")
        self.pre.append(f"if {cond}:")
        self.pre.extend("    " + line for line in then_lines)
        self.pre.append(f"    {tmp} = {then}")
        self.pre.append("else:")
        self.pre.extend("    " + line for line in other_lines)
        self.pre.append(f"    {tmp} = {other}")
        return tmp

    def _x_ListExpr(self, e: ir.ListExpr) -> str:
        return "(" + "".join(self.expr(x) + ", " for x in e.elements) + ")"

    def _x_StructExpr(self, e: ir.StructExpr) -> str:
        tmp = self.fresh("agg")
        self.pre.append(f"{tmp} = {self.layouts.new_value(e.type)}")
        for name, value in e.fields:
            code = self.expr(value)
            if is_aggregate(value.type) and not is_fresh(value):
                code += "._cp()"
            self.pre.append(f"{tmp}.{py_ident(name)} = {code}")
        if isinstance(e.type, HeaderType):
            self.pre.append(f"{tmp}._v = True")
        return tmp

    def _x_TableApplyResult(self, e: ir.TableApplyResult) -> str:
        call = f"{self.table_fn(e.table)}(F)"
        if e.member == "hit":
            return f"{call}.hit"
        if e.member == "miss":
            return f"(not {call}.hit)"
        return f"{call}.aid"

    def _x_ExternCall(self, e: ir.ExternCall) -> str:
        return self.externs.lower(self, e)

    def _x_FunctionCall(self, e: ir.FunctionCall) -> str:
        fn = self.name_of(e.function, "fn", e.function.name)
        self.pending_functions.append(e.function)
        outs = [(a, p) for a, p in zip(e.args, e.function.params) if p.direction in ("out", "inout")]
        args = ", ".join(self.args_in_order(e.args, e.function.params))
        if not outs:
            return f"{fn}({args})"
        tmp = self.fresh("ret")
        self.pre.append(f"{tmp} = {fn}({args})")
        for i, (a, _p) in enumerate(outs, start=1):
            self.pre.extend(self.assign_lines(a, f"{tmp}[{i}]", fresh=True))
        return f"{tmp}[0]"

    # ---- helpers shared with statements -------------------------------------
    def mark_uncacheable(self, why: str) -> None:
        """Code that depends on more than the fields ingress reads (per-packet
        metadata, extern state) or leaves effects besides them: it marks the
        pass so its ingress decisions are not cached (:mod:`.decisions`)."""
        if self.scope.is_function:
            self.cache_blocked = self.cache_blocked or f"{why} in a function"
        elif self.tracks_cache:
            self.pre.append("F._ctx.nocache = True")

    def args_in_order(self, args: tuple[ir.Expr, ...], params: tuple[ir.Local, ...]) -> list[str]:
        """Copy-in of call arguments, left to right."""
        codes: list[str] = []
        for a, p in zip(args, params):
            saved, self.pre = self.pre, []
            code = self.arg(a, p)
            lines, self.pre = self.pre, saved
            if lines:
                for i, prev in enumerate(codes):
                    if not _is_literal(prev):
                        tmp = self.fresh("arg")
                        self.pre.append(f"{tmp} = {prev}")
                        codes[i] = tmp
                self.pre.extend(lines)
            codes.append(code)
        return codes

    def pin_indices(self, lhs: ir.Expr) -> list[int]:
        """Evaluate the run-time stack indices of an lvalue into temporaries
        now, so the right side (or a compound assignment's re-read) sees the
        lvalue as it was first evaluated (P4-16 §8.1: left to right)."""
        e = lhs
        keys: list[int] = []
        while isinstance(e, (ir.Member, ir.Slice, ir.StackElement)):
            if isinstance(e, ir.StackElement) and not isinstance(e.index, ir.Const) \
                    and id(e.index) not in self.pinned:
                tmp = self.fresh("idx")
                self.emit(f"{tmp} = {self.expr(e.index)}")
                self.pinned[id(e.index)] = tmp
                keys.append(id(e.index))
            e = e.base
        return keys

    def unpin(self, keys: list[int]) -> None:
        for k in keys:
            del self.pinned[k]

    def arg(self, a: ir.Expr, p: ir.Local) -> str:
        """Copy-in of one argument."""
        if p.direction == "out":
            return self.layouts.new_value(p.type)
        code = self.expr(a)
        if is_aggregate(a.type) and not is_fresh(a):
            return f"{code}._cp()"
        return code

    def table_fn(self, table: ir.Table) -> str:
        return self.name_of(table, "tbl", table.local_name)

    def assign_lines(self, lhs: ir.Expr, value: str, fresh: bool) -> list[str]:
        """Lines assigning Python expression ``value`` to the lvalue ``lhs``.
        ``fresh``: the value is a new object (no copy needed)."""
        if is_aggregate(lhs.type) and not fresh:
            value = f"{value}._cp()"
        if isinstance(lhs, ir.Slice):
            base = lhs.base
            width = lhs.hi - lhs.lo + 1
            mask = ((1 << width) - 1) << lhs.lo
            b = bits_of(base.type)
            assert b is not None
            cur = self.expr(base)
            new = f"(({unsigned(cur, base.type)} & {b.mask ^ mask}) | (({value}) << {lhs.lo}))"
            return self.assign_lines(base, fit(new, base.type) if b.signed else new, fresh=True)
        if is_aggregate(lhs.type) and isinstance(lhs, (ir.StackElement, ir.StackNext, ir.StackLast)) \
                and not (isinstance(lhs, ir.StackElement) and isinstance(lhs.index, ir.Const)):
            # A whole element chosen at run time: copy into it in place.
            return [f"{self.expr(lhs)}._set({value})"]
        target = self.expr(lhs)
        lines = [f"{target} = {value}"]
        if isinstance(lhs, ir.Member) and isinstance(lhs.base.type, HeaderUnionType):
            lines.append(f"{self.expr(lhs.base)}._only({target})")
        return lines

    def run_fn(self, header: str, body: Callable[[], None]) -> None:
        self.emit(header)
        with self.indent():
            start = len(self.lines)
            body()
            if len(self.lines) == start:
                self.emit("pass")

class _Indent:
    def __init__(self, gen: Codegen) -> None:
        self.gen = gen

    def __enter__(self) -> None:
        self.gen._indent += "    "

    def __exit__(self, *exc: object) -> None:
        self.gen._indent = self.gen._indent[:-4]


def _is_literal(code: str) -> bool:
    return code.lstrip("(-").rstrip(")").isdigit() or code in ("True", "False")




class ExternLowering(Protocol):
    """What an architecture provides to lower extern calls (see
    :mod:`.v1model_externs`). ``action_ids`` maps ``id(action)`` to the small
    integer the generated code compares ``action_run`` with."""

    action_ids: dict[int, int]

    def lower(self, gen: Codegen, call: ir.ExternCall) -> str: ...
