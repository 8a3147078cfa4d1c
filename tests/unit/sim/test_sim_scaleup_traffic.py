"""Generators and jobs over the scale-up tier (README "The AI cluster"):
with a ``scale_up`` key, incast patterns, permutations, all-to-all and a
job's TP hops include GPUs of one server, and their flows cross the
domain's scale-up switch: on sim always, live when every domain is one
server (its switch timed inside the server's agent), the same flows on
both clocks. Without the key, or live with domains of several servers,
the flows are exactly those of the file without it (GPUs of a server
skipped)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from sim_kit import run, scenario, topology

from emulator.scenario.jobs_graph import FabricCost, evaluate
from emulator.scenario.loader import scenario_from_dict
from emulator.scenario.workload import expand_workload

GENERATORS = [
    {"kind": "incast", "id": "in", "receiver": "srv0/gpu0", "senders": ["srv*/gpu*"],
     "size": "64KB"},
    {"kind": "permutation", "id": "perm", "gpus": ["srv*/gpu*"], "size": "64KB"},
    {"kind": "all-to-all", "id": "a2a", "gpus": ["srv[0-1]/gpu[0-1]"], "size": "16KB"},
]
JOB = {"kind": "training", "id": "train",
       "model": {"layers": 4, "hidden": 256, "heads": 8, "kv_heads": 8, "ffn": 1024,
                 "vocab": 4096},
       "seq": 256, "micro_batch": 1, "global_batch": 4, "tp": 4, "pp": 1, "dp": 2,
       "bucket": "1MB", "peak_tflops": 400, "efficiency": 0.4, "iterations": 1}


def _data(scale_up: bool, target: str, workload: dict[str, Any],
          servers_per_domain: int = 1) -> dict[str, Any]:
    topo = topology(2, 4, rate="400Gbps", delay="1us")
    if scale_up:
        topo["scale_up"] = {"rate": "450GBps", "hop_latency": "250ns",
                            "servers_per_domain": servers_per_domain}
    data = scenario("su-traffic", topo, copy.deepcopy(workload), duration="2ms",
                    hosts={"mtu": "4096B"},
                    switches={"buffer": "4MB",
                              "pfc": {"enabled": True, "xoff": "400KB", "xon": "320KB"}})
    data["target"] = target
    if target != "sim":
        data["time_scale"] = "auto"
    return data


def _flows(scale_up: bool, target: str, workload: dict[str, Any],
           servers_per_domain: int = 1) -> list[tuple]:
    loaded = scenario_from_dict(_data(scale_up, target, workload, servers_per_domain),
                                "<su-traffic>")
    return [(f.id, f.src, f.dst, f.size_bytes, f.start_ns) for f in expand_workload(loaded)]


def _server(gpu: str) -> str:
    return gpu.split("/")[0]


@pytest.mark.parametrize("workload", [{"generators": GENERATORS}, {"jobs": [JOB]}],
                         ids=["generators", "job"])
def test_without_a_scale_up_tier_the_flows_are_unchanged(workload):
    """No ``scale_up`` key, or live with domains of several servers (no agent
    can time them): the pairs skip each server's GPUs, the same flows
    whichever the target and whether or not the key is there."""
    plain = _flows(False, "sim", workload)
    assert plain and all(_server(src) != _server(dst) for _, src, dst, _, _ in plain)
    assert _flows(False, "builtin", workload) == plain
    assert _flows(True, "builtin", workload, servers_per_domain=2) == plain
    assert _flows(True, "bmv2", workload, servers_per_domain=2) == plain


@pytest.mark.parametrize("workload", [{"generators": GENERATORS}, {"jobs": [JOB]}],
                         ids=["generators", "job"])
@pytest.mark.parametrize("target", ["builtin", "bmv2"])
def test_live_pairs_gpus_of_one_server_as_sim_does(workload, target):
    """Domains of one server live: the agent times each server's scale-up
    switch, so generators and a job's TP make the sim's flows, those of one
    server included (sizes and starts of a job's flows are data-centre
    figures on sim, slowed by time_scale live: compared by endpoints)."""
    on_sim = _flows(True, "sim", workload)
    live = _flows(True, target, workload)
    assert any(_server(src) == _server(dst) for _, src, dst, _, _ in on_sim)
    assert [f[:3] for f in live] == [f[:3] for f in on_sim]
    if "generators" in workload:
        assert live == on_sim


def test_with_a_scale_up_tier_on_sim_generators_pair_gpus_of_one_server():
    flows = _flows(True, "sim", {"generators": GENERATORS})
    by_generator: dict[str, list[tuple[str, str]]] = {}
    for fid, src, dst, _, _ in flows:
        by_generator.setdefault(fid.rsplit("-", 1)[0], []).append((src, dst))
    # incast: the 7 other GPUs, 3 of them the receiver's server-mates
    incast = by_generator["in"]
    assert sorted(src for src, _ in incast) == sorted(
        f"srv{s}/gpu{g}" for s in range(2) for g in range(4) if (s, g) != (0, 0))
    # permutation: one to one, nobody to itself; all-to-all: every ordered pair of 4
    perm = by_generator["perm"]
    assert sorted(dst for _, dst in perm) == sorted(src for src, _ in perm)
    assert all(src != dst for src, dst in perm)
    assert len(by_generator["a2a"]) == 4 * 3
    inside = [p for p in by_generator["a2a"] if _server(p[0]) == _server(p[1])]
    assert len(inside) == 4


def test_incast_inside_a_domain_runs_over_the_scale_up_switch(tmp_path: Path):
    """3 senders of the receiver's server cross the scale-up switch, 4 of the
    other server the rail fabric; every byte is accounted for on each tier."""
    workload = {"generators": [GENERATORS[0]]}
    results = run(_data(True, "sim", workload), tmp_path)
    assert results["totals"]["flows_incomplete"] == 0 and results["totals"]["drops"] == 0
    size = 64_000
    networks = results["networks"]
    # payload on two links per flow (GPU to su0, su0 to the receiver), plus headers and ACKs
    assert 3 * size * 2 <= networks["scale-up"]["bytes"] <= 3 * size * 2 * 1.05
    # the 4 remote senders' bytes cross at least their host link and the receiver's
    assert 4 * size * 2 <= networks["backend"]["bytes"]
    fcts = {f["src"]: f["fct_s"] for f in results["flows"]}
    # at 3.6 Tb/s the server-mates are done long before the 400 Gb/s senders
    assert max(fcts[f"srv0/gpu{g}"] for g in (1, 2, 3)) < min(
        fcts[f"srv1/gpu{g}"] for g in range(4))


def test_a_jobs_tp_runs_over_the_scale_up_tier_on_sim(tmp_path: Path):
    """TP 4 inside each server: without a tier its hops are free (no flow);
    with one, every TP ring hop is a message over the scale-up switch."""
    plain = _flows(False, "sim", {"jobs": [JOB]})
    tiered = _flows(True, "sim", {"jobs": [JOB]})
    tp = [f for f in tiered if "/tp/" in f[0]]
    assert not [f for f in plain if "/tp/" in f[0]]
    assert tp and all(_server(src) == _server(dst) for _, src, dst, _, _ in tp)
    # the other flows (DP across the servers) are those of the plain run
    assert [f for f in tiered if "/tp/" not in f[0]] == plain
    results = run(_data(True, "sim", {"jobs": [JOB]}), tmp_path)
    (block,) = results["jobs"]
    assert block["completed"], block
    su = results["networks"]["scale-up"]
    assert su["bytes"] >= 2 * sum(f[3] for f in tp) and su["drops"] == 0
    # the TP hops on the critical path are named by their scale-up links
    path = block["iterations"][0]["critical_path"]
    tp_links = {link for node in path if node["kind"] == "tp" for link in node["links"]}
    assert tp_links and all("--su" in link or link.startswith("su") for link in tp_links)


def test_a_tp_only_step_over_the_scale_up_tier_is_the_graph_at_its_rate(tmp_path: Path):
    """TP 4 inside one server and nothing else: the sim's iteration is the step
    graph with TP's rings at the scale-up rate (frames of 4096 B, GPU to su0 to
    GPU: two links of 125 ns, the switch stores and forwards a frame)."""
    job = {**JOB, "dp": 1, "global_batch": 2}
    data = _data(True, "sim", {"jobs": [job]})
    loaded = scenario_from_dict(data, "<su-traffic>")
    results = run(data, tmp_path)
    (block,) = results["jobs"]
    assert block["completed"]
    scale_up = FabricCost.frames(450e9 * 8, 4096, 125e-9, links=2)
    want = evaluate(loaded.jobs[0].world(),
                    FabricCost(400e9, scale_up_free=False, scale_up=scale_up))
    free = evaluate(loaded.jobs[0].world(), FabricCost(400e9))
    print(f"\nTP-only step: {block['iteration_mean_s'] * 1e6:.2f} us [sim], graph at the "
          f"scale-up rate {want.iteration_s * 1e6:.2f} us, TP free {free.iteration_s * 1e6:.2f} us")
    assert block["iteration_mean_s"] == pytest.approx(want.iteration_s, rel=0.05)
    assert block["exposed_mean_s"]["tp"] == pytest.approx(want.exposed_s["tp"], rel=0.1)
