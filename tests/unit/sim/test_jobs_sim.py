"""Jobs on the virtual clock: the training step the agents run against the
step graph's arithmetic, DP overlap and its knee, placement, Chakra traces;
serving: the KV hand-off on a congested spine, striping, batching, and KV
caches offloaded to storage when the decode GPUs' HBM is full.

Fabric: 4 servers x 2 GPUs, one leaf per rail, one spine, 1 us links; MTU
1024 (frames of 1082 B). A tiny model (4 layers, hidden 256) at 10 TFLOP/s
x 0.5 keeps each run to a few thousand frames (2-6 s [wall] each here)."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from emulator.run.sim import run_sim
from emulator.scenario import load_scenario
from emulator.scenario.chakra import (
    ALL_REDUCE, ALL_TO_ALL, COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE, TraceNode,
    write_trace,
)
from emulator.scenario.errors import ScenarioError
from emulator.scenario.jobs_graph import FabricCost, evaluate, predecessors
from emulator.scenario.loader import scenario_from_dict

MTU, DELAY_S = 1024, 1e-6
MODEL = {"layers": 4, "hidden": 256, "heads": 4, "kv_heads": 4, "ffn": 1024, "vocab": 1000}


def topology(rate: str = "10Gbps", storage: dict | None = None) -> dict:
    """With ``storage``, the topology's storage key (storage nodes, a storage fabric)."""
    return {"name": "r4", "kind": "rail-optimized", "servers": 4, "gpus_per_server": 2,
            "servers_per_leaf": 4, "spines": 1, "host_link": {"rate": rate, "delay": "1us"},
            "fabric_link": {"rate": rate, "delay": "1us"},
            **({"storage": storage} if storage else {})}


def training(**kw) -> dict:
    return {"kind": "training", "id": "j", "model": MODEL, "seq": 256, "micro_batch": 1,
            "global_batch": 4, "peak_tflops": 10, "iterations": 2, **kw}


def load(job: dict, rate: str = "10Gbps", duration: str = "20ms", base: str = ".",
         flows: tuple = (), storage: dict | None = None):
    return scenario_from_dict({"name": "t", "target": "sim", "duration": duration,
                               "topology": topology(rate, storage),
                               "workload": {"jobs": [job], "flows": list(flows)}},
                              "<t>", base, "sim")


def run(job: dict, rate: str = "10Gbps", duration: str = "20ms", base: str = ".",
        flows: tuple = (), storage: dict | None = None, whole: bool = False):
    """The scenario and its job's results (``whole``: all of results.json)."""
    scenario = load(job, rate, duration, base, flows, storage)
    with tempfile.TemporaryDirectory() as out:
        results = run_sim(scenario, out, progress=False)
        assert (Path(out) / "job-j.png").stat().st_size > 10_000
    (block,) = results["jobs"]
    assert block["completed"], block
    return scenario, results if whole else block


def same_rail(rate_bps: float) -> FabricCost:
    """GPU -> leaf -> GPU: two links, the leaf stores and forwards a frame."""
    return FabricCost.frames(rate_bps, MTU, DELAY_S, links=2)


@pytest.mark.parametrize("job", [
    training(tp=2, pp=2, dp=1, global_batch=4),  # PP sends only
    training(tp=2, pp=1, dp=4, global_batch=8, bucket="256KB"),  # DP rings only
], ids=["pp", "dp"])
def test_contention_free_iteration_is_the_graph_and_frame_arithmetic(job):
    scenario, block = run(job)
    want = evaluate(scenario.jobs[0].world(), same_rail(10e9))
    for it in block["iterations"]:
        assert it["time_s"] == pytest.approx(want.iteration_s / 2, rel=0.02)
    assert block["iteration_mean_s"] == pytest.approx(want.iteration_s / 2, rel=0.02)
    assert block["compute_mean_s"] == pytest.approx(want.compute_s / 2, rel=1e-3)
    kind = "pp" if job["pp"] > 1 else "dp"
    assert block["exposed_mean_s"][kind] == pytest.approx(want.exposed_s[kind] / 2, rel=0.05)
    assert [c for c in block["collectives"] if c["kind"] == "tp"] == []  # NVLink: no flows
    for it in block["iterations"]:
        assert {c["kind"] for c in it["critical_path"]} == {kind}
        assert all(len(c["links"]) == 2 for c in it["critical_path"])  # GPU-leaf-GPU


