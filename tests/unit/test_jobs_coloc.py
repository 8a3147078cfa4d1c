"""Colocated serving: each GPU prefills and decodes its own requests on one
stream, prefill first; the KV cache never leaves it; request r on GPU r mod N;
``hbm_kv`` holds newcomers in the queue; the pools' keys."""

from __future__ import annotations

import random

import pytest

from emulator.run.agent_config import agent_servers, build_agent_configs
from emulator.run.qps import plan_qps
from emulator.scenario.errors import ScenarioError
from emulator.scenario.jobs_graph import evaluate
from emulator.scenario.jobs_model import Gpu, ModelShape
from emulator.scenario.jobs_serve import Request, ServingJob, serve_graph
from emulator.scenario.loader import scenario_from_dict
from emulator.scenario.workload import expand_workload, job_plans
from emulator.traffic.agent.config import parse_config

# 1 KiB of KV a token: 2 x 2 layers x 2 KV heads x 64 x 2 B
MODEL = ModelShape(layers=2, hidden=256, heads=4, kv_heads=2, ffn=1024, vocab=1000)
KIB = 1024


def job(requests, *, gpus=1, max_batch=4, hbm_kv=None, colocated=True) -> ServingJob:
    """HBM at 1 GB/s: a decode step (~5 ms, the weights) outlasts a prefill of 100
    tokens (~0.4 ms)."""
    return ServingJob(MODEL, Gpu(1e12, 1.0), 1e9, gpus, gpus, tuple(requests), max_batch,
                      hbm_kv, colocated=colocated)


def no_network(node) -> float:
    raise AssertionError(f"{node.id} would cross the fabric")


def ends(j: ServingJob) -> dict[str, float]:
    """Every node's end on the graph's own clock (compute only: no cost asked)."""
    return evaluate(serve_graph(j), no_network).end_s


def test_a_lone_request_is_its_prefill_then_its_steps_on_its_own_gpu():
    j = job([Request(0.0, 100, 10)])
    nodes = serve_graph(j)
    assert {n.kind for n in nodes} == {"compute"} and {n.stream for n in nodes} == {"g0"}
    end = ends(j)
    prefill, step = j.prefill_s(100), j.step_s(100)
    assert step == pytest.approx(j.batch_step_s([100]))
    assert end["i0/r0/first"] == pytest.approx(prefill + step, rel=1e-12)
    assert end["i0/r0/rest"] == pytest.approx(prefill + 10 * step, rel=1e-12)
    (a,) = j.admissions
    assert (a.admitted_s, a.ready_s, a.offloaded) == (0.0, pytest.approx(prefill), False)
    assert a.done_s == pytest.approx(end["i0/r0/rest"])


def test_a_prefill_delays_the_running_batch_s_decode_steps():
    """r0 at 0; r1 arrives 2.5 steps after r0's prefill. Prefill first: after r0's
    3rd token the GPU prefills r1 (P) while r0 waits, then the two decode together
    (steps S2); r0 has 5 tokens left, r1 then 3 alone."""
    p, s1 = job([]).prefill_s(100), job([]).step_s(100)
    s2 = job([]).batch_step_s([100, 100])
    assert s2 == pytest.approx(job([]).step_s(100, 2)) and s1 < s2 < 2 * s1
    j = job([Request(0.0, 100, 8), Request(p + 2.5 * s1, 100, 8)], max_batch=2)
    end = ends(j)
    assert end["i0/r0/first"] == pytest.approx(p + s1)
    assert end["i0/r1/prefill"] == pytest.approx(2 * p + 3 * s1)
    assert end["i0/r1/first"] == pytest.approx(2 * p + 3 * s1 + s2)
    assert end["i0/r0/rest"] == pytest.approx(2 * p + 3 * s1 + 5 * s2)
    assert end["i0/r1/rest"] == pytest.approx(2 * p + 3 * s1 + 5 * s2 + 3 * s1)
    tpot = (end["i0/r0/rest"] - end["i0/r0/first"]) / 7
    assert tpot == pytest.approx((p + 2 * s1 + 5 * s2) / 7)
    assert tpot > s1  # alone, r0's TPOT would be one step
    alone = ends(job([Request(0.0, 100, 8)], max_batch=2))
    assert (alone["i0/r0/rest"] - alone["i0/r0/first"]) / 7 == pytest.approx(s1)
    # the plan's admissions say the same; the prefill sits between decode nodes on g0
    assert [a.done_s for a in j.admissions] == pytest.approx([end["i0/r0/rest"],
                                                             end["i0/r1/rest"]])
    order = [n.id for n in serve_graph(j)]
    i = order.index("i0/r1/prefill")
    assert order[i - 1].startswith("i0/g0/d") and order[i + 1].startswith("i0/g0/d")


