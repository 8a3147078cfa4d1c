"""Python classes for P4 values of aggregate type, generated per program.

A header becomes a class whose validity (``_v``) and fields default to
class attributes (invalid, zero: a new header is one allocation), plus
methods specialised to its layout: ``_ext`` (extract from a cursor, one
:mod:`struct` call for a fixed-width header), ``_emit`` (append bytes),
``_cp`` (copy), ``_eq``, ``_zero`` (``setValid`` of an invalid header). A
struct becomes a class with ``__slots__`` holding its fields (nested
aggregates constructed eagerly): read on every packet, its fields are all
written when it is made (a field left to a class default reads several
times slower). A stack is a
list of elements plus ``nxt`` (nextIndex). Scalars (bit, int, bool, enum,
error) are plain Python ints/bools everywhere.

Each class is also written as a Cython extension type (``cython_source()``,
for :mod:`.compiled`): the same methods, with its fields declared; an
unsigned field of up to 64 bits (and a serializable enum's) a C ``unsigned
long long``, an aggregate field its class, anything else (bool, signed,
wider, varbit, error) a Python object. Generated code keeps every C
integer expression exact: each ``bit<N>`` result is masked to ``N`` bits
(arithmetic modulo 2**64, then masked, is P4's), and what could leave that
range (signed values, saturation, variable right shifts, results wider than
64 bits) goes through ``_o`` (:func:`as_object`), a Python int there.
"""

from __future__ import annotations

import keyword
import re

from typing import Callable

from emulator.p4.exec import bytepack
from emulator.p4.exec.c_headers import c_emit_fn, c_extract_fn
from emulator.p4.types import (
    BitsType, BoolType, EnumType, ErrorType, HeaderType, HeaderUnionType,
    StackType, StructType, TupleType, Type, VarbitType, field_width,
)

_IDENT = re.compile(r"[^0-9A-Za-z_]")


def py_ident(name: str) -> str:
    """A valid Python identifier for a P4 name (fields may be Python keywords)."""
    ident = _IDENT.sub("_", name)
    if keyword.iskeyword(ident) or ident[:1].isdigit() or ident.startswith("_"):
        ident = "f_" + ident
    return ident


def is_aggregate(t: Type) -> bool:
    return isinstance(t, (HeaderType, HeaderUnionType, StructType, StackType, TupleType))


C_UINT = "unsigned long long"  # the C type of an unsigned field of up to 64 bits


def as_object(x: object) -> object:
    """``_o`` in generated Python: the value itself (in Cython, the same
    value as a Python int, so the arithmetic around it is unbounded)."""
    return x


def c_type(t: Type, class_name: "Callable[[Type], str]") -> str:
    """The Cython type of a field, slot or local of P4 type ``t``."""
    if is_aggregate(t):
        return class_name(t)
    b = t.underlying if isinstance(t, EnumType) else t
    if isinstance(b, BitsType) and not b.signed and b.width <= 64:
        return C_UINT
    return "object"


# Extension types of per-packet objects keep this many freed instances for
# reuse (Cython's freelist: no allocator call for most new headers).
FREELIST = "@cython.freelist(32)"


def cdef_lines(fields: list[tuple[str, str]], indent: str = "    ") -> list[str]:
    """``cdef public`` declarations of (name, Cython type) pairs."""
    return [f"{indent}cdef public {ctype} {name}" for name, ctype in fields]


