"""Resolves syntax types (``ast.Type``) to checked types, and declares the
named types of a program (headers, structs, unions, enums, typedefs)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from emulator.p4 import ast, ir
from emulator.p4.check.context import Abort, Scope, Symbol, declare
from emulator.p4.types import (
    BOOL, VOID, Annotation, BitsType, EnumType, ErrorType, ExternType, Field, HeaderType,
    HeaderUnionType, InfIntType, MatchKindType, StackType, StringType, StructType, TupleType,
    Type, VarbitType,
)

if TYPE_CHECKING:
    from emulator.p4.check.program import Checker

MAX_WIDTH = 2048


class TypeVar:
    """A type parameter of a generic extern, method or function; bound to
    a concrete type during a call's inference."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"TypeVar({self.name})"


def annotations_of(nodes: tuple[ast.Annotation, ...]) -> tuple[Annotation, ...]:
    out = []
    for a in nodes:
        args: tuple[object, ...] = ()
        if a.string_value is not None:
            args = (a.string_value,)
        elif a.integer_values is not None:
            args = tuple(a.integer_values)
        tokens = tuple(t.text if t.kind != "string" else f'"{t.text}"' for t in a.body)
        out.append(Annotation(a.name, args, " ".join(tokens), tokens, a.structured))
    return tuple(out)


