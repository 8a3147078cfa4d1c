"""The ``type_info`` section of P4Info and the ``P4DataTypeSpec`` of the
model's type specs, as p4c's ``TypeSpecConverter`` writes them: a spec
converted registers every named type it reaches (structs, headers, header
unions, enums, serializable enums, new types, ``error``).  Also
:func:`constant_bytes`, p4c's encoding of a constant of a given width."""

from __future__ import annotations

from typing import Optional, Sequence

from p4.config.v1 import p4types_pb2

from . import model as m
from .build_preamble import add_annotations
from .ids import P4InfoError


def constant_bytes(value: int, width: int) -> bytes:
    """p4c ``stringReprConstant``: big-endian, padded to ceil(width/8) bytes."""
    if value < 0:
        raise P4InfoError(f"{value}: Negative values not supported yet")
    if width <= 0:
        raise P4InfoError("Unexpected width 0")
    if value.bit_length() > width:
        raise P4InfoError(f"Cannot represent {value} on {width} bits")
    return value.to_bytes((width + 7) // 8, "big")


class TypeInfoBuilder:
    """p4c ``TypeSpecConverter`` over the model's named types."""

    def __init__(self, types: Sequence[m.NamedType], info: p4types_pb2.P4TypeInfo):
        self.info = info
        self.touched = False
        self.defs: dict[tuple[str, str], m.NamedType] = {}
        self.error: Optional[m.ErrorDef] = None
        for t in types:
            if isinstance(t, m.ErrorDef):
                self.error = t
                continue
            kind = {
                m.StructDef: "struct", m.HeaderDef: "header", m.HeaderUnionDef: "header_union",
                m.EnumDef: "enum", m.SerEnumDef: "serializable_enum", m.NewTypeDef: "new_type",
            }[type(t)]
            self.defs[(kind, t.name)] = t

    def touch(self) -> None:
        self.touched = True

    def _def(self, kind: str, name: str):
        try:
            return self.defs[(kind, name)]
        except KeyError:
            raise P4InfoError(f"type {kind} '{name}' is not in the model's types") from None

    def spec(self, t: m.TypeSpec, out: Optional[p4types_pb2.P4DataTypeSpec] = None
             ) -> p4types_pb2.P4DataTypeSpec:
        """Convert ``t``, registering the named types it reaches."""
        self.touched = True
        out = out if out is not None else p4types_pb2.P4DataTypeSpec()
        if isinstance(t, m.Bits):
            if t.signed:
                out.bitstring.int.bitwidth = t.width
            else:
                out.bitstring.bit.bitwidth = t.width
        elif isinstance(t, m.Varbit):
            out.bitstring.varbit.max_bitwidth = t.max_width
        elif isinstance(t, m.Bool):
            out.bool.SetInParent()
        elif isinstance(t, m.ErrorRef):
            out.error.SetInParent()
            self._register_error()
        elif isinstance(t, m.TupleOf):
            out.tuple.SetInParent()
            for member in t.members:
                self.spec(member, out.tuple.members.add())
        elif isinstance(t, m.StructRef):
            out.struct.name = t.name
            self.register(t)
        elif isinstance(t, m.HeaderRef):
            out.header.name = t.name
            self.register(t)
        elif isinstance(t, m.HeaderUnionRef):
            out.header_union.name = t.name
            self.register(t)
        elif isinstance(t, m.EnumRef):
            out.enum.name = t.name
            self.register(t)
        elif isinstance(t, m.SerEnumRef):
            out.serializable_enum.name = t.name
            self.register(t)
        elif isinstance(t, m.NewTypeRef):
            out.new_type.name = t.name
            self.register(t)
        elif isinstance(t, m.HeaderStack):
            out.header_stack.header.name = t.header
            out.header_stack.size = t.size
            self.register(m.HeaderRef(t.header))
        elif isinstance(t, m.HeaderUnionStack):
            out.header_union_stack.header_union.name = t.header_union
            out.header_union_stack.size = t.size
            self.register(m.HeaderUnionRef(t.header_union))
        else:
            raise P4InfoError(f"unexpected type {t!r}")
        return out

    def _register_error(self) -> None:
        if self.info.HasField("error"):
            return
        if self.error is None:
            raise P4InfoError("the error type is used but the model has no ErrorDef")
        self.info.error.SetInParent()
        for name in self.error.members:
            self.info.error.members.append(name)

    def register(self, t: m.TypeSpec) -> None:
        """Add the named type ``t`` (and what it reaches) to type_info."""
        self.touched = True
        info = self.info
        if isinstance(t, m.StructRef):
            if t.name in info.structs:
                return
            d = self._def("struct", t.name)
            spec = p4types_pb2.P4StructTypeSpec()
            for fname, ftype in d.members:
                member = spec.members.add()
                member.name = fname
                self.spec(ftype, member.type_spec)
            info.structs[t.name].CopyFrom(spec)
        elif isinstance(t, m.HeaderRef):
            if t.name in info.headers:
                return
            d = self._def("header", t.name)
            spec = p4types_pb2.P4HeaderTypeSpec()
            for fname, ftype in d.members:
                member = spec.members.add()
                member.name = fname
                if not isinstance(ftype, (m.Bits, m.Varbit)):
                    raise P4InfoError(
                        f"Only bitstring fields expected in flattened header type {t.name}"
                    )
                member.type_spec.CopyFrom(self.spec(ftype).bitstring)
            info.headers[t.name].CopyFrom(spec)
        elif isinstance(t, m.HeaderUnionRef):
            if t.name in info.header_unions:
                return
            d = self._def("header_union", t.name)
            spec = p4types_pb2.P4HeaderUnionTypeSpec()
            for fname, hname in d.members:
                member = spec.members.add()
                member.name = fname
                member.header.name = hname
                self.register(m.HeaderRef(hname))
            info.header_unions[t.name].CopyFrom(spec)
        elif isinstance(t, m.EnumRef):
            if t.name in info.enums:
                return
            d = self._def("enum", t.name)
            spec = p4types_pb2.P4EnumTypeSpec()
            for name in d.members:
                spec.members.add().name = name
            info.enums[t.name].CopyFrom(spec)
        elif isinstance(t, m.SerEnumRef):
            if t.name in info.serializable_enums:
                return
            d = self._def("serializable_enum", t.name)
            spec = p4types_pb2.P4SerializableEnumTypeSpec()
            spec.underlying_type.bitwidth = d.width
            for name, value in d.members:
                member = spec.members.add()
                member.name = name
                member.value = constant_bytes(value, d.width)
            info.serializable_enums[t.name].CopyFrom(spec)
        elif isinstance(t, m.NewTypeRef):
            if t.name in info.new_types:
                return
            d = self._def("new_type", t.name)
            spec = p4types_pb2.P4NewTypeSpec()
            original = None
            if d.original is not None:
                original = self.spec(d.original)
            add_annotations(spec, d, lambda n: n == "p4runtime_translation")
            if d.translation_uri is not None:
                spec.translated_type.uri = d.translation_uri
                if d.sdn_bitwidth is None:
                    spec.translated_type.sdn_string.SetInParent()
                else:
                    spec.translated_type.sdn_bitwidth = d.sdn_bitwidth
            else:
                if original is None:
                    raise P4InfoError(f"new type {t.name} has no original type")
                spec.original_type.CopyFrom(original)
            info.new_types[t.name].CopyFrom(spec)
        elif isinstance(t, m.ErrorRef):
            self._register_error()
        elif isinstance(t, (m.Bits, m.Varbit, m.Bool)):
            pass
        else:
            self.spec(t)
