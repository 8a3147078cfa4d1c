"""Plan entries (names and ints, :mod:`.fabric_plan`) to P4Runtime messages
(ids and canonical bytestrings), through a switch's P4Info."""

from __future__ import annotations

from typing import Iterable

from p4.v1 import p4runtime_pb2

from emulator.control.fabric_plan import (
    CloneSession, ProfileGroup, ProfileMember, SwitchPlan, TableEntry,
)
from emulator.p4.p4info.bytestrings import encode_uint
from emulator.p4.p4info.index import P4InfoIndex

INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY


class EncodeError(ValueError):
    """A plan entry that does not fit the switch's P4Info."""

    exit_code = 1


class Encoder:
    def __init__(self, index: P4InfoIndex) -> None:
        self.index = index
        self._tables = {t.name: t for t in index.tables.values()}
        self._actions = {a.name: a for a in index.actions.values()}

    def _id(self, name: str, what: str) -> int:
        pid = self.index.ids_by_name.get(name)
        if pid is None:
            raise EncodeError(f"the switch's P4Info has no {what} {name!r}")
        return pid

    def _action(self, action: p4runtime_pb2.Action, name: str,
                params: tuple[tuple[str, int], ...]) -> None:
        info = self._actions.get(name)
        if info is None:
            raise EncodeError(f"the switch's P4Info has no action {name!r}")
        given = dict(params)
        action.action_id = info.id
        for p in info.params:
            if p.name not in given:
                raise EncodeError(f"action {name}: no value for parameter {p.name}")
            value = given[p.name]
            if value >> p.bitwidth:
                raise EncodeError(f"action {name}: {p.name}={value} does not fit {p.bitwidth} bits")
            param = action.params.add()
            param.param_id = p.id
            param.value = encode_uint(value)

    def table_entry(self, e: TableEntry) -> p4runtime_pb2.Entity:
        table = self._tables.get(e.table)
        if table is None:
            raise EncodeError(f"the switch's P4Info has no table {e.table!r}")
        entity = p4runtime_pb2.Entity()
        te = entity.table_entry
        te.table_id = table.id
        if e.default:
            te.is_default_action = True
            self._action(te.action.action, e.action, e.params)
            return entity
        fields = {f.name: f for f in table.match_fields}
        for name, value in e.match:
            f = fields.get(name)
            if f is None:
                raise EncodeError(f"table {e.table}: no match field {name!r}")
            self._match(te.match.add(), f, value)
        # Omitted don't-care fields, and don't-care values, are left out (P4Runtime §9.1.1).
        kept = [m for m in te.match if not _is_dont_care(m)]
        del te.match[:]
        te.match.extend(kept)
        if e.member is not None:
            te.action.action_profile_member_id = e.member
        elif e.group is not None:
            te.action.action_profile_group_id = e.group
        else:
            self._action(te.action.action, e.action, e.params)
        if table.needs_priority:
            te.priority = e.priority or 1
        return entity

    @staticmethod
    def _match(m: p4runtime_pb2.FieldMatch, f, value: object) -> None:  # type: ignore[no-untyped-def]
        m.field_id = f.id
        mask_all = (1 << f.bitwidth) - 1
        if f.kind == "exact":
            m.exact.value = encode_uint(int(value))  # type: ignore[call-overload]
        elif f.kind == "lpm":
            v, plen = value  # type: ignore[misc]
            mask = ((1 << plen) - 1) << (f.bitwidth - plen)
            m.lpm.value = encode_uint(v & mask)
            m.lpm.prefix_len = plen
        elif f.kind == "ternary":
            v, mask = value  # type: ignore[misc]
            m.ternary.value = encode_uint(v & mask & mask_all)
            m.ternary.mask = encode_uint(mask & mask_all)
        elif f.kind == "range":
            lo, hi = value  # type: ignore[misc]
            m.range.low = encode_uint(lo)
            m.range.high = encode_uint(hi)
        elif f.kind == "optional":
            m.optional.value = encode_uint(int(value))  # type: ignore[call-overload]

    def member(self, m: ProfileMember) -> p4runtime_pb2.Entity:
        entity = p4runtime_pb2.Entity()
        apm = entity.action_profile_member
        apm.action_profile_id = self._id(m.profile, "action profile")
        apm.member_id = m.member_id
        self._action(apm.action, m.action, m.params)
        return entity

    def group(self, g: ProfileGroup) -> p4runtime_pb2.Entity:
        entity = p4runtime_pb2.Entity()
        apg = entity.action_profile_group
        apg.action_profile_id = self._id(g.profile, "action profile")
        apg.group_id = g.group_id
        for mid in g.members:
            member = apg.members.add()
            member.member_id = mid
            member.weight = 1
        return entity

    @staticmethod
    def clone_session(s: CloneSession) -> p4runtime_pb2.Entity:
        entity = p4runtime_pb2.Entity()
        cs = entity.packet_replication_engine_entry.clone_session_entry
        cs.session_id = s.session_id
        for port, instance in s.replicas:
            r = cs.replicas.add()
            r.egress_port = port
            r.instance = instance
        return entity

    def plan_updates(self, plan: SwitchPlan) -> list[p4runtime_pb2.Update]:
        """Everything a switch needs, in dependency order (members before
        groups before the entries that point at them)."""
        entities: list[p4runtime_pb2.Entity] = []
        entities.extend(self.member(m) for m in plan.members)
        entities.extend(self.group(g) for g in plan.groups)
        entities.extend(self.clone_session(s) for s in plan.clone_sessions)
        entities.extend(self.table_entry(e) for e in plan.entries if not e.default)
        defaults = [self.table_entry(e) for e in plan.entries if e.default]
        return [_update(INSERT, e) for e in entities] + [_update(MODIFY, e) for e in defaults]

    def counter_read(self, name: str) -> p4runtime_pb2.Entity:
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = self._id(name, "counter")
        return entity


def _update(kind: int, entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Update:
    update = p4runtime_pb2.Update(type=kind)
    update.entity.CopyFrom(entity)
    return update


def _is_dont_care(m: p4runtime_pb2.FieldMatch) -> bool:
    kind = m.WhichOneof("field_match_type")
    if kind == "ternary":
        return not any(m.ternary.mask)
    if kind == "lpm":
        return m.lpm.prefix_len == 0
    return False


def updates(encoder: Encoder, entities: Iterable[p4runtime_pb2.Entity], kind: int = INSERT
            ) -> list[p4runtime_pb2.Update]:
    return [_update(kind, e) for e in entities]
