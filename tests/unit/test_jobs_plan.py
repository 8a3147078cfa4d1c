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


def two_rank_trace(tmp_path):
    """Rank 0 computes, sends to rank 1, both all-reduce (process group dp0)."""
    from emulator.scenario.chakra import (
        ALL_REDUCE, COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE, TraceNode,
        write_trace,
    )
    coll = {"comm_type": ALL_REDUCE, "comm_size": 1 << 16, "pg_name": "dp0"}
    write_trace(tmp_path / "r0.et", [
        TraceNode(1, "fwd", COMP_NODE, (), 100, {}),
        TraceNode(2, "send", COMM_SEND_NODE, (1,), 0,
                  {"comm_dst": 1, "comm_tag": 7, "comm_size": 4096}),
        TraceNode(3, "ar", COMM_COLL_NODE, (2,), 0, coll)])
    write_trace(tmp_path / "r1.et", [
        TraceNode(1, "recv", COMM_RECV_NODE, (), 0, {"comm_src": 0, "comm_tag": 7}),
        TraceNode(2, "fwd", COMP_NODE, (1,), 50, {}),
        TraceNode(3, "ar", COMM_COLL_NODE, (2,), 0, coll)])


def chakra(tmp_path, **keys):
    return scenario_from_dict({"name": "t", "target": "sim", "duration": "10ms",
                               "topology": TOPO, "workload": {"jobs": [
                                   {"kind": "chakra", "id": "c", "traces": ["r0.et", "r1.et"],
                                    **keys}]}}, "<t>", str(tmp_path), "sim")


def test_a_chakra_job_maps_ranks_by_file_and_plans_its_sends_and_collectives(tmp_path):
    two_rank_trace(tmp_path)
    (tmp_path / "ranks.txt").write_text("# rank 0 first\nsrv0/gpu0\nsrv2/gpu1\n")
    sc = chakra(tmp_path, mapping="ranks.txt")
    (plan,) = job_plans(sc)
    assert plan.spec.gpus == ("srv0/gpu0", "srv2/gpu1")
    flows = {f.id: (f.src, f.dst, f.size_bytes) for f in plan.flows}
    assert flows["c/pp/r0-r1"] == ("srv0/gpu0", "srv2/gpu1", 4096)
    # the all-reduce of 64 KiB over 2 ranks: a ring of 2 steps of 32 KiB each way
    assert flows["c/dp/r0-r1"][2] == flows["c/dp/r1-r0"][2] == 2 * (1 << 15)
    assert chakra(tmp_path, gpus=["srv3/gpu0", "srv1/gpu1"]).jobs[0].gpus == (
        "srv3/gpu0", "srv1/gpu1")
    # no rule: the first GPUs in topology order, here both on srv0: nothing crosses the fabric
    from emulator.scenario.errors import ScenarioError
    with pytest.raises(ScenarioError, match="makes no flows"):
        chakra(tmp_path)


@pytest.mark.parametrize("keys, key, needle", [
    ({"mapping": "none.txt"}, "mapping", "does not exist"),
    ({"mapping": "bad.txt"}, "mapping", "srv9/gpu0"),
    ({"gpus": ["srv0/gpu0"]}, "gpus", "2 ranks need 2 GPUs, 1 given"),
    ({"gpus": ["srv0/gpu0", "srv1/gpu0"], "mapping": "bad.txt"}, "mapping", "not both"),
])
def test_bad_chakra_mappings_are_one_line(tmp_path, keys, key, needle):
    from emulator.scenario.errors import ScenarioError
    two_rank_trace(tmp_path)
    (tmp_path / "bad.txt").write_text("srv0/gpu0\nsrv9/gpu0\n")
    with pytest.raises(ScenarioError) as exc:
        chakra(tmp_path, **keys)
    text = str(exc.value)
    assert f"workload.jobs[0].{key}" in text and needle in text and "\n" not in text, text


def test_tp_hops_live_are_named_by_the_scale_up_links():
    """Live, the scale-up switch is timed in the agent (no tier built): a TP
    hop inside a server is still named by the links of its domain's switch,
    not by a path through the rail fabric."""
    from emulator.measure.job_metrics import _links
    topo = {**TOPO, "scale_up": {"rate": "450GBps", "hop_latency": "250ns"}}
    spec = {"kind": "training", "id": "j", "model": MODEL, "seq": 256, "micro_batch": 1,
            "global_batch": 4, "peak_tflops": 10, "tp": 2, "pp": 1, "dp": 4}
    sc = scenario_from_dict({"name": "t", "target": "builtin", "duration": "10ms",
                             "time_scale": 10, "topology": topo,
                             "workload": {"jobs": [spec]}}, "<t>", ".", "builtin")
    assert sc.topology.domains and not sc.topology.has_scale_up_tier
    (plan,) = job_plans(sc)
    flows = {f.id: f for f in plan.flows}
    tp = [fid for fid in flows if "/tp/" in fid]
    assert tp
    for fid in tp:
        src, dst = flows[fid].src, flows[fid].dst
        switch = sc.topology.domain_of(src).name
        assert _links(sc.topology, flows, [fid]) == [f"{src}--{switch}", f"{switch}--{dst}"]