def test_a_full_batch_holds_the_next_prefill_until_a_request_ends():
    p, s1 = job([]).prefill_s(100), job([]).step_s(100)
    j = job([Request(0.0, 100, 4), Request(0.0, 100, 4)], max_batch=1)
    end = ends(j)
    assert end["i0/r1/prefill"] == pytest.approx(end["i0/r0/rest"] + p)
    assert end["i0/r0/rest"] == pytest.approx(p + 4 * s1)


def test_request_r_runs_on_gpu_r_mod_n_and_nothing_crosses_the_fabric():
    rng = random.Random(5)
    at, requests = 0.0, []
    for _ in range(40):
        at += rng.expovariate(1 / 2e-3)
        requests.append(Request(at, rng.randint(20, 300), rng.randint(1, 12)))
    j = job(requests, gpus=3, max_batch=4)
    nodes = serve_graph(j)
    assert not [n for n in nodes if n.kind != "compute"]
    for r in range(len(requests)):
        for part in ("prefill", "first", "rest"):
            (n,) = [n for n in nodes if n.id == f"i0/r{r}/{part}"]
            assert (n.rank, n.stream) == (r % 3, f"g{r % 3}")
    result = evaluate(nodes, no_network)
    start, end = result.start_s, result.end_s
    for g in range(3):  # one thing at a time: a GPU's nodes never overlap
        mine = [n for n in nodes if n.stream == f"g{g}"]
        spans = sorted((start[n.id], end[n.id]) for n in mine)
        assert len(mine) > 3 * len(requests) // 3
        assert all(a[1] <= b[0] + 1e-12 for a, b in zip(spans, spans[1:]))
    for r, req in enumerate(requests):
        assert end[f"i0/r{r}/prefill"] >= req.arrival_s + j.prefill_s(req.prompt) - 1e-12
        assert end[f"i0/r{r}/rest"] >= end[f"i0/r{r}/first"] >= end[f"i0/r{r}/prefill"]
        assert j.admissions[r].done_s == pytest.approx(end[f"i0/r{r}/rest"])
    with pytest.raises(ValueError, match="same GPUs"):
        ServingJob(MODEL, Gpu(1e12), 1e9, 2, 3, tuple(requests), colocated=True)


def test_hbm_kv_holds_newcomers_in_the_queue_and_nothing_is_offloaded():
    """Room for 2 reservations (110 KiB each), batch 4, 3 requests at once: the third
    is prefilled only when the first two have ended."""
    requests = [Request(0.0, 100, 10)] * 3
    j = job(requests, hbm_kv=2 * 110 * KIB)
    end = ends(j)
    assert not any(a.offloaded for a in j.admissions)
    assert end["i0/r2/prefill"] == pytest.approx(end["i0/r0/rest"] + j.prefill_s(100))
    ample = ends(job(requests))
    assert ample["i0/r2/prefill"] == pytest.approx(3 * j.prefill_s(100))
    with pytest.raises(ValueError, match="cannot hold request 0's reservation alone"):
        _ = job(requests, hbm_kv=109 * KIB).admissions


# -- the scenario keys, the flows and the agents ---------------------------------------

TOPO = {"name": "r2", "kind": "rail-optimized", "servers": 2, "gpus_per_server": 2,
        "servers_per_leaf": 2, "spines": 1, "host_link": {"rate": "100Gbps", "delay": "1us"},
        "fabric_link": {"rate": "100Gbps", "delay": "1us"}}
POOL = ["srv0/gpu0", "srv1/gpu0"]


def serving(**kw) -> dict:
    return {"kind": "inference", "id": "s",
            "model": {"layers": 2, "hidden": 256, "heads": 4, "kv_heads": 2, "ffn": 1024,
                      "vocab": 1000},
            "prefill": POOL, "decode": POOL, "requests": 4, "prompt": 100, "output": 10,
            "peak_tflops": 1, "efficiency": 1, "hbm_tb_per_s": 0.001, "max_batch": 4, **kw}


def load(job_: dict, flows: tuple = ()):
    return scenario_from_dict({"name": "t", "target": "sim", "duration": "1s",
                               "topology": TOPO,
                               "workload": {"jobs": [job_], "flows": list(flows)}},
                              "<t>", ".", "sim")


