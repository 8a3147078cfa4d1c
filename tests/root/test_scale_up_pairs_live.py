"""GPUs of one server paired live over the scale-up switch timed inside its
agent (README "The AI cluster"), against the same scenario on sim: an
incast whose senders include the receiver's server-mates, and a TP 4 × DP 2
training step whose TP rings run inside each server. Live runs at
``time_scale: auto``; compared in data-centre time. A run takes 10-30 s
here; up to three tries each for a faithful one."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from emulator.run import run_scenario
from emulator.scenario.loader import scenario_from_dict
from tests.root.host_noise import skip_if_the_host_stalled

pytestmark = pytest.mark.root

ATTEMPTS = 3
TOPOLOGY = {"name": "su-2x4", "kind": "rail-optimized", "servers": 2, "gpus_per_server": 4,
            "servers_per_leaf": 2, "spines": 1,
            "host_link": {"rate": "400Gbps", "delay": "1us"},
            "fabric_link": {"rate": "400Gbps", "delay": "1us"},
            "scale_up": {"rate": "450GBps", "hop_latency": "250ns"}}
INCAST = {"generators": [{"kind": "incast", "id": "in", "receiver": "srv0/gpu0",
                          "senders": ["srv*/gpu*"], "size": "64KB"}]}
TRAINING = {"jobs": [{"kind": "training", "id": "train",
                      "model": {"layers": 4, "hidden": 256, "heads": 8, "kv_heads": 8,
                                "ffn": 1024, "vocab": 4096},
                      "seq": 256, "micro_batch": 1, "global_batch": 4, "tp": 4, "pp": 1,
                      "dp": 2, "bucket": "1MB", "peak_tflops": 400, "efficiency": 0.4,
                      "iterations": 1}]}


def scenario(workload: dict[str, Any], target: str):
    data = {"name": "su-pairs", "target": target, "topology": copy.deepcopy(TOPOLOGY),
            "duration": "2ms", "seed": 1, "hosts": {"mtu": "4096B"},
            "switches": {"buffer": "4MB",
                         "pfc": {"enabled": True, "xoff": "400KB", "xon": "320KB"}},
            "workload": copy.deepcopy(workload)}
    if target != "sim":
        data["time_scale"] = "auto"
    return scenario_from_dict(data, "<su-pairs>", ".", target)


def sim_and_live(workload: dict[str, Any], tmp_path: Path, what: str):
    sim = run_scenario(scenario(workload, "sim"), tmp_path / "sim", progress=False)
    for attempt in range(ATTEMPTS):
        live = run_scenario(scenario(workload, "builtin"), tmp_path / f"live{attempt}",
                            progress=False)
        assert live["partial"] is False and live["errors"] == [], live["errors"]
        if live["fidelity"]["faithful"]:
            break
    skip_if_the_host_stalled(live, what)
    assert live["fidelity"]["faithful"], live["fidelity"]["reasons"]
    return sim, live


def _server(gpu: str) -> str:
    return gpu.split("/")[0]


@pytest.mark.timeout(600)
def test_an_incast_with_server_mates_live_matches_sim(tmp_path):
    sim, live = sim_and_live(INCAST, tmp_path, "incast over the scale-up switch live")
    fct_sim = {f["src"]: f["fct_dc_s"] for f in sim["flows"]}
    fct_live = {f["src"]: f["fct_dc_s"] for f in live["flows"]}
    assert fct_live.keys() == fct_sim.keys()
    mates = [g for g in fct_sim if _server(g) == "srv0"]
    assert sorted(mates) == ["srv0/gpu1", "srv0/gpu2", "srv0/gpu3"]
    print("\nincast FCTs [data-centre time], live vs sim:")
    for gpu in sorted(fct_sim):
        print(f"  {gpu}: {fct_live[gpu] * 1e6:.2f} us vs {fct_sim[gpu] * 1e6:.2f} us")
    for gpu in fct_sim:
        # same-server flows: about 0.94 us, timed by the agent's switch; the
        # others cross the rail fabric (5.4-12.2 us)
        assert fct_live[gpu] == pytest.approx(fct_sim[gpu], rel=0.05), gpu
    su_sim, su_live = sim["networks"]["scale-up"], live["networks"]["scale-up"]
    assert su_live["bytes"] == pytest.approx(su_sim["bytes"], rel=0.01)
    assert su_live["bytes"] >= 3 * 64_000 * 2 and su_live["drops"] == 0


@pytest.mark.timeout(600)
def test_a_tp4_dp2_training_step_live_matches_sim(tmp_path):
    sim, live = sim_and_live(TRAINING, tmp_path, "TP over the scale-up switch live")
    tp_live = [f for f in live["flows"] if "/tp/" in f["id"]]
    tp_sim = [f for f in sim["flows"] if "/tp/" in f["id"]]
    assert tp_live and len(tp_live) == len(tp_sim)
    assert all(_server(f["src"]) == _server(f["dst"]) for f in tp_live)
    (on_sim,), (on_live,) = sim["jobs"], live["jobs"]
    assert on_live["completed"] and on_sim["completed"]
    print(f"\nTP4 x DP2 step: {on_live['iteration_mean_dc_s'] * 1e6:.2f} us [live, data-centre "
          f"time] vs {on_sim['iteration_mean_dc_s'] * 1e6:.2f} us [sim]")
    assert on_live["iteration_mean_dc_s"] == pytest.approx(on_sim["iteration_mean_dc_s"],
                                                           rel=0.10)
    su_sim, su_live = sim["networks"]["scale-up"], live["networks"]["scale-up"]
    assert su_live["bytes"] == pytest.approx(su_sim["bytes"], rel=0.01)
    assert su_live["drops"] == 0
    # the TP hops on the live critical path are named by their scale-up links
    path = on_live["iterations"][0]["critical_path"]
    tp_links = {link for node in path if node["kind"] == "tp" for link in node["links"]}
    assert tp_links and all("--su" in link or link.startswith("su") for link in tp_links)
