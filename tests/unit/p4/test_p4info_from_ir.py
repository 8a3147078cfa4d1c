"""P4 source -> front end IR -> P4Info, compared with p4c.

The programs in ``p4info_programs/`` are written for these tests with the
control-plane shape of programs of p4c's ``testdata/p4_16_samples``; the
P4Info p4c generated for those (``p4_16_samples_outputs/*.p4info.txtpb``)
is described in ``test_p4info_build.py`` by hand-written models and by the
SHA-256 of the expected text.  Compiling our programs must give exactly
that P4Info: the same message as the hand-written model and the same text
byte for byte.  Smaller programs below check the rules of
``emulator/p4/p4info/RULES.md`` one by one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from emulator.p4 import types as T
from emulator.p4.errors import SourceLocation
from emulator.p4.frontend import compile_file, compile_text
from emulator.p4.p4info import (
    P4InfoError,
    build_p4info,
    convert_annotations,
    p4info_for,
    p4info_model,
    render_annotation,
    to_text,
)
from tests.unit.p4.test_p4info_build import P4C_PROGRAMS

HERE = Path(__file__).parent
PROGRAMS = HERE / "p4info_programs"
TUTORIALS = HERE / "programs"
GOLDEN = HERE / "p4info_golden"

# our program -> the p4c test program whose P4Info it must reproduce
SAME_AS_P4C = {
    "digest_forwarding.p4": "issue1352-bmv2.p4",
    "flowlets.p4": "flowlet_switching-bmv2.p4",
    "profiles_in_place.p4": "action_profile-bmv2.p4",
    "profiles_declared.p4": "action_profile_sum_of_members_annotation.p4",
    "named_direct_meter.p4": "named_meter_bmv2.p4",
    "direct_counters.p4": "unused-counter-bmv2.p4",
    "value_set_struct.p4": "pvs-struct-3-bmv2.p4",
    "controller_header.p4": "issue3329-bmv2.p4",
    "structured_annotations.p4": "structured_annotations.p4",
}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def names(objs) -> list[str]:
    return [o.preamble.name for o in objs]


@pytest.mark.parametrize("program", sorted(SAME_AS_P4C))
def test_program_gives_p4c_p4info(program):
    make_model, digest = P4C_PROGRAMS[SAME_AS_P4C[program]]
    p4info = p4info_for(compile_file(PROGRAMS / program))
    assert p4info == build_p4info(make_model())
    assert sha256(to_text(p4info)) == digest


def test_every_program_is_covered():
    assert sorted(p.name for p in PROGRAMS.glob("*.p4")) == sorted(SAME_AS_P4C)


# --------------------------------------------------------------------------
# p4c facts on the compiled programs (ids from the p4c outputs)


def test_digest_forwarding_facts():
    p = p4info_for(compile_file(PROGRAMS / "digest_forwarding.p4"))
    # declaration order, not apply order
    assert [(t.preamble.id, t.preamble.name) for t in p.tables] == [
        (46460945, "MyIngress.forward"), (37375156, "MyIngress.ipv4_lpm"),
        (49202009, "MyEgress.send_frame")]
    assert [(a.preamble.id, a.preamble.name) for a in p.actions] == [
        (21257015, "NoAction"), (25652968, "MyIngress.drop"),
        (33025127, "MyIngress.set_dmac"), (24952588, "MyIngress.set_nhop"),
        (23592486, "MyIngress.send_digest"), (22398708, "MyEgress.rewrite_mac")]
    (digest,) = p.digests
    assert (digest.preamble.id, digest.preamble.name) == (387015589, "test_digest_t")
    assert list(p.type_info.structs) == ["test_digest_t"]


def test_profiles_in_place_facts():
    p = p4info_for(compile_file(PROGRAMS / "profiles_in_place.p4"))
    assert [(t.preamble.name, t.implementation_id) for t in p.tables] == [
        ("IngressI.indirect", 294074782), ("IngressI.indirect_ws", 300324846)]
    assert len(p.tables[1].match_fields) == 0  # the selector key
    assert names(p.actions) == ["NoAction", "IngressI.drop"]  # not the unused global
    model = p4info_model(compile_file(PROGRAMS / "profiles_in_place.p4"))
    assert [(ap.name, ap.in_place, ap.with_selector, ap.size) for ap in model.action_profiles] == [
        ("ap", True, False, 128), ("ap_ws", True, True, 1024)]


def test_direct_resources_facts():
    p = p4info_for(compile_file(PROGRAMS / "named_direct_meter.p4"))
    assert names(p.actions) == ["NoAction", "ingress._drop", "ingress._nop",
                                "ingress.m_action_2", "ingress._nop_2"]
    assert list(p.tables[1].direct_resource_ids) == [354402025]
    p = p4info_for(compile_file(PROGRAMS / "direct_counters.p4"))
    assert names(p.direct_counters) == ["ingress.c"]
    assert p.tables[0].const_default_action_id == p.actions[0].preamble.id
    model = p4info_model(compile_file(PROGRAMS / "direct_counters.p4"))
    assert [dc.name for dc in model.direct_counters] == ["ingress.c", "ingress.c1"]
    assert not model.calls_extern_functions


# --------------------------------------------------------------------------
# The tutorials' programs


def tutorial(name: str) -> p4info_pb2.P4Info:
    return p4info_for(compile_file(TUTORIALS / name))


def test_basic_forwarding_is_the_tutorials_basic_p4():
    p = tutorial("basic_forwarding.p4")
    assert to_text(p) == (GOLDEN / "basic.p4info.txtpb").read_text()
    # ids quoted by the P4 tutorials
    assert p.tables[0].preamble.id == 37375156
    assert {a.preamble.name: a.preamble.id for a in p.actions} == {
        "NoAction": 21257015, "MyIngress.drop": 25652968, "MyIngress.ipv4_forward": 28792405}


def test_tunnel_counters():
    p = tutorial("basic_tunnel.p4")
    assert names(p.tables) == ["MyIngress.ipv4_lpm", "MyIngress.myTunnel_exact"]
    assert names(p.actions) == [
        "NoAction", "MyIngress.drop", "MyIngress.ipv4_forward", "MyIngress.myTunnel_ingress",
        "MyIngress.myTunnel_forward", "MyIngress.myTunnel_egress"]
    assert [(c.preamble.name, c.spec.unit, c.size) for c in p.counters] == [
        ("MyIngress.ingressTunnelCounter", p4info_pb2.CounterSpec.BOTH, 65536),
        ("MyIngress.egressTunnelCounter", p4info_pb2.CounterSpec.BOTH, 65536)]
    assert all(c.preamble.id >> 24 == 0x12 for c in p.counters)


def test_ecn_and_mri_egress_actions():
    p = tutorial("ecn_marking.p4")
    assert names(p.tables) == ["MyIngress.ipv4_lpm"]
    # called directly from the egress apply block, no table
    assert names(p.actions)[-1] == "MyEgress.mark_ecn"
    p = tutorial("mri.p4")
    assert names(p.tables) == ["MyIngress.ipv4_lpm", "MyEgress.swtrace"]
    swtrace = p.tables[1]
    assert len(swtrace.match_fields) == 0
    assert [r.scope for r in swtrace.action_refs] == [
        p4info_pb2.ActionRef.TABLE_AND_DEFAULT, p4info_pb2.ActionRef.TABLE_AND_DEFAULT]
    assert [(q.name, q.bitwidth) for q in p.actions[-1].params] == [("swid", 32)]


def test_firewall_registers_and_direct_calls():
    p = tutorial("firewall.p4")
    assert [(r.preamble.name, r.size, r.type_spec.bitstring.bit.bitwidth)
            for r in p.registers] == [("MyIngress.bloom_filter_1", 4096, 1),
                                      ("MyIngress.bloom_filter_2", 4096, 1)]
    check_ports = p.tables[1]
    assert [(f.name, f.bitwidth) for f in check_ports.match_fields] == [
        ("standard_metadata.ingress_port", 9), ("standard_metadata.egress_spec", 9)]
    # compute_hashes is only called from the apply block: p4c lists it, and
    # removes its parameters (RemoveActionParameters binds them at the call)
    actions = {a.preamble.name: a for a in p.actions}
    assert list(actions["MyIngress.compute_hashes"].params) == []
    assert [(q.name, q.bitwidth) for q in actions["MyIngress.set_direction"].params] == [
        ("dir", 1)]


def test_calc_const_entries():
    p = tutorial("calc.p4")
    (t,) = p.tables
    assert (t.is_const_table, t.has_initial_entries) == (True, True)
    assert t.const_default_action_id == t.initial_default_action.action_id
    # send_back is only called from other actions: inlined, then removed
    assert "MyIngress.send_back" not in names(p.actions)
    assert len(p.actions) == 6


def test_multicast_and_source_routing():
    p = tutorial("multicast.p4")
    assert names(p.tables) == ["MyIngress.mac_lookup", "MyIngress.flood_group"]
    assert p.tables[1].size == 64
    (arg,) = p.tables[1].initial_default_action.arguments
    assert (arg.param_id, arg.value) == (1, b"\x00\x01")
    assert names(p.actions) == ["MyIngress.drop", "MyIngress.forward", "MyIngress.flood",
                                "MyEgress.drop"]
    assert p.actions[1].preamble.alias == "forward"
    assert {a.preamble.alias for a in p.actions if a.preamble.name.endswith(".drop")} == {
        "MyIngress.drop", "MyEgress.drop"}
    p = tutorial("source_routing.p4")
    assert names(p.tables) == []
    assert names(p.actions) == ["MyIngress.drop", "MyIngress.srcRoute_nhop",
                                "MyIngress.srcRoute_finish", "MyIngress.update_ttl"]


# --------------------------------------------------------------------------
# Rules, on small programs

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
enum bit<8> Kind_t { A = 1, B = 3 }
struct pair_t { bit<8> x; bit<4> y; }
header h_t { bit<8> f; bit<8> g; }
struct headers { h_t h; }
struct metadata { bit<8> m; Kind_t kind; }
parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
"""
MAIN = "V1Switch(P(), VC(), I(), E(), CC(), D()) main;\n"


