"""Loading tutorial-style runtime JSON into the executor, and its errors."""

import json

import pytest
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from emulator.p4.errors import RuntimeConfigError
from emulator.p4.exec.pipeline import V1ModelPipeline
from emulator.p4.runtime_json import apply_runtime_config, load_runtime_file, parse_value
from tests.unit.p4.irkit import basic_program

RUNTIME = {
    "target": "bmv2",
    "table_entries": [
        {"table": "MyIngress.ipv4_lpm", "default_action": True, "action_name": "MyIngress.drop",
         "action_params": {}},
        {"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["10.0.1.1", 32]},
         "action_name": "MyIngress.ipv4_forward",
         "action_params": {"dstAddr": "08:00:00:00:01:11", "port": 1}},
        {"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["10.0.0.0", 8]},
         "action_name": "MyIngress.ipv4_forward",
         "action_params": {"dstAddr": "0x080000000999", "port": 9}},
    ],
}


def _pipe(tmp_path, runtime=RUNTIME):
    program, _ = basic_program()
    pipe = V1ModelPipeline(program)
    path = tmp_path / "s1-runtime.json"
    path.write_text(json.dumps(runtime))
    load_runtime_file(pipe, path)
    return pipe


def test_longest_prefix_wins(tmp_path):
    pipe = _pipe(tmp_path)
    out = pipe.process(3, bytes(Ether() / IP(dst="10.0.1.1"))).outputs
    assert [o.port for o in out] == [1]
    out = pipe.process(3, bytes(Ether() / IP(dst="10.7.1.1"))).outputs
    assert [o.port for o in out] == [9]
    assert Ether(out[0].data).dst == "08:00:00:00:09:99"


@pytest.mark.parametrize("value,width,expected", [
    (5, 8, 5), ("10.0.0.1", 32, 0x0A000001), ("aa:bb:cc:dd:ee:ff", 48, 0xAABBCCDDEEFF),
    ("0x1f", 8, 31), ("17", 8, 17), ("::1", 128, 1),
])
def test_parse_value(value, width, expected):
    assert parse_value(value, width, "x") == expected


@pytest.mark.parametrize("entry,message", [
    ({"table": "MyIngress.nope", "action_name": "x"}, "unknown table 'MyIngress.nope'"),
    ({"table": "MyIngress.ipv4_lpm", "action_name": "MyIngress.fly"}, "has no action 'MyIngress.fly'"),
    ({"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.src": ["1.1.1.1", 32]},
      "action_name": "MyIngress.drop"}, "has no match field 'hdr.ipv4.src'"),
    ({"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["1.1.1.1", 32]},
      "action_name": "MyIngress.ipv4_forward", "action_params": {"dstAddr": 1, "port": 512}},
     "action parameter port: 512 does not fit in 9 bits"),
    ({"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["1.1.1.1", 33]},
      "action_name": "MyIngress.drop"}, "prefix length must be an integer in 0..32"),
    ({"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["1.1.1.1", 32]},
      "action_name": "MyIngress.ipv4_forward", "action_params": {"dstAddr": 1, "port": 1, "x": 2}},
     "has no parameter 'x'"),
    ({"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["one", 32]},
      "action_name": "MyIngress.drop"}, "'one' is not an integer"),
])
def test_bad_entries_name_what_is_wrong(entry, message):
    program, _ = basic_program()
    pipe = V1ModelPipeline(program)
    with pytest.raises(RuntimeConfigError) as err:
        apply_runtime_config(pipe, {"table_entries": [entry]}, "s1.json")
    assert message in str(err.value)
    assert str(err.value).startswith("s1.json: table_entries[0]")


def test_multicast_group_replicates_with_rid(tmp_path):
    program, _ = basic_program()
    pipe = V1ModelPipeline(program)
    apply_runtime_config(pipe, {"multicast_group_entries": [
        {"multicast_group_id": 1, "replicas": [{"egress_port": 2, "instance": 1},
                                               {"egress_port": 3, "instance": 1}]}]})
    assert pipe.multicast_groups == {1: [(2, 1), (3, 1)]}