def test_dp_overlap_is_hidden_while_fast_and_exposed_past_the_knee():
    """Buckets of one layer's gradients; each all-reduce overlaps the next layer's
    backward while it is shorter than it. Only the last (layer 0's, after the whole
    backward) is always exposed. The knee, from the graph: the rate at which a bucket's
    ring takes one layer's backward."""
    # slow GPUs (0.5 TFLOP/s): a layer's backward takes about a 1 MB ring at 6 Gb/s
    job = training(tp=2, pp=1, dp=4, global_batch=4, bucket="1B", peak_tflops=0.5,
                   iterations=1)
    spec = load(job).jobs[0]
    world = spec.world()
    t = spec.training
    bucket = next(n for n in world if n.kind == "dp").size_bytes
    bwd_s = 2 * t.layer_fwd_s()
    n = 4

    def ring_s(rate_bps: float) -> float:
        return same_rail(rate_bps)(next(x for x in world if x.kind == "dp"))

    # 2(n-1)/n x bucket x 8 / eff + 2(n-1) latency = bwd  (solved on the analysis' cost)
    lo, hi = 1e8, 1e12
    for _ in range(60):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if ring_s(mid) > bwd_s else (lo, mid)
    knee_bps = hi
    assert 2e9 < knee_bps < 20e9, knee_bps  # the sweep below stays on this fabric's scale
    results = {}
    for factor in (2.0, 0.5):
        rate = knee_bps * factor
        _, block = run(job, rate=f"{rate / 1e9:.4f}Gbps", duration="35ms")
        want = evaluate(world, same_rail(round(rate / 1e5) * 1e5))
        assert block["iteration_mean_s"] == pytest.approx(want.iteration_s, rel=0.02)
        results[factor] = (block["exposed_mean_s"]["dp"], ring_s(rate), want)
    fast, fast_ring, _ = results[2.0]
    slow, slow_ring, slow_want = results[0.5]
    # fast: only the last bucket shows; slow: the rings queue up behind each other
    assert fast == pytest.approx(fast_ring, rel=0.05)
    assert slow > 1.5 * slow_ring
    assert slow == pytest.approx(slow_want.exposed_s["dp"], rel=0.05)


def test_without_overlap_the_whole_dp_all_reduce_is_exposed():
    # the knee's slow GPUs at 10 Gb/s (above the knee): overlapped, one ring shows
    job = training(tp=2, pp=1, dp=4, bucket="1B", peak_tflops=0.5, iterations=1)
    _, on = run(job, duration="25ms")
    _, off = run({**job, "overlap_dp": False}, duration="25ms")
    world = load(job).jobs[0].world()
    ring_s = same_rail(10e9)(next(x for x in world if x.kind == "dp"))
    assert on["exposed_mean_s"]["dp"] == pytest.approx(ring_s, rel=0.05)
    assert off["exposed_mean_s"]["dp"] == pytest.approx(4 * ring_s, rel=0.05)  # 4 layers
    assert off["iteration_mean_s"] - on["iteration_mean_s"] == pytest.approx(
        3 * ring_s, rel=0.05)