class Layouts:
    """Generates and names one Python class per aggregate type of a program.

    ``class_name(t)`` returns the name bound in the generated module;
    ``source()`` the class definitions (in dependency order), and
    ``cython_source()`` the same as Cython extension types."""

    def __init__(self) -> None:
        self._names: dict[Type, str] = {}
        self._chunks: list[str] = []
        self._cy_chunks: list[str] = []
        # Code for the compiled executor: a header whose fields are all C
        # integers is extracted and emitted by C functions (``_x_``, ``_e_``).
        self.cython = False
        # the header classes ``_e_``/``_w_`` emit, by name: their length in bytes
        self.c_emitted: dict[str, int] = {}

    def class_name(self, t: Type) -> str:
        if t in self._names:
            return self._names[t]
        if isinstance(t, HeaderType):
            name = f"H_{py_ident(t.name)}_{len(self._names)}"
            self._names[t] = name
            self._chunks.append(_header_class(name, t))
            self._cy_chunks.append(_header_class(name, t, cython=True))
            if c_fixed(t):
                spans, nbytes = c_spans(t), t.width // 8
                self._cy_chunks.append(c_extract_fn(name, nbytes, spans))
                self._cy_chunks.append(c_emit_fn(name, nbytes, spans))
                self.c_emitted[name] = nbytes
        elif isinstance(t, HeaderUnionType):
            for f in t.fields:
                self.class_name(f.type)
            name = f"U_{py_ident(t.name)}_{len(self._names)}"
            self._names[t] = name
            self._chunks.append(self._union_class(name, t))
            self._cy_chunks.append(self._union_class(name, t, cython=True))
        elif isinstance(t, StructType):
            for f in t.fields:
                if is_aggregate(f.type):
                    self.class_name(f.type)
            name = f"S_{py_ident(t.name)}_{len(self._names)}"
            self._names[t] = name
            fields = [(f.name, f.type) for f in t.fields]
            self._chunks.append(self._struct_class(name, fields))
            self._cy_chunks.append(self._struct_class(name, fields, cython=True))
        elif isinstance(t, TupleType):
            for e in t.elements:
                if is_aggregate(e):
                    self.class_name(e)
            name = f"T_{len(self._names)}"
            self._names[t] = name
            fields = [(f"f{i}", e) for i, e in enumerate(t.elements)]
            self._chunks.append(self._struct_class(name, fields))
            self._cy_chunks.append(self._struct_class(name, fields, cython=True))
        elif isinstance(t, StackType):
            elem = self.class_name(t.element)
            name = f"K_{py_ident(str(t.element))}_{t.size}_{len(self._names)}"
            self._names[t] = name
            self._chunks.append(_stack_class(name, elem, t.size))
            self._cy_chunks.append(_stack_class(name, elem, t.size, cython=True))
        else:
            raise TypeError(f"{t} is not an aggregate type")
        return self._names[t]

    def pack_expr(self, t: HeaderType, var: str) -> str | None:
        """The bytes of header ``var`` (of type ``t``) as one call of its
        class's packer, for code that emits it inline (no ``_emit`` call);
        None where the header has no fixed layout (a varbit field)."""
        if self.cython and c_fixed(t):
            return f"_e_{self.class_name(t)}({var})"
        fields = [(py_ident(f.name), f.type) for f in t.fields]
        groups = _fixed_plan(t, fields) if fields else None
        if groups is None:
            return None
        return _pack_call(self.class_name(t), groups, fields, var, self.cython)

    def extract_call(self, t: HeaderType, header: str, cur: str) -> str | None:
        """For the compiled executor: the call of header type ``t``'s C
        extract on ``header`` from cursor ``cur``; None where ``t`` has none."""
        if self.cython and c_fixed(t):
            return f"_x_{self.class_name(t)}({header}, {cur})"
        return None

    def new_value(self, t: Type) -> str:
        """Python expression creating a fresh default value of type ``t``
        (zero for scalars, invalid for headers)."""
        if isinstance(t, (StructType, TupleType)):
            return f"mk_{self.class_name(t)}()"
        if is_aggregate(t):
            return f"{self.class_name(t)}()"
        if isinstance(t, BoolType):
            return "False"
        return "0"

    def maker_lines(self, t: StructType, var: str) -> list[str]:
        """Statements making a fresh value of struct ``t`` in ``var`` (what
        its ``mk_`` function does), to inline where a call costs too much."""
        return self._maker_lines(self.class_name(t), [(f.name, f.type) for f in t.fields], var)

    def _maker_lines(self, name: str, fields: list[tuple[str, Type]], var: str) -> list[str]:
        return [f"{var} = {name}()"] + [f"{var}.{py_ident(n)} = {self.new_value(ft)}"
                                       for n, ft in fields]

    def names(self) -> dict[Type, str]:
        return dict(self._names)

    def source(self) -> str:
        return "\n\n".join(self._chunks)

    def cython_source(self) -> str:
        return "\n\n".join(self._cy_chunks)

    def c_type(self, t: Type) -> str:
        """:func:`c_type` with this program's class names."""
        return c_type(t, self.class_name)

    def _union_class(self, name: str, t: HeaderUnionType, cython: bool = False) -> str:
        slots = [py_ident(f.name) for f in t.fields]
        if cython:
            lines = [FREELIST, f"cdef class {name}:"]
            lines.extend(cdef_lines([(s, self.class_name(f.type)) for f, s in zip(t.fields, slots)]))
        else:
            lines = [f"class {name}:", f"    __slots__ = {tuple(slots)!r}"]
        lines.append("    def __init__(self):")
        for f, s in zip(t.fields, slots):
            lines.append(f"        self.{s} = {self.class_name(f.type)}()")
        lines.append("    @property")
        lines.append("    def _v(self):")
        lines.append("        return " + " or ".join(f"self.{s}._v" for s in slots))
        lines.append("    def _cp(self):")
        lines.append(f"        o = {name}.__new__({name})")
        for s in slots:
            lines.append(f"        o.{s} = self.{s}._cp()")
        lines.append("        return o")
        lines.append("    def _emit(self, out):")
        for s in slots:
            lines.append(f"        if self.{s}._v: self.{s}._emit(out)")
        lines.append("    def _eq(self, o):")
        lines.append("        return " + " and ".join(f"self.{s}._eq(o.{s})" for s in slots))
        lines.extend(_set_method(slots, cython))
        lines.append("    def _inv(self):")
        if cython:
            lines.extend(f"        self.{s}._v = False" for s in slots)
        else:
            lines.append("        for s in self.__slots__: getattr(self, s)._v = False")
        lines.append("    def _only(self, keep):")
        if cython:
            lines.extend(f"        if self.{s} is not keep: self.{s}._v = False" for s in slots)
        else:
            lines.append("        for s in self.__slots__:")
            lines.append("            h = getattr(self, s)")
            lines.append("            if h is not keep: h._v = False")
        return "\n".join(lines)

    def _struct_class(self, name: str, fields: list[tuple[str, Type]], cython: bool = False) -> str:
        slots = [py_ident(n) for n, _ in fields]
        # Made by ``mk_<name>()``, a plain function (cheaper to call than
        # a class whose __init__ is Python code): every field set.
        lines = [f"def mk_{name}():"]
        lines.extend("    " + line for line in self._maker_lines(name, fields, "o"))
        lines.append("    return o")
        if cython:
            lines += [FREELIST, f"cdef class {name}:"]
            lines.extend(cdef_lines([(s, self.c_type(ft)) for s, (_, ft) in zip(slots, fields)]))
        else:
            lines.append(f"class {name}:")
            lines.append(f"    __slots__ = {tuple(slots)!r}")
        lines.append("    def _cp(self):")
        lines.append(f"        o = {name}.__new__({name})")
        for (_, ft), s in zip(fields, slots):
            suffix = "._cp()" if is_aggregate(ft) else ""
            lines.append(f"        o.{s} = self.{s}{suffix}")
        lines.append("        return o")
        lines.append("    def _emit(self, out):")
        emitted = False
        for (_, ft), s in zip(fields, slots):
            if is_aggregate(ft):
                emitted = True
                if isinstance(ft, HeaderType):
                    lines.append(f"        if self.{s}._v: self.{s}._emit(out)")
                else:
                    lines.append(f"        self.{s}._emit(out)")
        if not emitted:
            lines.append("        pass")
        lines.append("    def _eq(self, o):")
        terms = []
        for (_, ft), s in zip(fields, slots):
            terms.append(f"self.{s}._eq(o.{s})" if is_aggregate(ft) else f"self.{s} == o.{s}")
        lines.append("        return " + (" and ".join(terms) if terms else "True"))
        lines.extend(_set_method(slots, cython))
        return "\n".join(lines)


