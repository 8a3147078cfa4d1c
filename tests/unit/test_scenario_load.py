"""Valid scenario files load, take their defaults and normalise."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from emulator.scenario import (
    SCHEMA,
    CapturePoint,
    EventSpec,
    ExpectCheck,
    FlowSpec,
    Scenario,
    ScenarioError,
    Threshold,
    load_scenario,
    scenario_from_dict,
)
from emulator.scenario.spec import DEFAULT_BUFFER_BYTES, DcqcnSpec

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "scenarios"


def test_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_full_example_loads_every_key():
    scenario = load_scenario(DATA / "full.yaml")
    assert isinstance(scenario, Scenario)
    assert (scenario.name, scenario.target, scenario.seed, scenario.time_scale) == (
        "incast-ecn", "builtin", 1, 1)
    assert scenario.duration_ns == 10 * 10**9 and scenario.duration_s == 10.0
    assert scenario.topology.name == "rail-4x4"
    assert scenario.topology_file == str(ROOT / "topologies" / "rail-4x4.yaml")
    switches = scenario.switches
    assert switches.buffer_bytes == 256_000
    assert switches.ecn.kmin == Threshold(20_000, "bytes")
    assert switches.ecn.kmax == Threshold(80_000, "bytes")
    assert switches.pfc.xoff == Threshold(40_000, "bytes") and switches.pfc.quanta == 65535
    assert switches.priorities.roce_dscp == 26 and switches.priorities.cnp == 6
    hosts = scenario.hosts
    assert hosts.mtu_bytes == 1024 and hosts.frame_bytes == 1082
    assert hosts.dcqcn.rate_ai_bps == 5_000_000 and hosts.dcqcn.timer_ns == 55_000
    assert hosts.dcqcn.byte_counter_bytes == 10_000_000 and hosts.dcqcn.g == 1 / 256
    assert scenario.flows[0] == FlowSpec(id="f1", src="srv0/gpu0", dst="srv3/gpu0",
                                         size_bytes=4_000_000, start_ns=0, priority=3, dscp=26,
                                         op="write", qps=1)
    background = scenario.flows[1]
    assert background.size_bytes is None and background.priority == 0 and background.dscp == 0
    assert background.rate_bps == 20_000_000
    incast = scenario.generators[0]
    # The pattern srv*/gpu1 skips the receiver's own server.
    assert incast.senders == ("srv0/gpu1", "srv1/gpu1", "srv2/gpu1")
    assert incast.stagger_ns == 1_000_000
    assert [g.id for g in scenario.generators] == ["incast", "g1", "g2", "g3"]
    assert scenario.generators[3].pairs == (("srv0/gpu0", "srv1/gpu1"),)
    assert scenario.generators[3].size_bytes == 1024 * 1024
    assert scenario.expect_checks[1] == ExpectCheck("totals.pfc_tx", ">", 0,
                                                    "PFC pauses the incast")


def test_events_are_kept_in_time_order():
    scenario = load_scenario(DATA / "full.yaml")
    assert scenario.events == (
        EventSpec(at_ns=2 * 10**9, kind="link_down", link=("leaf-r0-0", "spine0")),
        EventSpec(at_ns=3 * 10**9, kind="link_up", link=("leaf-r0-0", "spine0")),
        EventSpec(at_ns=5 * 10**9, kind="stop_flow", flow="bg"),
    )


def test_capture_points_expand_star_and_drop_repeats():
    scenario = load_scenario(DATA / "full.yaml")
    assert [str(p) for p in scenario.capture.points] == [
        "leaf-r0-0:1", "spine0:1", "spine0:2", "spine0:3", "spine0:4", "srv3/gpu0"]
    inline = load_scenario(DATA / "inline-fat-tree.yaml")
    assert inline.capture.points[0] == CapturePoint("srv0/gpu0")
    assert [p.port for p in inline.capture.points[1:]] == [1, 2, 3, 4]
    assert inline.capture.max_packets == 10_000


def test_minimal_file_takes_the_defaults():
    scenario = load_scenario(DATA / "minimal.yaml")
    assert (scenario.target, scenario.seed, scenario.time_scale) == ("builtin", 0, 1)
    assert scenario.description == scenario.expect == ""
    assert scenario.switches.buffer_bytes == DEFAULT_BUFFER_BYTES
    assert scenario.switches.ecn.kmin == Threshold(5, "pkts")
    assert scenario.switches.pfc.xoff == Threshold(30_000, "bytes")
    assert scenario.switches.ecn.priorities == scenario.switches.pfc.priorities == (3,)
    assert scenario.hosts.mtu_bytes == 1024 and scenario.hosts.dcqcn == DcqcnSpec()
    assert scenario.events == () and scenario.capture.points == ()
    assert scenario.flows[0].op == "write" and scenario.flows[0].qps == 1


def test_inline_topology_and_roce_priority_defaults():
    scenario = load_scenario(DATA / "inline-fat-tree.yaml")
    assert scenario.topology_file is None and scenario.topology.kind == "fat-tree"
    assert scenario.target == "bmv2" and scenario.time_scale == 2.5 and scenario.seed == 7
    # ECN and PFC priorities follow the RoCE priority when not given.
    assert scenario.switches.ecn.priorities == scenario.switches.pfc.priorities == (5,)
    assert scenario.hosts.mtu_bytes == 4096 and not scenario.hosts.dcqcn.enabled
    assert scenario.generators[1].size_bytes is None
    assert scenario.generators[0].gpus == ("srv0/gpu0", "srv1/gpu0", "srv2/gpu0", "srv3/gpu0")


def test_target_override():
    assert load_scenario(DATA / "inline-fat-tree.yaml", target_override="builtin").target == "builtin"
    assert load_scenario(DATA / "minimal.yaml", target_override="bmv2").target == "bmv2"


def test_overrides_apply_switch_wide_then_per_port():
    switches = load_scenario(DATA / "inline-fat-tree.yaml").switches
    port1 = switches.for_port("edge-p0-0", 1)
    assert port1.buffer_bytes == 32 * 1024 and not port1.ecn.enabled and not port1.pfc.enabled
    port2 = switches.for_port("edge-p0-0", 2)
    assert port2.buffer_bytes == 64 * 1024 and not port2.pfc.enabled
    other = switches.for_port("edge-p0-1", 1)
    assert other.buffer_bytes == 64 * 1024 and other.pfc.enabled and other.ecn.enabled
    full = load_scenario(DATA / "full.yaml").switches
    assert full.for_port("spine0", 2).ecn.kmin == Threshold(10, "pkts")
    assert full.for_port("spine0", 2).ecn.pmax == 0.2  # not overridden
    assert full.for_port("leaf-r0-0", 3).buffer_bytes == 64_000
    assert full.for_port("leaf-r0-0", 2).buffer_bytes == 256_000


def test_normalised_form_is_json_with_units_in_names():
    data = load_scenario(DATA / "full.yaml").to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["duration_ns"] == 10**10
    assert data["switches"]["buffer_bytes"] == 256_000
    assert data["switches"]["ecn"]["kmin"] == {"bytes": 20_000}
    assert data["switches"]["overrides"][1]["ecn"] == {"kmin": {"pkts": 10}, "kmax": {"pkts": 40}}
    assert data["hosts"]["dcqcn"]["rate_hai_bps"] == 50_000_000
    assert data["workload"]["flows"][1]["size_bytes"] is None
    assert data["workload"]["generators"][0]["senders"] == ["srv0/gpu1", "srv1/gpu1", "srv2/gpu1"]
    assert "pairs" not in data["workload"]["generators"][0]
    assert data["events"][0] == {"at_ns": 2 * 10**9, "kind": "link_down",
                                 "link": ["leaf-r0-0", "spine0"], "flow": None}
    assert data["topology"]["kind"] == "rail-optimized"


def test_whole_floats_count_as_whole_numbers():
    data = yaml.safe_load((DATA / "minimal.yaml").read_text())
    data["seed"] = 3.0
    data["workload"]["flows"][0]["qps"] = 2.0
    scenario = scenario_from_dict(data, base_dir=DATA)
    assert scenario.seed == 3 and isinstance(scenario.seed, int)
    assert scenario.flows[0].qps == 2 and isinstance(scenario.flows[0].qps, int)


def test_from_dict_without_lines_names_the_source():
    data = yaml.safe_load((DATA / "minimal.yaml").read_text())
    data["workload"]["flows"][0]["size"] = "4MiBs"
    with pytest.raises(ScenarioError) as caught:
        scenario_from_dict(data, source="<test>", base_dir=DATA)
    assert str(caught.value).startswith("<test>: key 'workload.flows[0].size': '4MiBs' is not")


def test_the_readme_example_is_valid():
    readme = (ROOT / "scenarios" / "README.md").read_text()
    block = re.search(r"## A full example.*?```yaml\n(.*?)```", readme, re.S)
    assert block is not None
    scenario = scenario_from_dict(yaml.safe_load(block.group(1)), base_dir=ROOT / "scenarios")
    assert scenario.name == "incast-ecn"
    assert scenario.to_dict()["switches"] == load_scenario(DATA / "full.yaml").to_dict()["switches"]


@pytest.mark.parametrize("results, holds, found", [
    ({"totals": {"drops": 0}}, True, 0),
    ({"totals": {"drops": 3}}, False, 3),
    ({"totals": {}}, False, None),
    ({"totals": {"drops": "many"}}, False, "many"),
])
def test_expect_check_evaluates_a_dotted_path(results, holds, found):
    check = ExpectCheck("totals.drops", "<=", 0)
    assert check.evaluate(results) == (holds, found)


def test_expect_check_indexes_lists_and_compares_text():
    results = {"flows": [{"id": "f1", "done": True}]}
    assert ExpectCheck("flows.0.done", "==", True).evaluate(results) == (True, True)
    assert ExpectCheck("flows.1.done", "==", True).evaluate(results) == (False, None)
    assert ExpectCheck("flows.0.id", "!=", "f2").evaluate(results) == (True, "f1")