def test_rail_unaware_placement_raises_the_iteration_time():
    small = {**MODEL, "hidden": 128, "ffn": 512}
    job = training(model=small, tp=2, pp=1, dp=4, bucket="64KB", iterations=1)
    _, aware = run(job)
    _, unaware = run({**job, "placement": "rail-unaware"})
    assert aware["placement"] == "rail-aware" and unaware["placement"] == "rail-unaware"
    # both DP rings now cross rails: every hop over the one spine, 4 flows an uplink
    assert unaware["iteration_mean_s"] > 1.5 * aware["iteration_mean_s"]
    links = {link for it in unaware["iterations"] for c in it["critical_path"]
             for link in c["links"]}
    assert any("spine" in link for link in links)
    assert not any("spine" in link for it in aware["iterations"]
                   for c in it["critical_path"] for link in c["links"])


def world_to_traces(nodes) -> tuple[list[list[TraceNode]], dict[str, int]]:
    """The tests' own Chakra writer: a world graph as one ET trace per rank (compute in
    whole microseconds), collectives in one process group per member set."""
    preds = predecessors(nodes)
    by_id = {n.id: n for n in nodes}
    ranks: dict[int, list[TraceNode]] = {}
    ids: dict[tuple[int, str], int] = {}
    members: dict[str, list[int]] = {}
    for n in nodes:
        if n.instance:
            members.setdefault(n.instance, []).append(n.rank)
    groups = {}

    def new_id(rank: int, key: str) -> int:
        ids[(rank, key)] = len(ids) + 1
        return ids[(rank, key)]

    for n in nodes:  # ids first: a RECV may come before its SEND in this order
        new_id(n.rank, n.id)
        if n.kind == "pp" and not n.instance:
            new_id(n.peer, n.id + "/recv")
    for n in nodes:
        deps = []
        for p in preds[n.id]:
            q = by_id[p]
            deps.append(ids[(n.rank, p if q.rank == n.rank else p + "/recv")])
        tid = ids[(n.rank, n.id)]
        mine = ranks.setdefault(n.rank, [])
        if n.kind == "compute":
            mine.append(TraceNode(tid, n.id, COMP_NODE, tuple(deps),
                                  round(n.duration_s * 1e6), {}))
        elif n.instance:
            pg = n.kind + "-" + "-".join(map(str, members[n.instance]))
            groups[pg] = len(members[n.instance])
            mine.append(TraceNode(tid, n.id, COMM_COLL_NODE, tuple(deps), 0, {
                "comm_type": ALL_TO_ALL if n.kind == "ep" else ALL_REDUCE,
                "comm_size": n.size_bytes, "pg_name": pg}))
        else:
            mine.append(TraceNode(tid, n.id, COMM_SEND_NODE, tuple(deps), 0, {
                "comm_dst": n.peer, "comm_tag": tid, "comm_size": n.size_bytes}))
            rid = ids[(n.peer, n.id + "/recv")]
            ranks.setdefault(n.peer, []).append(TraceNode(
                rid, n.id + "/recv", COMM_RECV_NODE, (), 0,
                {"comm_src": n.rank, "comm_tag": tid}))
    return [ranks[r] for r in sorted(ranks)], groups


def test_a_chakra_trace_runs_and_matches_the_same_job_in_yaml(tmp_path):
    job = training(tp=2, pp=2, dp=2, global_batch=4, bucket="128KB", iterations=1)
    scenario, yaml_block = run(job)
    spec = scenario.jobs[0]
    traces, groups = world_to_traces(spec.world())
    names = []
    for r, nodes in enumerate(traces):
        names.append(f"rank{r}.et")
        write_trace(tmp_path / names[-1], nodes)
    chakra = {"kind": "chakra", "id": "j", "traces": names, "gpus": list(spec.gpus),
              "groups": groups}
    _, trace_block = run(chakra, base=str(tmp_path))
    assert trace_block["ranks"] == 8 and trace_block["gpus"] == list(spec.gpus)
    # compute rounded to whole microseconds in the trace: within 1 %
    assert trace_block["iteration_mean_s"] == pytest.approx(yaml_block["iteration_mean_s"],
                                                            rel=0.01)
    for kind in ("pp", "dp"):
        assert trace_block["exposed_mean_s"][kind] == pytest.approx(
            yaml_block["exposed_mean_s"][kind], rel=0.05, abs=2e-6)
    assert len(trace_block["collectives"]) == len(yaml_block["collectives"])


