"""KV caches in the decode GPUs' HBM: reservations on admission, strict FCFS,
offload to storage exactly when a reservation does not fit, the fetch before
the first token; the graph and flows that carry it; the ``hbm_kv`` key."""

from __future__ import annotations

import random
import time

import pytest

from emulator.run.agent_config import build_agent_configs
from emulator.run.qps import plan_qps
from emulator.scenario.errors import ScenarioError
from emulator.scenario.jobs_graph import FabricCost, evaluate
from emulator.scenario.jobs_kv import HBM_BYTES, default_hbm_kv
from emulator.scenario.jobs_model import PRESETS, Gpu, ModelShape
from emulator.scenario.jobs_serve import Request, ServingJob, serve_graph
from emulator.scenario.loader import scenario_from_dict
from emulator.scenario.workload import expand_workload, job_plans
from emulator.traffic.agent.config import parse_config

# 1 KiB of KV a token: 2 x 2 layers x 2 KV heads x 64 x 2 B
MODEL = ModelShape(layers=2, hidden=256, heads=4, kv_heads=2, ffn=1024, vocab=1000)
KIB = 1024
RATE_BPS, LATENCY_S = 100e9, 4e-6


def job(requests, hbm_kv, *, prefill=1, decode=1, max_batch=4, **kw) -> ServingJob:
    """HBM at 1 GB/s: a decode step reads ~5 MB of weights in ~5 ms, so a 10-token
    decode (50 ms) outlasts many prefills (0.4 ms for 100 tokens)."""
    return ServingJob(MODEL, Gpu(1e12, 1.0), 1e9, prefill, decode, tuple(requests), max_batch,
                      hbm_kv, RATE_BPS, RATE_BPS, LATENCY_S, **kw)


def at_once(*lengths) -> list[Request]:
    return [Request(0.0, prompt, output) for prompt, output in lengths]


def test_kv_bytes_and_the_reservation_are_prompt_then_prompt_plus_output():
    j = job(at_once((100, 10)), None)
    assert j.kv_bytes(1) == KIB
    (a,) = j.admissions
    assert a.reserved_bytes == 110 * KIB and not a.offloaded
    # the default: 90 % of 80 GB less the weights the decode GPU holds (the whole model)
    assert j.hbm_kv == int(0.9 * HBM_BYTES) - MODEL.params * 2 == default_hbm_kv(
        j.weight_bytes)
    eight_b = ServingJob(PRESETS["llama3-8b"], Gpu(1e15), 3e12, 1, 1, tuple(at_once((8, 8))))
    assert eight_b.hbm_kv == pytest.approx(72e9 - 16.06e9, rel=1e-3)


@pytest.mark.parametrize("room, offloaded", [(3 * 110 * KIB, False), (3 * 110 * KIB - 1, True),
                                             (2 * 110 * KIB, True)])
def test_a_cache_is_offloaded_exactly_when_its_reservation_does_not_fit(room, offloaded):
    """Three requests at once on one prefill and one decode GPU: the third's prefill
    ends while the first two decode; it goes to the decode GPU iff 3 reservations fit."""
    j = job(at_once((100, 10), (100, 10), (100, 10)), room)
    a = j.admissions
    assert [x.offloaded for x in a] == [False, False, offloaded]
    prefill_s = j.prefill_s(100)
    assert [x.ready_s for x in a] == pytest.approx([prefill_s, 2 * prefill_s, 3 * prefill_s])
    assert a[0].admitted_s == a[0].ready_s and a[1].admitted_s == a[1].ready_s
    if not offloaded:
        assert a[2].admitted_s == a[2].ready_s
        return
    # it waits for the first end: both others end about together; the first ends first
    assert a[2].admitted_s == a[0].done_s and a[2].waits_for == (0,)
    assert a[2].admitted_s > a[2].ready_s


def test_admission_is_strict_fcfs_a_small_request_does_not_overtake_a_waiting_one():
    """r1 (310 KiB) does not fit beside r0 (110 KiB) in 320 KiB; r2 (20 KiB) would, but
    r1 waits ahead of it: r2 is offloaded too and admitted only after r1, when r1 ends
    (r1 + r2 = 330 KiB)."""
    room = 320 * KIB
    a = job(at_once((100, 10), (300, 10), (10, 10)), room).admissions
    assert [x.offloaded for x in a] == [False, True, True]
    assert a[1].admitted_s == a[0].done_s
    assert a[2].admitted_s == a[1].done_s > a[1].admitted_s
    # without r1 ahead of it, r2 goes straight in
    b = job(at_once((100, 10), (10, 10)), room).admissions
    assert [x.offloaded for x in b] == [False, False]


