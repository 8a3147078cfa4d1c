"""Indexed externs and value sets: ``CounterEntry``, ``MeterEntry``,
``RegisterEntry`` and ``ValueSetEntry`` (P4Runtime spec §9.3–9.7).

All four are "modify-only" entities: ``INSERT`` and ``DELETE`` answer
``INVALID_ARGUMENT``. An unset ``index`` means every cell of the array, for
writes as for reads. Meter rates travel as units per second and are kept by
the executor as units per microsecond, as BMv2 does (``cir / 1e6``); a meter
with no rates is the default config (every packet GREEN).
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emulator.p4.exec.externs import MeterCell
from emulator.targets.p4runtime.codec import (
    decode_bitstring_data, decode_uint, encode_int, encode_uint,
)
from emulator.targets.p4runtime.context import PipelineContext
from emulator.targets.p4runtime.errors import (
    already_exists, invalid_argument, out_of_range, resource_exhausted, unimplemented,
)
from emulator.p4.p4info.index import MatchType

Update = p4runtime_pb2.Update


def modify_only(update_type: int, what: str) -> None:
    if update_type != Update.MODIFY:
        name = Update.Type.Name(update_type) if update_type in Update.Type.values() else update_type
        raise invalid_argument(f"{what}: only MODIFY is allowed, not {name}")


def indices(entry, size: int, what: str) -> range:  # type: ignore[no-untyped-def]
    """The cells an entry's ``index`` selects: one, or all when unset."""
    if not entry.HasField("index"):
        return range(size)
    index = entry.index.index
    if index < 0:
        raise invalid_argument(f"{what}: negative index {index}")
    if index >= size:
        raise out_of_range(f"{what}: index {index} out of range (size {size})")
    return range(index, index + 1)


def _ids(objects: dict, object_id: int, ctx: PipelineContext, kind: str) -> list[int]:
    if object_id == 0:
        return list(objects)
    ctx.lookup(objects, object_id, kind)
    return [object_id]


# ---- counters ----------------------------------------------------------------------


def set_counter_data(target, data: p4runtime_pb2.CounterData, what: str) -> None:  # type: ignore[no-untyped-def]
    """Write ``data`` into an object with ``packets`` and ``bytes``."""
    if data.packet_count < 0 or data.byte_count < 0:
        raise invalid_argument(f"{what}: negative counter value")
    target.packets = data.packet_count
    target.bytes = data.byte_count


def write_counter(ctx: PipelineContext, update_type: int, entry: p4runtime_pb2.CounterEntry) -> None:
    counter = ctx.lookup(ctx.counters, entry.counter_id, "counter")
    what = f"counter {counter.name}"
    modify_only(update_type, what)
    if entry.HasField("data") and (entry.data.packet_count < 0 or entry.data.byte_count < 0):
        raise invalid_argument(f"{what}: negative counter value")
    for i in indices(entry, len(counter.packets), what):
        if entry.HasField("data"):
            counter.packets[i] = entry.data.packet_count
            counter.bytes[i] = entry.data.byte_count


def read_counters(ctx: PipelineContext, request: p4runtime_pb2.CounterEntry) -> list[p4runtime_pb2.Entity]:
    out = []
    for cid in _ids(ctx.counters, request.counter_id, ctx, "counter"):
        counter = ctx.counters[cid]
        for i in indices(request, len(counter.packets), f"counter {counter.name}"):
            entity = p4runtime_pb2.Entity()
            e = entity.counter_entry
            e.counter_id = cid
            e.index.index = i
            e.data.packet_count = counter.packets[i]
            e.data.byte_count = counter.bytes[i]
            out.append(entity)
    return out


# ---- meters --------------------------------------------------------------------------


def meter_rates(config: p4runtime_pb2.MeterConfig, what: str) -> list[tuple[float, int]]:
    """BMv2's two token buckets (committed, then peak) for a trTCM config."""
    for name in ("cir", "cburst", "pir", "pburst"):
        if getattr(config, name) < 0:
            raise invalid_argument(f"{what}: negative {name}")
    if config.eburst:
        raise unimplemented(f"{what}: eburst (srTCM excess burst)")
    if config.cir > config.pir:
        raise invalid_argument(f"{what}: cir {config.cir} is above pir {config.pir}")
    return [(config.cir / 1e6, config.cburst), (config.pir / 1e6, config.pburst)]


