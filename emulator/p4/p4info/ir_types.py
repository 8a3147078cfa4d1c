"""Types of the front end's IR as P4Info type specs and named types.

:func:`type_spec` gives the ``P4DataTypeSpec`` of a type,
:func:`named_types` every struct, header, header union and enum of the
program (the model's ``types``), :func:`width_and_type` the bitwidth and
named type of a match field, parameter or metadata field (p4c
``getTypeWidth``), :func:`flat_fields` a header's fields flattened as p4c's
``FlattenHeader`` does.  Types are named by their control-plane name
(``@name`` of the declaration, if any).
"""

from __future__ import annotations

from typing import Iterator, Optional

from emulator.p4 import ir
from emulator.p4 import types as T

from . import model as m
from .ids import P4InfoError
from .ir_annotations import control_plane_name
from .ir_walk import unique


def type_name(t: T.Type) -> str:
    return control_plane_name(t.name, getattr(t, "annotations", ()))  # type: ignore[union-attr]


def type_spec(t: T.Type, where: str) -> m.TypeSpec:
    if isinstance(t, T.BitsType):
        return m.Bits(t.width, t.signed)
    if isinstance(t, T.VarbitType):
        return m.Varbit(t.max_width)
    if isinstance(t, T.BoolType):
        return m.Bool()
    if isinstance(t, T.ErrorType):
        return m.ErrorRef()
    if isinstance(t, T.TupleType):
        return m.TupleOf(tuple(type_spec(e, where) for e in t.elements))
    if isinstance(t, T.StructType):
        return m.StructRef(type_name(t))
    if isinstance(t, T.HeaderType):
        return m.HeaderRef(type_name(t))
    if isinstance(t, T.HeaderUnionType):
        return m.HeaderUnionRef(type_name(t))
    if isinstance(t, T.EnumType):
        return m.SerEnumRef(t.name) if t.underlying is not None else m.EnumRef(t.name)
    if isinstance(t, T.StackType):
        if isinstance(t.element, T.HeaderUnionType):
            return m.HeaderUnionStack(type_name(t.element), t.size)
        return m.HeaderStack(type_name(t.element), t.size)
    raise P4InfoError(f"{where}: unexpected type {t}")


def named_types(program: ir.Program) -> list[m.NamedType]:
    out: list[m.NamedType] = [m.ErrorDef(list(program.errors))]
    seen: set[tuple[str, str]] = set()
    for t in unique(program.types.values()):
        try:
            _named(t, out, seen)
        except P4InfoError:
            continue  # not describable; an error only if P4Info refers to it
    return out


def _named(t: T.Type, out: list, seen: set) -> None:  # type: ignore[type-arg]
    if isinstance(t, T.StackType):
        t = t.element
    if not isinstance(t, (T.StructType, T.HeaderType, T.HeaderUnionType, T.EnumType)):
        return
    key = (type(t).__name__ + ("ser" if isinstance(t, T.EnumType) and t.underlying else ""),
           t.name)
    if key in seen:
        return
    seen.add(key)
    where = f"type {t.name}"
    if isinstance(t, T.EnumType):
        if t.underlying is not None:
            out.append(m.SerEnumDef(t.name, t.underlying.width, list(zip(t.members, t.values))))
        else:
            out.append(m.EnumDef(t.name, list(t.members)))
        return
    name = type_name(t)
    if isinstance(t, T.HeaderType):
        members = [(n, _bitstring(ft, where)) for n, ft, _f in flat_fields(t)]
        out.append(m.HeaderDef(name, members))  # type: ignore[arg-type]
    elif isinstance(t, T.HeaderUnionType):
        out.append(m.HeaderUnionDef(name, [
            (control_plane_name(f.name, f.annotations), type_name(f.type)) for f in t.fields]))
    else:
        out.append(m.StructDef(name, [
            (control_plane_name(f.name, f.annotations), type_spec(f.type, where)) for f in t.fields]))
    for f in t.fields:
        _named(f.type, out, seen)


def flat_fields(t: T.HeaderType | T.StructType, prefix: str = ""
                ) -> Iterator[tuple[str, T.Type, T.Field]]:
    """p4c FlattenHeader: nested struct fields as ``s.f``, depth first."""
    for f in t.fields:
        name = prefix + control_plane_name(f.name, f.annotations)
        if isinstance(f.type, T.StructType):
            yield from flat_fields(f.type, name + ".")
        else:
            yield name, f.type, f  # type: ignore[misc]


def _bitstring(t: T.Type, where: str) -> m.Bits | m.Varbit:
    if isinstance(t, T.VarbitType):
        return m.Varbit(t.max_width)
    try:
        width = T.field_width(t)
    except TypeError:
        raise P4InfoError(f"{where}: header field of type {t}") from None
    signed = isinstance(t, T.BitsType) and t.signed
    return m.Bits(width, signed)


def width_and_type(t: T.Type, where: str) -> tuple[int, Optional[m.TypeSpec]]:
    """p4c getTypeWidth, and the named type a field of type ``t`` refers to."""
    if isinstance(t, T.BitsType):
        return t.width, None
    if isinstance(t, T.BoolType):
        return 1, m.Bool()
    if isinstance(t, T.EnumType):
        if t.underlying is not None:
            return t.underlying.width, m.SerEnumRef(t.name)
        return 0, m.EnumRef(t.name)
    if isinstance(t, T.ErrorType):
        return 0, m.ErrorRef()  # p4c treats error as a string
    raise P4InfoError(f"{where}: type {t} cannot be exposed to the control plane")
