"""What a runtime file is checked against: the tables of a program, their
match fields, actions and parameters, from a pipeline
(:func:`pipeline_schema`) or from a P4Info (:func:`p4info_schema`), and name
lookup by full name or unique dotted suffix (:func:`resolve_name`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, TypeVar

from emulator.p4.errors import RuntimeConfigError
from emulator.p4.exec.pipeline import V1ModelPipeline
from emulator.p4.p4info.index import (
    SCOPE_DEFAULT_ONLY, SCOPE_TABLE_ONLY, P4InfoIndex,
)

T = TypeVar("T")
_SCOPES = {SCOPE_TABLE_ONLY: "table_only", SCOPE_DEFAULT_ONLY: "default_only"}


@dataclass(frozen=True)
class KeySchema:
    name: str
    kind: str  # exact, lpm, ternary, range, optional
    width: int


@dataclass(frozen=True)
class ActionSchema:
    name: str
    params: tuple[tuple[str, int], ...]  # (name, width), in order
    scope: str = "table_and_default"  # or table_only, default_only


@dataclass(frozen=True)
class TableSchema:
    name: str
    keys: tuple[KeySchema, ...]
    actions: Mapping[str, ActionSchema]
    needs_priority: bool
    const_default: bool = False
    const_entries: bool = False


def pipeline_schema(pipeline: V1ModelPipeline) -> dict[str, TableSchema]:
    """The tables of a pipeline (its own idea of which need priorities)."""
    out = {}
    for name, table in pipeline.tables.items():
        actions = {a.name: ActionSchema(a.name, tuple(a.params), a.scope)
                   for a in table.actions.values()}
        out[name] = TableSchema(
            name, tuple(KeySchema(k.name, k.match_kind, k.width) for k in table.keys), actions,
            table.needs_priority, table.default_const, table.const_entries)
    return out


def p4info_schema(index: P4InfoIndex) -> dict[str, TableSchema]:
    """The tables of a P4Info (priorities for ternary, range and optional
    fields, P4Runtime §9.1)."""
    out = {}
    for info in index.tables.values():
        actions = {}
        for aid, scope in info.action_scopes.items():
            action = index.actions[aid]
            actions[action.name] = ActionSchema(
                action.name, tuple((p.name, p.bitwidth) for p in action.params),
                _SCOPES.get(scope, "table_and_default"))
        out[info.name] = TableSchema(
            info.name, tuple(KeySchema(f.name, f.kind, f.bitwidth) for f in info.match_fields),
            actions, info.needs_priority, bool(info.const_default_action_id), info.is_const)
    return out


def resolve_name(raw: object, names: Mapping[str, T], where: str, what: str,
                 owner: str | None = None) -> str:
    """The full name ``raw`` stands for: itself, or the one name it is a
    dotted suffix of (``ipv4_lpm`` for ``MyIngress.ipv4_lpm``)."""
    if isinstance(raw, str):
        if raw in names:
            return raw
        found = [n for n in names if n.endswith("." + raw)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise RuntimeConfigError(f"{where}: {what} {raw!r} is ambiguous: "
                                     f"{', '.join(sorted(found))}")
    prefix = owner or f"unknown {what}"
    raise RuntimeConfigError(f"{where}: {prefix} {raw!r}; allowed: "
                             f"{', '.join(sorted(names)) or 'none'}")
