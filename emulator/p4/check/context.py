"""Scopes, symbols and the diagnostics of one checker run."""

from __future__ import annotations

from dataclasses import dataclass, field

from emulator.p4 import ast
from emulator.p4.errors import CompileError, Diagnostic, SourceLocation, UnsupportedError


class Abort(Exception):
    """Stops checking the current declaration after an error was recorded."""


@dataclass
class Symbol:
    """What a name means. ``kind`` is one of: type, typevar, const, var,
    action, function, extern_function, extern, instance, table, state,
    value_set, parser, control, package, match_kind.

    ``value`` depends on the kind: a :class:`~emulator.p4.types` type, an
    ``ir.Const``, an ``ir.Local``, an ``ir.Action``/``ir.Table``/
    ``ir.Instance``/``ir.ValueSet``, or the syntax node of a declaration
    that is checked on use (functions, externs, parser/control types)."""

    kind: str
    value: object
    decl: object = None


class Scope:
    def __init__(self, parent: "Scope | None" = None, owner: str = "") -> None:
        self.parent = parent
        self.names: dict[str, Symbol] = {}
        self.owner = owner

    def lookup(self, name: str) -> Symbol | None:
        scope: Scope | None = self
        while scope is not None:
            sym = scope.names.get(name)
            if sym is not None:
                return sym
            scope = scope.parent
        return None

    def child(self, owner: str = "") -> "Scope":
        return Scope(self, owner or self.owner)


@dataclass
class Diagnostics:
    items: list[Diagnostic] = field(default_factory=list)
    unsupported: bool = False

    def error(self, loc: SourceLocation | None, message: str) -> Abort:
        self.items.append(Diagnostic(loc, message))
        return Abort()

    def unsupported_error(self, loc: SourceLocation | None, what: str) -> Abort:
        self.unsupported = True
        self.items.append(Diagnostic(loc, f"{what} is not supported by the built-in target"))
        return Abort()

    def raise_if_any(self) -> None:
        if self.items:
            # Errors after the first unsupported construct are mostly its
            # fallout ('t' is not declared when table t was refused): the
            # program counts as unsupported unless a real error comes first.
            first = next((i for i, d in enumerate(self.items) if _is_unsupported(d)), None)
            cls = UnsupportedError if first is not None and not any(
                not _is_unsupported(d) for d in self.items[:first]) else CompileError
            raise cls(list(self.items))


def _is_unsupported(d: Diagnostic) -> bool:
    return "not supported by the built-in target" in d.message


def declare(scope: Scope, diags: Diagnostics, name: str, sym: Symbol, loc: SourceLocation | None) -> None:
    existing = scope.names.get(name)
    if existing is not None and not _overloadable(existing, sym):
        diags.error(loc, f"{name!r} is already declared in this scope")
        return
    if existing is not None:
        # Overloads (extern functions, actions by arity) keep a list.
        if not isinstance(existing.value, list):
            existing.value = [existing.value]
            existing.decl = [existing.decl]
        existing.value.append(sym.value)  # type: ignore[union-attr]
        existing.decl.append(sym.decl)  # type: ignore[union-attr]
        return
    scope.names[name] = sym


def _overloadable(a: Symbol, b: Symbol) -> bool:
    return a.kind == b.kind and a.kind in ("extern_function", "function")


def annotation_string(annotations: tuple[ast.Annotation, ...], name: str) -> str | None:
    for a in annotations:
        if a.name == name:
            return a.string_value
    return None


def has_annotation(annotations: tuple[ast.Annotation, ...], name: str) -> bool:
    return any(a.name == name for a in annotations)