@pytest.mark.parametrize("job, key, needle", [
    (training(model="gpt-9"), "model", "not a model preset"),
    (training(model={**MODEL, "kv_heads": 3}), "model.heads", "not a multiple of kv_heads"),
    (training(global_batch=3, dp=2), "global_batch", "micro_batch x dp"),
    (training(tp=4, global_batch=4), "tp", "scale-up domain"),
    (training(dp=16, global_batch=16), "tp", "needs tp x pp x dp = 16 GPUs"),
    ({"kind": "chakra", "id": "j", "traces": ["nope.et"]}, "traces[0]", "does not exist"),
])
def test_bad_jobs_are_one_line_naming_the_key(job, key, needle):
    with pytest.raises(ScenarioError) as exc:
        load(job)
    text = str(exc.value)
    assert f"workload.jobs[0].{key}" in text and needle in text and "\n" not in text, text


def serving(**kw) -> dict:
    """Prefill on rail 0 of servers 0-1, decode on rail 1 of servers 2-3: every KV
    hand-off (2 MiB: 2 x 4 layers x 2 KV heads x 64 x 2 B x 1024 tokens) crosses the
    spine."""
    return {"kind": "inference", "id": "j",
            "model": {"layers": 4, "hidden": 512, "heads": 8, "kv_heads": 2, "ffn": 1024,
                      "vocab": 1000},
            "prefill": ["srv0/gpu0", "srv1/gpu0"], "decode": ["srv2/gpu1", "srv3/gpu1"],
            "requests": 6, "interval": "5ms", "prompt": 1024, "output": 8,
            "peak_tflops": 20, "efficiency": 0.4, **kw}


def test_a_congested_spine_raises_ttft_through_the_kv_hand_off():
    scenario, idle = run(serving(), duration="40ms")
    # rail 0 of servers 2-3 sends to rail 1 of servers 0-1 without end: the same spine
    # uplink and downlink as the hand-offs, none of their NICs
    background = tuple({"id": f"bg{i}", "src": f"srv{2 + i}/gpu0", "dst": f"srv{i}/gpu1",
                        "size": "unlimited"} for i in range(2))
    _, busy = run(serving(), duration="40ms", flows=background)
    a, b = idle["serving"], busy["serving"]
    assert a["completed"] == b["completed"] == 6
    spec = scenario.jobs[0]
    kv = next(n for n in spec.world() if n.kind == "kv")
    assert kv.size_bytes == 2 * 4 * 2 * 64 * 2 * 1024
    # idle: GPU - leaf - spine - leaf - GPU, the graph's frame arithmetic
    assert a["kv_handoff_p50_s"] == pytest.approx(
        FabricCost.frames(10e9, MTU, DELAY_S, links=4)(kv), rel=0.02)
    # sharing the spine links with 2 endless flows: about a third of the rate
    assert b["kv_handoff_mean_s"] > 2 * a["kv_handoff_mean_s"]
    assert b["ttft_mean_s"] - a["ttft_mean_s"] == pytest.approx(
        b["kv_handoff_mean_s"] - a["kv_handoff_mean_s"], rel=0.25)
    assert b["kv_share_of_ttft"] > a["kv_share_of_ttft"] + 0.1
    assert b["tpot_mean_s"] == pytest.approx(a["tpot_mean_s"], rel=1e-6)  # decode: no fabric
    assert idle["exposed_mean_s"]["kv"] > 0


