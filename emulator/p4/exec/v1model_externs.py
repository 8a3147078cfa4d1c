"""Lowers v1model extern calls (packet_in/packet_out methods, mark_to_drop,
hash, registers, counters, meters, checksums, clone, digest …) to Python.

Each lowering returns one line of code; lines it needs before that go to
``gen.pre``. Extern objects are bound into the generated module under their
control-plane names.
"""

from __future__ import annotations

import struct

from emulator.p4 import ir
from emulator.p4.exec import bytepack
from emulator.p4.exec.externs import HASHES, Csum16Packed
from emulator.p4.exec.decisions import V1MODEL_CACHEABLE, extern_key
from emulator.p4.exec.codegen import Codegen, bits_of, fit, unsupported, unsigned
from emulator.p4.exec.layout import extract_lines, is_aggregate, py_ident, scalar_width
from emulator.p4.types import (
    BitsType, BoolType, EnumType, HeaderType, HeaderUnionType, StackType, StructType, VarbitType,
)


class V1ModelLowering:
    """``instances``: id(ir.Instance) → run-time object (Register, Counter …)."""

    def __init__(self, instances: dict[int, object], action_ids: dict[int, int]) -> None:
        self.instances = instances
        self.action_ids = action_ids

    def lower(self, gen: Codegen, call: ir.ExternCall) -> str:
        target = call.target
        if extern_key(call) not in V1MODEL_CACHEABLE:
            gen.mark_uncacheable(call.method)
        if target is None:
            method = getattr(self, "_f_" + call.method, None)
            if method is None:
                raise unsupported(f"extern function {call.method}", call.loc)
            return method(gen, call)
        if isinstance(target, ir.Instance):
            kind = target.type.name
            obj = gen.bind(gen.name_of(target, "X", target.local_name), self.instances.get(id(target)))
        else:
            kind = getattr(target.type, "name", "")
            obj = gen.expr(target)
        method = getattr(self, f"_m_{kind}_{call.method}", None)
        if method is None:
            raise unsupported(f"method {call.method} of {kind}", call.loc)
        return method(gen, call, obj)

    # ---- helpers -------------------------------------------------------------
    def _out(self, gen: Codegen, lhs: ir.Expr, value: str) -> str:
        lines = gen.assign_lines(lhs, value, fresh=True)
        gen.pre.extend(lines[:-1])
        return lines[-1]

    def _pack(self, gen: Codegen, data: ir.Expr, csum16: str | None = None) -> str:
        """Python expression for the BMv2 byte buffer of a field list; with
        ``csum16`` (the name the module calls ``csum16`` by), for the
        checksum of that buffer instead. Compiled, a field list packed
        inline has its checksum taken by one C function (:class:`.externs.
        Csum16Packed`): no bytes made; otherwise ``csum16(<buffer>)``."""
        parts: list[tuple[str, int | str, str | None]] = []
        _flatten(gen, data, None, parts)
        conds = {valid for _, _, valid in parts}
        if len(conds) == 1 and all(isinstance(w, int) for _, w, _ in parts):
            # One validity condition for all: pack inline.
            (cond,) = conds
            widths = [int(w) for _, w, _ in parts]
            codes = [c for c, _, _ in parts]
            total = sum(widths)
            if total == 0:
                return f"{csum16}(b'')" if csum16 else "b''"
            if cond is not None and cond.endswith("._v") and cond.count("(") == cond.count(")"):
                # Fields of one header: name it once (the condition is
                # evaluated first), not once per field.
                base = cond[:-len("._v")]
                if all((base + ".") in c for c in codes):
                    tmp = gen.fresh("hdr")
                    codes = [c.replace(base + ".", tmp + ".") for c in codes]
                    # (a header object is true; Cython mistypes ``(x := h)._v``)
                    cond = f"(({tmp} := {base}) and {tmp}._v)"
            groups = bytepack.plan(widths)
            if groups is not None and csum16 and gen.layouts.cython:
                fmt = bytepack.struct_format(groups)
                fn = gen.bind("csum16_" + fmt[1:], Csum16Packed(fmt))
                summed = f"{fn}({bytepack.pack_args(groups, codes, widths, True)})"
                # (the checksum of no bytes: csum16(b''))
                return summed if cond is None else f"({summed} if {cond} else 0xFFFF)"
            if groups is not None:
                fmt = bytepack.struct_format(groups)
                pack = gen.bind("pack_" + fmt[1:], struct.Struct(fmt).pack)
                packed = f"{pack}({bytepack.pack_args(groups, codes, widths, gen.layouts.cython)})"
            else:
                code = codes[0] if total <= 64 else gen.obj(codes[0])
                for c, w in zip(codes[1:], widths[1:]):
                    code = f"(({code}) << {w}) | ({c})"
                pad = -total % 8
                if pad:
                    code = f"({code}) << {pad}"
                packed = f"int.to_bytes({code}, {(total + pad) // 8}, 'big')"
            packed = packed if cond is None else f"({packed} if {cond} else b'')"
            return f"{csum16}({packed})" if csum16 else packed
        items = "".join(f"({c}, {w}, {v or 'True'}), " for c, w, v in parts)
        packed = f"pack_bits([(c, w) for c, w, v in ({items}) if v])"
        return f"{csum16}({packed})" if csum16 else packed

    @staticmethod
    def _hash_fn(gen: Codegen, algo: str) -> str:
        """The name the generated module calls hash algorithm ``algo`` by."""
        return gen.bind(f"hash_{algo}", HASHES[algo])

    @staticmethod
    def _algo(call: ir.ExternCall, index: int) -> str:
        arg = call.args[index]
        if not isinstance(arg, ir.Const) or not isinstance(arg.type, EnumType):
            raise unsupported("a hash algorithm that is not a constant", call.loc)
        name = arg.type.members[int(arg.value)]  # type: ignore[call-overload]
        if name in ("random", "crc8", "crc64", "toeplitz"):
            raise unsupported(f"HashAlgorithm.{name}", call.loc)
        return name

    # ---- packet_in / packet_out ------------------------------------------------
    def _m_packet_in_extract(self, gen: Codegen, call: ir.ExternCall, cur: str) -> str:
        dest = call.args[0]
        vbits = f", {gen.expr(call.args[1])}" if len(call.args) > 1 else ""
        if isinstance(dest, ir.StackNext):
            stack = gen.expr(dest.base)
            tmp = gen.fresh("stk")
            gen.pre.append(f"{tmp} = {stack}")
            gen.pre.append(f"stack_next({tmp})._ext({cur}{vbits})")
            return f"{tmp}.nxt += 1"
        if isinstance(dest, ir.Member) and isinstance(dest.base, ir.StackNext):
            # ``u.next.member`` of a header-union stack: fill one member, then push.
            tmp = gen.fresh("stk")
            gen.pre.append(f"{tmp} = {gen.expr(dest.base.base)}")
            gen.pre.append(f"{tmp}_u = stack_next({tmp})")
            gen.pre.append(f"{tmp}_u.{py_ident(dest.name)}._ext({cur}{vbits})")
            gen.pre.append(f"{tmp}_u._only({tmp}_u.{py_ident(dest.name)})")
            return f"{tmp}.nxt += 1"
        if isinstance(dest, ir.LocalRef) and dest.local.name == "_":
            # ``extract<H>(_)``: parse and throw away.
            return f"{gen.layouts.new_value(dest.type)}._ext({cur}{vbits})"
        code = gen.expr(dest)
        if isinstance(dest, ir.Member) and isinstance(dest.base.type, HeaderUnionType):
            gen.pre.append(f"{code}._ext({cur}{vbits})")
            return f"{gen.expr(dest.base)}._only({code})"
        if not vbits and isinstance(dest.type, HeaderType):
            call_c = gen.layouts.extract_call(dest.type, code, cur)
            if call_c is not None:  # (the compiled executor: in C)
                return call_c
            # A fixed-width header: its extract inline, no method call.
            tag = gen.fresh("x")[1:]
            lines = extract_lines(gen.layouts.class_name(dest.type), dest.type, f"h{tag}",
                                  f"c{tag}", tag)
            if lines:
                gen.pre.extend([f"h{tag} = {code}", f"c{tag} = {cur}"] + lines[:-1])
                return lines[-1]
        return f"{code}._ext({cur}{vbits})"

    def _m_packet_in_lookahead(self, gen: Codegen, call: ir.ExternCall, cur: str) -> str:
        t = call.type
        if isinstance(t, HeaderType):
            cls = gen.layouts.class_name(t)
            return f"lookahead_header({cur}, {cls})"
        b = bits_of(t)
        if b is None and not isinstance(t, BoolType):
            raise unsupported(f"lookahead of {t}", call.loc)
        width = scalar_width(t)
        code = f"lookahead_bits({cur}, {width})"
        if isinstance(t, BoolType):
            return f"({code} != 0)"
        return fit(code, t) if b is not None and b.signed else code

    def _m_packet_in_advance(self, gen: Codegen, call: ir.ExternCall, cur: str) -> str:
        return f"advance({cur}, {gen.expr(call.args[0])})"

    def _m_packet_in_length(self, gen: Codegen, call: ir.ExternCall, cur: str) -> str:
        return f"{cur}.end"

    def _m_packet_out_emit(self, gen: Codegen, call: ir.ExternCall, out: str) -> str:
        value = call.args[0]
        code = gen.expr(value)
        if isinstance(value.type, HeaderType):
            h = gen.fresh("eh")
            packed = gen.layouts.pack_expr(value.type, h)
            if packed is not None:  # the packer called inline: no _emit call
                gen.pre.append(f"{h} = {code}")
                return f"{h}._v and {out}.append({packed})"
            return f"{code}._v and {code}._emit({out})"
        if isinstance(value.type, (StructType, StackType, HeaderUnionType)):
            return f"{code}._emit({out})"
        raise unsupported(f"emit of {value.type}", call.loc)

    # ---- extern functions --------------------------------------------------------
    def _f_verify(self, gen: Codegen, call: ir.ExternCall) -> str:
        return f"p4_verify({gen.expr(call.args[0])}, {gen.expr(call.args[1])})"

    def _f_mark_to_drop(self, gen: Codegen, call: ir.ExternCall) -> str:
        sm = gen.expr(call.args[0]) if call.args else "F._ctx.sm"
        return f"mark_to_drop({sm})"

    def _f_hash(self, gen: Codegen, call: ir.ExternCall) -> str:
        result, _algo, base, data, max_value = call.args
        algo = self._algo(call, 1)
        value = (f"hash_with_offset({self._hash_fn(gen, algo)}({self._pack(gen, data)}), "
                 f"{gen.expr(base)}, {gen.expr(max_value)})")
        return self._out(gen, result, fit(value, result.type))

    def _f_random(self, gen: Codegen, call: ir.ExternCall) -> str:
        result, lo, hi = call.args
        lo_c, hi_c = gen.expr(lo), gen.expr(hi)
        # BMv2 leaves the result unwritten when lo > hi.
        value = f"(F._ctx.rng.randint({lo_c}, {hi_c}) if {lo_c} <= {hi_c} else {gen.expr(result)})"
        return self._out(gen, result, fit(value, result.type))

    def _f_digest(self, gen: Codegen, call: ir.ExternCall) -> str:
        data = call.args[1]
        name = getattr(call.type_args[0], "name", "digest") if call.type_args else str(data.type)
        values = gen.expr(data)
        if is_aggregate(data.type) and not isinstance(data, (ir.StructExpr, ir.ListExpr)):
            values = f"{values}._cp()"
        return f"F._ctx.digest({name!r}, {values})"

    def _clone(self, gen: Codegen, call: ir.ExternCall, field_list: str) -> str:
        kind = gen.expr(call.args[0])
        session = gen.expr(call.args[1])
        return f"F._ctx.clone = ({kind}, {session}, {field_list})"

    def _f_clone(self, gen: Codegen, call: ir.ExternCall) -> str:
        return self._clone(gen, call, "0")

    def _f_clone_preserving_field_list(self, gen: Codegen, call: ir.ExternCall) -> str:
        return self._clone(gen, call, gen.expr(call.args[2]))

    def _f_resubmit_preserving_field_list(self, gen: Codegen, call: ir.ExternCall) -> str:
        return f"F._ctx.resubmit = {gen.expr(call.args[0])}"

    def _f_recirculate_preserving_field_list(self, gen: Codegen, call: ir.ExternCall) -> str:
        return f"F._ctx.recirculate = {gen.expr(call.args[0])}"

    def _f_truncate(self, gen: Codegen, call: ir.ExternCall) -> str:
        # BMv2's Packet::truncate keeps the smallest length asked for.
        length = gen.expr(call.args[0])
        return f"F._ctx.truncate = {length} if F._ctx.truncate is None else min(F._ctx.truncate, {length})"

    def _f_assert(self, gen: Codegen, call: ir.ExternCall) -> str:
        return f"p4_assert({gen.expr(call.args[0])}, 'assert')"

    def _f_assume(self, gen: Codegen, call: ir.ExternCall) -> str:
        return f"p4_assert({gen.expr(call.args[0])}, 'assume')"

    def _f_log_msg(self, gen: Codegen, call: ir.ExternCall) -> str:
        msg = gen.expr(call.args[0])
        if len(call.args) > 1:
            return f"F._ctx.log(format_log({msg}, {gen.expr(call.args[1])}))"
        return f"F._ctx.log({msg})"

    def _checksum(self, gen: Codegen, call: ir.ExternCall, payload: bool) -> str:
        cond, data, checksum, _algo = call.args
        algo = self._algo(call, 3)
        if payload:
            computed = f"{self._hash_fn(gen, algo)}({self._pack(gen, data)} + F._ctx.payload)"
        elif algo == "csum16":
            computed = self._pack(gen, data, csum16=self._hash_fn(gen, algo))
        else:
            computed = f"{self._hash_fn(gen, algo)}({self._pack(gen, data)})"
        return computed, gen.expr(cond), checksum  # type: ignore[return-value]

    def _f_verify_checksum(self, gen: Codegen, call: ir.ExternCall, payload: bool = False) -> str:
        computed, cond, checksum = self._checksum(gen, call, payload)  # type: ignore[misc]
        b = bits_of(checksum.type)
        width_mask = b.mask if b is not None else 0xFFFF
        return (f"F._ctx.checksum_error |= int(bool({cond}) and "
                f"({computed} & {width_mask}) != {unsigned(gen.expr(checksum), checksum.type)})")

    def _f_verify_checksum_with_payload(self, gen: Codegen, call: ir.ExternCall) -> str:
        return self._f_verify_checksum(gen, call, payload=True)

    def _f_update_checksum(self, gen: Codegen, call: ir.ExternCall, payload: bool = False) -> str:
        computed, cond, checksum = self._checksum(gen, call, payload)  # type: ignore[misc]
        current = gen.expr(checksum)
        return self._out(gen, checksum, f"({fit(computed, checksum.type)} if {cond} else {current})")

    def _f_update_checksum_with_payload(self, gen: Codegen, call: ir.ExternCall) -> str:
        return self._f_update_checksum(gen, call, payload=True)

    # ---- extern objects ----------------------------------------------------------
    def _cells(self, gen: Codegen, call: ir.ExternCall, attr: str) -> tuple[str, int] | None:
        """The bound name and length of a register's or counter's cell list
        (changed in place, never replaced), when the call's target is a
        declared instance; generated code indexes it without a call."""
        target = call.target
        obj = self.instances.get(id(target)) if isinstance(target, ir.Instance) else None
        if obj is None:
            return None
        cells = getattr(obj, attr)
        name = gen.bind(gen.name_of(cells, "C", f"{target.local_name}_{attr}"), cells)  # type: ignore[union-attr]
        return name, len(cells)

    def _m_register_read(self, gen: Codegen, call: ir.ExternCall, obj: str) -> str:
        result, index = call.args
        cells = self._cells(gen, call, "values")
        if cells is None:
            return self._out(gen, result, f"{obj}.read({gen.expr(index)}, {gen.expr(result)})")
        values, size = cells
        i = gen.fresh("ri")
        # Out of range: the destination keeps its value (BMv2).
        return self._out(gen, result, f"({values}[{i}] if ({i} := {gen.expr(index)}) < {size} "
                                      f"else {gen.expr(result)})")

    def _m_register_write(self, gen: Codegen, call: ir.ExternCall, obj: str) -> str:
        index, value = call.args
        cells = self._cells(gen, call, "values")
        if cells is None:
            return f"{obj}.write({gen.expr(index)}, {gen.expr(value)})"
        values, size = cells
        i, v = gen.fresh("wi"), gen.fresh("wv")
        gen.pre.append(f"{i}, {v} = {gen.expr(index)}, {gen.expr(value)}")
        return f"if {i} < {size}: {values}[{i}] = {v}"

    def _m_counter_count(self, gen: Codegen, call: ir.ExternCall, obj: str) -> str:
        packets = self._cells(gen, call, "packets")
        nbytes = self._cells(gen, call, "bytes")
        if packets is None or nbytes is None:
            gen.mark_uncacheable("a counter that is not a declared instance")
            return f"{obj}.count({gen.expr(call.args[0])}, F._ctx.length)"
        i = gen.fresh("ci")
        gen.pre.append(f"{i} = {gen.expr(call.args[0])}")
        count = (f"if {i} < {packets[1]}: _count_cells({packets[0]}, {nbytes[0]}, {i}, F._ctx.length)"
                 if gen.layouts.cython  # (the compiled driver's: lists indexed in C)
                 else f"if {i} < {packets[1]}: {packets[0]}[{i}] += 1; {nbytes[0]}[{i}] += F._ctx.length")
        if not gen.tracks_cache:
            return count
        # The cell bumped, for a cached pass to bump again (.decisions).
        return f"{count}; F._ctx.bumps.append(({packets[0]}, {nbytes[0]}, {i}))"

    def _m_direct_counter_count(self, gen: Codegen, call: ir.ExternCall, obj: str) -> str:
        return "pass"  # the table counts its hits itself, as BMv2 does

    def _m_meter_execute_meter(self, gen: Codegen, call: ir.ExternCall, obj: str) -> str:
        index, result = call.args
        return self._out(gen, result, fit(f"{obj}.execute({gen.expr(index)}, F._ctx, "
                                          f"{unsigned(gen.expr(result), result.type)})", result.type))

    def _m_direct_meter_read(self, gen: Codegen, call: ir.ExternCall, obj: str) -> str:
        (result,) = call.args
        key = id(call.target)
        return self._out(gen, result, fit(f"F._ctx.color({key})", result.type))