def meter_config(cell: MeterCell | None) -> p4runtime_pb2.MeterConfig | None:
    """The config of a meter cell, None for the default (all GREEN)."""
    if cell is None or not cell.rates:
        return None
    (cir, cburst), (pir, pburst) = cell.rates
    return p4runtime_pb2.MeterConfig(cir=round(cir * 1e6), cburst=cburst,
                                     pir=round(pir * 1e6), pburst=pburst)


def configure_cell(cell: MeterCell, entry, what: str) -> None:  # type: ignore[no-untyped-def]
    """Apply ``entry.config`` (unset: back to the default) to one cell."""
    cell.configure(meter_rates(entry.config, what) if entry.HasField("config") else [])


def check_no_meter_counters(entry, what: str) -> None:  # type: ignore[no-untyped-def]
    if entry.HasField("counter_data"):
        raise unimplemented(f"{what}: per-colour meter counters (MeterCounterData)")


def write_meter(ctx: PipelineContext, update_type: int, entry: p4runtime_pb2.MeterEntry) -> None:
    meter = ctx.lookup(ctx.meters, entry.meter_id, "meter")
    what = f"meter {meter.name}"
    modify_only(update_type, what)
    check_no_meter_counters(entry, what)
    rates = meter_rates(entry.config, what) if entry.HasField("config") else []
    for i in indices(entry, len(meter.cells), what):
        meter.cells[i].configure(rates)


def read_meters(ctx: PipelineContext, request: p4runtime_pb2.MeterEntry) -> list[p4runtime_pb2.Entity]:
    out = []
    for mid in _ids(ctx.meters, request.meter_id, ctx, "meter"):
        meter = ctx.meters[mid]
        what = f"meter {meter.name}"
        check_no_meter_counters(request, what)
        for i in indices(request, len(meter.cells), what):
            entity = p4runtime_pb2.Entity()
            e = entity.meter_entry
            e.meter_id = mid
            e.index.index = i
            config = meter_config(meter.cells[i])
            if config is not None:
                e.config.CopyFrom(config)
            out.append(entity)
    return out


# ---- registers --------------------------------------------------------------------------


def write_register(ctx: PipelineContext, update_type: int, entry: p4runtime_pb2.RegisterEntry) -> None:
    binding = ctx.lookup(ctx.registers, entry.register_id, "register")
    register = binding.register
    what = f"register {register.name}"
    modify_only(update_type, what)
    if not entry.HasField("data"):
        raise invalid_argument(f"{what}: data must be set")
    spec = ctx.index.registers[entry.register_id].type_spec
    value = decode_bitstring_data(entry.data, spec, ctx.p4info.type_info, what)
    for i in indices(entry, len(register.values), what):
        register.values[i] = value


def read_registers(ctx: PipelineContext, request: p4runtime_pb2.RegisterEntry) -> list[p4runtime_pb2.Entity]:
    out = []
    for rid in _ids(ctx.registers, request.register_id, ctx, "register"):
        binding = ctx.registers[rid]
        register = binding.register
        mask = (1 << binding.width) - 1
        for i in indices(request, len(register.values), f"register {register.name}"):
            entity = p4runtime_pb2.Entity()
            e = entity.register_entry
            e.register_id = rid
            e.index.index = i
            value = register.values[i] & mask
            if binding.signed and value >> (binding.width - 1):
                e.data.bitstring = encode_int(value - (1 << binding.width))
            else:
                e.data.bitstring = encode_uint(value)
            out.append(entity)
    return out


# ---- value sets ------------------------------------------------------------------------