def test_reservations_never_exceed_hbm_kv_and_offloaded_requests_keep_their_order():
    """Random arrivals and lengths over 2 prefill and 3 decode GPUs: at every moment
    each decode GPU's reservations fit; no request is admitted while an earlier one
    of its GPU waits; offloaded requests are admitted in request order."""
    rng = random.Random(7)
    at, requests = 0.0, []
    for _ in range(300):
        at += rng.expovariate(1 / 5e-3)
        requests.append(Request(at, rng.randint(20, 400), rng.randint(2, 30)))
    shares = []
    for room in (500 * KIB, 1500 * KIB, 4000 * KIB):
        j = job(requests, room, prefill=2, decode=3, max_batch=8)
        plan = j.admissions
        assert plan[0].offloaded is False
        for d in range(3):
            mine = [plan[r] for r in range(d, len(requests), 3)]
            for x in mine:  # the reservations held at each admission, and later ones
                held = sum(y.reserved_bytes for y in mine
                           if y.admitted_s <= x.admitted_s < y.done_s)
                assert held <= room
            waiting = [x for x in mine if x.offloaded]
            assert all(a.admitted_s <= b.admitted_s for a, b in zip(waiting, waiting[1:]))
            for x in mine:
                if not x.offloaded:
                    assert not any(y.request < x.request and y.ready_s <= x.ready_s
                                   < y.admitted_s for y in waiting)
        shares.append(sum(x.offloaded for x in plan) / len(plan))
    # more room, fewer offloads (here 98 %, 87 %, 3 %)
    assert 1 > shares[0] > shares[1] > shares[2] > 0


def test_the_graph_offloads_then_fetches_before_the_first_token():
    j = job(at_once((100, 10), (100, 10), (100, 10), (100, 10)), 2 * 110 * KIB)
    a = j.admissions
    assert [x.offloaded for x in a] == [False, False, True, True]
    nodes = {n.id: n for n in serve_graph(j, storage=2)}
    # ranks: prefill 0, decode 1, storage endpoints 2 and 3 taken in turn
    assert nodes["i0/r0/kv"].kind == "kv" and "i0/r2/kv" not in nodes
    for r, store in ((2, 2), (3, 3)):
        pre = f"i0/r{r}/"
        off, req, fetch = nodes[pre + "offload"], nodes[pre + "fetch-req"], nodes[pre + "fetch"]
        assert (off.kind, off.rank, off.peer, off.size_bytes) == ("kv-offload", 0, store,
                                                                  100 * KIB)
        assert off.deps == (pre + "prefill",)
        # the read: a request from the decode GPU, once the room is free and not before
        # the prefill ends; then the cache from storage once it is there
        assert (req.kind, req.rank, req.peer, req.size_bytes) == ("kv-fetch", 1, store, 1)
        assert req.deps == tuple(f"i0/r{w}/rest" for w in a[r].waits_for)
        assert req.release_s == a[r].ready_s
        assert (fetch.kind, fetch.rank, fetch.peer, fetch.size_bytes) == ("kv-fetch", store, 1,
                                                                          100 * KIB)
        assert set(fetch.deps) == {pre + "offload", pre + "fetch-req"}
        assert nodes[pre + "first"].deps == (pre + "fetch",)
    # the requests that fit are planned exactly as with ample HBM
    ample = {n.id: n for n in serve_graph(job(at_once(*[(100, 10)] * 4), None))}
    assert [n for nid, n in nodes.items() if nid.startswith(("i0/r0/", "i0/r1/"))] == [
        n for nid, n in ample.items() if nid.startswith(("i0/r0/", "i0/r1/"))]
    assert not any(n.kind.startswith("kv-") for n in ample.values())
    # FCFS: the decode GPU's reads go one after another on one stream
    assert nodes["i0/r2/fetch-req"].stream == nodes["i0/r3/fetch-req"].stream
    with pytest.raises(ValueError, match="no storage nodes"):
        serve_graph(j)


def test_ttft_includes_the_fetch_and_the_wait_for_room():
    """On the graph's clock at the rates the plan assumed, each request ends when the
    plan says; an offloaded request's first token comes a fetch after its room frees."""
    requests = at_once((100, 10), (100, 10), (100, 10))
    ample, tight = job(requests, None), job(requests, 2 * 110 * KIB)
    cost = FabricCost(RATE_BPS, LATENCY_S)
    runs = {}
    for name, j in (("ample", ample), ("tight", tight)):
        result = evaluate(serve_graph(j, storage=1), cost)
        runs[name] = result
        for x in j.admissions:
            assert result.end_s[f"i0/r{x.request}/rest"] == pytest.approx(x.done_s, abs=1e-9)
    end, start = runs["tight"].end_s, runs["tight"].start_s
    fetch_s = 100 * KIB * 8 / RATE_BPS + LATENCY_S
    step = tight.step_s(100, 3)
    assert start["i0/r2/fetch-req"] == pytest.approx(end["i0/r0/rest"])
    assert end["i0/r2/fetch"] - start["i0/r2/fetch-req"] == pytest.approx(
        fetch_s + 8 / RATE_BPS + LATENCY_S)
    assert end["i0/r2/first"] == pytest.approx(end["i0/r2/fetch"] + step)
    ttft = {name: r.end_s["i0/r2/first"] for name, r in runs.items()}
    assert ttft["tight"] - ttft["ample"] > end["i0/r0/rest"] - start["i0/r2/offload"]
    assert runs["tight"].exposed_s["kv-fetch"] >= 0.0