def _header_class(name: str, t: HeaderType, cython: bool = False) -> str:
    """A header: validity and fields are class-level defaults (invalid,
    zero), so a new header costs one allocation; an instance holds what
    was written to it. As an extension type (``cython``) its C fields
    start at zero, the others are set by ``__cinit__``."""
    fields = [(py_ident(f.name), f.type) for f in t.fields]
    slots = ["_v"] + [s for s, _ in fields] + (["_vw"] if t.has_varbit else [])
    zero = [(s, "False" if isinstance(ft, BoolType) else "0") for s, ft in fields]
    if t.has_varbit:
        zero.append(("_vw", "0"))
    if cython:
        types = {s: c_type(ft, _no_class) for s, ft in fields}
        lines = [FREELIST, f"cdef class {name}:", "    cdef public bint _v"]
        lines.extend(cdef_lines([(s, types.get(s, "object")) for s, _ in zero]))
        boxed = [(s, v) for s, v in zero if types.get(s, "object") == "object"]
        if boxed:
            lines.append("    def __cinit__(self):")
            lines.extend(f"        self.{s} = {v}" for s, v in boxed)
    else:
        lines = [f"class {name}:", "    _v = False"]
        lines.extend(f"    {s} = {v}" for s, v in zero)
    lines.append("    def _zero(self):")
    lines.extend(f"        self.{s} = {v}" for s, v in zero)
    if not zero:
        lines.append("        pass")
    lines.append("    def _cp(self):")
    lines.append(f"        o = {name}()")
    for s in slots:
        lines.append(f"        o.{s} = self.{s}")
    lines.append("        return o")
    lines.append("    def _eq(self, o):")
    if fields:
        body = " and ".join([f"self.{s} == o.{s}" for s, _ in fields] + (["self._vw == o._vw"] if t.has_varbit else []))
        lines.append("        if not self._v: return not o._v")
        lines.append(f"        return o._v and {body}")
    else:
        lines.append("        return self._v == o._v")
    lines.append("    def _inv(self):")
    lines.append("        self._v = False")
    lines.append("    def _set(self, o):")
    for s in slots:
        lines.append(f"        self.{s} = o.{s}")
    chunks: list[str] = []
    lines.extend(_extract_method(name, t, fields, chunks))
    lines.extend(_emit_method(name, t, fields, chunks, cython))
    if cython:  # in C, what a new one is (a reused packet frame's headers: .cython_module)
        lines += ["", f"cdef inline void _rz_{name}({name} h) noexcept:", "    h._v = False"]
        lines.extend(f"    h.{s} = {v}" for s, v in zero)
    return "\n".join(chunks + lines)