def compile_ingress(ingress: str, before: str = "", main: str = MAIN):
    return compile_text(PRELUDE + before + ingress + main, "t.p4")


SUB_CONTROLS = """
control Inner(inout headers hdr, inout metadata meta) {
    counter(4, CounterType.packets) hits;
    action mark(bit<8> v) { hdr.h.g = v; }
    table t2 { key = { hdr.h.g : exact; } actions = { mark; } }
    apply { if (t2.apply().hit) { hits.count(0); } }
}
control Never(inout headers hdr, inout metadata meta) {
    counter(4, CounterType.packets) lost;
    action a() { }
    table t3 { actions = { a; } }
    apply { t3.apply(); }
}
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    counter(8, CounterType.bytes) own;
    action set_port(bit<9> port) { sm.egress_spec = port; }
    table t1 { key = { hdr.h.f : exact; } actions = { set_port; NoAction; }
               default_action = NoAction(); }
    Inner() inner;
    Never() never;
    apply { t1.apply(); inner.apply(hdr, meta); }
}
"""


def test_sub_control_objects_are_inlined_after_the_callers():
    p = p4info_for(compile_ingress(SUB_CONTROLS))
    assert names(p.tables) == ["I.t1", "I.inner.t2"]
    assert [f.name for f in p.tables[1].match_fields] == ["hdr.h.g"]
    assert names(p.actions) == ["NoAction", "I.set_port", "I.inner.mark"]
    # never applied: removed with everything in it
    assert names(p.counters) == ["I.own", "I.inner.hits"]


