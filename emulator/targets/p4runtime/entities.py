"""Dispatch of ``Write`` updates and ``Read`` requests to the entity
modules, and the forwarding state as a list of updates (for
``RECONCILE_AND_COMMIT``).

Each function raises :class:`~.errors.P4RuntimeError` for the one update or
read request it handles; the servicer collects them per batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from emulator.targets.p4runtime import pre, profiles, resources, table_entries
from emulator.targets.p4runtime.context import PipelineContext
from emulator.targets.p4runtime.digests import (
    DigestManager, read_digest_entries, write_digest_entry,
)
from emulator.targets.p4runtime.errors import invalid_argument, unimplemented

Update = p4runtime_pb2.Update
Entity = p4runtime_pb2.Entity


@dataclass
class Services:
    """What some entities need beyond the pipeline context."""

    digests: DigestManager
    cpu_port: int | None = None


def write(ctx: PipelineContext, update: p4runtime_pb2.Update, services: Services) -> None:
    kind = update.entity.WhichOneof("entity")
    t = update.type
    if t not in (Update.INSERT, Update.MODIFY, Update.DELETE):
        raise invalid_argument("update type is not set")
    e = update.entity
    try:
        if kind == "table_entry":
            table_entries.write_table_entry(ctx, t, e.table_entry)
        elif kind == "action_profile_member":
            profiles.write_member(ctx, t, e.action_profile_member)
        elif kind == "action_profile_group":
            profiles.write_group(ctx, t, e.action_profile_group)
        elif kind == "counter_entry":
            resources.write_counter(ctx, t, e.counter_entry)
        elif kind == "direct_counter_entry":
            table_entries.write_direct_counter(ctx, t, e.direct_counter_entry)
        elif kind == "meter_entry":
            resources.write_meter(ctx, t, e.meter_entry)
        elif kind == "direct_meter_entry":
            table_entries.write_direct_meter(ctx, t, e.direct_meter_entry)
        elif kind == "register_entry":
            resources.write_register(ctx, t, e.register_entry)
        elif kind == "value_set_entry":
            resources.write_value_set(ctx, t, e.value_set_entry)
        elif kind == "packet_replication_engine_entry":
            pre.write_pre(ctx, t, e.packet_replication_engine_entry, services.cpu_port)
        elif kind == "digest_entry":
            write_digest_entry(ctx, t, e.digest_entry, services.digests)
        elif kind == "extern_entry":
            raise unimplemented("extern entries: v1model has no P4Runtime externs")
        else:
            raise invalid_argument("entity is not set")
    finally:
        # Whatever changed (even in part, before an error), ingress
        # decisions cached from the old state go.
        ctx.pipeline.forget_decisions()


def read(ctx: PipelineContext, entity: Entity) -> list[Entity]:
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        return table_entries.read_table_entries(ctx, entity.table_entry)
    if kind == "action_profile_member":
        return profiles.read_members(ctx, entity.action_profile_member)
    if kind == "action_profile_group":
        return profiles.read_groups(ctx, entity.action_profile_group)
    if kind == "counter_entry":
        return resources.read_counters(ctx, entity.counter_entry)
    if kind == "direct_counter_entry":
        return table_entries.read_direct_counters(ctx, entity.direct_counter_entry)
    if kind == "meter_entry":
        return resources.read_meters(ctx, entity.meter_entry)
    if kind == "direct_meter_entry":
        return table_entries.read_direct_meters(ctx, entity.direct_meter_entry)
    if kind == "register_entry":
        return resources.read_registers(ctx, entity.register_entry)
    if kind == "value_set_entry":
        return resources.read_value_sets(ctx, entity.value_set_entry)
    if kind == "packet_replication_engine_entry":
        return pre.read_pre(ctx, entity.packet_replication_engine_entry)
    if kind == "digest_entry":
        return read_digest_entries(ctx, entity.digest_entry)
    if kind == "extern_entry":
        raise unimplemented("extern entries: v1model has no P4Runtime externs")
    raise invalid_argument("entity is not set (a wildcard read names the entity type)")


def forwarding_state(ctx: PipelineContext) -> list[Update]:
    """The state a client wrote, as the updates that rebuild it: members and
    groups before the table entries that use them (what PI replays for
    ``RECONCILE_AND_COMMIT``), then default entries, PRE entries, indexed
    externs, value sets and digest configs."""
    updates: list[Update] = []

    def add(kind: int, entities: list[Entity]) -> None:
        for entity in entities:
            updates.append(Update(type=kind, entity=entity))

    add(Update.INSERT, profiles.read_members(ctx, p4runtime_pb2.ActionProfileMember()))
    add(Update.INSERT, profiles.read_groups(ctx, p4runtime_pb2.ActionProfileGroup()))
    full = p4runtime_pb2.TableEntry()
    full.counter_data.SetInParent()
    full.meter_config.SetInParent()
    for tb in ctx.tables.values():
        if tb.table.const_entries:
            continue
        full.table_id = tb.info.id
        add(Update.INSERT, table_entries.read_table_entries(ctx, full))
    for tb in ctx.tables.values():
        if tb.info.id in ctx.default_extras and not tb.indirect:
            entity = Entity()
            entity.table_entry.CopyFrom(table_entries.default_entry_message(ctx, tb))
            updates.append(Update(type=Update.MODIFY, entity=entity))
    for kind in ("multicast_group_entry", "clone_session_entry"):
        request = p4runtime_pb2.PacketReplicationEngineEntry()
        getattr(request, kind).SetInParent()
        add(Update.INSERT, pre.read_pre(ctx, request))
    add(Update.MODIFY, resources.read_counters(ctx, p4runtime_pb2.CounterEntry()))
    add(Update.MODIFY, [e for e in resources.read_meters(ctx, p4runtime_pb2.MeterEntry())
                        if e.meter_entry.HasField("config")])
    add(Update.MODIFY, [e for e in resources.read_registers(ctx, p4runtime_pb2.RegisterEntry())
                        if e.register_entry.data.bitstring != b"\x00"])
    add(Update.MODIFY, resources.read_value_sets(ctx, p4runtime_pb2.ValueSetEntry()))
    add(Update.INSERT, read_digest_entries(ctx, p4runtime_pb2.DigestEntry()))
    return updates
