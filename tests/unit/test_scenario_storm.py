"""PFC storm events in a scenario (``pfc_storm_start``/``pfc_storm_stop``):
parsing and defaults, one-line errors, the agent of a storming GPU without
flows, and the results' pause-spread totals."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.scenario import ScenarioError, expand_workload, load_scenario
from emulator.run.agent_config import build_agent_configs
from emulator.measure.results import pause_spread
from emulator.traffic.agent.config import parse_config

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
BASE = f"""\
name: storm
topology: {TOPOLOGIES / "rail-4x4.yaml"}
duration: 3s
switches:
  pfc: {{enabled: true, priorities: [3, 4], xoff: 40KB, xon: 20KB}}
workload:
  flows:
    - {{id: f1, src: srv1/gpu0, dst: srv0/gpu0, size: 1MB}}
events:
  - {{at: 2s, kind: pfc_storm_stop, gpu: srv0/gpu0}}
  - {{at: 1s, kind: pfc_storm_start, gpu: srv0/gpu0}}
  - {{at: 500ms, kind: pfc_storm_start, gpu: srv3/gpu2, priorities: [4], quanta: 1000}}
"""


def load(tmp_path: Path, text: str = BASE):
    path = tmp_path / "storm.yaml"
    path.write_text(text)
    return load_scenario(path), path


def edit(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


def test_storm_events_parse_in_time_order_with_defaults(tmp_path):
    scenario, _ = load(tmp_path)
    kinds = [(e.kind, e.gpu, e.priorities, e.quanta, e.at_ns) for e in scenario.events]
    assert kinds == [
        ("pfc_storm_start", "srv3/gpu2", (4,), 1000, 500_000_000),
        ("pfc_storm_start", "srv0/gpu0", (3, 4), 65535, 1_000_000_000),  # PFC priorities
        ("pfc_storm_stop", "srv0/gpu0", (), 65535, 2_000_000_000),
    ]
    assert scenario.events[0].to_dict() == {
        "at_ns": 500_000_000, "kind": "pfc_storm_start", "link": None, "flow": None,
        "gpu": "srv3/gpu2", "priorities": [4], "quanta": 1000}
    assert scenario.events[2].to_dict()["gpu"] == "srv0/gpu0"


def test_a_storming_gpu_gets_an_agent_and_a_nic_without_flows(tmp_path):
    scenario, _ = load(tmp_path)
    configs = build_agent_configs(scenario, expand_workload(scenario), start_at_unix=100.0)
    assert set(configs) == {"srv0", "srv1", "srv3"}       # srv3 only storms
    srv3 = parse_config(configs["srv3"])                   # the agent accepts it
    gpu = scenario.topology.gpu("srv3/gpu2")
    assert [n.name for n in srv3.nics] == [gpu.intf] and not srv3.qps
    assert srv3.nics[0].pfc_priorities == (3, 4)
    assert len(configs["srv0"]["nics"]) == 1               # the flow's NIC is the stormer


@pytest.mark.parametrize("text, key, fragments", [
    (edit("gpu: srv0/gpu0}\n  - {at: 1s", "gpu: srv9/gpu0}\n  - {at: 1s"), "events[0].gpu",
     ["srv9/gpu0"]),
    (edit("gpu: srv3/gpu2", "gpu: srv*/gpu2"), "events[2].gpu", ["is a pattern"]),
    (edit("priorities: [4]", "priorities: [9]"), "events[2].priorities[0]", ["too large"]),
    (edit("priorities: [4]", "priorities: []"), "events[2].priorities", ["is empty"]),
    (edit("quanta: 1000", "quanta: 0"), "events[2].quanta", ["too small", "1 to 65535"]),
    (edit("kind: pfc_storm_start, gpu: srv0/gpu0", "kind: pfc_storm_start"), "events[1].gpu",
     ["is missing", "a pfc_storm_start event needs at, kind, gpu"]),
    (edit("kind: pfc_storm_stop, gpu: srv0/gpu0", "kind: pfc_storm_stop, gpu: srv0/gpu0, "
          "quanta: 5"), "events[0].quanta", ["unknown key", "takes at, kind, gpu"]),
    (edit("at: 2s, kind: pfc_storm_stop", "at: 900ms, kind: pfc_storm_stop"), "events[0]",
     ["srv0/gpu0 is not storming at 900ms", "earlier pfc_storm_start"]),
    (edit("at: 2s, kind: pfc_storm_stop", "at: 2s, kind: pfc_storm_start"), "events[0]",
     ["srv0/gpu0 is already storming at 2s (events[1])", "stop the storm first"]),
    (edit("at: 2s, kind", "at: 3s, kind"), "events[0].at", ["3s is not before the end"]),
])
def test_bad_storm_events_are_one_line(tmp_path, text, key, fragments):
    with pytest.raises(ScenarioError) as caught:
        load(tmp_path, text)
    message = str(caught.value)
    assert f"key '{key}': " in message and "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message


def test_pause_spread_counts_paused_queues_switches_and_nics():
    def slot(paused_s):
        return {"paused_s": paused_s, "tx_bytes": 0}
    switches = {"leaf-a": {"1": {"3": slot(2.0), "0": slot(None)}, "2": {"3": slot(0.0)},
                           "_port_drops": {}},
                "spine0": {"4": {"3": slot(0.5), "4": slot(0.25)}, "_port_drops": {}},
                "leaf-b": {"1": {"3": slot(0.0)}, "_port_drops": {}}}
    hosts = {"srv0": {"nics": {"eth0": {"paused_s": 0.0}, "eth1": {"paused_s": 1.5}}},
             "srv1": {"nics": {"eth0": {"paused_s": 0.1}}}, "srv2": {"nics": {}}}
    assert pause_spread(switches, hosts) == {"paused_ports": 3, "paused_switches": 2,
                                             "paused_hosts": 2}
