"""A job's graph planned into flows and the NIC agents' work graphs (pure: no run)."""

from __future__ import annotations

import pytest

from emulator.run.agent_config import build_agent_configs
from emulator.run.qps import plan_qps
from emulator.scenario.loader import scenario_from_dict
from emulator.scenario.workload import expand_workload, job_plans
from emulator.traffic.agent.config import parse_config

MODEL = {"layers": 4, "hidden": 256, "heads": 4, "kv_heads": 4, "ffn": 1024, "vocab": 1000}
TOPO = {"name": "r4", "kind": "rail-optimized", "servers": 4, "gpus_per_server": 2,
        "servers_per_leaf": 4, "spines": 1, "host_link": {"rate": "10Gbps", "delay": "1us"},
        "fabric_link": {"rate": "10Gbps", "delay": "1us"}}


def scenario(target="sim", time_scale=1, **job):
    spec = {"kind": "training", "id": "j", "model": MODEL, "seq": 256, "micro_batch": 1,
            "global_batch": 4, "peak_tflops": 10, "tp": 2, "pp": 2, "dp": 2, **job}
    return scenario_from_dict({"name": "t", "target": target, "duration": "10ms",
                               "time_scale": time_scale, "topology": TOPO,
                               "workload": {"jobs": [spec]}}, "<t>", ".", target)


def configs(sc):
    flows = expand_workload(sc)
    (plan,) = job_plans(sc)
    out = build_agent_configs(sc, flows, 0.0, plan_qps(sc, flows), (),
                              jobs=list(plan.works))
    return plan, out


def test_every_node_becomes_work_and_every_agent_config_parses():
    sc = scenario()
    plan, out = configs(sc)
    compute = [n for n in plan.nodes if n.kind == "compute"]
    entries = [m for cfg in out.values() for m in cfg["workload"]["messages"]]
    assert sum(1 for m in entries if m.get("op") == "compute" and
               m["delay_s"] > 0) == len(compute)
    # flows per (kind, sender, receiver): PP between the stages' GPUs, DP rings of 2
    assert {f.id.split("/")[1] for f in plan.flows} == {"pp", "dp"}
    assert all(f.size_bytes > 0 for f in plan.flows)
    for cfg in out.values():
        parsed = parse_config(cfg)
        assert all(0 <= a < i for i, m in enumerate(parsed.messages) for a in m.after)
    # each node's start and end are read from a record of its own server's agent
    tags = {m["tag"] for m in entries}
    assert all(ref[1] in tags for span in plan.spans.values() for ref in span)
    assert set(plan.spans) == {n.id for n in plan.nodes}


def test_a_live_run_slows_the_gpus_as_it_slows_the_links():
    native, _ = configs(scenario())
    slowed, out = configs(scenario(target="builtin", time_scale=10, start="1ms"))
    assert slowed.spec.compute_scale == 10 and slowed.spec.start_ns == 10_000_000
    a = {w.tag: w for w in native.works if w.op == "compute"}
    b = {w.tag: w for w in slowed.works if w.op == "compute"}
    assert a.keys() == b.keys()
    for tag, work in a.items():
        assert b[tag].duration_ns == pytest.approx(10 * work.duration_ns, abs=10)
        assert b[tag].at_ns == 10_000_000