def test_striping_the_kv_cache_over_the_rails_divides_its_time():
    """Whole servers in the pools: each 2 MiB cache goes in two halves, over rail 0 and
    rail 1 (the prefill GPU's sibling sends the other half; NVLink hops are free)."""
    pools = {"prefill": ["srv0/gpu*"], "decode": ["srv2/gpu*"], "requests": 3,
             "interval": "10ms"}
    scenario, one = run(serving(**pools), duration="35ms")
    _, two = run(serving(**pools, stripe_rails=True), duration="35ms")
    kv = next(n for n in scenario.jobs[0].world() if n.kind == "kv")
    half = FabricCost.frames(10e9, MTU, DELAY_S, links=2)
    assert one["serving"]["kv_handoff_p50_s"] == pytest.approx(half(kv), rel=0.02)
    # both halves at once, each on its own rail: half the time (and the latency)
    assert two["serving"]["kv_handoff_p50_s"] == pytest.approx(
        half(replace(kv, size_bytes=kv.size_bytes // 2)), rel=0.02)
    assert {f.split("/")[-1] for f in two["gpus"]} == {"gpu0", "gpu1"}
    assert two["serving"]["ttft_mean_s"] < one["serving"]["ttft_mean_s"]


def test_continuous_batching_lets_requests_decode_together():
    """4 requests at once on one prefill and one decode GPU: one at a time, a request's
    first token waits for the earlier requests' whole decode; batched (max_batch 4)
    each starts once its KV cache is there, and a step takes the batch's time."""
    # HBM at 10 GB/s: a step reads 17 MB of weights in 1.7 ms, 8 of them outlast 4
    # prefills of 3 ms
    pools = {"prefill": ["srv0/gpu0"], "decode": ["srv2/gpu1"], "requests": 4,
             "interval": "1us", "hbm_tb_per_s": 0.01}
    scenario, one = run(serving(**pools), duration="100ms")
    _, four = run(serving(**pools, max_batch=4), duration="100ms")
    job = scenario.jobs[0].serving
    a, b = one["serving"], four["serving"]
    assert a["completed"] == b["completed"] == 4
    assert a["tpot_mean_s"] == pytest.approx(job.step_s(1024), rel=1e-3)
    # the batch of 4 reads the weights once and the 4 caches a step
    assert b["tpot_mean_s"] == pytest.approx(job.step_s(1024, 4), rel=1e-3)
    assert job.step_s(1024) < job.step_s(1024, 4) < 4 * job.step_s(1024)
    # batch 1: the 4th request waits for 3 decodes of 8 steps
    assert a["ttft_p99_s"] > 3 * 8 * job.step_s(1024)
    assert b["ttft_p99_s"] < a["ttft_p99_s"] / 2
    # the KV hand-offs are the same; their share of a shorter TTFT is larger
    assert b["kv_handoff_mean_s"] == pytest.approx(a["kv_handoff_mean_s"], rel=0.02)
    assert b["kv_share_of_ttft"] > a["kv_share_of_ttft"]


def test_kv_offload_to_storage_when_hbm_is_full_against_ample_hbm():
    """4 requests at once, batch 4, decode steps of 1.7 ms (HBM at 10 GB/s): with
    ample HBM all 4 caches are handed off and decode together; with room for 2
    reservations (2 x 1032 tokens x 2 KiB) the last 2 go to storage over the storage
    fabric (10 Gb/s, the servers' storage NICs) and come back once the first 2 end."""
    storage = {"nodes": 2, "link": {"rate": "10Gbps", "delay": "1us"}}
    pools = {"prefill": ["srv0/gpu0"], "decode": ["srv2/gpu1"], "requests": 4,
             "interval": "1us", "hbm_tb_per_s": 0.01, "max_batch": 4}
    reservation = 2 * 4 * 2 * 64 * 2 * (1024 + 8)
    scenario, ample = run(serving(**pools), duration="100ms", storage=storage, whole=True)
    _, tight = run(serving(**pools, hbm_kv=2 * reservation), duration="100ms",
                   storage=storage, whole=True)
    job = scenario.jobs[0].serving
    a, b = ample["jobs"][0]["serving"], tight["jobs"][0]["serving"]
    assert a["completed"] == b["completed"] == 4
    assert a["kv_offload"]["offloaded"] == 0 and ample["networks"]["storage"]["bytes"] == 0
    off = b["kv_offload"]
    assert off["offloaded"] == off["fetched"] == 2
    # the bytes offloaded: 2 prompts' KV caches, 2 x 4 layers x 2 KV heads x 64 x 2 B
    # x 1024 tokens each; each crossed the storage fabric twice (there and back)
    assert off["offloaded_bytes"] == 2 * job.kv_bytes(1024) == 2 * 2 * 4 * 2 * 64 * 2 * 1024
    assert tight["networks"]["storage"]["bytes"] > 2 * 2 * off["offloaded_bytes"]
    assert tight["totals"]["drops"] == 0
    # an offload and a fetch (after a 1-byte read request) each take the frame arithmetic
    # of GPU storage NIC - storage leaf - storage node at 10 Gb/s
    path = FabricCost.frames(10e9, MTU, DELAY_S, links=2)
    kv = next(n for n in scenario.jobs[0].world() if n.kind == "kv")
    read = replace(kv, size_bytes=1)
    assert off["offload_p50_s"] == pytest.approx(path(kv), rel=0.02)
    assert off["fetch_p50_s"] == pytest.approx(path(kv) + path(read), rel=0.02)
    # the last 2 wait for the first 2 to end (8 steps), then for the fetch: TTFT p99
    # rises by more than that wait and the fetch; decode steps are those of batch 4
    step = job.step_s(1024, 4)
    assert off["hbm_wait_p50_s"] > 6 * step
    assert b["ttft_p99_s"] > a["ttft_p99_s"] + off["hbm_wait_p50_s"] - a["kv_handoff_p50_s"]
    assert b["ttft_p99_s"] > a["ttft_p99_s"] + off["fetch_p50_s"]
    assert 0 < off["fetch_share_of_ttft"] < 1
    assert b["tpot_mean_s"] == pytest.approx(a["tpot_mean_s"], rel=1e-6)
    print(f"\n[sim] TTFT p99 {a['ttft_p99_s'] * 1e3:.2f} -> {b['ttft_p99_s'] * 1e3:.2f} ms "
          f"with 2 of 4 caches offloaded ({off['offloaded_bytes']} B); offload "
          f"{off['offload_p50_s'] * 1e3:.3f} ms, fetch {off['fetch_p50_s'] * 1e3:.3f} ms, "
          f"hand-off {a['kv_handoff_p50_s'] * 1e3:.3f} ms, wait for room "
          f"{off['hbm_wait_p50_s'] * 1e3:.2f} ms; TPOT {a['tpot_mean_s'] * 1e3:.3f} -> "
          f"{b['tpot_mean_s'] * 1e3:.3f} ms")


def test_the_shipped_kv_offload_scenario_fetches_at_the_storage_fabric_s_rate(tmp_path):
    """scenarios/kv-offload.yaml: the 2 last requests of each decode GPU are offloaded
    (4 of 8); a hand-off of 8 MiB takes the frame arithmetic of GPU - rail leaf - GPU at
    100 Gb/s, a fetch that of storage NIC - storage leaf - node at 50 Gb/s (twice it),
    after its 1-byte read request."""
    scenario = load_scenario(Path(__file__).resolve().parents[3] / "scenarios"
                             / "kv-offload.yaml")
    results = run_sim(scenario, tmp_path, progress=False)
    assert all(c["passed"] for c in results["checks"]), results["checks"]
    job = scenario.jobs[0].serving
    assert [a.request for a in job.admissions if a.offloaded] == [4, 5, 6, 7]
    serving = results["jobs"][0]["serving"]
    off = serving["kv_offload"]
    kv = next(n for n in scenario.jobs[0].world() if n.kind == "kv")
    assert kv.size_bytes == 8 * 2**20 and off["offloaded_bytes"] == 4 * kv.size_bytes
    rail = FabricCost.frames(100e9, 4096, 1e-6, links=2)
    storage = FabricCost.frames(50e9, 4096, 1e-6, links=2)
    assert serving["kv_handoff_p99_s"] == pytest.approx(rail(kv), rel=0.01)
    assert off["offload_p99_s"] == pytest.approx(storage(kv), rel=0.01)
    assert off["fetch_p50_s"] == pytest.approx(storage(kv) + storage(replace(kv, size_bytes=1)),
                                               rel=0.01)
    assert off["fetch_p50_s"] == pytest.approx(2 * serving["kv_handoff_p50_s"], rel=0.02)
    # an offloaded request's first token: its wait for room, the fetch, one step
    assert serving["ttft_p99_s"] == pytest.approx(
        job.admissions[7].ready_s + off["hbm_wait_p99_s"] + off["fetch_p99_s"]
        + job.step_s(1024, 2), rel=0.01)


def test_requests_from_a_trace_file_run_as_the_same_requests_drawn(tmp_path):
    """The Poisson requests written as a trace (arrival_s,prompt,output) give the
    same serving results, field for field [sim]."""
    drawn = serving(prompt=[512, 1024], output=[4, 8])
    scenario, a = run(drawn, duration="40ms")
    rows = "".join(f"{r.arrival_s!r},{r.prompt},{r.output}\n"
                   for r in scenario.jobs[0].serving.requests)
    (tmp_path / "trace.csv").write_text("arrival_s,prompt,output\n" + rows)
    traced = {k: v for k, v in drawn.items() if k not in ("interval", "prompt", "output",
                                                           "requests")}
    _, b = run({**traced, "arrivals": "trace.csv"}, duration="40ms", base=str(tmp_path))
    assert a["serving"]["completed"] == 6
    assert b["serving"] == a["serving"]


def _planned(job) -> tuple[list[float], list[float]]:
    """TTFT and TPOT of every request of a colocated job on the plan's own clock."""
    first = {op.request: op.start_s for ops in job.colocated_plan.ops for op in ops
             if op.kind == "first"}
    ttft = [first[a.request] - job.requests[a.request].arrival_s for a in job.admissions]
    tpot = [(a.done_s - first[a.request]) / (job.requests[a.request].output - 1)
            for a in job.admissions if job.requests[a.request].output > 1]
    return ttft, tpot


def test_colocated_serving_moves_no_kv_but_decode_steps_wait_behind_prefills():
    """The same 2 GPUs, srv0/gpu0 and srv2/gpu1: disaggregated (the first prefills, the
    second decodes; every 2 MiB cache crosses the spine) against colocated (each
    prefills and decodes its own requests, r mod 2). A lone request: colocated TTFT is
    the prefill and one step, the hand-off less. 8 requests (16 tokens, 4 ms mean gap,
    batch 4, steps of 2-2.8 ms, prefills of 3.36 ms): colocated moves nothing, but a
    newcomer's prefill stalls its GPU's running batch, so TPOT exceeds the longest
    step, which is the disaggregated TPOT."""
    both = ["srv0/gpu0", "srv2/gpu1"]
    coloc = {"prefill": both, "decode": both, "hbm_tb_per_s": 0.01}
    disagg = {"prefill": both[:1], "decode": both[1:], "hbm_tb_per_s": 0.01}
    scenario, lone_c = run(serving(**coloc, requests=1), duration="30ms")
    _, lone_d = run(serving(**disagg, requests=1), duration="30ms")
    job = scenario.jobs[0].serving
    prefill, step = job.prefill_s(1024), job.step_s(1024)
    a, b = lone_c["serving"], lone_d["serving"]
    assert a["ttft_p50_s"] == pytest.approx(prefill + step, rel=0.01)
    assert b["ttft_p50_s"] == pytest.approx(prefill + b["kv_handoff_p50_s"] + step, rel=0.01)
    assert a["tpot_mean_s"] == pytest.approx(step, rel=0.01)
    assert b["tpot_mean_s"] == pytest.approx(step, rel=0.01)
    assert a["kv_handoff_p50_s"] is None and a["kv_share_of_ttft"] == 0.0
    assert lone_c["flows"] == 0 and lone_c["gpus"] == both

    load_ = {"requests": 8, "interval": "4ms", "output": 16, "max_batch": 4}
    scenario, c = run(serving(**coloc, **load_), duration="150ms", whole=True)
    _, d = run(serving(**disagg, **load_), duration="150ms", whole=True)
    job = scenario.jobs[0].serving
    cs, ds = c["jobs"][0]["serving"], d["jobs"][0]["serving"]
    assert (cs["mode"], ds["mode"]) == ("colocated", "disaggregated")
    assert cs["completed"] == ds["completed"] == 8
    # colocated: no KV over the fabric
    assert c["networks"]["backend"]["bytes"] == 0 and c["jobs"][0]["flows"] == 0
    assert d["networks"]["backend"]["bytes"] > 8 * job.kv_bytes(1024)
    assert cs["kv_handoff_p99_s"] is None and cs["kv_handoff_p99_dc_s"] is None
    assert cs["kv_share_of_ttft"] == 0.0 < ds["kv_share_of_ttft"]
    # disaggregated decode: every step the full batch's; colocated: none longer
    batch4 = job.step_s(1024, 4)
    assert ds["tpot_mean_s"] == pytest.approx(batch4, rel=1e-3)
    steps = [op.duration_s / op.steps for ops in job.colocated_plan.ops for op in ops
             if op.kind == "decode"]
    assert max(steps) == pytest.approx(batch4) and min(steps) == pytest.approx(step)
    # ... yet colocated TPOT is longer: the steps wait behind the newcomers' prefills
    assert cs["tpot_mean_s"] > 1.05 * ds["tpot_mean_s"]
    assert cs["tpot_p99_s"] > batch4 + prefill / 16
    # the run is the plan: TTFT and TPOT as the GPUs' streams give them, within 1 %
    ttft, tpot = _planned(job)
    assert cs["ttft_mean_s"] == pytest.approx(sum(ttft) / len(ttft), rel=0.01)
    assert cs["ttft_p99_s"] == pytest.approx(max(ttft), rel=0.01)
    assert cs["tpot_mean_s"] == pytest.approx(sum(tpot) / len(tpot), rel=0.01)
    assert cs["tpot_p99_s"] == pytest.approx(max(tpot), rel=0.01)
    assert cs["tpot_mean_dc_s"] == cs["tpot_mean_s"]  # sim: the twins equal them
    print(f"\n[sim] lone request TTFT {a['ttft_p50_s'] * 1e3:.3f} ms colocated (prefill "
          f"{prefill * 1e3:.3f} + step {step * 1e3:.3f}) vs {b['ttft_p50_s'] * 1e3:.3f} ms "
          f"disaggregated (hand-off {b['kv_handoff_p50_s'] * 1e3:.3f}); 8 requests: TTFT "
          f"mean/p99 {cs['ttft_mean_s'] * 1e3:.2f}/{cs['ttft_p99_s'] * 1e3:.2f} vs "
          f"{ds['ttft_mean_s'] * 1e3:.2f}/{ds['ttft_p99_s'] * 1e3:.2f} ms, TPOT mean/p99 "
          f"{cs['tpot_mean_s'] * 1e3:.3f}/{cs['tpot_p99_s'] * 1e3:.3f} vs "
          f"{ds['tpot_mean_s'] * 1e3:.3f}/{ds['tpot_p99_s'] * 1e3:.3f} ms, KV share "
          f"{cs['kv_share_of_ttft']:.0%} vs {ds['kv_share_of_ttft']:.0%}")
