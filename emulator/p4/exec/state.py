"""Builds the initial control-plane state of a program from its IR: one
:class:`~.tables.Table` per table (keys, actions, default action, const
entries, action profile, direct resources) and parser value sets.
"""

from __future__ import annotations

from dataclasses import replace

from emulator.p4 import ir
from emulator.p4.exec.externs import Meter
from emulator.p4.exec.layout import scalar_width
from emulator.p4.exec.tables import ActionProfile, ActionSpec, Entry, KeySpec, Table
from emulator.p4.types import find_annotation


class ValueSetState:
    """A parser ``value_set``: members are tuples of (value, mask) per key."""

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self.members: list[tuple[tuple[int, int], ...]] = []

    def match(self, key: tuple[int, ...]) -> bool:
        for member in self.members:
            if all(k & m == v & m for k, (v, m) in zip(key, member)):
                return True
        return False


def action_spec(action: ir.Action, aid: int, annotations: tuple = ()) -> ActionSpec:
    params = tuple((p.name, scalar_width(p.type)) for p in action.params if not p.direction)
    scope = "table_and_default"
    if find_annotation(annotations, "defaultonly") is not None:
        scope = "default_only"
    elif find_annotation(annotations, "tableonly") is not None:
        scope = "table_only"
    return ActionSpec(action.name, aid, params, scope)


def build_tables(program: ir.Program, action_ids: dict[int, int], instances: dict[int, object],
                 profiles: dict[str, ActionProfile]) -> dict[int, Table]:
    """``id(ir.Table)`` → table state, const entries installed."""
    out: dict[int, Table] = {}
    for t in program.tables:
        specs = [action_spec(ref.action, action_ids[id(ref.action)], ref.annotations)
                 for ref in t.actions]
        by_name = {s.name: s for s in specs}
        default_spec = by_name.get(t.default_action.action.name)
        if default_spec is None:
            # The implicit NoAction() default of a table without
            # default_action: p4c's CreateBuiltins lists it as @defaultonly
            # (so does the P4Info), so the control plane may set it back.
            default_spec = replace(action_spec(t.default_action.action,
                                               action_ids[id(t.default_action.action)]),
                                   scope="default_only")
            specs.append(default_spec)
        default = Entry(default_spec, _const_args(t.default_action), None, hit=False)
        keys = [KeySpec(k.name, k.match_kind, scalar_width(k.expr.type)) for k in t.keys]
        profile = None
        if t.implementation is not None:
            profile = instances.get(id(t.implementation))  # type: ignore[assignment]
            if profile is None:
                profile = profiles.get(t.implementation.name)
        meter_kind = None
        if t.direct_meter is not None:
            meter = instances.get(id(t.direct_meter))
            meter_kind = meter.kind if isinstance(meter, Meter) else "packets"
        timeout = t.other_properties.get("support_timeout")
        table = Table(t.name, keys, specs, t.size, default, t.default_action_const,
                      profile, t.direct_counter is not None, meter_kind, t.entries_const,
                      idle_timeout=isinstance(timeout, ir.Const) and timeout.value is True)
        # p4c gives BMv2 const entry i the priority ``@priority(n)`` or i + 1, and
        # BMv2 picks the smallest; stored here as "largest wins" (P4Runtime's way).
        bmv2 = [_priority_annotation(e) or i + 1 for i, e in enumerate(t.entries)]
        top = max(bmv2, default=0) + 1
        for i, entry in enumerate(t.entries):
            match = [_keyset_match(k, ks) for k, ks in zip(table.keys, entry.keysets)]
            priority = entry.priority if entry.priority is not None else top - bmv2[i]
            if not table.needs_priority:
                priority = 0
            key = table.canonical_key(match)
            if table.find(key, priority) is not None:
                continue  # a later duplicate never matches; p4c warns about it
            e = table.make_entry(entry.action.action.name, _const_args(entry.action), key, priority)
            table.insert(e)
        out[id(t)] = table
    return out


def _priority_annotation(entry: ir.TableEntry) -> int | None:
    ann = find_annotation(entry.annotations, "priority")
    if ann is not None and ann.args and isinstance(ann.args[0], int):
        return ann.args[0]
    return None


def _const_args(bound: ir.BoundAction) -> tuple[int, ...]:
    return tuple(int(a.value) for a in bound.args)  # type: ignore[call-overload]


def _keyset_match(spec: KeySpec, ks: ir.Keyset) -> object:
    full = (1 << spec.width) - 1
    kind = spec.match_kind
    if isinstance(ks, ir.KeysetDefault):
        return {"exact": 0, "lpm": (0, 0), "ternary": (0, 0), "range": (0, full),
                "optional": None}[kind]
    if isinstance(ks, ir.KeysetValue):
        if kind == "lpm":
            return (ks.value, spec.width)
        if kind == "ternary":
            return (ks.value, full)
        if kind == "range":
            return (ks.value, ks.value)
        return ks.value
    if isinstance(ks, ir.KeysetMask):
        if kind == "lpm":
            plen = bin(ks.mask & full).count("1")
            return (ks.value & ks.mask, plen)
        if kind == "ternary":
            return (ks.value & ks.mask, ks.mask & full)
        if kind == "optional" and ks.mask & full == 0:
            return None
        return ks.value
    if isinstance(ks, ir.KeysetRange):
        if kind == "range":
            return (ks.low, ks.high)
        return ks.low
    raise TypeError(f"keyset {ks!r} in a table entry")


__all__ = ["ValueSetState", "build_tables", "action_spec", "find_annotation"]