def test_sub_control_placed_at_its_instance_position_when_known():
    program = compile_ingress(SUB_CONTROLS)
    ingress = program.package.blocks[2]
    inner = ingress.sub_blocks[0]
    # where `Inner() inner;` would be if it were declared first
    inner.instance_loc = SourceLocation("t.p4", 1, 1)
    p = p4info_for(program)
    assert names(p.counters) == ["I.inner.hits", "I.own"]
    assert names(p.tables) == ["I.inner.t2", "I.t1"]


def test_unused_objects_are_removed():
    p4info = p4info_for(compile_ingress("""
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action used(bit<8> v) { hdr.h.g = v; }
    action never_referenced() { }
    action helper(bit<8> v) { hdr.h.f = v; digest<metadata>(1, meta); }
    action caller() { helper(3); }
    action direct(bit<8> v) { hdr.h.f = v; }
    action in_dead_code() { }
    table applied { key = { hdr.h.f : exact; } actions = { used; caller; }
                    default_action = used(1); }
    table not_applied { actions = { never_referenced; }
                        @name("dead_ap") implementation = action_profile(4); }
    apply {
        applied.apply();
        direct(7);
        if (false) { in_dead_code(); }
    }
}
"""))
    assert names(p4info.tables) == ["I.applied"]
    assert names(p4info.action_profiles) == []
    assert names(p4info.actions) == ["I.used", "I.caller", "I.direct"]
    # called directly, not from a table: p4c binds its parameters
    assert list(p4info.actions[2].params) == []
    assert [(q.name, q.bitwidth) for q in p4info.actions[0].params] == [("v", 8)]
    # helper's digest is found in caller, where p4c inlines it
    assert names(p4info.digests) == ["metadata"]


