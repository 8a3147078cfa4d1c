"""Code generation for statements (assignments, calls with copy-in and
copy-out, header methods, sub-block application, if/switch, exit, return):
the statement half of :class:`~emulator.p4.exec.codegen.Codegen`, which
provides the expressions and names used here."""

from __future__ import annotations

from emulator.p4 import ir
from emulator.p4.errors import Diagnostic, UnsupportedError
from emulator.p4.exec.layout import is_aggregate
from emulator.p4.types import (
    BitsType, BoolType, EnumType, ErrorType, HeaderType, HeaderUnionType, StackType, StructType,
    TupleType,
)

def unsupported(what: str, loc=None) -> UnsupportedError:
    return UnsupportedError([Diagnostic(loc, f"{what} is not supported by the built-in target")])


def is_fresh(e: ir.Expr) -> bool:
    """Whether evaluating ``e`` yields a new object (no copy needed)."""
    return isinstance(e, (ir.StructExpr, ir.FunctionCall, ir.ExternCall, ir.ListExpr))


def is_extern_typed(local: ir.Local) -> bool:
    return not isinstance(local.type, (BitsType, BoolType, EnumType, ErrorType, HeaderType,
                                       HeaderUnionType, StructType, StackType, TupleType))


class StatementCodegen:
    """Mixin of :class:`Codegen`: one ``_s_<Node>`` method per statement."""

    # ---- statements ----------------------------------------------------------
    def stmt(self, s: ir.Stmt) -> None:
        method = getattr(self, "_s_" + type(s).__name__, None)
        if method is None:
            raise unsupported(f"statement {type(s).__name__}", s.loc)
        method(s)

    def block(self, b: ir.Block | None) -> None:
        start = len(self.lines)
        if b is not None:
            for s in b.stmts:
                self.stmt(s)
        if len(self.lines) == start:
            self.emit("pass")

    def _s_Block(self, s: ir.Block) -> None:
        for x in s.stmts:
            self.stmt(x)

    def _s_Assign(self, s: ir.Assign) -> None:
        pinned = self.pin_indices(s.lhs)
        value = self.expr(s.rhs)
        for line in self.assign_lines(s.lhs, value, fresh=is_fresh(s.rhs)):
            self.emit(line)
        self.unpin(pinned)

    def _s_VarDecl(self, s: ir.VarDecl) -> None:
        name = self.local_name(s.local)
        if s.init is None:
            self.emit(f"{name} = {self.layouts.new_value(s.local.type)}")
        else:
            value = self.expr(s.init)
            if is_aggregate(s.local.type) and not is_fresh(s.init):
                value += "._cp()"
            self.emit(f"{name} = {value}")

    def _s_ExprStmt(self, s: ir.ExprStmt) -> None:
        code = self.expr(s.expr)
        self.emit(code)

    def _s_HeaderMethod(self, s: ir.HeaderMethod) -> None:
        base = self.expr(s.base)
        # simple_switch's add_header/remove_header: a header that becomes valid
        # is zeroed, and the packet-length register (standard_metadata.
        # packet_length in egress) grows or shrinks by the header's size.
        nbytes = s.base.type.width // 8 if isinstance(s.base.type, HeaderType) else 0
        length = "" if self.scope.is_function else f"; F._ctx.length_reg += {nbytes}"
        if s.method == "setValid":
            tmp = self.fresh("hv")
            self.emit(f"{tmp} = {base}")
            self.emit(f"if not {tmp}._v: {tmp}._zero(){length}")
            self.emit(f"{tmp}._v = True")
            if isinstance(s.base, ir.Member) and isinstance(s.base.base.type, HeaderUnionType):
                self.emit(f"{self.expr(s.base.base)}._only({tmp})")
        elif s.method == "setInvalid":
            tmp = self.fresh("hv")
            self.emit(f"{tmp} = {base}")
            if length:
                self.emit(f"if {tmp}._v: F._ctx.length_reg -= {nbytes}")
            self.emit(f"{tmp}._v = False")
        elif s.method in ("push_front", "pop_front"):
            self.emit(f"{base}.{s.method}({s.count})")
        else:
            raise unsupported(f"header method {s.method}", s.loc)

    def _s_ActionCall(self, s: ir.ActionCall) -> None:
        fn = self.action_fn(s.action)
        self.pending_actions.append(s.action)
        self.call_with_outs(fn, "F", s.args, s.action.params)

    def call_with_outs(self, fn: str, first: str, args: tuple[ir.Expr, ...],
                       params: tuple[ir.Local, ...]) -> None:
        outs = [(a, p) for a, p in zip(args, params) if p.direction in ("out", "inout")]
        pinned = [k for a, _p in outs for k in self.pin_indices(a)]
        codes = [first] + self.args_in_order(args, params)
        if not outs:
            self.emit(f"{fn}({', '.join(codes)})")
            return
        tmp = self.fresh("outs")
        copy_out = [line for i, (a, _p) in enumerate(outs)
                    for line in self.assign_lines(a, f"{tmp}[{i}]", fresh=True)]
        # An ``exit`` in the action still copies its out/inout parameters
        # back (p4c: issue2225); the action raises ExitBlock(outs).
        self.emit("try:")
        with self.indent():
            self.emit(f"{tmp} = {fn}({', '.join(codes)})")
        self.emit("except ExitBlock as exc:")
        with self.indent():
            self.emit(f"{tmp} = exc.args[0]")
            for line in copy_out:
                self.emit(line)
            self.emit("raise ExitBlock()")
        for line in copy_out:
            self.emit(line)
        self.unpin(pinned)

    def action_fn(self, action: ir.Action) -> str:
        return self.name_of(action, "act", action.local_name)

    def _s_TableApply(self, s: ir.TableApply) -> None:
        self.emit(f"{self.table_fn(s.table)}(F)")

    def _s_SubApply(self, s: ir.SubApply) -> None:
        block = s.block
        frame_cls = self.name_of(block, "Frame", block.name)
        fn = self.name_of(block, "blk", block.name)
        g = self.fresh("sub")
        self.emit(f"{g} = {frame_cls}()")
        self.emit(f"{g}._ctx = F._ctx")
        for a, p in zip(s.args, block.params):
            if p.direction == "out":
                self.emit(f"{g}.{self.frame_slot(p)} = {self.layouts.new_value(p.type)}")
            elif p.direction == "inout" or is_extern_typed(p):
                self.emit(f"{g}.{self.frame_slot(p)} = {self.expr(a)}")
            else:
                self.emit(f"{g}.{self.frame_slot(p)} = {self.arg(a, p)}")
        self.pending_blocks.append(block)
        copy_out = [line for a, p in zip(s.args, block.params)
                    if p.direction in ("out", "inout") and not is_extern_typed(p)
                    for line in self.assign_lines(a, f"{g}.{self.frame_slot(p)}", fresh=True)]
        if not copy_out or isinstance(block, ir.Parser):
            self.emit(f"{fn}({g})")
        else:
            self.emit("try:")  # copy-out happens on ``exit`` too (as for actions)
            with self.indent():
                self.emit(f"{fn}({g})")
            self.emit("except ExitBlock:")
            with self.indent():
                for line in copy_out:
                    self.emit(line)
                self.emit("raise")
        for line in copy_out:
            self.emit(line)

    def _s_If(self, s: ir.If) -> None:
        self.emit(f"if {self.expr(s.cond)}:")
        with self.indent():
            self.block(s.then)
        if s.otherwise is not None and s.otherwise.stmts:
            self.emit("else:")
            with self.indent():
                self.block(s.otherwise)

    def _s_Switch(self, s: ir.Switch) -> None:
        subject = self.expr(s.subject)
        tmp = self.fresh("sw")
        self.emit(f"{tmp} = {subject}")
        pending: list[str] = []
        first = True
        default_body: ir.Block | None = None
        has_default = False
        for case in s.cases:
            if case.default:
                has_default = True
                default_body = case.body if case.body is not None else ir.Block()
                continue
            for label in case.labels:
                if isinstance(label, ir.Action):
                    pending.append(str(self.action_id(label)))
                else:
                    pending.append(self.expr(label))
            if case.body is None:
                continue
            cond = " or ".join(f"{tmp} == {v}" for v in pending)
            self.emit(f"{'if' if first else 'elif'} {cond}:")
            first = False
            with self.indent():
                self.block(case.body)
            pending = []
        if has_default:
            if first:
                self.block(default_body)
            else:
                self.emit("else:")
                with self.indent():
                    self.block(default_body)

    def action_id(self, action: ir.Action) -> int:
        return self.externs.action_ids[id(action)]

    def _s_Exit(self, s: ir.Exit) -> None:
        self.emit("raise ExitBlock()")

    def _s_Return(self, s: ir.Return) -> None:
        outs = [self.local_name(p) for p in self.scope.return_outs]
        if self.scope.is_function:
            value = self.expr(s.value) if s.value is not None else "None"
            self.emit(f"return ({', '.join([value] + outs)},)" if outs else f"return {value}")
        elif outs:
            self.emit(f"return ({', '.join(outs)},)")
        else:
            self.emit("return")
