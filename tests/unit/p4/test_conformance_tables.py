"""Conformance: match-action tables as BMv2 looks them up — exact, lpm
(longest prefix), ternary/range/optional (priorities: const entries in order,
``@priority(n)`` smallest first as p4c tells BMv2; control-plane entries the
larger P4Runtime priority first), defaults, direct counters, action profiles
and selectors (member = ``hash % n`` over the members in creation order,
the hash taken as 32 bits, BMv2 ``ActionProfile::choose_from_group``)."""

import pytest

from emulator.p4.errors import RuntimeConfigError
from emulator.p4.runtime_json import apply_runtime_config
from tests.unit.p4.conformance_kit import ETH_HDR, Switch, compile_errors, crc16_arc, v1switch

HEADERS = """
header k_t { bit<32> ip; bit<16> port; bit<8> proto; bit<8> res; }
struct headers { eth_t eth; k_t k; }
"""
PARSER = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.k); transition accept; }
}"""


def build(ingress: str, decls: str = "") -> Switch:
    return Switch.build(v1switch(decls, headers=HEADERS, parser=PARSER, ingress=ingress))


def pkt(ip: int, port: int = 0, proto: int = 0) -> str:
    return ETH_HDR + "0000" + ip.to_bytes(4, "big").hex() + port.to_bytes(2, "big").hex() + f"{proto:02x}00"


def out_of(sw: Switch, data: str) -> tuple[int, int]:
    (port, hexdata), = sw.send(0, data)
    return port, int(hexdata[-2:], 16)


ACTIONS = """
    action set(bit<8> v) { hdr.k.res = v; }
    action fwd(bit<9> p) { sm.egress_spec = p; }
    action miss() { hdr.k.res = 0xee; }