def _set_method(slots: list[str], cython: bool) -> list[str]:
    """``x._set(v)``: make ``x`` (an element reached at run time) hold the
    fresh value ``v``."""
    if cython:
        return ["    def _set(self, o):"] + ([f"        self.{s} = o.{s}" for s in slots]
                                           or ["        pass"])
    return ["    def _set(self, o):",
            "        for s in self.__slots__: setattr(self, s, getattr(o, s))"]


def _no_class(t: Type) -> str:
    raise TypeError(f"a header field of aggregate type {t}")


def _unsigned_to_field(expr: str, ft: Type) -> str:
    """Convert ``expr`` (an unsigned int of the field's width) to the stored
    representation of a field of type ``ft``."""
    if isinstance(ft, BitsType) and ft.signed:
        half = 1 << (ft.width - 1)
        return f"((({expr}) + {half}) & {ft.mask}) - {half}"
    if isinstance(ft, BoolType):
        return f"(({expr}) != 0)"
    return expr


def _field_to_unsigned(expr: str, ft: Type) -> str:
    if isinstance(ft, BitsType) and ft.signed:
        return f"(({expr}) & {ft.mask})"
    if isinstance(ft, BoolType):
        return f"int({expr})"
    return expr


def _fixed_plan(t: HeaderType, fields: list[tuple[str, Type]]) -> list[bytepack.Group] | None:
    if t.has_varbit:
        return None
    return bytepack.plan([field_width(ft) for _, ft in fields])