class TypeResolver:
    def __init__(self, checker: "Checker") -> None:
        self.c = checker

    def resolve(self, t: ast.Type, scope: Scope, allow_typevars: bool = True) -> Type:
        diags = self.c.diags
        if isinstance(t, ast.BitsType):
            width = self.c.const_int(t.width, scope, "a width")
            if not (1 if not t.signed else 1) <= width <= MAX_WIDTH and not (width == 0 and not t.signed):
                raise diags.error(t.loc, f"width {width} out of range 1..{MAX_WIDTH}")
            if width == 0:
                raise self.c.diags.unsupported_error(t.loc, "bit<0>")
            return BitsType(width, t.signed)
        if isinstance(t, ast.VarbitType):
            return VarbitType(self.c.const_int(t.max_width, scope, "a varbit width"))
        if isinstance(t, ast.BoolType):
            return BOOL
        if isinstance(t, ast.StringType):
            return StringType()
        if isinstance(t, ast.VoidType):
            return VOID
        if isinstance(t, ast.IntType):
            return InfIntType()
        if isinstance(t, ast.ErrorType):
            return self.c.error_type
        if isinstance(t, ast.MatchKindType):
            return MatchKindType()
        if isinstance(t, ast.HeaderStackType):
            elem = self.resolve(t.element, scope)
            if not isinstance(elem, (HeaderType, HeaderUnionType)):
                raise diags.error(t.loc, f"header stack of {elem}: elements must be headers or header unions")
            size = self.c.const_int(t.size, scope, "a stack size")
            if size <= 0:
                raise diags.error(t.size.loc, "a header stack needs a positive size")
            return StackType(elem, size)
        if isinstance(t, ast.TupleType):
            return TupleType(tuple(self.resolve(e, scope) for e in t.elements))
        if isinstance(t, ast.SpecializedType):
            sym = scope.lookup(t.base.name)
            if sym is None or sym.kind not in ("extern",):
                if sym is not None and sym.kind in ("parser", "control", "package"):
                    return ExternType(t.base.name, tuple(self.resolve(a, scope) for a in t.args))
                raise diags.error(t.loc, f"{t.base.name!r} is not a generic type")
            return ExternType(t.base.name, tuple(self.resolve(a, scope) for a in t.args))
        if isinstance(t, ast.DontCareType):
            return TypeVar("_")  # type: ignore[return-value]
        if isinstance(t, ast.TypeName):
            sym = scope.lookup(t.name)
            if sym is None:
                raise diags.error(t.loc, f"unknown type {t.name!r}")
            if sym.kind == "type":
                return sym.value  # type: ignore[return-value]
            if sym.kind == "typevar":
                return sym.value  # type: ignore[return-value]
            if sym.kind in ("extern", "parser", "control", "package"):
                return ExternType(t.name)
            if sym.kind in ("parser_type", "control_type"):
                # valid P4 (a constructor parameter taking a parser or control)
                raise diags.unsupported_error(t.loc, f"a parameter of parser or control type {t.name}")
            raise diags.error(t.loc, f"{t.name!r} is not a type")
        raise diags.error(getattr(t, "loc", None), f"unexpected type {type(t).__name__}")

    # ---- declarations -----------------------------------------------------------
    def declare_type(self, decl: ast.Node, scope: Scope) -> None:
        c = self.c
        if isinstance(decl, ast.HeaderTypeDecl):
            fields = self._fields(decl, scope)
            for f in fields:
                if isinstance(f.type, StructType):
                    # P4-16 allows structs of bit fields in headers (p4c flattens them).
                    raise c.diags.unsupported_error(decl.loc, f"header {decl.name}: a struct-typed field")
                if not isinstance(f.type, (BitsType, VarbitType)) and not (
                        isinstance(f.type, EnumType) and f.type.underlying is not None) and not (
                        isinstance(f.type, BoolType_)):
                    raise c.diags.error(decl.loc, f"header {decl.name}: field {f.name} has type "
                                                  f"{f.type}; header fields must be bit, int, varbit or serializable enums")
            if sum(isinstance(f.type, VarbitType) for f in fields) > 1:
                raise c.diags.error(decl.loc, f"header {decl.name}: at most one varbit field")
            t: Type = HeaderType(decl.name, tuple(fields), annotations_of(decl.annotations))
            # A bool field is one bit (p4c lays it out as bit<1>).
            fixed = sum(f.type.width if isinstance(f.type, BitsType) else
                        (f.type.underlying.width if isinstance(f.type, EnumType) and f.type.underlying else
                         1 if isinstance(f.type, BoolType_) else 0)
                        for f in fields)
            if fixed % 8 and not any(isinstance(f.type, VarbitType) for f in fields):
                raise c.diags.error(decl.loc, f"header {decl.name} is {fixed} bits long; "
                                              "BMv2 requires headers to be a whole number of bytes")
        elif isinstance(decl, ast.HeaderUnionDecl):
            fields = self._fields(decl, scope)
            for f in fields:
                if not isinstance(f.type, HeaderType):
                    raise c.diags.error(decl.loc, f"header_union {decl.name}: field {f.name} is not a header")
            t = HeaderUnionType(decl.name, tuple(fields), annotations_of(decl.annotations))
        elif isinstance(decl, ast.StructTypeDecl):
            if decl.type_params:
                raise c.diags.unsupported_error(decl.loc, "a generic struct")
            t = StructType(decl.name, tuple(self._fields(decl, scope)), annotations_of(decl.annotations))
        elif isinstance(decl, ast.EnumDecl):
            t = self._enum(decl, scope)
        elif isinstance(decl, (ast.TypedefDecl, ast.NewTypeDecl)):
            inner = decl.type
            if isinstance(inner, (ast.StructLikeDecl, ast.EnumDecl)):
                self.declare_type(inner, scope)
                t = scope.lookup(inner.name).value  # type: ignore[union-attr,assignment]
            else:
                t = self.resolve(inner, scope)
        else:
            raise c.diags.error(decl.loc, "not a type declaration")
        declare(scope, c.diags, decl.name, Symbol("type", t, decl), decl.loc)  # type: ignore[attr-defined]
        c.named_types[decl.name] = t  # type: ignore[attr-defined]

    def _fields(self, decl: ast.StructLikeDecl, scope: Scope) -> list[Field]:
        seen: set[str] = set()
        out = []
        for f in decl.fields:
            if f.name in seen:
                raise self.c.diags.error(f.loc, f"duplicate field {f.name!r} in {decl.name}")
            seen.add(f.name)
            annotations = tuple(self._field_list(a, scope, f.loc)
                                for a in annotations_of(f.annotations))
            out.append(Field(f.name, self.resolve(f.type, scope), annotations))
        return out

    def _field_list(self, a: Annotation, scope: Scope, loc: object) -> Annotation:
        """``@field_list(FL_X, 2)``: the list indexes as ints, constants
        resolved as p4c does (the tutorials name them: ``const int
        FL_PACKET_IN = 1;``)."""
        if a.name != "field_list" or a.args or not a.tokens:
            return a
        indexes: list[object] = []
        for token in a.tokens:
            if token == ",":
                continue
            if token[:1].isdigit():
                indexes.append(int(token, 0))
                continue
            symbol = scope.lookup(token)
            value = symbol.value.value if symbol is not None and symbol.kind == "const" \
                and isinstance(symbol.value, ir.Const) else None
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.c.diags.error(loc, f"@field_list({a.raw}): {token} is not an integer "  # type: ignore[arg-type]
                                              "constant")
            indexes.append(value)
        return replace(a, args=tuple(indexes))

    def _enum(self, decl: ast.EnumDecl, scope: Scope) -> EnumType:
        names = tuple(m.name for m in decl.members)
        if len(set(names)) != len(names):
            raise self.c.diags.error(decl.loc, f"duplicate member in enum {decl.name}")
        if decl.underlying is None:
            return EnumType(decl.name, names)
        under = self.resolve(decl.underlying, scope)
        if not isinstance(under, BitsType):
            raise self.c.diags.error(decl.underlying.loc, "an enum's underlying type must be bit<W> or int<W>")
        values = []
        for m in decl.members:
            if m.value is None:
                raise self.c.diags.error(m.loc, f"member {m.name} of serializable enum {decl.name} needs a value")
            const = self.c.const_expr(m.value, scope, under)
            values.append(int(const.value))  # type: ignore[call-overload]
        return EnumType(decl.name, names, under, tuple(values))


BoolType_ = type(BOOL)

__all__ = ["TypeResolver", "TypeVar", "annotations_of", "ErrorType", "ir", "Abort"]