def _member_key(fields, member: p4runtime_pb2.ValueSetMember,  # type: ignore[no-untyped-def]
                what: str) -> tuple[tuple[int, int], ...]:
    """(value, mask) per P4Info match field of a value set member."""
    given: dict[int, p4runtime_pb2.FieldMatch] = {}
    by_id = {f.id: f for f in fields}
    for fm in member.match:
        if fm.field_id not in by_id:
            raise invalid_argument(f"{what}: unknown match field id {fm.field_id}")
        if fm.field_id in given:
            raise invalid_argument(f"{what}: match field id {fm.field_id} given twice")
        given[fm.field_id] = fm
    key = []
    for f in fields:
        full = (1 << f.bitwidth) - 1
        fm = given.get(f.id)
        where = f"{what}: match field {f.name}"
        kind = f.match_type
        if fm is None:
            if kind == MatchType.EXACT:
                raise invalid_argument(f"{where}: an exact field cannot be omitted")
            key.append((0, 0))
            continue
        case = fm.WhichOneof("field_match_type")
        if kind == MatchType.EXACT and case == "exact":
            key.append((decode_uint(fm.exact.value, f.bitwidth, where), full))
        elif kind == MatchType.OPTIONAL and case == "optional":
            key.append((decode_uint(fm.optional.value, f.bitwidth, where), full))
        elif kind == MatchType.TERNARY and case == "ternary":
            value = decode_uint(fm.ternary.value, f.bitwidth, where)
            mask = decode_uint(fm.ternary.mask, f.bitwidth, where)
            if mask == 0 or value & mask != value:
                raise invalid_argument(f"{where}: mask 0 or value bits outside the mask")
            key.append((value, mask))
        elif kind == MatchType.LPM and case == "lpm":
            value = decode_uint(fm.lpm.value, f.bitwidth, where)
            plen = fm.lpm.prefix_len
            mask = full ^ ((1 << (f.bitwidth - plen)) - 1) if 0 < plen <= f.bitwidth else -1
            if mask < 0 or value & mask != value:
                raise invalid_argument(f"{where}: bad prefix length or trailing bits set")
            key.append((value, mask))
        elif kind == MatchType.RANGE:
            raise unimplemented(f"{where}: range matches in value sets")
        else:
            raise invalid_argument(f"{where}: match type does not match the P4Info")
    return tuple(key)


def write_value_set(ctx: PipelineContext, update_type: int,
                    entry: p4runtime_pb2.ValueSetEntry) -> None:
    value_set = ctx.lookup(ctx.value_sets, entry.value_set_id, "value set")
    info = ctx.index.value_sets[entry.value_set_id]
    what = f"value set {info.preamble.name}"
    modify_only(update_type, what)
    members: list[tuple[tuple[int, int], ...]] = []
    for member in entry.members:
        key = _member_key(info.match, member, what)
        if key in members:
            raise already_exists(f"{what}: duplicate member")
        members.append(key)
    if len(members) > value_set.size:
        raise resource_exhausted(f"{what}: {len(members)} members, size is {value_set.size}")
    value_set.members = members


def read_value_sets(ctx: PipelineContext, request: p4runtime_pb2.ValueSetEntry) -> list[p4runtime_pb2.Entity]:
    out = []
    for vid in _ids(ctx.value_sets, request.value_set_id, ctx, "value set"):
        info = ctx.index.value_sets[vid]
        entity = p4runtime_pb2.Entity()
        entity.value_set_entry.value_set_id = vid
        for key in ctx.value_sets[vid].members:
            member = entity.value_set_entry.members.add()
            for f, (value, mask) in zip(info.match, key):
                _encode_member_field(member, f, value, mask)
        out.append(entity)
    return out


def _encode_member_field(member: p4runtime_pb2.ValueSetMember, f: p4info_pb2.MatchField,
                         value: int, mask: int) -> None:
    if mask == 0 and f.match_type != MatchType.EXACT:
        return  # don't care: omitted (§9.1.1)
    fm = member.match.add()
    fm.field_id = f.id
    if f.match_type == MatchType.EXACT:
        fm.exact.value = encode_uint(value)
    elif f.match_type == MatchType.OPTIONAL:
        fm.optional.value = encode_uint(value)
    elif f.match_type == MatchType.TERNARY:
        fm.ternary.value = encode_uint(value)
        fm.ternary.mask = encode_uint(mask)
    else:
        fm.lpm.value = encode_uint(value)
        fm.lpm.prefix_len = bin(mask).count("1")
