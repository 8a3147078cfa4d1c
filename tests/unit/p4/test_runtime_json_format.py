"""The tutorials' runtime JSON in full: one-element exact lists, ternary,
range and optional matches with priorities, default actions, aliases,
multicast groups and clone sessions, against a pipeline and a P4Info; and
one line naming file, entry and key for every mistake."""

import json

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from emulator.cli.main import main
from emulator.p4.errors import RuntimeConfigError
from emulator.p4.exec.pipeline import V1ModelPipeline
from emulator.p4.frontend import compile_file
from emulator.p4.p4info.from_ir import p4info_for
from emulator.p4.p4info.index import P4InfoIndex
from emulator.p4.runtime_json import (
    apply_runtime_config, read_runtime_file, resolve_runtime_config,
)
from emulator.p4.runtime_schema import p4info_schema

# Classes of traffic by (ToS ternary, UDP port range, optional ingress port),
# then an exact table on the class picks the egress port.
PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ip_t { bit<8> vihl; bit<8> tos; bit<16> len; bit<32> idfl; bit<8> ttl; bit<8> proto;
              bit<16> csum; bit<32> src; bit<32> dst; }
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
struct headers_t { eth_t eth; ip_t ip; udp_t udp; }
struct meta_t { bit<8> klass; }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.eth); transition select(h.eth.type) { 0x800: ip; default: accept; } }
    state ip { pkt.extract(h.ip); transition select(h.ip.proto) { 17: udp; default: accept; } }
    state udp { pkt.extract(h.udp); transition accept; }
}
control V(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action set_class(bit<8> klass) { m.klass = klass; }
    action to_port(bit<9> port) { sm.egress_spec = port; }
    action flood(bit<16> grp) { sm.mcast_grp = grp; }
    table classify {
        key = { h.ip.tos: ternary; h.udp.dport: range; sm.ingress_port: optional; }
        actions = { set_class; NoAction; }
        default_action = NoAction();
    }
    table by_class {
        key = { m.klass: exact; }
        actions = { to_port; flood; drop; }
        default_action = drop();
    }
    apply { if (h.udp.isValid()) { classify.apply(); } by_class.apply(); }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

RUNTIME = {
    "target": "bmv2", "p4info": "build/classes.p4.p4info.txtpb", "bmv2_json": "build/classes.json",
    "table_entries": [
        {"table": "I.by_class", "default_action": True, "action_name": "I.to_port",
         "action_params": {"port": 9}},
        {"table": "I.classify", "match": {"h.ip.tos": ["0xb8", "0xfc"]},
         "priority": 10, "action_name": "I.set_class", "action_params": {"klass": 1}},
        {"table": "classify", "match": {"h.udp.dport": [4791, 4791], "sm.ingress_port": [3]},
         "priority": 20, "action_name": "set_class", "action_params": {"klass": 2}},
        {"table": "I.by_class", "match": {"m.klass": [1]}, "action_name": "I.to_port",
         "action_params": {"port": 1}},
        {"table": "by_class", "match": {"m.klass": 2}, "action_name": "I.flood",
         "action_params": {"grp": 5}},
    ],
    "multicast_group_entries": [
        {"multicast_group_id": 5, "replicas": [{"egress_port": 6, "instance": 1},
                                               {"egress_port": 7, "instance": 1}]}],
    "clone_session_entries": [
        {"clone_session_id": 100, "replicas": [{"egress_port": 8, "instance": 0}],
         "packet_length_bytes": 64}],
}


@pytest.fixture(scope="module")
def program_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("p4") / "classes.p4"
    path.write_text(PROGRAM)
    return path


@pytest.fixture
def pipe(program_file):
    return V1ModelPipeline(compile_file(program_file))


def udp(tos: int, dport: int) -> bytes:
    return bytes(Ether() / IP(tos=tos, dst="10.0.0.2") / UDP(sport=1, dport=dport) / b"x")


def test_every_kind_of_entry_loads_and_forwards(pipe):
    apply_runtime_config(pipe, RUNTIME, "s1-runtime.json")
    assert [o.port for o in pipe.process(2, udp(0xB9, 80)).outputs] == [1]   # ternary ToS
    assert sorted(o.port for o in pipe.process(3, udp(0, 4791)).outputs) == [6, 7]  # range + optional
    assert [o.port for o in pipe.process(2, udp(0, 4791)).outputs] == [9]   # optional misses
    assert pipe.process(3, udp(0xB8, 4791)).outputs[0].port in (6, 7)       # priority 20 wins
    assert pipe.multicast_groups[5] == [(6, 1), (7, 1)]
    assert pipe.clone_sessions[100].truncate_bytes == 64


def test_the_same_file_resolves_against_the_p4info(program_file):
    index = P4InfoIndex(p4info_for(compile_file(program_file)))
    config = resolve_runtime_config(RUNTIME, p4info_schema(index), "s1-runtime.json")
    assert (config.p4info, config.bmv2_json) == ("build/classes.p4.p4info.txtpb", "build/classes.json")
    default, ternary, ranged, exact, by_alias = config.entries
    assert default.default and default.params == (9,)
    assert ternary.match == ((0xB8, 0xFC), (0, 0xFFFF), None) and ternary.priority == 10
    assert ranged.table == "I.classify" and ranged.match == ((0, 0), (4791, 4791), 3)
    assert exact.match == (1,) and by_alias.action == "I.flood"
    assert config.multicast_groups[0].replicas == ((6, 1), (7, 1))
    assert config.clone_sessions[0].packet_length_bytes == 64


def entry(**changes):
    base = {"table": "I.classify", "match": {"h.ip.tos": [1, 255]}, "priority": 1,
            "action_name": "I.set_class", "action_params": {"klass": 1}}
    base.update(changes)
    return {key: value for key, value in base.items() if value is not None}


@pytest.mark.parametrize("data, message", [
    ({"table_entries": [], "tables": []}, "s1.json: unknown key 'tables'; allowed: target, p4info"),
    ({"target": "tofino"}, "target 'tofino': allowed: bmv2"),
    ({"table_entries": [entry(prio=1)]}, "table_entries[0]: unknown key 'prio'; allowed: table,"),
    ({"table_entries": [entry(priority=None)]}, "table I.classify needs a priority"),
    ({"table_entries": [entry(priority=0)]}, "priority must be 1 or more"),
    ({"table_entries": [entry(table="I.by_class", match={"m.klass": 1}, priority=3,
                              action_name="I.drop", action_params={})]},
     "table I.by_class has only exact and lpm fields; leave priority out"),
    ({"table_entries": [entry(match={"h.ip.tos": [1]})]}, "ternary match must be [value, mask]"),
    ({"table_entries": [entry(table="I.by_class", match={"m.klass": [1, 2]}, priority=None,
                              action_name="I.drop", action_params={})]},
     "match field m.klass: exact match is a value or [value]"),
    ({"table_entries": [entry(match={"h.udp.dport": [9, 3]})]}, "range low 9 is above high 3"),
    ({"table_entries": [entry(default_action=True)]}, "a default action has no match"),
    ({"table_entries": [entry(default_action="yes", match=None, priority=None)]},
     "default_action must be true or false"),
    ({"table_entries": [entry(action_name="nope")]},
     "table I.classify has no action 'nope'; allowed: I.set_class, NoAction"),
    ({"table_entries": [entry(table="ghost")]}, "unknown table 'ghost'; allowed: I.by_class, I.classify"),
    ({"multicast_group_entries": [{"multicast_group_id": 1, "replicas": [{"port": 1}]}]},
     "multicast_group_entries[0].replicas[0]: unknown key 'port'; allowed: egress_port, instance"),
    ({"clone_session_entries": [{"clone_session_id": 1}]},
     "clone_session_entries[0]: missing key 'replicas'"),
])
def test_mistakes_are_one_line_naming_file_entry_and_key(pipe, data, message):
    with pytest.raises(RuntimeConfigError) as err:
        apply_runtime_config(pipe, data, "s1.json")
    assert message in str(err.value)
    assert str(err.value).startswith("s1.json") and "\n" not in str(err.value)


def test_reading_a_file_says_where_the_json_is_broken(tmp_path):
    path = tmp_path / "s1-runtime.json"
    path.write_text('{"table_entries": [\n  {"table": }\n]}')
    with pytest.raises(RuntimeConfigError, match=r"s1-runtime.json:2:13: invalid JSON"):
        read_runtime_file(path)
    with pytest.raises(RuntimeConfigError, match="no such file"):
        read_runtime_file(tmp_path / "missing.json")


def test_p4_run_takes_one_element_exact_lists(tmp_path, capsys):
    path = tmp_path / "classes.p4"
    path.write_text(PROGRAM)
    entries = tmp_path / "s1-runtime.json"
    entries.write_text(json.dumps({"table_entries": [
        {"table": "I.by_class", "match": {"m.klass": [0]}, "action_name": "I.to_port",
         "action_params": {"port": 4}}]}))
    assert main(["p4", "run", str(path), "--entries", str(entries), "--json",
                 "--packet", f"1:{udp(0, 80).hex()}"]) == 0
    assert [o["port"] for o in json.loads(capsys.readouterr().out)["outputs"]] == [4]
    entries.write_text('{"table_entries": [{"tabel": "I.by_class"}]}')
    assert main(["p4", "run", str(path), "--entries", str(entries),
                 "--packet", f"1:{udp(0, 80).hex()}"]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "table_entries[0]: unknown key 'tabel'; allowed: table, match, action_name, "
        "action_params, priority, default_action")
