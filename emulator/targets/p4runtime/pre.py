"""The packet replication engine: ``MulticastGroupEntry`` and
``CloneSessionEntry`` (P4Runtime spec §9.5).

Entries are checked, handed to the pipeline as (port, instance) replicas and
kept as written so reads return exactly what was written. Ports are v1model
ports (``bit<9>``); the SDN CPU port (``0xfffffffd``, spec §16.1.1) stands
for the switch's CPU port. Group ids are ``bit<16>`` (v1model ``mcast_grp``),
instances ``bit<16>`` (``egress_rid``).
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from emulator.p4.exec.pipeline import CloneSession
from emulator.targets.p4runtime.context import PipelineContext
from emulator.targets.p4runtime.errors import (
    already_exists, invalid_argument, not_found, out_of_range,
)

Update = p4runtime_pb2.Update
SDN_PORT_CPU = 0xFFFFFFFD
MAX_PORT = 511
MAX_GROUP_ID = 0xFFFF
MAX_INSTANCE = 0xFFFF
MAX_CLASS_OF_SERVICE = 7


def _replicas(replicas, cpu_port: int | None, what: str) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    out: list[tuple[int, int]] = []
    for r in replicas:
        kind = r.WhichOneof("port_kind")
        if kind == "egress_port":
            port = r.egress_port
        elif kind == "port":
            if not r.port:
                raise invalid_argument(f"{what}: empty replica port")
            port = int.from_bytes(r.port, "big")
        else:
            raise invalid_argument(f"{what}: replica without a port")
        if port == SDN_PORT_CPU:
            if cpu_port is None:
                raise invalid_argument(f"{what}: replica to the CPU port, but the switch has none")
            port = cpu_port
        if port > MAX_PORT:
            raise invalid_argument(f"{what}: port {port} is not a port of the switch (0..{MAX_PORT})")
        if r.instance > MAX_INSTANCE:
            raise invalid_argument(f"{what}: instance {r.instance} above {MAX_INSTANCE}")
        if (port, r.instance) in out:
            raise invalid_argument(f"{what}: duplicate replica (port {port}, instance {r.instance})")
        out.append((port, r.instance))
    return out


def write_pre(ctx: PipelineContext, update_type: int,
              msg: p4runtime_pb2.PacketReplicationEngineEntry, cpu_port: int | None) -> None:
    kind = msg.WhichOneof("type")
    if kind == "multicast_group_entry":
        _write_multicast(ctx, update_type, msg.multicast_group_entry, cpu_port)
    elif kind == "clone_session_entry":
        _write_clone(ctx, update_type, msg.clone_session_entry, cpu_port)
    else:
        raise invalid_argument("PacketReplicationEngineEntry: no entry set")


def _write_multicast(ctx: PipelineContext, update_type: int,
                     group: p4runtime_pb2.MulticastGroupEntry, cpu_port: int | None) -> None:
    gid = group.multicast_group_id
    what = f"multicast group {gid}"
    if gid == 0:
        raise invalid_argument(f"{what}: 0 is not a valid group id")
    if gid > MAX_GROUP_ID:
        raise out_of_range(f"{what}: group ids go up to {MAX_GROUP_ID}")
    exists = gid in ctx.multicast_groups
    if update_type == Update.DELETE:
        if not exists:
            raise not_found(f"{what}: no such group")
        del ctx.multicast_groups[gid]
        ctx.pipeline.multicast_groups.pop(gid, None)
        return
    if update_type == Update.INSERT and exists:
        raise already_exists(f"{what}: already exists")
    if update_type == Update.MODIFY and not exists:
        raise not_found(f"{what}: no such group")
    if update_type not in (Update.INSERT, Update.MODIFY):
        raise invalid_argument(f"{what}: update type not set")
    replicas = _replicas(group.replicas, cpu_port, what)
    ctx.pipeline.set_multicast_group(gid, replicas)
    ctx.multicast_groups[gid] = p4runtime_pb2.MulticastGroupEntry()
    ctx.multicast_groups[gid].CopyFrom(group)


def _write_clone(ctx: PipelineContext, update_type: int,
                 session: p4runtime_pb2.CloneSessionEntry, cpu_port: int | None) -> None:
    sid = session.session_id
    what = f"clone session {sid}"
    if sid == 0:
        raise invalid_argument(f"{what}: 0 is not a valid session id")
    exists = sid in ctx.clone_sessions
    if update_type == Update.DELETE:
        if not exists:
            raise not_found(f"{what}: no such session")
        del ctx.clone_sessions[sid]
        ctx.pipeline.clone_sessions.pop(sid, None)
        return
    if update_type == Update.INSERT and exists:
        raise already_exists(f"{what}: already exists")
    if update_type == Update.MODIFY and not exists:
        raise not_found(f"{what}: no such session")
    if update_type not in (Update.INSERT, Update.MODIFY):
        raise invalid_argument(f"{what}: update type not set")
    if session.packet_length_bytes < 0:
        raise invalid_argument(f"{what}: negative packet_length_bytes")
    if session.class_of_service > MAX_CLASS_OF_SERVICE:
        raise invalid_argument(f"{what}: class_of_service above {MAX_CLASS_OF_SERVICE}")
    replicas = _replicas(session.replicas, cpu_port, what)
    ctx.pipeline.set_clone_session(sid, CloneSession(replicas, session.packet_length_bytes,
                                                     session.class_of_service))
    ctx.clone_sessions[sid] = p4runtime_pb2.CloneSessionEntry()
    ctx.clone_sessions[sid].CopyFrom(session)


def read_pre(ctx: PipelineContext,
             msg: p4runtime_pb2.PacketReplicationEngineEntry) -> list[p4runtime_pb2.Entity]:
    kind = msg.WhichOneof("type")
    if kind == "multicast_group_entry":
        store, wanted, field = (ctx.multicast_groups, msg.multicast_group_entry.multicast_group_id,
                                "multicast_group_entry")
    elif kind == "clone_session_entry":
        store, wanted, field = (ctx.clone_sessions, msg.clone_session_entry.session_id,
                                "clone_session_entry")
    else:
        raise invalid_argument("PacketReplicationEngineEntry: no entry set")
    if wanted and wanted not in store:
        raise not_found(f"{field.replace('_entry', '').replace('_', ' ')} {wanted}: not found")
    out = []
    for key in ([wanted] if wanted else sorted(store)):
        entity = p4runtime_pb2.Entity()
        getattr(entity.packet_replication_engine_entry, field).CopyFrom(store[key])
        out.append(entity)
    return out
