"""Model -> ``p4.config.v1.P4Info``, reproducing p4c's P4Info serializer.

See ``RULES.md`` for the rules (and their p4c sources) and ``ids.py`` for
ids and aliases.  :func:`build_p4info` is the entry point; the ``type_info``
section is built by :mod:`.build_types`, preambles, annotations and docs by
:mod:`.build_preamble`.
"""

from __future__ import annotations

from typing import Iterable, Optional

from p4.config.v1 import p4info_pb2

from . import model as m
from .build_preamble import add_annotations, add_doc, fill_preamble
from .build_types import TypeInfoBuilder, constant_bytes
from .ids import P4Ids, P4InfoError, SymbolTable, allocate_field_ids

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}

_COUNTER_UNITS = {
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
}

_METER_UNITS = {
    "packets": p4info_pb2.MeterSpec.PACKETS,
    "bytes": p4info_pb2.MeterSpec.BYTES,
}

#: Default table size of v1model (``P4V1::V1Model::tableAttributes``).
DEFAULT_TABLE_SIZE = 1024


def _type_name(t: Optional[m.TypeSpec]) -> Optional[str]:
    """p4c ``getTypeName``: only new types have a type name."""
    return t.name if isinstance(t, m.NewTypeRef) else None


def _check_unique(kind: str, names: Iterable[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise P4InfoError(
                f"Name '{n}' is used for multiple {kind} objects in the P4Info message"
            )
        seen.add(n)


def collect_symbols(model: m.P4InfoModel) -> SymbolTable:
    """The symbol table p4c builds for the program (ids computed)."""
    st = SymbolTable()
    for a in model.actions:
        st.add(P4Ids.ACTION, a.name, a.id)
    for t in model.tables:
        st.add(P4Ids.TABLE, t.name, t.id)
    for vs in model.value_sets:
        st.add(P4Ids.VALUE_SET, vs.name, vs.id)
    for ch in model.controller_headers:
        st.add(P4Ids.CONTROLLER_HEADER, ch.name, ch.id)
    for ap in model.action_profiles:
        st.add(P4Ids.ACTION_PROFILE, ap.name, None if ap.in_place else ap.id)
    for c in model.counters:
        st.add(P4Ids.COUNTER, c.name, c.id)
    for dc in model.direct_counters:
        st.add(P4Ids.DIRECT_COUNTER, dc.name, None if dc.in_place else dc.id)
    for me in model.meters:
        st.add(P4Ids.METER, me.name, me.id)
    for dm in model.direct_meters:
        st.add(P4Ids.DIRECT_METER, dm.name, None if dm.in_place else dm.id)
    for r in model.registers:
        st.add(P4Ids.REGISTER, r.name, r.id)
    for d in model.digests:
        st.add(P4Ids.DIGEST, d.name, None)
    return st.compute()


def _default_action(t: m.Table) -> tuple[m.DefaultAction, list[m.ActionRef]]:
    """Apply p4c's CreateBuiltins rule to a table without default_action."""
    if t.default_action is not None:
        return t.default_action, list(t.actions)
    refs = list(t.actions)
    if not any(r.name == "NoAction" for r in refs):
        refs.append(m.ActionRef(name="NoAction", annotations=[m.Annotation("defaultonly")]))
    return m.DefaultAction("NoAction"), refs


def build_p4info(model: m.P4InfoModel, *, initial_default_action: bool = True
                 ) -> p4info_pb2.P4Info:
    """The P4Info p4c generates for ``model``.

    ``initial_default_action=False`` leaves out ``Table.initial_default_action``
    (p4c releases before its introduction, e.g. the P4Info files of older
    tutorials, do not have it).
    """
    p4info = p4info_pb2.P4Info()
    tinfo = TypeInfoBuilder(model.types, p4info.type_info)

    # The CreateBuiltins rule may add NoAction refs; resolve first.
    tables = []
    for t in model.tables:
        default, refs = _default_action(t)
        tables.append((t, default, refs))

    symbols = collect_symbols(model)
    actions_by_name: dict[str, m.Action] = {}
    for a in model.actions:
        actions_by_name.setdefault(a.name, a)

    def action_id(name: str) -> int:
        if not symbols.has(P4Ids.ACTION, name):
            raise P4InfoError(f"action '{name}' is referenced but not in the model's actions")
        return symbols.id(P4Ids.ACTION, name)

    direct_counters = {dc.name: dc for dc in model.direct_counters}
    direct_meters = {dm.name: dm for dm in model.direct_meters}

    # Tables (and, through them, direct counters/meters).
    for t, default, refs in tables:
        if t.hidden:
            continue
        tinfo.touch()
        msg = p4info.tables.add()
        name = t.name
        tid = symbols.id(P4Ids.TABLE, name)
        fill_preamble(msg.preamble, tid, name, symbols.alias(name), t)

        key_ids = allocate_field_ids([k.id for k in t.key], f"table {name} key")
        for k, kid in zip(t.key, key_ids):
            if k.match_kind == "selector":
                continue
            if k.type is not None:
                tinfo.spec(k.type)
            mf = msg.match_fields.add()
            mf.id = kid
            mf.name = k.name
            add_annotations(mf, k)
            add_doc(mf, k)
            mf.bitwidth = k.bitwidth
            mt = _MATCH_TYPES.get(k.match_kind)
            if mt is not None:
                mf.match_type = mt
            else:
                mf.other_match_type = k.match_kind
            tn = _type_name(k.type)
            if tn:
                mf.type_name.name = tn

        for ref in refs:
            ar = msg.action_refs.add()
            ar.id = action_id(ref.name)
            add_annotations(ar, ref)
            names = {a.name for a in ref.annotations}
            table_only = "tableonly" in names
            default_only = "defaultonly" in names
            if table_only and default_only:
                raise P4InfoError(
                    f"Table '{name}' has an action reference ('{ref.name}') which is "
                    "annotated with both '@tableonly' and '@defaultonly'"
                )
            if table_only:
                ar.scope = p4info_pb2.ActionRef.TABLE_ONLY
            elif default_only:
                ar.scope = p4info_pb2.ActionRef.DEFAULT_ONLY
            else:
                ar.scope = p4info_pb2.ActionRef.TABLE_AND_DEFAULT

        size = t.size if t.size else DEFAULT_TABLE_SIZE
        did = action_id(default.name)
        if default.const:
            msg.const_default_action_id = did
        if initial_default_action:
            ida = msg.initial_default_action
            ida.action_id = did
            action = actions_by_name.get(default.name)
            params = action.params if action is not None else []
            if len(default.args) > len(params):
                raise P4InfoError(
                    f"table {name}: default action {default.name} has "
                    f"{len(default.args)} arguments for {len(params)} parameters"
                )
            index = 0
            param_id = 1
            for value in default.args:
                if value is None:
                    # p4c skips non-constant arguments (and reports an error).
                    continue
                param = params[index]
                index += 1
                arg = ida.arguments.add()
                arg.param_id = param.id if param.id is not None else param_id
                param_id += 1
                arg.value = constant_bytes(int(value), param.bitwidth)

        if t.implementation is not None:
            if not symbols.has(P4Ids.ACTION_PROFILE, t.implementation):
                raise P4InfoError(
                    f"table {name}: implementation '{t.implementation}' is not an action profile"
                )
            msg.implementation_id = symbols.id(P4Ids.ACTION_PROFILE, t.implementation)

        if t.direct_counter is not None:
            dc = direct_counters.get(t.direct_counter)
            if dc is None:
                raise P4InfoError(f"table {name}: no direct counter '{t.direct_counter}'")
            dcid = symbols.id(P4Ids.DIRECT_COUNTER, dc.name)
            msg.direct_resource_ids.append(dcid)
            c = p4info.direct_counters.add()
            fill_preamble(c.preamble, dcid, dc.name, symbols.alias(dc.name), dc)
            c.spec.unit = _unit(_COUNTER_UNITS, dc.unit, dc.name)
            c.direct_table_id = tid
        if t.direct_meter is not None:
            dm = direct_meters.get(t.direct_meter)
            if dm is None:
                raise P4InfoError(f"table {name}: no direct meter '{t.direct_meter}'")
            dmid = symbols.id(P4Ids.DIRECT_METER, dm.name)
            msg.direct_resource_ids.append(dmid)
            me = p4info.direct_meters.add()
            fill_preamble(me.preamble, dmid, dm.name, symbols.alias(dm.name), dm)
            me.spec.unit = _unit(_METER_UNITS, dm.unit, dm.name)
            me.direct_table_id = tid

        msg.size = size
        if t.is_const_table:
            msg.is_const_table = True
        if t.has_initial_entries:
            msg.has_initial_entries = True
        msg.idle_timeout_behavior = (
            p4info_pb2.Table.NOTIFY_CONTROL if t.support_timeout else p4info_pb2.Table.NO_TIMEOUT
        )

    # Actions: once per name, hidden ones left out.
    emitted: set[str] = set()
    for a in model.actions:
        if a.hidden or a.name in emitted:
            continue
        emitted.add(a.name)
        msg = p4info.actions.add()
        fill_preamble(msg.preamble, symbols.id(P4Ids.ACTION, a.name), a.name, symbols.alias(a.name), a)
        pids = allocate_field_ids([p.id for p in a.params], f"action {a.name}")
        for p, pid in zip(a.params, pids):
            pm = msg.params.add()
            pm.id = pid
            pm.name = p.name
            add_annotations(pm, p)
            add_doc(pm, p)
            if not isinstance(p.type, m.EnumRef):
                pm.bitwidth = p.bitwidth
            tinfo.spec(p.type if p.type is not None else m.Bits(max(p.bitwidth, 1)))
            tn = _type_name(p.type)
            if tn:
                pm.type_name.name = tn
            elif isinstance(p.type, m.EnumRef):
                pm.type_name.name = p.type.name

    # Action profiles, in model order.  One constructed in place is emitted
    # by p4c together with its table, so not at all if that table is hidden.
    for ap in model.action_profiles:
        if ap.in_place:
            if not any(t.implementation == ap.name and not t.hidden for t, _, _ in tables):
                continue
        else:
            tinfo.touch()
        _add_action_profile(p4info, symbols, ap, tables)

    for c in model.counters:
        tinfo.touch()
        msg = p4info.counters.add()
        fill_preamble(msg.preamble, symbols.id(P4Ids.COUNTER, c.name), c.name,
                      symbols.alias(c.name), c)
        msg.spec.unit = _unit(_COUNTER_UNITS, c.unit, c.name)
        msg.size = c.size
    for me in model.meters:
        tinfo.touch()
        msg = p4info.meters.add()
        fill_preamble(msg.preamble, symbols.id(P4Ids.METER, me.name), me.name,
                      symbols.alias(me.name), me)
        msg.spec.unit = _unit(_METER_UNITS, me.unit, me.name)
        msg.size = me.size
    for dc in model.direct_counters:
        if not dc.in_place:
            tinfo.touch()
    for dm in model.direct_meters:
        if not dm.in_place:
            tinfo.touch()

    for r in model.registers:
        msg = p4info.registers.add()
        fill_preamble(msg.preamble, symbols.id(P4Ids.REGISTER, r.name), r.name,
                      symbols.alias(r.name), r)
        msg.size = r.size
        tinfo.spec(r.type_spec, msg.type_spec)

    digests_done: set[str] = set()
    for d in model.digests:
        spec = tinfo.spec(d.type_spec)
        if d.name in digests_done:
            continue
        digests_done.add(d.name)
        msg = p4info.digests.add()
        fill_preamble(msg.preamble, symbols.id(P4Ids.DIGEST, d.name), d.name,
                      symbols.alias(d.name), None)
        msg.type_spec.CopyFrom(spec)

    for ch in model.controller_headers:
        if ch.hidden:
            continue
        msg = p4info.controller_packet_metadata.add()
        annotations = list(ch.annotations)
        if not any(a.name == "controller_header" for a in annotations):
            annotations.insert(0, m.Annotation.string("controller_header", ch.controller_name))
        holder = m.Annotated(annotations=annotations,
                             structured_annotations=ch.structured_annotations,
                             brief=ch.brief, description=ch.description)
        fill_preamble(msg.preamble, symbols.id(P4Ids.CONTROLLER_HEADER, ch.name),
                      ch.controller_name, ch.controller_name, holder)
        fids = allocate_field_ids([f.id for f in ch.fields], f"header {ch.name}")
        for f, fid in zip(ch.fields, fids):
            if f.hidden:
                continue
            md = msg.metadata.add()
            md.id = fid
            md.name = f.name
            add_annotations(md, f)
            md.bitwidth = f.bitwidth
            tinfo.spec(f.type if f.type is not None else m.Bits(max(f.bitwidth, 1)))
            tn = _type_name(f.type)
            if tn:
                md.type_name.name = tn

    for vs in model.value_sets:
        msg = p4info.value_sets.add()
        fill_preamble(msg.preamble, symbols.id(P4Ids.VALUE_SET, vs.name), vs.name,
                      symbols.alias(vs.name), vs)
        msg.size = vs.size
        el = vs.element
        if isinstance(el, int):
            mt = msg.match.add()
            mt.id = 1
            mt.bitwidth = el
            mt.match_type = p4info_pb2.MatchField.EXACT
        elif isinstance(el, m.SerEnumDef):
            for i, (mname, _value) in enumerate(el.members, start=1):
                mt = msg.match.add()
                mt.id = i
                mt.name = mname
                mt.bitwidth = el.width
                mt.match_type = p4info_pb2.MatchField.EXACT
        else:
            fids = allocate_field_ids([f.id for f in el], f"value set {vs.name}")
            for f, fid in zip(el, fids):
                mt = msg.match.add()
                mt.id = fid
                mt.name = f.name
                mt.bitwidth = f.bitwidth
                kind = _MATCH_TYPES.get(f.match_kind)
                if f.match_kind == "selector":
                    raise P4InfoError(
                        f"unsupported match type {f.match_kind} for Value Set '@match' annotation"
                    )
                if kind is not None:
                    mt.match_type = kind
                else:
                    mt.other_match_type = f.match_kind
                add_annotations(mt, f, lambda n: n == "match")
                add_doc(mt, f)

    # Duplicate names per kind (p4c checkForDuplicates).
    for kind, objs in (
        ("table", p4info.tables), ("action", p4info.actions),
        ("action profile", p4info.action_profiles), ("counter", p4info.counters),
        ("direct counter", p4info.direct_counters), ("meter", p4info.meters),
        ("direct meter", p4info.direct_meters),
        ("controller packet metadata", p4info.controller_packet_metadata),
        ("value set", p4info.value_sets), ("register", p4info.registers),
        ("digest", p4info.digests),
    ):
        _check_unique(kind, (o.preamble.name for o in objs))

    if model.pkg_info is not None:
        _pkg_info(p4info.pkg_info, model.pkg_info)

    if model.calls_extern_functions or model.has_other_extern_instances:
        tinfo.touch()
    present = tinfo.touched if model.type_info_present is None else model.type_info_present
    if present:
        p4info.type_info.SetInParent()
    else:
        p4info.ClearField("type_info")
    return p4info


def _unit(table: dict, unit: str, what: str) -> int:
    key = unit.lower()
    if key == "both":
        key = "packets_and_bytes"
    if key not in table:
        raise P4InfoError(f"{what}: unknown unit '{unit}'")
    return table[key]


def _add_action_profile(p4info, symbols: SymbolTable, ap: m.ActionProfile, tables) -> None:
    msg = p4info.action_profiles.add()
    apid = symbols.id(P4Ids.ACTION_PROFILE, ap.name)
    fill_preamble(msg.preamble, apid, ap.name, symbols.alias(ap.name), ap,
                  lambda n: n in ("max_group_size", "selector_size_semantics", "max_member_weight"))
    users = sorted({t.name for t, _, _ in tables if t.implementation == ap.name},
                   key=lambda n: n.encode("utf-8"))
    for tname in users:
        msg.table_ids.append(symbols.id(P4Ids.TABLE, tname))
    msg.with_selector = ap.with_selector
    msg.size = ap.size
    if ap.max_group_size is not None and ap.with_selector:
        msg.max_group_size = ap.max_group_size
    if ap.selector_size_semantics is not None and ap.with_selector:
        sem = ap.selector_size_semantics.upper()
        if sem == "SUM_OF_WEIGHTS":
            msg.sum_of_weights.SetInParent()
        elif sem == "SUM_OF_MEMBERS":
            msg.sum_of_members.SetInParent()
        else:
            raise P4InfoError(
                'Expected selector_size_semantics value "sum_of_weights" or '
                f"\"sum_of_members\", but got '{ap.selector_size_semantics}'"
            )
    if ap.max_member_weight is not None and ap.with_selector and msg.HasField("sum_of_members"):
        msg.sum_of_members.max_member_weight = ap.max_member_weight


def _pkg_info(msg, pkg: m.PkgInfo) -> None:
    msg.arch = pkg.arch
    for fname in ("name", "version", "organization", "contact", "url"):
        value = getattr(pkg, fname)
        if value is not None:
            setattr(msg, fname, value)
    if pkg.platform_properties:
        msg.platform_properties.SetInParent()
        for k, v in pkg.platform_properties.items():
            if k not in ("multicast_group_table_size", "multicast_group_table_total_replicas",
                         "multicast_group_table_max_replicas_per_entry"):
                continue  # p4c warns and ignores unknown keys
            setattr(msg.platform_properties, k, int(v))
    add_annotations(msg, pkg, lambda n: n in ("pkginfo", "platform_property"))
    add_doc(msg, pkg)
