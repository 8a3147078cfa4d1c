"""P4Info builder: models of real programs against p4c's known-good output.

Programs from p4c's ``testdata/p4_16_samples`` are rebuilt here as models;
the expected values are facts of the P4Info p4c generated for them
(``testdata/p4_16_samples_outputs/<program>.p4info.txtpb`` in p4lang/p4c,
commit 34b86e9b): ids, names, aliases, widths, match types, scopes, order,
and the SHA-256 of the whole ``.p4info.txtpb`` text, which our text output
must reproduce byte for byte.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from emulator.p4.p4info import (
    Action,
    ActionProfile,
    ActionRef,
    Annotation,
    Bits,
    ControllerHeader,
    Counter,
    DefaultAction,
    Digest,
    DirectCounter,
    DirectMeter,
    MatchField,
    NewTypeDef,
    NewTypeRef,
    P4InfoError,
    P4InfoModel,
    PacketMetadata,
    Param,
    PkgInfo,
    Register,
    SerEnumDef,
    SerEnumRef,
    StructDef,
    StructRef,
    StructuredAnnotation,
    Table,
    ValueSet,
    ValueSetField,
    build_p4info,
    no_action,
    to_text,
)

GOLDEN = Path(__file__).parent / "p4info_golden"


def refs(*names: str) -> list[ActionRef]:
    return [ActionRef(name=n) for n in names]


def act(name: str, *params: tuple[str, int]) -> Action:
    return Action(name=name, params=[Param(name=p, bitwidth=w) for p, w in params])


def key(name: str, width: int, kind: str = "exact") -> MatchField:
    return MatchField(name=name, bitwidth=width, match_kind=kind)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------
# Programs of p4c's test suite, as models


def issue1352() -> P4InfoModel:
    """Tutorial-shaped: two ingress tables, an egress table, a digest."""
    na = no_action()
    return P4InfoModel(
        tables=[
            Table(name="MyIngress.forward", key=[key("hdr.ipv4.dstAddr", 32)],
                  actions=refs("MyIngress.set_dmac", "MyIngress.drop", "NoAction"),
                  default_action=DefaultAction("NoAction"), size=1024),
            Table(name="MyIngress.ipv4_lpm", key=[key("hdr.ipv4.dstAddr", 32, "lpm")],
                  actions=refs("MyIngress.set_nhop", "MyIngress.drop", "NoAction"),
                  default_action=DefaultAction("NoAction"), size=1024),
            Table(name="MyEgress.send_frame", key=[key("standard_metadata.egress_port", 9)],
                  actions=refs("MyEgress.rewrite_mac", "NoAction"),
                  default_action=DefaultAction("NoAction"), size=1024),
        ],
        actions=[
            na, act("MyIngress.drop"), act("MyIngress.set_dmac", ("dstAddr", 48)),
            act("MyIngress.set_nhop", ("dstAddr", 32), ("port", 9)),
            act("MyIngress.send_digest"),
            na, act("MyEgress.rewrite_mac", ("srcAddr", 48)),
        ],
        digests=[Digest(name="test_digest_t", type_spec=StructRef("test_digest_t"))],
        types=[StructDef("test_digest_t", [("in_mac_srcAddr", Bits(48))])],
        calls_extern_functions=True,
    )


def flowlet_switching() -> P4InfoModel:
    """Registers; same action name in two controls (aliases)."""
    na = no_action()

    def t(name, keys, acts, size=None):
        return Table(name=name, key=keys, actions=refs(*acts),
                     default_action=DefaultAction("NoAction"), size=size)

    return P4InfoModel(
        tables=[
            t("ingress.ecmp_group", [key("hdr.ipv4.dstAddr", 32, "lpm")],
              ["ingress._drop", "ingress.set_ecmp_select", "NoAction"], 1024),
            t("ingress.ecmp_nhop", [key("meta.ingress_metadata.ecmp_offset", 14)],
              ["ingress._drop", "ingress.set_nhop", "NoAction"], 16384),
            t("ingress.flowlet", [], ["ingress.lookup_flowlet_map", "NoAction"]),
            t("ingress.forward", [key("meta.ingress_metadata.nhop_ipv4", 32)],
              ["ingress.set_dmac", "ingress._drop", "NoAction"], 512),
            t("ingress.new_flowlet", [], ["ingress.update_flowlet_id", "NoAction"]),
            t("egress.send_frame", [key("standard_metadata.egress_port", 9)],
              ["egress.rewrite_mac", "egress._drop", "NoAction"], 256),
        ],
        actions=[
            na, act("ingress._drop"),
            act("ingress.set_ecmp_select", ("ecmp_base", 8), ("ecmp_count", 8)),
            act("ingress.set_nhop", ("nhop_ipv4", 32), ("port", 9)),
            act("ingress.lookup_flowlet_map"), act("ingress.set_dmac", ("dmac", 48)),
            act("ingress.update_flowlet_id"),
            na, act("egress.rewrite_mac", ("smac", 48)), act("egress._drop"),
        ],
        registers=[
            Register(name="ingress.flowlet_id", type_spec=Bits(16), size=8192),
            Register(name="ingress.flowlet_lasttime", type_spec=Bits(32), size=8192),
        ],
        calls_extern_functions=True,
    )


def action_profile_in_place() -> P4InfoModel:
    """action_profile / action_selector constructed in table properties."""
    selector_key = MatchField(name="meta.hash1", bitwidth=32, match_kind="selector")
    return P4InfoModel(
        tables=[
            Table(name="IngressI.indirect", actions=refs("IngressI.drop", "NoAction"),
                  default_action=DefaultAction("NoAction", const=True), implementation="ap"),
            Table(name="IngressI.indirect_ws", key=[selector_key],
                  actions=refs("IngressI.drop", "NoAction"),
                  default_action=DefaultAction("NoAction", const=True), implementation="ap_ws"),
        ],
        actions=[no_action(), act("IngressI.drop")],
        action_profiles=[
            ActionProfile(name="ap", size=128, in_place=True),
            ActionProfile(name="ap_ws", size=1024, with_selector=True, in_place=True),
        ],
        calls_extern_functions=True,
    )


def action_profile_sum_of_members() -> P4InfoModel:
    """Declared action profile/selector with @max_group_size & co."""
    selector_key = MatchField(name="meta.hash1", bitwidth=32, match_kind="selector")
    annotations = [
        Annotation.string("name", "ap"), Annotation.from_exprs("max_group_size", ["200"]),
        Annotation.string("selector_size_semantics", "sum_of_members"),
        Annotation.from_exprs("max_member_weight", ["4000"]),
    ]
    common = dict(max_group_size=200, selector_size_semantics="sum_of_members",
                  max_member_weight=4000)
    return P4InfoModel(
        tables=[
            Table(name="IngressI.indirect", actions=refs("IngressI.drop", "NoAction"),
                  default_action=DefaultAction("NoAction", const=True),
                  implementation="IngressI.ap"),
            Table(name="IngressI.indirect_ws", key=[selector_key],
                  actions=refs("IngressI.drop", "NoAction"),
                  default_action=DefaultAction("NoAction", const=True),
                  implementation="IngressI.ap_ws"),
        ],
        actions=[no_action(), act("IngressI.drop")],
        action_profiles=[
            ActionProfile(name="IngressI.ap", size=128, annotations=annotations, **common),
            ActionProfile(name="IngressI.ap_ws", size=1024, with_selector=True,
                          annotations=annotations, **common),
        ],
        calls_extern_functions=True,
    )


def named_meter() -> P4InfoModel:
    """A direct meter with @name inside the control."""
    return P4InfoModel(
        tables=[
            Table(name="ingress.m_filter", key=[key("meta.meta.meter_tag", 32)],
                  actions=refs("ingress._drop", "ingress._nop", "NoAction"),
                  default_action=DefaultAction("NoAction"), size=16),
            Table(name="ingress.m_table", key=[key("hdr.ethernet.srcAddr", 48)],
                  actions=refs("ingress.m_action_2", "ingress._nop_2", "NoAction"),
                  default_action=DefaultAction("NoAction"), size=16384,
                  direct_meter="ingress.namedmeter"),
        ],
        actions=[no_action(), act("ingress._drop"), act("ingress._nop"),
                 act("ingress.m_action_2", ("meter_idx", 9)), act("ingress._nop_2")],
        direct_meters=[DirectMeter(name="ingress.namedmeter", unit="packets")],
        calls_extern_functions=True,
    )


def unused_counter() -> P4InfoModel:
    """Direct counters: one attached, one not; const default with argument."""
    return P4InfoModel(
        tables=[Table(name="ingress.t", actions=refs("ingress.my_action"),
                      default_action=DefaultAction("ingress.my_action", [0], const=True),
                      direct_counter="ingress.c")],
        actions=[act("ingress.my_action", ("a", 9))],
        direct_counters=[DirectCounter(name="ingress.c", unit="packets"),
                         DirectCounter(name="ingress.c1", unit="packets")],
    )


def pvs_struct() -> P4InfoModel:
    """Parser value set of a struct with @match kinds; CreateBuiltins rule."""
    fields = [
        ValueSetField(name="field1", bitwidth=16, match_kind="ternary"),
        ValueSetField(name="field2", bitwidth=3, match_kind="lpm"),
        ValueSetField(name="field3", bitwidth=6, match_kind="exact"),
        ValueSetField(name="field4", bitwidth=5, match_kind="range"),
    ]
    return P4InfoModel(
        tables=[Table(name="MyIngress.t", key=[key("meta.data[0].da", 32)],
                      actions=refs("MyIngress.set_data"))],
        actions=[no_action(), act("MyIngress.set_data")],
        value_sets=[ValueSet(name="MyParser.pvs", size=4, element=fields)],
    )


def controller_header_nested() -> P4InfoModel:
    """@controller_header on a header with a nested struct (flattened)."""
    return P4InfoModel(controller_headers=[ControllerHeader(
        name="packet_out_header_t", controller_name="packet_out",
        fields=[PacketMetadata(name="b.b", bitwidth=32)])])


def structured_annotations() -> P4InfoModel:
    return P4InfoModel(
        tables=[Table(
            name="ingressImpl.t",
            structured_annotations=[
                StructuredAnnotation("MixedExprList", expressions=(1, "hello", True, False, 11)),
                StructuredAnnotation("MixedKV", kv_pairs=(("label", "text"), ("my_bool", True),
                                                          ("int_val", 6))),
            ],
            actions=[
                ActionRef(name="ingressImpl.redirect",
                          structured_annotations=[StructuredAnnotation("myid", expressions=(1,))]),
                ActionRef(name="ingressImpl.my_drop",
                          structured_annotations=[StructuredAnnotation("myid", expressions=(2,))]),
                ActionRef(name="NoAction"),
            ],
            default_action=DefaultAction("NoAction"))],
        actions=[no_action(), act("ingressImpl.my_drop"), act("ingressImpl.redirect")],
        calls_extern_functions=True,
    )


# The new types of v1model-p4runtime-most-types1.p4: name -> (typedef|type,
# base, @p4runtime_translation).
_MOST_TYPES_DECLS = {
    "Eth0_t": ("typedef", "bit48", None),
    "Eth1_t": ("type", "bit48", None),
    "Eth2_t": ("type", "bit48", ("mycompany.com/EthernetAddress", 49)),
    "Custom0_t": ("typedef", "bit8", None),
    "Custom1_t": ("type", "bit8", None),
    "Custom2_t": ("type", "bit8", ("mycompany.com/My_Byte2", 12)),
    "Custom00_t": ("typedef", "Custom0_t", None),
    "Custom01_t": ("type", "Custom0_t", None),
    "Custom02_t": ("type", "Custom0_t", ("mycompany.com/My_Byte3", 13)),
    "Custom10_t": ("typedef", "Custom1_t", None),
    "Custom11_t": ("type", "Custom1_t", None),
    "Custom12_t": ("type", "Custom1_t", ("mycompany.com/My_Byte4", 14)),
    "Custom20_t": ("typedef", "Custom2_t", None),
    "Custom21_t": ("type", "Custom2_t", None),
    "Custom22_t": ("type", "Custom2_t", ("mycompany.com/My_Byte5", 15)),
    "Custom001_t": ("type", "Custom00_t", None),
    "Custom002_t": ("type", "Custom00_t", ("mycompany.com/My_Byte6", 16)),
    "Custom101_t": ("type", "Custom10_t", None),
    "Custom102_t": ("type", "Custom10_t", ("mycompany.com/My_Byte7", 17)),
    "Custom201_t": ("type", "Custom20_t", None),
    "Custom202_t": ("type", "Custom20_t", ("mycompany.com/My_Byte8", 18)),
    "Custom220_t": ("typedef", "Custom22_t", None),
    "Custom0020_t": ("typedef", "Custom002_t", None),
    "Custom00200_t": ("typedef", "Custom0020_t", None),
    "Custom002001_t": ("type", "Custom00200_t", None),
    "Custom002002_t": ("type", "Custom00200_t", ("mycompany.com/My_Byte9", 19)),
    "Custom0020010_t": ("typedef", "Custom002001_t", None),
    "Custom0020020_t": ("typedef", "Custom002002_t", None),
    "serenum0_t": ("typedef", "serenum_t", None),
}
_MOST_TYPES_FIELDS = [
    ("addr0", "Eth0_t"), ("addr1", "Eth1_t"), ("addr2", "Eth2_t"), ("e", "bit8"),
    ("e0", "Custom0_t"), ("e1", "Custom1_t"), ("e2", "Custom2_t"), ("e00", "Custom00_t"),
    ("e01", "Custom01_t"), ("e02", "Custom02_t"), ("e10", "Custom10_t"), ("e11", "Custom11_t"),
    ("e12", "Custom12_t"), ("e20", "Custom20_t"), ("e21", "Custom21_t"), ("e22", "Custom22_t"),
    ("e001", "Custom001_t"), ("e002", "Custom002_t"), ("e101", "Custom101_t"),
    ("e102", "Custom102_t"), ("e201", "Custom201_t"), ("e202", "Custom202_t"),
    ("e220", "Custom220_t"), ("e0020010", "Custom0020010_t"), ("e0020020", "Custom0020020_t"),
]


def most_types() -> P4InfoModel:
    """New types (with and without translation), serializable enums."""
    decls = _MOST_TYPES_DECLS

    def canon(t):
        while t in decls and decls[t][0] == "typedef":
            t = decls[t][1]
        return t

    def underlying(t):  # end of the chain of `type`s
        t = canon(t)
        while t in decls:
            t = canon(decls[t][1])
        return t

    def type_of(t):
        c = canon(t)
        if c.startswith("bit"):
            return None
        return SerEnumRef(c) if c == "serenum_t" else NewTypeRef(c)

    def width(t):  # p4c getTypeWidth: the translation width wins
        c = canon(t)
        if c == "serenum_t":
            return 8
        if c in decls and decls[c][2]:
            return decls[c][2][1]
        return int(underlying(c)[3:])

    types = [SerEnumDef("serenum_t", 8, [("A", 1), ("B", 3)])]
    for n, (kind, _base, tr) in decls.items():
        if kind == "type":
            types.append(NewTypeDef(name=n, original=Bits(int(underlying(n)[3:])),
                                    translation_uri=tr[0] if tr else None,
                                    sdn_bitwidth=tr[1] if tr else None))
    all_fields = _MOST_TYPES_FIELDS + [("s0", "serenum0_t")]
    return P4InfoModel(
        tables=[Table(
            name="ingress.custom_table",
            key=[MatchField(name="hdr.custom." + f, bitwidth=width(t), type=type_of(t))
                 for f, t in all_fields],
            actions=refs("ingress.set_output", "ingress.set_headers", "ingress.my_drop"),
            default_action=DefaultAction("ingress.my_drop"))],
        actions=[
            act("ingress.set_output", ("out_port", 9)),
            Action(name="ingress.set_headers",
                   params=[Param(name=f, bitwidth=width(t), type=type_of(t))
                           for f, t in all_fields]),
            act("ingress.my_drop"),
        ],
        controller_headers=[
            ControllerHeader(name="packet_in_header_t", controller_name="packet_in",
                             fields=[PacketMetadata(name="punt_reason", bitwidth=8)]),
            ControllerHeader(name="packet_out_header_t", controller_name="packet_out",
                             fields=[PacketMetadata(name=f, bitwidth=width(t), type=type_of(t))
                                     for f, t in _MOST_TYPES_FIELDS]),
        ],
        value_sets=[ValueSet(name="ParserImpl.valueset1", size=4, element=[
            ValueSetField(name=f, bitwidth=width(t))
            for f, t in (("addr0", "Eth0_t"), ("e", "bit8"), ("e0", "Custom0_t"),
                         ("e00", "Custom00_t"))])],
        types=types,
        calls_extern_functions=True,
    )


# program -> (model, sha256 of p4c's .p4info.txtpb)
P4C_PROGRAMS = {
    "issue1352-bmv2.p4": (
        issue1352, "b1115b525f6ea8c35e510b986ded9bcb6c90c9c6cf614ff2098557fc1daada0c"),
    "flowlet_switching-bmv2.p4": (
        flowlet_switching, "8e413c4a0babf87bce7507bfb5a2bfdaa750a290739b8d9fb6c83dd756812e75"),
    "action_profile-bmv2.p4": (
        action_profile_in_place,
        "579099457f7da0653a447741ab65a3f6490cb491440aa715323da1167d0b7235"),
    "action_profile_sum_of_members_annotation.p4": (
        action_profile_sum_of_members,
        "747457c9f75306a93815dd88eb21a0a8310ff60d06c1810fa17a409eacfd4049"),
    "named_meter_bmv2.p4": (
        named_meter, "95528983e20155a9187cd604b80fad68b9db5c35a8503a07ccbb9c772cba4e50"),
    "unused-counter-bmv2.p4": (
        unused_counter, "d3b4d5fcc32aa571fa1a269d4caa69dfb2aed44083cb51bef2dfef6c552fc161"),
    "pvs-struct-3-bmv2.p4": (
        pvs_struct, "5ec3527a236cf12edbb6e94a70fa682832660268b89e8ea9d82bb6db4cc618a3"),
    "issue3329-bmv2.p4": (
        controller_header_nested,
        "8e62381aaa362a10905e440b8913c2d16351cbf863de32d80823ac935ce9b2b3"),
    "structured_annotations.p4": (
        structured_annotations,
        "3e83c8c541eee4d5e4aa3d0e264c5953bd4891d64ede7a6a0d0ae14001fa7231"),
    "v1model-p4runtime-most-types1.p4": (
        most_types, "a1b1d51f1c5d0ccf639750b39905133c183bb68f63a99ad8934582c1ad9890b4"),
}


@pytest.mark.parametrize("program", sorted(P4C_PROGRAMS))
def test_text_is_byte_identical_to_p4c(program):
    make, digest = P4C_PROGRAMS[program]
    assert sha256(to_text(build_p4info(make()))) == digest


def names(objs) -> list[str]:
    return [o.preamble.name for o in objs]


def test_issue1352_facts():
    p = build_p4info(issue1352())
    assert p.pkg_info.arch == "v1model"
    assert [(t.preamble.id, t.preamble.name, t.preamble.alias) for t in p.tables] == [
        (46460945, "MyIngress.forward", "forward"),
        (37375156, "MyIngress.ipv4_lpm", "ipv4_lpm"),
        (49202009, "MyEgress.send_frame", "send_frame"),
    ]
    lpm = p.tables[1]
    assert [(f.id, f.name, f.bitwidth, f.match_type) for f in lpm.match_fields] == [
        (1, "hdr.ipv4.dstAddr", 32, p4info_pb2.MatchField.LPM)]
    assert [r.id for r in lpm.action_refs] == [24952588, 25652968, 21257015]
    assert all(r.scope == p4info_pb2.ActionRef.TABLE_AND_DEFAULT for r in lpm.action_refs)
    assert not lpm.const_default_action_id
    assert lpm.initial_default_action.action_id == 21257015
    assert lpm.size == 1024
    # global action first, then ingress in declaration order, then egress
    assert [(a.preamble.id, a.preamble.name) for a in p.actions] == [
        (21257015, "NoAction"), (25652968, "MyIngress.drop"),
        (33025127, "MyIngress.set_dmac"), (24952588, "MyIngress.set_nhop"),
        (23592486, "MyIngress.send_digest"), (22398708, "MyEgress.rewrite_mac"),
    ]
    assert list(p.actions[0].preamble.annotations) == ['@noWarn("unused")']
    assert [(q.id, q.name, q.bitwidth) for q in p.actions[3].params] == [
        (1, "dstAddr", 32), (2, "port", 9)]
    (digest,) = p.digests
    assert (digest.preamble.id, digest.preamble.name) == (387015589, "test_digest_t")
    assert digest.type_spec.struct.name == "test_digest_t"
    member = p.type_info.structs["test_digest_t"].members[0]
    assert (member.name, member.type_spec.bitstring.bit.bitwidth) == ("in_mac_srcAddr", 48)


def test_flowlet_facts():
    p = build_p4info(flowlet_switching())
    aliases = {a.preamble.name: a.preamble.alias for a in p.actions}
    assert aliases["ingress._drop"] == "ingress._drop"
    assert aliases["egress._drop"] == "egress._drop"
    assert aliases["ingress.set_nhop"] == "set_nhop"
    assert [t.size for t in p.tables] == [1024, 16384, 1024, 512, 1024, 256]
    assert [(r.preamble.id, r.preamble.name, r.size, r.type_spec.bitstring.bit.bitwidth)
            for r in p.registers] == [
        (384519412, "ingress.flowlet_id", 8192, 16),
        (375147533, "ingress.flowlet_lasttime", 8192, 32),
    ]


def test_action_profile_facts():
    p = build_p4info(action_profile_in_place())
    assert [(t.preamble.name, t.implementation_id) for t in p.tables] == [
        ("IngressI.indirect", 294074782), ("IngressI.indirect_ws", 300324846)]
    # the selector key is not a match field
    assert len(p.tables[1].match_fields) == 0
    assert all(t.const_default_action_id == 21257015 for t in p.tables)
    ap, sel = p.action_profiles
    assert (ap.preamble.name, list(ap.table_ids), ap.with_selector, ap.size,
            ap.max_group_size) == ("ap", [46872340], False, 128, 0)
    assert (sel.preamble.name, list(sel.table_ids), sel.with_selector, sel.size,
            sel.max_group_size) == ("ap_ws", [38116258], True, 1024, 0)

    p = build_p4info(action_profile_sum_of_members())
    ap, sel = p.action_profiles
    assert (ap.preamble.id, ap.preamble.alias) == (289199568, "ap")
    assert ap.max_group_size == 0 and not ap.HasField("sum_of_members")
    assert list(ap.preamble.annotations) == []
    assert (sel.preamble.id, sel.max_group_size) == (285903678, 200)
    assert sel.sum_of_members.max_member_weight == 4000


def test_direct_resources_facts():
    p = build_p4info(named_meter())
    m_table = p.tables[1]
    assert list(m_table.direct_resource_ids) == [354402025]
    (dm,) = p.direct_meters
    assert (dm.preamble.name, dm.preamble.alias, dm.spec.unit, dm.direct_table_id) == (
        "ingress.namedmeter", "namedmeter", p4info_pb2.MeterSpec.PACKETS, 43296733)

    p = build_p4info(unused_counter())
    assert names(p.direct_counters) == ["ingress.c"]  # c1 is attached to nothing
    assert p.direct_counters[0].preamble.id == 330698586
    (arg,) = p.tables[0].initial_default_action.arguments
    assert (arg.param_id, arg.value) == (1, b"\x00\x00")


def test_value_set_and_defaultonly_facts():
    p = build_p4info(pvs_struct())
    refs_ = p.tables[0].action_refs
    assert [(r.id, list(r.annotations), r.scope) for r in refs_] == [
        (29884806, [], p4info_pb2.ActionRef.TABLE_AND_DEFAULT),
        (21257015, ["@defaultonly"], p4info_pb2.ActionRef.DEFAULT_ONLY),
    ]
    (vs,) = p.value_sets
    assert (vs.preamble.id, vs.preamble.name, vs.preamble.alias, vs.size) == (
        56033750, "MyParser.pvs", "pvs", 4)
    M = p4info_pb2.MatchField
    assert [(f.id, f.name, f.bitwidth, f.match_type) for f in vs.match] == [
        (1, "field1", 16, M.TERNARY), (2, "field2", 3, M.LPM),
        (3, "field3", 6, M.EXACT), (4, "field4", 5, M.RANGE)]


def test_controller_header_facts():
    p = build_p4info(most_types())
    cpm = p.controller_packet_metadata
    assert [(c.preamble.id, c.preamble.name, c.preamble.alias, list(c.preamble.annotations))
            for c in cpm] == [
        (81826293, "packet_in", "packet_in", ['@controller_header("packet_in")']),
        (76689799, "packet_out", "packet_out", ['@controller_header("packet_out")']),
    ]
    out = {md.name: md for md in cpm[1].metadata}
    assert (out["addr2"].id, out["addr2"].bitwidth, out["addr2"].type_name.name) == (
        3, 49, "Eth2_t")
    assert (out["addr0"].bitwidth, out["addr0"].HasField("type_name")) == (48, False)
    nt = p.type_info.new_types
    assert nt["Eth1_t"].original_type.bitstring.bit.bitwidth == 48
    assert nt["Eth2_t"].translated_type.uri == "mycompany.com/EthernetAddress"
    assert nt["Eth2_t"].translated_type.sdn_bitwidth == 49
    # a type on a type: the original is the end of the chain
    assert nt["Custom11_t"].original_type.bitstring.bit.bitwidth == 8
    se = p.type_info.serializable_enums["serenum_t"]
    assert [(m.name, m.value) for m in se.members] == [("A", b"\x01"), ("B", b"\x03")]


# --------------------------------------------------------------------------
# The P4 tutorials' basic.p4 (golden file written by this builder; ids as
# quoted by the tutorials: ipv4_lpm 37375156, ipv4_forward 28792405, drop
# 25652968, NoAction 21257015)


def tutorial_basic() -> P4InfoModel:
    return P4InfoModel(
        tables=[Table(name="MyIngress.ipv4_lpm", key=[key("hdr.ipv4.dstAddr", 32, "lpm")],
                      actions=refs("MyIngress.ipv4_forward", "MyIngress.drop", "NoAction"),
                      default_action=DefaultAction("MyIngress.drop"), size=1024)],
        actions=[no_action(), act("MyIngress.drop"),
                 act("MyIngress.ipv4_forward", ("dstAddr", 48), ("port", 9))],
        calls_extern_functions=True,
    )


def test_tutorial_basic_golden():
    p = build_p4info(tutorial_basic())
    assert to_text(p) == (GOLDEN / "basic.p4info.txtpb").read_text()
    assert p.tables[0].preamble.id == 37375156
    assert p.tables[0].initial_default_action.action_id == 25652968
    assert {a.preamble.name: a.preamble.id for a in p.actions} == {
        "NoAction": 21257015, "MyIngress.drop": 25652968, "MyIngress.ipv4_forward": 28792405}


def test_older_p4c_output_without_initial_default_action():
    p = build_p4info(tutorial_basic(), initial_default_action=False)
    assert not p.tables[0].HasField("initial_default_action")


# --------------------------------------------------------------------------
# The tutorials' flowcache.p4 (packet in/out, counters, support_timeout).
# No p4c output to compare with: the facts follow the rules in RULES.md.


def tutorial_flowcache() -> P4InfoModel:
    serenums = [SerEnumDef("ControllerOpcode_t", 8,
                           [("NO_OP", 0), ("SEND_TO_PORT_IN_OPERAND0", 1)]),
                SerEnumDef("PuntReason_t", 8, [("FLOW_UNKNOWN", 1), ("UNRECOGNIZED_OPCODE", 2)])]
    op = dict(bitwidth=8, type=SerEnumRef("ControllerOpcode_t"))
    reason = dict(bitwidth=8, type=SerEnumRef("PuntReason_t"))
    return P4InfoModel(
        tables=[Table(
            name="MyIngress.flow_cache",
            key=[key("hdr.ipv4.protocol", 8), key("hdr.ipv4.srcAddr", 32),
                 key("hdr.ipv4.dstAddr", 32)],
            actions=refs("MyIngress.cached_action", "MyIngress.drop_packet",
                         "MyIngress.flow_unknown"),
            default_action=DefaultAction("MyIngress.flow_unknown"),
            size=65536, support_timeout=True)],
        # send_copy_to_controller is called only from flow_unknown: the
        # front end inlines it and removes it.
        actions=[
            Action(name="MyIngress.send_to_controller_with_details",
                   params=[Param(name="punt_reason", **reason), Param(name="opcode", **op)]),
            act("MyIngress.drop_packet"),
            act("MyIngress.cached_action", ("port", 9), ("decrement_ttl", 1), ("new_dscp", 6),
                ("dst_eth_addr", 48)),
            act("MyIngress.flow_unknown"),
            Action(name="MyEgress.prepend_packet_in_hdr",
                   params=[Param(name="punt_reason", **reason),
                           Param(name="ingress_port", bitwidth=9)]),
        ],
        counters=[Counter(name="MyIngress.ingressPktOutCounter", unit="packets_and_bytes", size=4),
                  Counter(name="MyEgress.egressPktInCounter", unit="packets_and_bytes", size=4)],
        controller_headers=[
            ControllerHeader(name="packet_out_header_h", controller_name="packet_out", fields=[
                PacketMetadata(name="opcode", **op), PacketMetadata(name="reserved1", bitwidth=8),
                PacketMetadata(name="operand0", bitwidth=32)]),
            ControllerHeader(name="packet_in_header_h", controller_name="packet_in", fields=[
                PacketMetadata(name="input_port", bitwidth=16),
                PacketMetadata(name="punt_reason", **reason), PacketMetadata(name="opcode", **op)]),
        ],
        types=serenums,
        calls_extern_functions=True,
    )


def test_tutorial_flowcache_rules():
    p = build_p4info(tutorial_flowcache())
    (t,) = p.tables
    assert t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    assert t.size == 65536
    assert [(c.preamble.name, c.preamble.alias, c.spec.unit, c.size) for c in p.counters] == [
        ("MyIngress.ingressPktOutCounter", "ingressPktOutCounter", p4info_pb2.CounterSpec.BOTH, 4),
        ("MyEgress.egressPktInCounter", "egressPktInCounter", p4info_pb2.CounterSpec.BOTH, 4),
    ]
    assert all(c.preamble.id >> 24 == 0x12 for c in p.counters)
    assert names(p.controller_packet_metadata) == ["packet_out", "packet_in"]
    # serializable enum fields: width of the enum, no type_name, type_info entry
    opcode = p.controller_packet_metadata[0].metadata[0]
    assert (opcode.id, opcode.name, opcode.bitwidth, opcode.HasField("type_name")) == (
        1, "opcode", 8, False)
    assert sorted(p.type_info.serializable_enums) == ["ControllerOpcode_t", "PuntReason_t"]
    assert [m.value for m in p.type_info.serializable_enums["PuntReason_t"].members] == [
        b"\x01", b"\x02"]


# --------------------------------------------------------------------------
# Builder behaviour


def test_create_builtins_rule_without_default_action():
    p = build_p4info(P4InfoModel(
        tables=[Table(name="C.t", key=[key("hdr.h.f", 8)], actions=refs("C.a"))],
        actions=[no_action(), act("C.a")]))
    (t,) = p.tables
    assert [r.id for r in t.action_refs][-1] == 21257015
    assert t.action_refs[-1].scope == p4info_pb2.ActionRef.DEFAULT_ONLY
    assert t.initial_default_action.action_id == 21257015
    assert t.const_default_action_id == 0
    # NoAction already listed: nothing appended
    p = build_p4info(P4InfoModel(
        tables=[Table(name="C.t", actions=refs("C.a", "NoAction"))],
        actions=[no_action(), act("C.a")]))
    assert len(p.tables[0].action_refs) == 2
    assert p.tables[0].action_refs[1].scope == p4info_pb2.ActionRef.TABLE_AND_DEFAULT


def test_scopes_and_annotations():
    p = build_p4info(P4InfoModel(
        tables=[Table(name="C.t", actions=[
            ActionRef(name="C.a", annotations=[Annotation("tableonly")]),
            ActionRef(name="C.b", annotations=[Annotation("defaultonly")]),
        ], default_action=DefaultAction("C.b"), annotations=[
            Annotation.string("name", "C.t"), Annotation.from_exprs("id", ["3"]),
            Annotation.from_tokens("format", ["IPV4_ADDRESS"]),
            Annotation.from_tokens("refers_to", ["vrf_table", ",", "vrf_id"]),
        ], brief="a table", description="longer")],
        actions=[act("C.a"), act("C.b")]))
    t = p.tables[0]
    assert t.action_refs[0].scope == p4info_pb2.ActionRef.TABLE_ONLY
    assert list(t.action_refs[0].annotations) == ["@tableonly"]
    assert t.action_refs[1].scope == p4info_pb2.ActionRef.DEFAULT_ONLY
    assert list(t.preamble.annotations) == [
        "@format(IPV4_ADDRESS)", "@refers_to(vrf_table , vrf_id)"]
    assert (t.preamble.doc.brief, t.preamble.doc.description) == ("a table", "longer")
    with pytest.raises(P4InfoError, match="both"):
        build_p4info(P4InfoModel(
            tables=[Table(name="C.t", actions=[ActionRef(name="C.a", annotations=[
                Annotation("tableonly"), Annotation("defaultonly")])],
                default_action=DefaultAction("C.a"))],
            actions=[act("C.a")]))


def test_hidden_objects_take_ids_but_are_not_listed():
    model = P4InfoModel(
        tables=[Table(name="C.t", actions=refs("C.a"), default_action=DefaultAction("C.a")),
                Table(name="C.tbl_hidden", actions=refs("C.h"),
                      default_action=DefaultAction("C.h"), hidden=True,
                      implementation="sel")],
        actions=[act("C.a"), Action(name="C.h", hidden=True)],
        action_profiles=[ActionProfile(name="sel", size=16, with_selector=True, in_place=True)],
        controller_headers=[ControllerHeader(name="cpu_h", controller_name="packet_in", fields=[
            PacketMetadata(name="hidden_pad", bitwidth=7, hidden=True),
            PacketMetadata(name="port", bitwidth=9)])],
    )
    p = build_p4info(model)
    assert names(p.tables) == ["C.t"]
    assert names(p.actions) == ["C.a"]
    assert names(p.action_profiles) == []  # built in place by a hidden table
    (md,) = p.controller_packet_metadata[0].metadata
    assert (md.id, md.name) == (2, "port")


def test_action_profile_table_ids_sorted_by_table_name():
    p = build_p4info(P4InfoModel(
        tables=[Table(name=n, actions=refs("C.a"), default_action=DefaultAction("C.a"),
                      implementation="C.sel") for n in ("C.zeta", "C.alpha", "C.Mid")],
        actions=[act("C.a")],
        action_profiles=[ActionProfile(name="C.sel", size=64, with_selector=True,
                                       max_group_size=8)]))
    ids = {t.preamble.name: t.preamble.id for t in p.tables}
    assert list(p.action_profiles[0].table_ids) == [ids["C.Mid"], ids["C.alpha"], ids["C.zeta"]]
    assert p.action_profiles[0].max_group_size == 8


def test_type_info_presence():
    assert not build_p4info(P4InfoModel()).HasField("type_info")
    assert build_p4info(P4InfoModel(calls_extern_functions=True)).HasField("type_info")
    assert build_p4info(P4InfoModel(
        counters=[Counter(name="c", unit="packets", size=1)])).HasField("type_info")
    assert not build_p4info(P4InfoModel(
        value_sets=[ValueSet(name="P.vs", size=1, element=8)])).HasField("type_info")
    assert not build_p4info(P4InfoModel(actions=[act("C.a")])).HasField("type_info")
    assert build_p4info(P4InfoModel(actions=[act("C.a", ("x", 1))])).HasField("type_info")
    assert not build_p4info(P4InfoModel(pkg_info=None)).HasField("pkg_info")


def test_digests_are_deduplicated_by_type():
    p = build_p4info(P4InfoModel(
        digests=[Digest(name="d_t", type_spec=StructRef("d_t")),
                 Digest(name="d_t", type_spec=StructRef("d_t"))],
        types=[StructDef("d_t", [("a", Bits(8)), ("b", Bits(4, signed=True))])]))
    assert names(p.digests) == ["d_t"]
    members = p.type_info.structs["d_t"].members
    assert members[1].type_spec.bitstring.int.bitwidth == 4


def test_at_id_on_objects_and_fields():
    p = build_p4info(P4InfoModel(
        tables=[Table(name="C.t", id=0x10, key=[
            MatchField(name="k1", bitwidth=8), MatchField(name="k2", bitwidth=8, id=1)],
            actions=refs("C.a"), default_action=DefaultAction("C.a", [5]))],
        actions=[Action(name="C.a", id=0x01000020, params=[Param(name="x", bitwidth=12, id=7)])],
        registers=[Register(name="C.r", type_spec=Bits(8), size=4, id=3)]))
    t = p.tables[0]
    assert t.preamble.id == 0x02000010
    assert [(f.name, f.id) for f in t.match_fields] == [("k1", 2), ("k2", 1)]
    assert p.actions[0].preamble.id == 0x01000020
    assert p.actions[0].params[0].id == 7
    (arg,) = t.initial_default_action.arguments
    assert (arg.param_id, arg.value) == (7, b"\x00\x05")
    assert p.registers[0].preamble.id == 0x16000003


def test_pkg_info():
    p = build_p4info(P4InfoModel(pkg_info=PkgInfo(
        name="aifabric", version="1", platform_properties={"multicast_group_table_size": 64},
        annotations=[Annotation("pkginfo", '@pkginfo(name="aifabric", version="1")'),
                     Annotation.from_tokens("custom", ["x"])])))
    assert (p.pkg_info.arch, p.pkg_info.name, p.pkg_info.version) == ("v1model", "aifabric", "1")
    assert p.pkg_info.platform_properties.multicast_group_table_size == 64
    assert list(p.pkg_info.annotations) == ["@custom(x)"]


@pytest.mark.parametrize("model,match", [
    (P4InfoModel(tables=[Table(name="C.t", actions=refs("C.missing"),
                               default_action=DefaultAction("C.missing"))]), "C.missing"),
    (P4InfoModel(tables=[Table(name="C.t", actions=refs("C.a"))], actions=[act("C.a")]),
     "NoAction"),
    (P4InfoModel(registers=[Register(name="r", type_spec=StructRef("nope"), size=1)]), "nope"),
    (P4InfoModel(counters=[Counter(name="c", unit="furlongs", size=1)]), "unit"),
])
def test_errors(model, match):
    with pytest.raises(P4InfoError, match=match):
        build_p4info(model)