def test_table_properties_ids_and_hidden():
    p = p4info_for(compile_ingress("""
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    register<pair_t>(4) pairs;
    @id(0x10) action a(@id(5) bit<8> x) { hdr.h.g = x; }
    @hidden action h() { }
    action set_kind(Kind_t k) { meta.kind = k; }
    @id(7) table t {
        key = {
            hdr.h.f : exact @id(3);
            hdr.h.isValid() : exact;
            meta.kind : exact;
            sm.parser_error : exact;
        }
        actions = { a; set_kind; }
        default_action = a(2);
        support_timeout = true;
        const entries = { (1, true, Kind_t.A, error.NoError) : a(4); }
    }
    @hidden table hid { actions = { h; } default_action = h(); }
    table empty_const { key = { hdr.h.g : exact; } actions = { NoAction; } const entries = { } }
    apply {
        t.apply();
        hid.apply();
        empty_const.apply();
        digest(1, { hdr.h.f, hdr.h.g });
    }
}
"""))
    t, empty = p.tables
    assert names(p.tables) == ["I.t", "I.empty_const"]  # hid is hidden
    assert t.preamble.id == 0x02000007
    assert [(f.id, f.name, f.bitwidth) for f in t.match_fields] == [
        (3, "hdr.h.f", 8), (2, "hdr.h.$valid$", 1), (4, "meta.kind", 8),
        (5, "sm.parser_error", 0)]  # p4c: error is a string, width 0
    assert t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    assert (t.is_const_table, t.has_initial_entries) == (True, True)
    assert (empty.is_const_table, empty.has_initial_entries) == (True, False)
    (arg,) = t.initial_default_action.arguments
    assert (arg.param_id, arg.value) == (5, b"\x02")
    assert names(p.actions) == ["NoAction", "I.a", "I.set_kind"]
    assert p.actions[1].preamble.id == 0x01000010
    assert [(q.id, q.name) for q in p.actions[1].params] == [(5, "x")]
    # a serializable enum: its width, no type_name, described in type_info
    kind = p.actions[2].params[0]
    assert (kind.bitwidth, kind.HasField("type_name")) == (8, False)
    assert [m.value for m in p.type_info.serializable_enums["Kind_t"].members] == [
        b"\x01", b"\x03"]
    assert list(p.type_info.error.members)[:3] == ["NoError", "PacketTooShort", "NoMatch"]
    (reg,) = p.registers
    assert reg.type_spec.struct.name == "pair_t"
    assert [m.name for m in p.type_info.structs["pair_t"].members] == ["x", "y"]
    # a digest of a list has no type name: p4c invents one
    (d,) = p.digests
    assert d.preamble.name == "digest_0"
    assert len(d.type_spec.tuple.members) == 2


def test_annotations_are_rendered_as_p4c_prints_them():
    p = p4info_for(compile_ingress("""
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    @brief("short") @description("longer text") @deprecated("use b")
    action a(@format(IPV4_ADDRESS) bit<8> x) { hdr.h.g = x; }
    @my_flag @refers_to(other_table, field_x)
    table t {
        key = { hdr.h.f : exact @name("custom") @format(MAC_ADDRESS); }
        actions = { @tableonly a; @defaultonly NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); }
}
"""))
    (t,) = p.tables
    assert list(t.preamble.annotations) == ["@my_flag", "@refers_to(other_table , field_x)"]
    (key,) = t.match_fields
    assert (key.name, list(key.annotations)) == ("custom", ["@format(MAC_ADDRESS)"])
    assert [(list(r.annotations), r.scope) for r in t.action_refs] == [
        (["@tableonly"], p4info_pb2.ActionRef.TABLE_ONLY),
        (["@defaultonly"], p4info_pb2.ActionRef.DEFAULT_ONLY)]
    a = p.actions[1]
    assert list(a.preamble.annotations) == ['@deprecated("use b")']
    assert (a.preamble.doc.brief, a.preamble.doc.description) == ("short", "longer text")
    assert list(a.params[0].annotations) == ["@format(IPV4_ADDRESS)"]


