"""``TableEntry``, ``DirectCounterEntry`` and ``DirectMeterEntry``
(P4Runtime spec §9.1, §9.3.1, §9.4.1).

Match fields become the executor's match values (``exact`` int, ``lpm``
(value, prefix), ``ternary`` (value, mask), ``range`` (low, high),
``optional`` int or None); omitted fields are "don't care" and are omitted
again on reads. An entry is identified by its match and, for tables with
ternary/range/optional keys, its priority. The default entry is changed with
``MODIFY`` + ``is_default_action`` (no action: back to the P4 program's
default). Direct counters and meters live on the executor's entries.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from emulator.p4.errors import RuntimeConfigError
from emulator.p4.exec.externs import MeterCell
from emulator.p4.exec.tables import Entry
from emulator.targets.p4runtime.codec import decode_uint, encode_uint
from emulator.targets.p4runtime.context import EntryExtras, PipelineContext, TableBinding
from emulator.targets.p4runtime.errors import (
    already_exists, invalid_argument, not_found, permission_denied, resource_exhausted,
    unimplemented,
)
from emulator.targets.p4runtime.profiles import (
    decode_action, encode_action, release_oneshot, resolve_indirect,
)
from emulator.targets.p4runtime.resources import (
    check_no_meter_counters, configure_cell, meter_config, meter_rates, set_counter_data,
)

Update = p4runtime_pb2.Update
TableEntry = p4runtime_pb2.TableEntry


# ---- match keys -----------------------------------------------------------------------


def decode_match(tb: TableBinding, msg: TableEntry, what: str) -> tuple[tuple, int]:
    """(executor key, priority) of a non-default entry (spec §9.1.1)."""
    given: dict[int, p4runtime_pb2.FieldMatch] = {}
    for fm in msg.match:
        if fm.field_id not in tb.info.match_by_id:
            raise invalid_argument(f"{what}: unknown match field id {fm.field_id}")
        if fm.field_id in given:
            raise invalid_argument(f"{what}: match field id {fm.field_id} given twice")
        given[fm.field_id] = fm
    values = [_field_value(mf, given.get(mf.id), f"{what}: match field {mf.name}")
              for mf in tb.keys]
    priority = msg.priority
    if tb.info.needs_priority:
        if priority <= 0:
            raise invalid_argument(f"{what}: table {tb.info.name} needs a priority > 0")
    elif priority != 0:
        raise invalid_argument(f"{what}: table {tb.info.name} takes no priority (got {priority})")
    try:
        key = tb.table.canonical_key(values)
    except RuntimeConfigError as exc:
        raise invalid_argument(f"{what}: {exc}") from None
    return key, priority if tb.table.needs_priority else 0


def _field_value(mf, fm: p4runtime_pb2.FieldMatch | None, where: str) -> object:  # type: ignore[no-untyped-def]
    width, kind = mf.bitwidth, mf.kind
    full = (1 << width) - 1
    if fm is None:
        if kind == "exact":
            raise invalid_argument(f"{where}: exact match fields cannot be omitted")
        return {"lpm": (0, 0), "ternary": (0, 0), "range": (0, full), "optional": None}[kind]
    case = fm.WhichOneof("field_match_type")
    if case != kind:
        raise invalid_argument(f"{where}: expected a {kind} match, got {case}")
    if kind == "exact":
        return decode_uint(fm.exact.value, width, where)
    if kind == "optional":
        return decode_uint(fm.optional.value, width, where)
    if kind == "lpm":
        value = decode_uint(fm.lpm.value, width, where)
        plen = fm.lpm.prefix_len
        if plen <= 0 or plen > width:
            raise invalid_argument(f"{where}: prefix length {plen} outside 1..{width} "
                                   f"(omit the field for a don't care)")
        if value & ((1 << (width - plen)) - 1):
            raise invalid_argument(f"{where}: value has bits set beyond the /{plen} prefix")
        return (value, plen)
    if kind == "ternary":
        value = decode_uint(fm.ternary.value, width, where)
        mask = decode_uint(fm.ternary.mask, width, where)
        if mask == 0:
            raise invalid_argument(f"{where}: mask 0 (omit the field for a don't care)")
        if value & mask != value:
            raise invalid_argument(f"{where}: value has bits set outside the mask")
        return (value, mask)
    low = decode_uint(fm.range.low, width, where)
    high = decode_uint(fm.range.high, width, where)
    if low > high:
        raise invalid_argument(f"{where}: low {low} above high {high}")
    if low == 0 and high == full:
        raise invalid_argument(f"{where}: full range (omit the field for a don't care)")
    return (low, high)


def encode_match(tb: TableBinding, key: tuple, out: TableEntry) -> None:
    fields = {}
    for mf, value in zip(tb.keys, key):
        fm = p4runtime_pb2.FieldMatch(field_id=mf.id)
        full = (1 << mf.bitwidth) - 1
        if mf.kind == "exact":
            fm.exact.value = encode_uint(value)
        elif mf.kind == "optional":
            if value is None:
                continue
            fm.optional.value = encode_uint(value)
        elif mf.kind == "lpm":
            if value[1] == 0:
                continue
            fm.lpm.value = encode_uint(value[0])
            fm.lpm.prefix_len = value[1]
        elif mf.kind == "ternary":
            if value[1] == 0:
                continue
            fm.ternary.value = encode_uint(value[0])
            fm.ternary.mask = encode_uint(value[1])
        else:
            if value == (0, full):
                continue
            fm.range.low = encode_uint(value[0])
            fm.range.high = encode_uint(value[1])
        fields[mf.id] = fm
    out.match.extend(fields[mf.id] for mf in tb.info.match_fields if mf.id in fields)


def store_key(tb: TableBinding, key: tuple, priority: int) -> tuple:
    return (key, priority) if tb.table.needs_priority else key


# ---- writes -------------------------------------------------------------------------------


def write_table_entry(ctx: PipelineContext, update_type: int, msg: TableEntry) -> None:
    tb = ctx.table(msg.table_id)
    what = f"table {tb.info.name}"
    if update_type not in (Update.INSERT, Update.MODIFY, Update.DELETE):
        raise invalid_argument(f"{what}: update type not set")
    if msg.is_const:
        raise invalid_argument(f"{what}: is_const must be false in writes")
    if msg.HasField("time_since_last_hit"):
        raise invalid_argument(f"{what}: time_since_last_hit must be unset in writes")
    if msg.idle_timeout_ns:
        if msg.is_default_action or not tb.info.idle_timeout:
            raise invalid_argument(f"{what}: idle_timeout_ns set but the table has no idle timeout")
        if msg.idle_timeout_ns < 0:
            raise invalid_argument(f"{what}: idle_timeout_ns must not be negative")
    if msg.is_default_action:
        if update_type != Update.MODIFY:
            raise invalid_argument(f"{what}: the default entry can only be modified")
        _modify_default(ctx, tb, msg, what)
        return
    table = tb.table
    if table.const_entries and (update_type != Update.MODIFY or msg.HasField("action")):
        raise permission_denied(f"{what}: the table has const entries")
    if update_type == Update.INSERT and not tb.keys:
        raise invalid_argument(f"{what}: keyless table, only the default entry can be set")
    key, priority = decode_match(tb, msg, what)
    found = table.find(key, priority)
    skey = (tb.info.id, store_key(tb, key, priority))
    if update_type == Update.DELETE:
        if found is None:
            raise not_found(f"{what}: no entry with this match")
        table.delete(key, priority)
        extras = ctx.extras.pop(skey, None)
        if found.group is not None and extras is not None and extras.action_set is not None:
            release_oneshot(ctx, tb, found.group)
        return
    if update_type == Update.INSERT:
        if not msg.HasField("action"):
            raise invalid_argument(f"{what}: action must be set")
        entry = Entry(None, (), None, True, key, priority)
        action_set = _set_action(ctx, tb, msg, entry, what)
        try:
            _set_direct_resources(tb, msg, entry, what, insert=True)
            if found is not None:
                raise already_exists(f"{what}: an entry with this match already exists")
            if len(table.all_entries()) >= table.size:
                raise resource_exhausted(f"{what}: table is full ({table.size} entries)")
        except Exception:
            if action_set is not None and entry.group is not None:
                release_oneshot(ctx, tb, entry.group)
            raise
        table.insert(entry)
        entry.idle_timeout_ns = msg.idle_timeout_ns
        entry.last_hit_us = ctx.pipeline.clock_us()  # the idle timer starts now (§9.1.7)
        ctx.extras[skey] = EntryExtras(msg.controller_metadata, msg.metadata, action_set)
        return
    # MODIFY
    if found is None:
        raise not_found(f"{what}: no entry with this match")
    old = ctx.extras.get(skey) or EntryExtras()
    action_set = old.action_set
    if msg.HasField("action"):
        fresh = Entry(None, (), None, True, key, priority)
        action_set = _set_action(ctx, tb, msg, fresh, what)
        try:
            _set_direct_resources(tb, msg, found, what, insert=False, dry_run=True)
        except Exception:
            if action_set is not None and fresh.group is not None:
                release_oneshot(ctx, tb, fresh.group)
            raise
        if old.action_set is not None and found.group is not None:
            release_oneshot(ctx, tb, found.group)
        for slot in ("action", "args", "fn", "aid", "member", "group"):
            setattr(found, slot, getattr(fresh, slot))
    _set_direct_resources(tb, msg, found, what, insert=False)
    found.idle_timeout_ns = msg.idle_timeout_ns
    ctx.extras[skey] = EntryExtras(msg.controller_metadata, msg.metadata, action_set)


def _set_action(ctx: PipelineContext, tb: TableBinding, msg: TableEntry, entry: Entry,
                what: str) -> p4runtime_pb2.ActionProfileActionSet | None:
    if tb.indirect:
        return resolve_indirect(ctx, tb, msg.action, entry, what)
    if msg.action.WhichOneof("type") != "action":
        raise invalid_argument(f"{what}: table {tb.info.name} is direct, give an action")
    name, values = decode_action(ctx, tb, msg.action.action, False, what)
    made = tb.table.make_entry(name, values, entry.key, entry.priority)
    for slot in ("action", "args", "fn", "aid"):
        setattr(entry, slot, getattr(made, slot))
    return None


def _set_direct_resources(tb: TableBinding, msg: TableEntry, entry: Entry, what: str,
                          insert: bool, dry_run: bool = False) -> None:
    """Spec §9.1.5: counter data unset keeps the count (INSERT: 0); meter
    config unset means the default meter (GREEN)."""
    if msg.HasField("counter_data") and not tb.info.direct_counter_id:
        raise invalid_argument(f"{what}: the table has no direct counter")
    if msg.HasField("meter_config") and not tb.info.direct_meter_id:
        raise invalid_argument(f"{what}: the table has no direct meter")
    if msg.HasField("meter_counter_data"):
        raise unimplemented(f"{what}: per-colour meter counters (MeterCounterData)")
    rates = meter_rates(msg.meter_config, what) if msg.HasField("meter_config") else None
    if dry_run:
        return
    if msg.HasField("counter_data"):
        set_counter_data(entry, msg.counter_data, what)
    elif insert:
        entry.packets = entry.bytes = 0
    if tb.info.direct_meter_id:
        if rates is None:
            entry.meter = None
        else:
            entry.meter = MeterCell()
            entry.meter.configure(rates)


def _modify_default(ctx: PipelineContext, tb: TableBinding, msg: TableEntry, what: str) -> None:
    table = tb.table
    if msg.match or msg.priority:
        raise invalid_argument(f"{what}: the default entry has no match and no priority")
    if tb.indirect:
        raise invalid_argument(f"{what}: indirect tables keep their default action (NoAction)")
    if tb.info.const_default_action_id or table.default_const:
        raise permission_denied(f"{what}: the default action is const")
    if msg.HasField("action"):
        if msg.action.WhichOneof("type") != "action":
            raise invalid_argument(f"{what}: the default entry takes an action")
        name, values = decode_action(ctx, tb, msg.action.action, True, what)
        entry = table.make_entry(name, values, hit=False)
        extras = EntryExtras(msg.controller_metadata, msg.metadata)
    else:
        init = table.initial_default
        entry = Entry(init.action, init.args, init.fn, False)
        extras = EntryExtras()
    _set_direct_resources(tb, msg, entry, what, insert=True)
    table.set_default(entry)
    ctx.default_extras[tb.info.id] = extras


# ---- reads -----------------------------------------------------------------------------------


def read_table_entries(ctx: PipelineContext, request: TableEntry) -> list[p4runtime_pb2.Entity]:
    if request.table_id == 0:
        if request.match:
            raise invalid_argument("table_id 0 (all tables) cannot be combined with a match")
        bindings = list(ctx.tables.values())
    else:
        bindings = [ctx.table(request.table_id)]
    out = []
    for tb in bindings:
        what = f"table {tb.info.name}"
        if request.is_default_action:
            out.append(_wrap(default_entry_message(ctx, tb, request)))
            continue
        if request.HasField("time_since_last_hit") and not tb.info.idle_timeout:
            raise invalid_argument(f"{what}: time_since_last_hit set but the table has no "
                                   f"idle timeout")
        if request.match:
            key, priority = decode_match(tb, request, what)
            found = tb.table.find(key, priority)
            entries = [] if found is None else [found]
        else:
            entries = tb.table.all_entries()
        action_id = request.action.action.action_id if request.action.HasField("action") else 0
        for entry in entries:
            extras = ctx.extras.get((tb.info.id, store_key(tb, entry.key, entry.priority)))
            extras = extras or EntryExtras()
            if request.priority and entry.priority != request.priority:
                continue
            if request.controller_metadata and extras.controller_metadata != \
                    request.controller_metadata:
                continue
            if request.metadata and extras.metadata != request.metadata:
                continue
            if action_id and (entry.action is None or
                              ctx.action_ids.get(entry.action.name) != action_id):
                continue
            out.append(_wrap(entry_message(ctx, tb, entry, extras, request)))
    return out


def _wrap(entry: TableEntry) -> p4runtime_pb2.Entity:
    entity = p4runtime_pb2.Entity()
    entity.table_entry.CopyFrom(entry)
    return entity


def entry_message(ctx: PipelineContext, tb: TableBinding, entry: Entry, extras: EntryExtras,
                  request: TableEntry | None = None) -> TableEntry:
    out = TableEntry(table_id=tb.info.id)
    encode_match(tb, entry.key, out)
    if tb.info.needs_priority:
        out.priority = entry.priority
    out.idle_timeout_ns = entry.idle_timeout_ns
    if request is not None and request.HasField("time_since_last_hit"):
        idle_us = max(0.0, ctx.pipeline.clock_us() - entry.last_hit_us)
        out.time_since_last_hit.elapsed_ns = int(idle_us * 1000)
    if extras.action_set is not None:
        out.action.action_profile_action_set.CopyFrom(extras.action_set)
    elif entry.member is not None:
        out.action.action_profile_member_id = entry.member
    elif entry.group is not None:
        out.action.action_profile_group_id = entry.group
    elif entry.action is not None:
        out.action.action.CopyFrom(encode_action(ctx, entry))
    out.controller_metadata = extras.controller_metadata
    out.metadata = extras.metadata
    if tb.table.const_entries:
        out.is_const = True
    _read_direct_resources(tb, entry, request, out)
    return out


def default_entry_message(ctx: PipelineContext, tb: TableBinding,
                          request: TableEntry | None = None) -> TableEntry:
    if request is not None and request.HasField("time_since_last_hit"):
        raise invalid_argument(f"table {tb.info.name}: default entries have no idle timeout")
    default = tb.table.default
    out = TableEntry(table_id=tb.info.id, is_default_action=True)
    if not tb.indirect and default.action is not None and \
            default.action.name in ctx.action_ids:
        out.action.action.CopyFrom(encode_action(ctx, default))
    extras = ctx.default_extras.get(tb.info.id) or EntryExtras()
    out.controller_metadata = extras.controller_metadata
    out.metadata = extras.metadata
    _read_direct_resources(tb, default, request, out)
    return out


def _read_direct_resources(tb: TableBinding, entry: Entry, request: TableEntry | None,
                           out: TableEntry) -> None:
    if request is None:
        return
    if request.HasField("meter_counter_data"):
        raise unimplemented(f"table {tb.info.name}: per-colour meter counters")
    if request.HasField("counter_data") and tb.info.direct_counter_id:
        out.counter_data.packet_count = entry.packets
        out.counter_data.byte_count = entry.bytes
    if request.HasField("meter_config") and tb.info.direct_meter_id:
        config = meter_config(entry.meter)
        if config is not None:
            out.meter_config.CopyFrom(config)


# ---- direct counters and meters -----------------------------------------------------------


def _direct_target(ctx: PipelineContext, msg: TableEntry, resource: str) -> tuple[TableBinding, Entry]:
    tb = ctx.table(msg.table_id)
    what = f"table {tb.info.name}"
    has = tb.info.direct_counter_id if resource == "counter" else tb.info.direct_meter_id
    if not has:
        raise invalid_argument(f"{what}: the table has no direct {resource}")
    if msg.is_default_action:
        if msg.match or msg.priority:
            raise invalid_argument(f"{what}: the default entry has no match and no priority")
        return tb, tb.table.default
    key, priority = decode_match(tb, msg, what)
    entry = tb.table.find(key, priority)
    if entry is None:
        raise not_found(f"{what}: no entry with this match")
    return tb, entry


def write_direct_counter(ctx: PipelineContext, update_type: int,
                         msg: p4runtime_pb2.DirectCounterEntry) -> None:
    if not msg.HasField("table_entry"):
        raise invalid_argument("DirectCounterEntry: table_entry must be set")
    tb, entry = _direct_target(ctx, msg.table_entry, "counter")
    if update_type != Update.MODIFY:
        raise invalid_argument(f"table {tb.info.name}: direct counters can only be modified")
    if msg.HasField("data"):
        set_counter_data(entry, msg.data, f"table {tb.info.name} direct counter")


def write_direct_meter(ctx: PipelineContext, update_type: int,
                       msg: p4runtime_pb2.DirectMeterEntry) -> None:
    if not msg.HasField("table_entry"):
        raise invalid_argument("DirectMeterEntry: table_entry must be set")
    tb, entry = _direct_target(ctx, msg.table_entry, "meter")
    what = f"table {tb.info.name} direct meter"
    if update_type != Update.MODIFY:
        raise invalid_argument(f"{what}: direct meters can only be modified")
    check_no_meter_counters(msg, what)
    if msg.HasField("config"):
        entry.meter = entry.meter or MeterCell()
        configure_cell(entry.meter, msg, what)
    else:
        entry.meter = None


def _direct_reads(ctx: PipelineContext, msg: TableEntry, resource: str) -> list[tuple[TableBinding, TableEntry, Entry]]:
    """(binding, key-only TableEntry, entry) for the direct resources a read selects."""
    if msg.table_id == 0:
        field = "direct_counter_id" if resource == "counter" else "direct_meter_id"
        bindings = [tb for tb in ctx.tables.values() if getattr(tb.info, field)]
        if msg.match or msg.is_default_action:
            raise invalid_argument("table_id 0 (all tables) cannot be combined with a match")
    elif msg.match or msg.is_default_action:
        tb, entry = _direct_target(ctx, msg, resource)
        return [(tb, _key_message(tb, entry), entry)]
    else:
        tb, _ = _direct_target(ctx, TableEntry(table_id=msg.table_id, is_default_action=True),
                               resource)
        bindings = [tb]
    return [(tb, _key_message(tb, e), e) for tb in bindings for e in tb.table.all_entries()]


def _key_message(tb: TableBinding, entry: Entry) -> TableEntry:
    out = TableEntry(table_id=tb.info.id)
    if not entry.hit:
        out.is_default_action = True
        return out
    encode_match(tb, entry.key, out)
    if tb.info.needs_priority:
        out.priority = entry.priority
    return out


def read_direct_counters(ctx: PipelineContext,
                         msg: p4runtime_pb2.DirectCounterEntry) -> list[p4runtime_pb2.Entity]:
    out = []
    for _tb, key, entry in _direct_reads(ctx, msg.table_entry, "counter"):
        entity = p4runtime_pb2.Entity()
        d = entity.direct_counter_entry
        d.table_entry.CopyFrom(key)
        d.data.packet_count = entry.packets
        d.data.byte_count = entry.bytes
        out.append(entity)
    return out


def read_direct_meters(ctx: PipelineContext,
                       msg: p4runtime_pb2.DirectMeterEntry) -> list[p4runtime_pb2.Entity]:
    check_no_meter_counters(msg, "DirectMeterEntry")
    out = []
    for _tb, key, entry in _direct_reads(ctx, msg.table_entry, "meter"):
        entity = p4runtime_pb2.Entity()
        d = entity.direct_meter_entry
        d.table_entry.CopyFrom(key)
        config = meter_config(entry.meter)
        if config is not None:
            d.config.CopyFrom(config)
        out.append(entity)
    return out