def _extract_method(name: str, t: HeaderType, fields: list[tuple[str, Type]],
                    chunks: list[str]) -> list[str]:
    """``_ext(cur, vbits)``: extract from ``cur.buf`` at ``cur.off`` (bytes);
    raise ``ParserError(PacketTooShort)`` when the packet is too short.
    ``vbits`` is the varbit field's width for the two-argument extract."""
    fixed_bits = t.width
    lines = ["    def _ext(self, cur, vbits=0):"]
    groups = _fixed_plan(t, fields)
    if groups is not None:
        # One struct call, then each field from its (small) group value.
        chunks.append(f"_u_{name} = Struct({bytepack.struct_format(groups)!r}).unpack_from")
        lines.extend("        " + line for line in extract_lines(name, t, "self", "cur", ""))
        return lines
    lines.append("        o = cur.off")
    if t.has_varbit:
        # BMv2's extract_VL: the checks in this order.
        max_bits = fixed_bits + sum(f.max_width for _, f in fields if isinstance(f, VarbitType))
        lines.append("        if vbits % 8: raise ParserError(ERR_PARSER_INVALID_ARGUMENT)")
        lines.append(f"        nbytes = {fixed_bits // 8} + vbits // 8")
        lines.append("        e = o + nbytes")
        lines.append("        if e > cur.end: raise ParserError(ERR_PACKET_TOO_SHORT)")
        lines.append(f"        if nbytes > {(max_bits + 7) // 8}: raise ParserError(ERR_HEADER_TOO_SHORT)")
    else:
        lines.append(f"        nbytes = {fixed_bits // 8}")
        lines.append("        e = o + nbytes")
        lines.append("        if e > cur.end: raise ParserError(ERR_PACKET_TOO_SHORT)")
    lines.append("        v = int.from_bytes(cur.buf[o:e], 'big')")
    total = "(nbytes * 8)" if t.has_varbit else str(fixed_bits)
    # Walk fields from the most significant end; offsets counted from the
    # end of the header so shifts are constants except after a varbit.
    consumed = "0"
    for s, ft in fields:
        if isinstance(ft, VarbitType):
            lines.append(f"        self.{s} = (v >> ({total} - {consumed} - vbits)) & ((1 << vbits) - 1)")
            lines.append("        self._vw = vbits")
            consumed = f"({consumed} + vbits)"
            continue
        w = field_width(ft)
        shift = f"{total} - {consumed} - {w}"
        raw = f"(v >> ({shift})) & {(1 << w) - 1}"
        lines.append(f"        self.{s} = {_unsigned_to_field(raw, ft)}")
        consumed = f"({consumed} + {w})" if consumed != "0" else str(w)
    lines.append("        self._v = True")
    lines.append("        cur.off = e")
    return lines


def extract_lines(name: str, t: HeaderType, header: str, cur: str, tag: str) -> list[str]:
    """The statements of a fixed-width header's extract (class ``name``,
    its unpacker ``_u_<name>``): from the cursor ``cur`` into ``header``,
    temporaries named with ``tag`` (so that several can share a function).
    [] when the header has a varbit field or is not a whole number of bytes
    (its ``_ext`` method does more)."""
    fields = [(py_ident(f.name), f.type) for f in t.fields]
    groups = _fixed_plan(t, fields)
    if groups is None:
        return []
    widths = [field_width(ft) for _, ft in fields]
    o, e = f"o{tag}", f"e{tag}"
    lines = [f"{o} = {cur}.off", f"{e} = {o} + {t.width // 8}",
             f"if {e} > {cur}.end: raise ParserError(ERR_PACKET_TOO_SHORT)"]
    names = [f"g{i}{tag}" for i in range(len(groups))]
    lines.append(f"{''.join(n + ', ' for n in names)}= _u_{name}({cur}.buf, {o})")
    for g, var in zip(groups, names):
        if not g.native:
            lines.append(f"{var} = int.from_bytes({var}, 'big')")
        for i in range(g.first, g.first + g.count):
            s, ft = fields[i]
            raw = bytepack.field_from_group(g, i, var, widths)
            lines.append(f"{header}.{s} = {_unsigned_to_field(raw, ft)}")
    lines.append(f"{header}._v = True")
    lines.append(f"{cur}.off = {e}")
    return lines