@pytest.mark.parametrize("gap_s", [1e-2, 5e-5], ids=["half-offloaded", "overloaded"])
def test_twenty_thousand_requests_are_planned_in_seconds(gap_s):
    """llama3-8b on 16 + 16 GPUs with 8 GB of KV room each: a 10 ms mean gap offloads
    about half the caches; a 50 us one overloads the decode GPUs (the FCFS queue never
    empties: nearly all are offloaded, the most work for the plan)."""
    rng = random.Random(3)
    at, requests = 0.0, []
    for _ in range(20_000):
        at += rng.expovariate(1 / gap_s)
        requests.append(Request(at, rng.randint(512, 4096), rng.randint(64, 512)))
    j = ServingJob(PRESETS["llama3-8b"], Gpu(989e12, 0.5), 3.35e12, 16, 16, tuple(requests),
                   64, 8 * 10**9, 400e9, 200e9, 4e-6)
    began = time.process_time()
    plan = j.admissions
    spent = time.process_time() - began
    offloaded = sum(x.offloaded for x in plan)
    print(f"\n20,000 requests, {offloaded} offloaded: admissions planned in {spent:.2f} s [cpu]")
    assert 0 < offloaded < len(plan) and spent < 15
    if gap_s > 1e-3:
        assert 0.3 < offloaded / len(plan) < 0.7


# -- the fabric: flows over the storage network, and the job's keys --------------------

TOPO = {"name": "r2s", "kind": "rail-optimized", "servers": 2, "gpus_per_server": 2,
        "servers_per_leaf": 2, "spines": 1, "host_link": {"rate": "100Gbps", "delay": "1us"},
        "fabric_link": {"rate": "100Gbps", "delay": "1us"},
        "storage": {"nodes": 2, "link": {"rate": "50Gbps", "delay": "1us"}}}


def serving(**kw) -> dict:
    return {"kind": "inference", "id": "s",
            "model": {"layers": 2, "hidden": 256, "heads": 4, "kv_heads": 2, "ffn": 1024,
                      "vocab": 1000},
            "prefill": ["srv0/gpu0"], "decode": ["srv1/gpu0"], "requests": 4, "prompt": 100,
            "output": 10, "peak_tflops": 1, "efficiency": 1, "hbm_tb_per_s": 0.001,
            "max_batch": 4, **kw}


def load(job_: dict, topology: dict | None = None):
    return scenario_from_dict({"name": "t", "target": "sim", "duration": "1s",
                               "topology": topology or TOPO, "workload": {"jobs": [job_]}},
                              "<t>", ".", "sim")


@pytest.mark.parametrize("network, gpu_nic", [("separate", "srv{s}/st0"),
                                              ("backend", "srv{s}/gpu0")])
def test_offloads_and_fetches_cross_the_storage_network_between_the_right_agents(network,
                                                                                  gpu_nic):
    sc = load(serving(hbm_kv="225KiB"), {**TOPO, "storage": {**TOPO["storage"],
                                                            "network": network}})
    spec = sc.jobs[0]
    assert spec.storage == ("stor0/nic0", "stor1/nic0")
    assert [a.offloaded for a in spec.serving.admissions] == [False, False, True, True]
    (plan,) = job_plans(sc)
    ends = {f.id.split("/", 1)[1]: (f.src, f.dst, f.size_bytes) for f in plan.flows}
    prefill, decode = gpu_nic.format(s=0), gpu_nic.format(s=1)
    assert ends == {
        "kv/r0-r1": ("srv0/gpu0", "srv1/gpu0", 2 * 100 * KIB),
        "kv-offload/r0-r2": (prefill, "stor0/nic0", 100 * KIB),
        "kv-offload/r0-r3": (prefill, "stor1/nic0", 100 * KIB),
        "kv-fetch/r1-r2": (decode, "stor0/nic0", 1), "kv-fetch/r1-r3": (decode, "stor1/nic0", 1),
        "kv-fetch/r2-r1": ("stor0/nic0", decode, 100 * KIB),
        "kv-fetch/r3-r1": ("stor1/nic0", decode, 100 * KIB)}
    flows = expand_workload(sc)
    configs = build_agent_configs(sc, flows, 0.0, plan_qps(sc, flows), (), jobs=list(plan.works))
    assert set(configs) == {"srv0", "srv1", "stor0", "stor1"}
    for cfg in configs.values():
        parse_config(cfg)
    # the storage node sends the cache once the offload and the read request are there
    mine = configs["stor0"]["workload"]["messages"]
    (fetch,) = [m for m in mine if m["tag"] == "s/i0/r2/fetch"]
    assert {mine[i]["tag"] for i in fetch["after"]} == {"s/i0/r2/offload/rx",
                                                        "s/i0/r2/fetch-req/rx"}
    # the read leaves the decode server not before the prefill ends (on the plan's clock)
    (read,) = [m for m in configs["srv1"]["workload"]["messages"]
               if m["tag"] == "s/i0/r2/fetch-req"]
    assert read["at_s"] == pytest.approx(spec.serving.admissions[2].ready_s, abs=1e-9)