def test_global_instances_pkg_info_and_controller_headers():
    p = p4info_for(compile_ingress("""
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    counter(2, CounterType.packets) local_hits;
    apply { global_hits.count(0); local_hits.count(1); }
}
""", before="""
@controller_header("packet_in")
header packet_in_t { @id(2) bit<9> port; bit<7> pad; }
@controller_header("packet_out")
header packet_out_t { Kind_t kind; bit<8> reason; }
counter(16, CounterType.packets_and_bytes) global_hits;
""", main="""
@pkginfo(name="demo.p4", version="1.2", organization="aifabric") @custom(on)
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""))
    assert names(p.counters) == ["global_hits", "I.local_hits"]
    assert p.counters[0].spec.unit == p4info_pb2.CounterSpec.BOTH
    assert (p.pkg_info.arch, p.pkg_info.name, p.pkg_info.version, p.pkg_info.organization) == (
        "v1model", "demo.p4", "1.2", "aifabric")
    assert list(p.pkg_info.annotations) == ["@custom(on)"]
    # declaration order, used or not
    assert names(p.controller_packet_metadata) == ["packet_in", "packet_out"]
    pin, pout = p.controller_packet_metadata
    # p4c FieldIdAllocator: an @id element still advances the counter
    assert [(m.id, m.name, m.bitwidth) for m in pin.metadata] == [(2, "port", 9), (3, "pad", 7)]
    assert [(m.name, m.bitwidth) for m in pout.metadata] == [("kind", 8), ("reason", 8)]
    assert "Kind_t" in p.type_info.serializable_enums


def test_top_level_control_instance_is_named_after_its_type():
    p = p4info_for(compile_text(PRELUDE + """
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action a() { }
    table t { actions = { a; } default_action = a(); }
    apply { t.apply(); }
}
I() ig;
V1Switch(P(), VC(), ig, E(), CC(), D()) main;
""", "t.p4"))
    assert names(p.tables) == ["I.t"]


def test_match_field_names_use_field_name_annotations():
    p = p4info_for(compile_text(PRELUDE.replace(
        "struct metadata { bit<8> m; Kind_t kind; }",
        'struct metadata { @name("renamed") bit<8> m; @name(".top") bit<8> n; Kind_t kind; }'
    ) + """
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action a() { }
    table t { key = { meta.m : exact; meta.n : exact; } actions = { a; } default_action = a(); }
    apply { t.apply(); }
}
""" + MAIN, "t.p4"))
    assert [f.name for f in p.tables[0].match_fields] == ["meta.renamed", "top"]


def test_value_set_and_parser_objects():
    model = p4info_model(compile_file(PROGRAMS / "value_set_struct.p4"))
    (vs,) = model.value_sets
    assert (vs.name, vs.size) == ("MyParser.pvs", 4)
    assert [(f.name, f.bitwidth, f.match_kind) for f in vs.element] == [
        ("field1", 16, "ternary"), ("field2", 3, "lpm"), ("field3", 6, "exact"),
        ("field4", 5, "range")]
    # no default_action: CreateBuiltins is left to the builder
    assert model.tables[0].default_action is None


# --------------------------------------------------------------------------
# Annotation rendering


def ann(name, *tokens, structured=False, args=()):
    return T.Annotation(name, args, " ".join(tokens), tuple(tokens), structured)


@pytest.mark.parametrize("annotation,text", [
    (ann("defaultonly"), "@defaultonly"),
    (ann("noWarn", '"unused"'), '@noWarn("unused")'),
    (ann("format", "IPV4_ADDRESS"), "@format(IPV4_ADDRESS)"),
    (ann("refers_to", "vrf_table", ",", "vrf_id"), "@refers_to(vrf_table , vrf_id)"),
    (ann("p4runtime_role", '"sdn"'), '@p4runtime_role("sdn")'),
    # parsed by p4c: expressions printed as P4, joined by ", "
    (ann("field_list", "hdr", ".", "a", ",", "b"), "@field_list(hdr.a, b)"),
    (ann("length", "(", "len", "-", "1", ")", "*", "8"), "@length((len - 1) * 8)"),
    (ann("deprecated", '"x"'), '@deprecated("x")'),
    (ann("pkginfo", "name", "=", '"n"', ",", "version", "=", '"1"'),
     '@pkginfo(name="n", version="1")'),
    # built without the parser (IR made by hand): from the arguments
    (T.Annotation("controller_header", ("packet_out",)), '@controller_header("packet_out")'),
    (T.Annotation("id", (3,)), "@id(3)"),
])
def test_render_annotation(annotation, text):
    assert render_annotation(annotation).render() == text


def test_structured_annotations_are_evaluated():
    out = convert_annotations([
        ann("list", "1", ",", '"s"', ",", "true", ",", "2", "==", "3", ",", "8w5", "+", "(", "2",
            "*", "3", ")", ",", "-", "4", structured=True),
        ann("kv", "a", "=", "1", "<<", "4", ",", "b", "=", "!", "false", structured=True),
        ann("empty", structured=True),
        ann("plain", "x"),
    ])
    assert [(s.name, s.expressions, s.kv_pairs) for s in out["structured_annotations"]] == [
        ("list", (1, "s", True, False, 11, -4), None),
        ("kv", None, (("a", 16), ("b", True))),
        ("empty", (), None),
    ]
    assert [a.render() for a in out["annotations"]] == ["@plain(x)"]
    with pytest.raises(P4InfoError, match="literal"):
        convert_annotations([ann("bad", "SOME_NAME", structured=True)], "table t")
