"""One forwarding-pipeline config as the server holds it.

A :class:`PipelineContext` joins a P4Info (through its
:class:`~emulator.p4.p4info.index.P4InfoIndex`) to the
:class:`~emulator.p4.exec.pipeline.V1ModelPipeline` built from the device
config, by control-plane name: every P4Info table, action, parameter, match
field, action profile, counter, meter, register and value set must exist in
the pipeline with the same widths and kinds, or :func:`bind` raises
:class:`~emulator.p4.p4info.index.P4InfoError`.

It also keeps the control-plane state the pipeline has no place for:
controller metadata of table entries, PRE entries as written (for
read-write symmetry), digest configs and one-shot action sets.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emulator.p4.exec.externs import Counter, Meter, Register
from emulator.p4.exec.pipeline import V1ModelPipeline
from emulator.p4.exec.state import ValueSetState
from emulator.p4.exec.tables import ActionProfile, Table
from emulator.targets.p4runtime.codec import bitstring_width
from emulator.targets.p4runtime.errors import invalid_argument
from emulator.p4.p4info.index import (
    MatchFieldInfo, P4InfoError, P4InfoIndex, TableInfo,
)

_METER_UNITS = {p4info_pb2.MeterSpec.PACKETS: "packets", p4info_pb2.MeterSpec.BYTES: "bytes"}


@dataclass
class TableBinding:
    info: TableInfo
    table: Table
    keys: tuple[MatchFieldInfo, ...]  # the P4Info match field of each pipeline key, in order
    profile_id: int = 0

    @property
    def indirect(self) -> bool:
        return self.profile_id != 0


@dataclass
class ProfileBinding:
    msg: p4info_pb2.ActionProfile
    profile: ActionProfile
    tables: list[TableBinding] = field(default_factory=list)
    # Spec §9.2.3: a selector is programmed with members/groups or with
    # one-shots, never both at once; None while the profile is empty.
    mode: str | None = None


@dataclass
class RegisterBinding:
    register: Register
    width: int
    signed: bool


@dataclass
class EntryExtras:
    """What a table entry carries that the data plane does not need."""

    controller_metadata: int = 0
    metadata: bytes = b""
    action_set: p4runtime_pb2.ActionProfileActionSet | None = None


class PipelineContext:
    """A bound (P4Info, device config, pipeline) and its control-plane state."""

    def __init__(self, config: p4runtime_pb2.ForwardingPipelineConfig,
                 pipeline: V1ModelPipeline) -> None:
        self.p4info = config.p4info
        self.device_config = config.p4_device_config
        self.cookie = config.cookie.cookie if config.HasField("cookie") else None
        self.index = P4InfoIndex(config.p4info)
        self.pipeline = pipeline
        self.action_ids = {a.name: aid for aid, a in self.index.actions.items()}
        self.tables: dict[int, TableBinding] = {}
        self.profiles: dict[int, ProfileBinding] = {}
        self.counters: dict[int, Counter] = {}
        self.meters: dict[int, Meter] = {}
        self.registers: dict[int, RegisterBinding] = {}
        self.value_sets: dict[int, ValueSetState] = {}
        self.extras: dict[tuple[int, object], EntryExtras] = {}
        self.default_extras: dict[int, EntryExtras] = {}
        self.multicast_groups: dict[int, p4runtime_pb2.MulticastGroupEntry] = {}
        self.clone_sessions: dict[int, p4runtime_pb2.CloneSessionEntry] = {}
        self.digest_configs: dict[int, p4runtime_pb2.DigestEntry.Config] = {}
        # One-shot members and groups live in the profile under negative ids,
        # out of the way of client ids (uint32).
        self.hidden_ids = itertools.count(-1, -1)
        bind(self)

    # ---- lookups that raise the P4Runtime error of a bad id ---------------------
    def table(self, table_id: int) -> TableBinding:
        binding = self.tables.get(table_id)
        if binding is None:
            raise invalid_argument(f"unknown table id {table_id}")
        return binding

    def profile(self, profile_id: int) -> ProfileBinding:
        binding = self.profiles.get(profile_id)
        if binding is None:
            raise invalid_argument(f"unknown action profile id {profile_id}")
        return binding

    def lookup(self, objects: dict, object_id: int, kind: str):  # type: ignore[no-untyped-def]
        obj = objects.get(object_id)
        if obj is None:
            raise invalid_argument(f"unknown {kind} id {object_id}")
        return obj


def bind(ctx: PipelineContext) -> None:
    """Find every P4Info object in the pipeline; raise P4InfoError if one is
    missing or does not match."""
    index, pipe = ctx.index, ctx.pipeline
    for tid, info in index.tables.items():
        ctx.tables[tid] = _bind_table(ctx, info)
    for pid, msg in index.action_profiles.items():
        name = msg.preamble.name
        profile = pipe.profiles.get(name)
        if profile is None:
            raise P4InfoError(f"action profile {name} is not in the device config")
        if profile.with_selector != msg.with_selector:
            raise P4InfoError(f"action profile {name}: with_selector differs from the device config")
        binding = ProfileBinding(msg, profile)
        for tid in msg.table_ids:
            table = ctx.tables[tid]
            if table.table.profile is not profile:
                raise P4InfoError(f"table {table.info.name} is not implemented by {name}")
            table.profile_id = pid
            binding.tables.append(table)
        ctx.profiles[pid] = binding
    for tid, table in ctx.tables.items():
        if table.table.profile is not None and not table.indirect:
            raise P4InfoError(f"table {table.info.name}: its action profile is not in the P4Info")
    for cid, msg in index.counters.items():
        counter = _find(pipe.counters, msg.preamble.name, "counter")
        if len(counter.packets) != msg.size:
            raise P4InfoError(f"counter {msg.preamble.name}: size {msg.size} differs from "
                              f"the device config ({len(counter.packets)})")
        ctx.counters[cid] = counter
    for mid, msg in index.meters.items():
        meter = _find(pipe.meters, msg.preamble.name, "meter")
        if len(meter.cells) != msg.size:
            raise P4InfoError(f"meter {msg.preamble.name}: size {msg.size} differs from "
                              f"the device config ({len(meter.cells)})")
        ctx.meters[mid] = meter
    for rid, msg in index.registers.items():
        register = _find(pipe.registers, msg.preamble.name, "register")
        shape = bitstring_width(msg.type_spec, index.p4info.type_info)
        if shape is None or shape[0] != register.width or len(register.values) != msg.size:
            raise P4InfoError(f"register {msg.preamble.name}: type or size differs from the "
                              f"device config (bit<{register.width}>[{len(register.values)}])")
        ctx.registers[rid] = RegisterBinding(register, shape[0], shape[1])
    for vid, msg in index.value_sets.items():
        value_set = _find(pipe.value_sets, msg.preamble.name, "value set")
        ctx.value_sets[vid] = value_set


def _find(objects: dict, name: str, kind: str):  # type: ignore[no-untyped-def]
    obj = objects.get(name)
    if obj is None:
        raise P4InfoError(f"{kind} {name} is not in the device config")
    return obj


def _bind_table(ctx: PipelineContext, info: TableInfo) -> TableBinding:
    table = ctx.pipeline.tables.get(info.name)
    if table is None:
        raise P4InfoError(f"table {info.name} is not in the device config")
    by_name = {f.name: f for f in info.match_fields}
    if len(by_name) != len(info.match_fields) or set(by_name) != {k.name for k in table.keys}:
        raise P4InfoError(f"table {info.name}: match fields "
                          f"{sorted(by_name)} differ from the device config "
                          f"{sorted(k.name for k in table.keys)}")
    keys = []
    for spec in table.keys:
        mf = by_name[spec.name]
        if mf.kind != spec.match_kind or mf.bitwidth != spec.width:
            raise P4InfoError(f"table {info.name}: match field {mf.name} is {mf.kind} "
                              f"{mf.bitwidth} bits in the P4Info, {spec.match_kind} "
                              f"{spec.width} bits in the device config")
        keys.append(mf)
    for aid in info.action_scopes:
        action = ctx.index.actions[aid]
        spec = table.actions.get(action.name)
        if spec is None:
            raise P4InfoError(f"table {info.name}: action {action.name} is not an action of "
                              f"the table in the device config")
        params = [(p.name, p.bitwidth) for p in action.params]
        if params != list(spec.params):
            raise P4InfoError(f"action {action.name}: parameters {params} differ from the "
                              f"device config {list(spec.params)}")
    if info.idle_timeout != table.idle_timeout:
        raise P4InfoError(f"table {info.name}: idle timeout (support_timeout) differs from the "
                          f"device config")
    if bool(info.direct_counter_id) != table.direct_counter:
        raise P4InfoError(f"table {info.name}: direct counter differs from the device config")
    if info.direct_meter_id:
        unit = ctx.index.direct_meters[info.direct_meter_id].spec.unit
        if table.direct_meter_kind is None or _METER_UNITS.get(unit, table.direct_meter_kind) \
                != table.direct_meter_kind:
            raise P4InfoError(f"table {info.name}: direct meter differs from the device config")
    return TableBinding(info, table, tuple(keys))