def test_the_same_pools_are_colocated_with_no_flows_and_an_agent_per_server():
    sc = load(serving(decode=list(reversed(POOL))))  # the same GPUs, in any order
    spec = sc.jobs[0]
    assert spec.gpus == tuple(POOL) and spec.serving.colocated and spec.storage == ()
    assert spec.serving.prefill == spec.serving.decode == 2
    (plan,) = job_plans(sc)
    assert list(plan.flows) == []
    flows = expand_workload(sc)
    qps = plan_qps(sc, flows)
    assert agent_servers(sc, qps) == ["srv0", "srv1"]
    configs = build_agent_configs(sc, flows, 0.0, qps, (), jobs=list(plan.works))
    assert set(configs) == {"srv0", "srv1"}
    for server, cfg in configs.items():
        parse_config(cfg)
        assert len(cfg["nics"]) == 1  # an agent on one NIC, for the compute alone
        tags = [m["tag"] for m in cfg["workload"]["messages"]]
        r = int(server[-1])  # srv0: requests 0 and 2, srv1: 1 and 3
        assert f"s/i0/r{r}/prefill" in tags and f"s/i0/r{r + 2}/rest" in tags
        assert all(m["op"] == "compute" for m in cfg["workload"]["messages"])
    assert "colocated" in spec.to_dict()["inference"] and spec.to_dict()["inference"][
        "colocated"] is True


def test_disaggregated_pools_keep_their_hand_off():
    sc = load(serving(decode=["srv1/gpu1"], prefill=["srv0/gpu0"]))
    assert not sc.jobs[0].serving.colocated
    (plan,) = job_plans(sc)
    assert {f.id.split("/")[1] for f in plan.flows} == {"kv"}


@pytest.mark.parametrize("keys, key, needle", [
    ({"decode": ["srv0/gpu0", "srv1/gpu1"]}, "decode",
     "GPU srv0/gpu0 is in both pools but srv1/gpu0 only in prefill"),
    ({"decode": ["srv0/gpu0"]}, "decode", "srv1/gpu0 only in prefill"),
    ({"stripe_rails": True}, "stripe_rails", "colocated pools hand no KV cache"),
    ({"hbm_kv": "100KiB"}, "hbm_kv", "cannot hold request 0's reservation alone"),
])
def test_bad_colocated_pools_are_one_line_naming_the_key(keys, key, needle):
    with pytest.raises(ScenarioError) as exc:
        load(serving(**keys))
    text = str(exc.value)
    assert f"key 'workload.jobs[0].{key}'" in text and needle in text and "\n" not in text, text


def test_the_summary_says_colocated():
    from rich.console import Console

    from emulator.measure.summary import jobs_table
    serving_ = {"requests": 8, "completed": 8, "ttft_p50_s": 0.011, "ttft_p99_s": 0.013,
                "tpot_mean_s": 1e-4, "kv_share_of_ttft": 0.0, "mode": "colocated",
                "kv_offload": {"offloaded": 0}}
    job_ = {"id": "serve", "kind": "inference", "ranks": 2, "iterations_done": 1,
            "iterations_planned": 1, "completed": True, "serving": serving_}
    console = Console(width=200, record=True)
    console.print(jobs_table([job_]))
    text = console.export_text()
    assert "colocated" in text and "KV 0% of TTFT" not in text


def test_a_live_run_slows_the_colocated_gpus_compute_and_arrivals_with_the_links():
    """target builtin, time_scale 1000: both servers get an agent (no flow reaches
    either), whose prefills take 1000 x as long and start not before 1000 x the
    arrival; the configs parse."""
    sc = scenario_from_dict({"name": "t", "target": "builtin", "duration": "1s",
                             "time_scale": 1000, "topology": TOPO,
                             "workload": {"jobs": [serving(interval="1ms")]}},
                            "<t>", ".", "builtin")
    (plan,) = job_plans(sc)
    assert plan.spec.compute_scale == sc.time_scale == 1000 and list(plan.flows) == []
    flows = expand_workload(sc)
    qps = plan_qps(sc, flows)
    assert agent_servers(sc, qps) == ["srv0", "srv1"]
    configs = build_agent_configs(sc, flows, 0.0, qps, (), jobs=list(plan.works))
    job_ = sc.jobs[0].serving
    for cfg in configs.values():
        parse_config(cfg)
    mine = {m["tag"]: m for m in configs["srv1"]["workload"]["messages"]}
    for r in (1, 3):
        prefill = mine[f"s/i0/r{r}/prefill"]
        assert prefill["delay_s"] == pytest.approx(1000 * job_.prefill_s(100), rel=1e-6)
        assert prefill["at_s"] == pytest.approx(1000 * job_.requests[r].arrival_s, abs=1e-6)
