"""An index over a ``p4.config.v1.P4Info``: objects by id and by name.

The server resolves every id of a request through this index. Building it
checks what the server relies on: ids unique across the P4Info, match field
and parameter ids unique within their table/action, action refs, table
implementations and direct resources pointing at objects that exist.
Problems raise :class:`P4InfoError` (a ``SetForwardingPipelineConfig``
answers ``INVALID_ARGUMENT``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2

MatchType = p4info_pb2.MatchField.MatchType
_KINDS = {
    MatchType.EXACT: "exact",
    MatchType.LPM: "lpm",
    MatchType.TERNARY: "ternary",
    MatchType.RANGE: "range",
    MatchType.OPTIONAL: "optional",
}
SCOPE_TABLE_AND_DEFAULT = p4info_pb2.ActionRef.TABLE_AND_DEFAULT
SCOPE_TABLE_ONLY = p4info_pb2.ActionRef.TABLE_ONLY
SCOPE_DEFAULT_ONLY = p4info_pb2.ActionRef.DEFAULT_ONLY


class P4InfoError(ValueError):
    """A P4Info the server cannot use."""


@dataclass(frozen=True)
class MatchFieldInfo:
    id: int
    name: str
    bitwidth: int
    kind: str  # "exact", "lpm", "ternary", "range", "optional"


@dataclass(frozen=True)
class ParamInfo:
    id: int
    name: str
    bitwidth: int


@dataclass
class ActionInfo:
    id: int
    name: str
    params: tuple[ParamInfo, ...]
    params_by_id: dict[int, ParamInfo] = field(default_factory=dict)


@dataclass
class TableInfo:
    id: int
    name: str
    match_fields: tuple[MatchFieldInfo, ...]
    match_by_id: dict[int, MatchFieldInfo]
    action_scopes: dict[int, int]  # action id -> ActionRef.Scope
    const_default_action_id: int
    implementation_id: int
    direct_counter_id: int
    direct_meter_id: int
    size: int
    idle_timeout: bool
    is_const: bool

    @property
    def needs_priority(self) -> bool:
        """Ternary, range and optional keys order entries by priority (§9.1)."""
        return any(f.kind in ("ternary", "range", "optional") for f in self.match_fields)


class P4InfoIndex:
    """Ids and names of one P4Info. ``p4info`` is kept as given."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self._ids: dict[int, str] = {}
        self.actions: dict[int, ActionInfo] = {}
        for a in p4info.actions:
            params = tuple(ParamInfo(p.id, p.name, p.bitwidth) for p in a.params)
            by_id = _unique({p.id: p for p in params}, params, f"action {a.preamble.name} param")
            self.actions[self._claim(a.preamble, "action")] = ActionInfo(
                a.preamble.id, a.preamble.name, params, by_id)
        self.action_profiles = self._collect(p4info.action_profiles, "action profile")
        self.counters = self._collect(p4info.counters, "counter")
        self.direct_counters = self._collect(p4info.direct_counters, "direct counter")
        self.meters = self._collect(p4info.meters, "meter")
        self.direct_meters = self._collect(p4info.direct_meters, "direct meter")
        self.registers = self._collect(p4info.registers, "register")
        self.digests = self._collect(p4info.digests, "digest")
        self.value_sets = self._collect(p4info.value_sets, "value set")
        self.controller_headers = {}
        for header in p4info.controller_packet_metadata:
            self._claim(header.preamble, "controller header")
            self.controller_headers[header.preamble.name] = header
        self.tables: dict[int, TableInfo] = {}
        for t in p4info.tables:
            self.tables[self._claim(t.preamble, "table")] = self._table(t)
        for ap in self.action_profiles.values():
            for tid in ap.table_ids:
                if tid not in self.tables:
                    raise P4InfoError(f"action profile {ap.preamble.name}: unknown table id {tid}")
        self.digest_ids = {d.preamble.name: d.preamble.id for d in p4info.digests}
        self.ids_by_name = {name: pid for pid, name in self._ids.items()}

    @property
    def packet_in(self) -> p4info_pb2.ControllerPacketMetadata | None:
        return self.controller_headers.get("packet_in")

    @property
    def packet_out(self) -> p4info_pb2.ControllerPacketMetadata | None:
        return self.controller_headers.get("packet_out")

    def name_of(self, object_id: int) -> str:
        return self._ids.get(object_id, f"id {object_id}")

    # ---- building --------------------------------------------------------------
    def _claim(self, preamble: p4info_pb2.Preamble, kind: str) -> int:
        if preamble.id == 0:
            raise P4InfoError(f"{kind} {preamble.name!r}: id 0 is not valid")
        if preamble.id in self._ids:
            raise P4InfoError(f"{kind} {preamble.name!r}: id {preamble.id} already used by "
                              f"{self._ids[preamble.id]!r}")
        self._ids[preamble.id] = preamble.name
        return preamble.id

    def _collect(self, messages, kind: str) -> dict:  # type: ignore[no-untyped-def]
        return {self._claim(m.preamble, kind): m for m in messages}

    def _table(self, t: p4info_pb2.Table) -> TableInfo:
        name = t.preamble.name
        fields = []
        for mf in t.match_fields:
            if mf.WhichOneof("match") != "match_type" or mf.match_type not in _KINDS:
                raise P4InfoError(f"table {name}: match field {mf.name} has an unsupported "
                                  f"match type")
            fields.append(MatchFieldInfo(mf.id, mf.name, mf.bitwidth, _KINDS[mf.match_type]))
        by_id = _unique({f.id: f for f in fields}, fields, f"table {name} match field")
        scopes = {}
        for ref in t.action_refs:
            if ref.id not in self.actions:
                raise P4InfoError(f"table {name}: unknown action id {ref.id}")
            scopes[ref.id] = ref.scope
        if t.const_default_action_id and t.const_default_action_id not in self.actions:
            raise P4InfoError(f"table {name}: unknown const default action id")
        if t.implementation_id and t.implementation_id not in self.action_profiles:
            raise P4InfoError(f"table {name}: unknown implementation id {t.implementation_id}")
        counter_id = meter_id = 0
        for rid in t.direct_resource_ids:
            if rid in self.direct_counters:
                counter_id = rid
            elif rid in self.direct_meters:
                meter_id = rid
            else:
                raise P4InfoError(f"table {name}: unknown direct resource id {rid}")
        return TableInfo(
            t.preamble.id, name, tuple(fields), by_id, scopes, t.const_default_action_id,
            t.implementation_id, counter_id, meter_id, t.size,
            t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL, t.is_const_table)


def _unique(by_id: dict, items, what: str) -> dict:  # type: ignore[no-untyped-def]
    if len(by_id) != len(items):
        raise P4InfoError(f"{what} ids are not unique")
    return by_id