def _flatten(gen: Codegen, e: ir.Expr, valid: str | None,
             out: list[tuple[str, int | str, str | None]]) -> None:
    """Append (code, width, validity) for every scalar in a field list."""
    t = e.type
    if isinstance(e, (ir.ListExpr,)):
        for x in e.elements:
            _flatten(gen, x, valid, out)
        return
    if isinstance(e, ir.StructExpr):
        for _name, x in e.fields:
            _flatten(gen, x, valid, out)
        return
    if isinstance(t, HeaderType):
        code = gen.expr(e)
        for f in t.fields:
            sub = ir.Member(f.type, e, f.name)
            _flatten(gen, sub, f"{code}._v", out)
        return
    if isinstance(t, StructType):
        for f in t.fields:
            _flatten(gen, ir.Member(f.type, e, f.name), valid, out)
        return
    if isinstance(e, ir.Member) and isinstance(e.base.type, HeaderType) and valid is None:
        valid = f"{gen.expr(e.base)}._v"
    if isinstance(t, BoolType):
        out.append((f"int({gen.expr(e)})", 1, valid))
        return
    if isinstance(t, VarbitType) and isinstance(e, ir.Member):
        # A varbit counts its current width, as BMv2 packs it.
        out.append((gen.expr(e), f"{gen.expr(e.base)}._vw", valid))
        return
    b = bits_of(t)
    if b is None:
        raise unsupported(f"{t} in a field list")
    out.append((unsigned(gen.expr(e), t), b.width, valid))


__all__ = ["V1ModelLowering", "BitsType"]