def test_a_job_that_fits_makes_no_storage_flows_and_needs_no_storage():
    topology = {k: v for k, v in TOPO.items() if k != "storage"}
    sc = load(serving(), topology)
    assert sc.jobs[0].storage == () and not any(a.offloaded for a in
                                                sc.jobs[0].serving.admissions)
    (plan,) = job_plans(sc)
    assert {f.id.split("/")[1] for f in plan.flows} == {"kv"}


@pytest.mark.parametrize("keys, topology, needle", [
    ({"hbm_kv": 0}, None, "not a size > 0"),
    ({"hbm_kv": "lots"}, None, "hbm_kv is the HBM a decode GPU has for KV caches"),
    ({"hbm_kv": 1.5}, None, "use a size, the HBM a decode GPU has for KV caches"),
    ({"hbm_kv": "100KiB"}, None, "cannot hold request 0's reservation alone: 100 + 10 tokens"),
    ({"model": "llama3-70b"}, None, "weights leave nothing"),
    ({"hbm_kv": "225KiB"}, "no storage", "2 of 4 KV caches do not fit hbm_kv 230400 B"),
])
def test_bad_hbm_kv_is_one_line_naming_the_key(keys, topology, needle):
    topo = {k: v for k, v in TOPO.items() if k != "storage"} if topology else None
    with pytest.raises(ScenarioError) as exc:
        load(serving(**keys), topo)
    text = str(exc.value)
    assert "key 'workload.jobs[0].hbm_kv'" in text and needle in text and "\n" not in text, text


def test_the_summary_says_how_many_caches_went_to_storage():
    from rich.console import Console

    from emulator.measure.summary import jobs_table
    serving_ = {"requests": 8, "completed": 8, "ttft_p50_s": 0.011, "ttft_p99_s": 0.013,
                "tpot_mean_s": 1e-4, "kv_share_of_ttft": 0.22, "kv_offload": {"offloaded": 4}}
    job_ = {"id": "serve", "kind": "inference", "ranks": 4, "iterations_done": 1,
            "iterations_planned": 1, "completed": True, "serving": serving_}
    console = Console(width=200, record=True)
    console.print(jobs_table([job_]))
    assert "KV 22% of TTFT, 4 offloaded to storage" in console.export_text()
    console = Console(width=200, record=True)
    console.print(jobs_table([{**job_, "serving": {**serving_, "kv_offload": {"offloaded": 0}}}]))
    assert "offloaded" not in console.export_text()


def test_the_shipped_scenario_plans_for_a_live_run_with_the_reads_slowed_too():
    """kv-offload.yaml on builtin with time_scale auto: every agent's config (the
    storage nodes' too) parses, and a fetch's read is released at the prefill's end
    slowed as the GPUs are."""
    from pathlib import Path

    import yaml
    path = Path(__file__).resolve().parents[2] / "scenarios" / "kv-offload.yaml"
    data = {**yaml.safe_load(path.read_text()), "time_scale": "auto"}
    sc = scenario_from_dict(data, str(path), path.parent, "builtin")
    (plan,) = job_plans(sc)
    k = plan.spec.compute_scale
    assert sc.target == "builtin" and k == sc.time_scale > 1
    flows = expand_workload(sc)
    configs = build_agent_configs(sc, flows, 0.0, plan_qps(sc, flows), (), jobs=list(plan.works))
    assert set(configs) == {"srv0", "srv1", "stor0", "stor1"}
    for cfg in configs.values():
        parse_config(cfg)
    reads = {m["tag"]: m["at_s"] for m in configs["srv1"]["workload"]["messages"]
             if m["tag"].endswith("/fetch-req")}
    plan_ = plan.spec.serving.admissions
    assert reads == pytest.approx({f"serve/i0/r{r}/fetch-req": plan_[r].ready_s * k
                                   for r in (4, 5, 6, 7)})