def _pack_call(name: str, groups: list[bytepack.Group], fields: list[tuple[str, Type]],
               var: str, c_ints: bool = False) -> str:
    """The call of header class ``name``'s packer (``_p_<name>``) on the
    fields of ``var``: the header's bytes."""
    widths = [field_width(ft) for _, ft in fields]
    codes = [_field_to_unsigned(f"{var}.{s}", ft) for s, ft in fields]
    return f"_p_{name}({bytepack.pack_args(groups, codes, widths, c_ints)})"


def _emit_method(name: str, t: HeaderType, fields: list[tuple[str, Type]],
                 chunks: list[str], cython: bool = False) -> list[str]:
    lines = ["    def _emit(self, out):"]
    if not fields:
        lines.append("        pass")
        return lines
    groups = _fixed_plan(t, fields)
    if groups is not None:
        chunks.append(f"_p_{name} = Struct({bytepack.struct_format(groups)!r}).pack")
        lines.append(f"        out.append({_pack_call(name, groups, fields, 'self', cython)})")
        return lines
    lines.append("        v = 0")
    lines.append("        n = 0")
    for s, ft in fields:
        if isinstance(ft, VarbitType):
            lines.append(f"        v = (v << self._vw) | self.{s}")
            lines.append("        n += self._vw")
        else:
            w = field_width(ft)
            lines.append(f"        v = (v << {w}) | {_field_to_unsigned('self.' + s, ft)}")
            lines.append(f"        n += {w}")
    lines.append("        out.append(v.to_bytes(n >> 3, 'big'))")
    return lines


def _stack_class(name: str, elem: str, size: int, cython: bool = False) -> str:
    head = (f"cdef class {name}:\n    cdef public list hs\n    cdef public object nxt" if cython
            else f"class {name}:\n    __slots__ = ('hs', 'nxt')")
    return head + f"""
    size = {size}
    def __init__(self):
        self.hs = [{elem}() for _ in range({size})]
        self.nxt = 0
    def _cp(self):
        o = {name}.__new__({name})
        o.hs = [h._cp() for h in self.hs]
        o.nxt = self.nxt
        return o
    def _emit(self, out):
        for h in self.hs:
            if h._v: h._emit(out)
    def _eq(self, o):
        return all(a._eq(b) for a, b in zip(self.hs, o.hs))
    def _set(self, o):
        self.hs, self.nxt = o.hs, o.nxt
    def push_front(self, n):
        # As BMv2's StackP4_16: swap elements along, mark the first n invalid
        # (they keep whatever values the swaps left there).
        if n == 0: return
        hs = self.hs
        self.nxt = min({size}, self.nxt + n)
        for i in range({size} - 1, n - 1, -1):
            hs[i], hs[i - n] = hs[i - n], hs[i]
        for i in range(min({size}, n)):
            hs[i]._inv()
    def pop_front(self, n):
        if n == 0: return
        hs = self.hs
        self.nxt -= min(self.nxt, n)
        for i in range(max({size} - n, 0)):
            hs[i], hs[i + n] = hs[i + n], hs[i]
        for i in range(max({size} - n, 0), {size}):
            hs[i]._inv()"""


def scalar_width(t: Type) -> int:
    """Width in bits of a scalar value as it is laid out in a key or hash
    input (bool counts 1, enums their underlying width, error 32? no: error
    is not allowed in such places by p4c for BMv2)."""
    if isinstance(t, BitsType):
        return t.width
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, EnumType) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, (EnumType, ErrorType)):
        return 32
    raise TypeError(f"{t} has no width")


# ---- C extract and emit (the compiled executor) ----------------------------------

def c_fixed(t: HeaderType) -> bool:
    """Whether the compiled executor extracts and emits ``t`` in C: whole
    bytes, no varbit, every field an unsigned integer of up to 64 bits."""
    return (bool(t.fields) and not t.has_varbit and t.width % 8 == 0
            and all(c_type(f.type, _no_class) == C_UINT for f in t.fields))


def c_spans(t: HeaderType) -> list[tuple[str, int, int, int, int]]:
    """(slot, first byte, bytes spanned, bit offset in the first byte,
    width) of each field of non-zero width."""
    out = []
    bit = 0
    for f in t.fields:
        w = field_width(f.type)
        if w:
            out.append((py_ident(f.name), bit // 8, (bit % 8 + w + 7) // 8, bit % 8, w))
        bit += w
    return out