"""


def test_lpm_longest_prefix_and_exact_plus_lpm():
    sw = build(ACTIONS + """
    table t { key = { hdr.k.proto : exact; hdr.k.ip : lpm; } actions = { set; miss; } default_action = miss(); }
    apply { sm.egress_spec = 1; t.apply(); }""")
    sw.add("I.t", [6, (0x0A000000, 8)], "I.set", [8])
    sw.add("I.t", [6, (0x0A010000, 16)], "I.set", [16])
    sw.add("I.t", [6, (0x0A010203, 32)], "I.set", [32])
    sw.add("I.t", [6, (0, 0)], "I.set", [0])
    assert out_of(sw, pkt(0x0A010203, proto=6)) == (1, 32)
    assert out_of(sw, pkt(0x0A010204, proto=6)) == (1, 16)
    assert out_of(sw, pkt(0x0A020204, proto=6)) == (1, 8)
    assert out_of(sw, pkt(0x0B000000, proto=6)) == (1, 0)
    assert out_of(sw, pkt(0x0A010203, proto=17)) == (1, 0xEE)


def test_ternary_priorities_and_range_and_optional():
    sw = build(ACTIONS + """
    table t { key = { hdr.k.ip : ternary; hdr.k.port : range; hdr.k.proto : optional; }
              actions = { set; miss; } default_action = miss(); }
    apply { sm.egress_spec = 1; t.apply(); }""")
    sw.add("I.t", [(0x0A000000, 0xFF000000), (0, 0xFFFF), None], "I.set", [1], priority=10)
    sw.add("I.t", [(0x0A000001, 0xFFFFFFFF), (0, 0xFFFF), None], "I.set", [2], priority=20)
    sw.add("I.t", [(0, 0), (1000, 2000), 6], "I.set", [3], priority=30)
    sw.add("I.t", [(0, 0), (1000, 2000), None], "I.set", [4], priority=5)
    assert out_of(sw, pkt(0x0A000001, 80, 17)) == (1, 2)       # highest of the two matching
    assert out_of(sw, pkt(0x0A000002, 80, 17)) == (1, 1)
    assert out_of(sw, pkt(0x0A000001, 1500, 6)) == (1, 3)      # range + optional beat both
    assert out_of(sw, pkt(0x0B000001, 1500, 17)) == (1, 4)
    assert out_of(sw, pkt(0x0B000001, 2001, 17)) == (1, 0xEE)


def test_const_entries_first_match_wins_with_dont_care_masks_ranges():
    sw = build(ACTIONS + """
    table t {
        key = { hdr.k.ip : ternary; hdr.k.port : range; }
        actions = { set; miss; }
        const default_action = miss();
        const entries = {
            (0x0a000001, _)               : set(1);
            (0x0a000000 &&& 0xff000000, 0 .. 100) : set(2);
            (_, 50 .. 60)                  : set(3);
            (_, _)                         : set(4);
        }
    }
    apply { sm.egress_spec = 1; t.apply(); }""")
    assert out_of(sw, pkt(0x0A000001, 55)) == (1, 1)
    assert out_of(sw, pkt(0x0A000002, 55)) == (1, 2)
    assert out_of(sw, pkt(0x0B000002, 55)) == (1, 3)
    assert out_of(sw, pkt(0x0B000002, 99)) == (1, 4)
    with pytest.raises(RuntimeConfigError, match="const default action"):
        apply_runtime_config(sw.pipe, {"table_entries": [
            {"table": "I.t", "default_action": True, "action_name": "I.set", "action_params": {"v": 1}}]})
    with pytest.raises(RuntimeConfigError, match="const entries"):
        apply_runtime_config(sw.pipe, {"table_entries": [
            {"table": "I.t", "match": {"hdr.k.ip": [1, 0xFFFFFFFF]}, "priority": 1,
             "action_name": "I.set", "action_params": {"v": 9}}]})


def test_priority_annotation_on_const_entries_smallest_wins():
    # facts of p4c's table-entries-priority-bmv2 STF
    sw = build(ACTIONS + """
    table t {
        key = { hdr.k.port : ternary; }
        actions = { set; miss; }
        default_action = miss();
        const entries = {
            0x1111 &&& 0xF    : set(1) @priority(3);
            0x1181            : set(2);
            0x1181 &&& 0xF00F : set(3) @priority(1);
        }
    }
    apply { sm.egress_spec = 1; t.apply(); }""")
    assert out_of(sw, pkt(0, 0x0001)) == (1, 1)
    assert out_of(sw, pkt(0, 0x1001)) == (1, 3)
    assert out_of(sw, pkt(0, 0x1181)) == (1, 3)


def test_default_action_with_parameters_and_hit_miss():
    sw = build(ACTIONS + """
    table t { key = { hdr.k.ip : exact; } actions = { set; fwd; } default_action = set(0x42); }
    apply {
        sm.egress_spec = 1;
        if (t.apply().hit) { hdr.k.proto = 1; } else { hdr.k.proto = 2; }
        if (!t.apply().miss) { hdr.k.port = 7; }
    }""")
    sw.add("I.t", [5], "I.fwd", [3])
    assert sw.send(0, pkt(5)) == [(3, pkt(5, 7, 1)[0:-2] + "00")]
    assert sw.send(0, pkt(6)) == [(1, pkt(6, 0, 2)[0:-2] + "42")]
    sw.default("I.t", "I.set", [0x43])
    assert out_of(sw, pkt(6)) == (1, 0x43)


def test_keyless_table_always_runs_its_default_action():
    sw = build(ACTIONS + """
    table t { actions = { set; } default_action = set(9); }
    apply { sm.egress_spec = 1; if (t.apply().hit) { hdr.k.proto = 1; } }""")
    assert out_of(sw, pkt(1)) == (1, 9)


def test_key_expressions_slices_masks_and_validity():
    sw = build(ACTIONS + """
    table t {
        key = { hdr.k.ip[31:24] : exact @name("top"); hdr.k.port & 0xff00 : exact @name("hi");
                hdr.k.isValid() : exact; }
        actions = { set; miss; }
        default_action = miss();
    }
    apply { sm.egress_spec = 1; t.apply(); }""")
    t = sw.pipe.table("I.t")
    assert [k.name for k in t.keys] == ["top", "hi", "hdr.k.$valid$"]
    sw.add("I.t", [10, 0x1200, 1], "I.set", [5])
    assert out_of(sw, pkt(0x0AFFFFFF, 0x12AB)) == (1, 5)
    assert out_of(sw, pkt(0x0AFFFFFF, 0x13AB)) == (1, 0xEE)


def test_direct_counter_counts_hits_with_ingress_length():
    sw = build(ACTIONS + """
    direct_counter(CounterType.packets_and_bytes) hits;
    table t { key = { hdr.k.ip : exact; } actions = { set; miss; } default_action = miss(); counters = hits; }
    apply { sm.egress_spec = 1; t.apply(); }""")
    sw.add("I.t", [1], "I.set", [1])
    sw.send(0, pkt(1))
    sw.send(0, pkt(1) + "00" * 10)
    sw.send(0, pkt(2))
    entry = sw.pipe.table("I.t").find((1,))
    assert (entry.packets, entry.bytes) == (2, 22 + 32)


def test_action_selector_member_is_crc16_modulo_in_member_creation_order():
    sw = build(ACTIONS + """
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) sel;
    table t {
        key = { hdr.k.proto : exact; hdr.k.ip : selector; hdr.k.port : selector; }
        actions = { set; }
        implementation = sel;
    }
    apply { sm.egress_spec = 1; t.apply(); }""")
    t = sw.pipe.table("I.t")
    prof = sw.pipe.profiles["I.sel"]
    for member, value in ((30, 0xA0), (10, 0xB0), (20, 0xC0)):
        prof.add_member(member, t.make_member("I.set", [value]))
    prof.set_group(1, [10, 20, 30])       # the group's order does not matter
    t.insert(t.make_indirect_entry(t.canonical_key([6]), group=1))
    in_order = [0xA0, 0xB0, 0xC0]         # creation order: 30, 10, 20
    for ip, port in ((0x0A000001, 80), (0x0A000002, 443), (0xC0A80001, 53), (1, 1)):
        expect = in_order[crc16_arc(ip.to_bytes(4, "big") + port.to_bytes(2, "big")) % 3]
        assert out_of(sw, pkt(ip, port, 6)) == (1, expect)


def test_action_profile_members_without_selector():
    sw = build(ACTIONS + """
    action_profile(32w16) prof;
    table t { key = { hdr.k.proto : exact; } actions = { set; fwd; } implementation = prof; }
    apply { sm.egress_spec = 1; t.apply(); }""")
    t = sw.pipe.table("I.t")
    prof = sw.pipe.profiles["I.prof"]
    prof.add_member(1, t.make_member("I.fwd", [4]))
    prof.add_member(2, t.make_member("I.set", [0x77]))
    t.insert(t.make_indirect_entry(t.canonical_key([6]), member=1))
    t.insert(t.make_indirect_entry(t.canonical_key([17]), member=2))
    assert sw.send(0, pkt(1, 0, 6))[0][0] == 4
    assert out_of(sw, pkt(1, 0, 17)) == (1, 0x77)


def test_actions_list_binding_directional_arguments():
    # p4c's v1model-special-ops: ``my_drop(standard_metadata)`` in an actions list
    sw = build("""
    action my_drop(inout standard_metadata_t smeta) { mark_to_drop(smeta); }
    action add(inout bit<8> acc, bit<8> v) { acc = acc + v; }
    table t { key = { hdr.k.proto : exact; } actions = { my_drop(sm); add(hdr.k.res); }
              default_action = my_drop(sm); }
    apply { sm.egress_spec = 1; t.apply(); }""")
    sw.add("I.t", [1], "I.add", [5])
    assert out_of(sw, pkt(0, 0, 1)) == (1, 5)
    assert sw.send(0, pkt(0, 0, 2)) == []
    spec = sw.pipe.table("I.t").actions["I.add"]
    assert spec.params == (("v", 8),)


def test_control_plane_errors_are_one_line_runtime_config_errors():
    sw = build(ACTIONS + """
    table t { key = { hdr.k.ip : lpm; } actions = { set; } size = 2; }
    apply { t.apply(); }""")
    t = sw.pipe.table("I.t")
    with pytest.raises(RuntimeConfigError, match="prefix length"):
        t.canonical_key([(1, 33)])
    with pytest.raises(RuntimeConfigError, match="does not fit"):
        t.make_entry("I.set", [256])
    with pytest.raises(RuntimeConfigError, match="unknown action"):
        t.make_entry("I.nope", [])
    sw.add("I.t", [(1, 32)], "I.set", [1])
    sw.add("I.t", [(2, 32)], "I.set", [1])
    with pytest.raises(RuntimeConfigError, match="full"):
        sw.add("I.t", [(3, 32)], "I.set", [1])


@pytest.mark.parametrize("table,needle", [
    ("table t { key = { hdr.k.ip : exact; } actions = { set; } default_action = fwd(1); }", "not in the actions"),
    ("table t { key = { hdr.k.ip : exact; } actions = { set; } default_action = set(); }", "takes 1 arguments"),
    ("table t { key = { hdr.k.ip : fuzzy; } actions = { set; } }", "unknown match kind"),
    ("table t { key = { hdr.k.ip : exact; } actions = { set; } const entries = { 1 : nope(); } }", "not an action"),
    ("table t { key = { hdr.k.ip : exact; } actions = { set; } const entries = { (1, 2) : set(1); } }", "keyset"),
    ("table t { key = { hdr.k.ip : ternary; } actions = { set; } "
     "const entries = { priority=10: 1 &&& 1 : set(1); } }", "cannot have priorities"),
    ("table t { key = { hdr.k : exact; } actions = { set; } }", "cannot be matched"),
])
def test_invalid_tables_are_rejected(table, needle):
    text = v1switch(headers=HEADERS, parser=PARSER, ingress=ACTIONS + table + " apply { t.apply(); }")
    assert needle in compile_errors(text)
