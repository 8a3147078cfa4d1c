"""Collectives: parsing and placement, the flows and dependent messages they
plan, the agent configs they make, and their metrics."""

from __future__ import annotations

import pytest

from emulator.measure.collective_metrics import collective_result
from emulator.run.agent_config import build_agent_configs
from emulator.run.qps import plan_qps
from emulator.scenario import ScenarioError
from emulator.scenario.collectives import plan_collective
from emulator.scenario.loader import scenario_from_dict
from emulator.scenario.workload import collective_plans, expand_workload

TOPO = {"name": "r4x2", "kind": "rail-optimized", "servers": 4, "gpus_per_server": 2,
        "servers_per_leaf": 4, "spines": 2, "host_link": {"rate": "20Mbps", "delay": "5us"},
        "fabric_link": {"rate": "20Mbps", "delay": "5us"}}


def scenario(*collectives, **top):
    data = {"name": "t", "topology": TOPO, "duration": "5s",
            "workload": {"collectives": list(collectives)}, **top}
    return scenario_from_dict(data, "t.yaml")


def ar(**kw):
    return {"kind": "all-reduce", "id": "ar", "size": "1MB", **kw}


# -- placement -------------------------------------------------------------------------

def test_rail_aligned_rings_keep_to_one_rail():
    s = scenario(ar(servers=["srv[0-3]"], channels=2))
    assert s.collectives[0].rings == (
        ("srv0/gpu0", "srv1/gpu0", "srv2/gpu0", "srv3/gpu0"),
        ("srv0/gpu1", "srv1/gpu1", "srv2/gpu1", "srv3/gpu1"))
    assert s.collectives[0].placement == "rail-aligned"


def test_rail_unaware_rings_alternate_rails():
    s = scenario(ar(servers=["srv[0-3]"], placement="rail-unaware"))
    assert s.collectives[0].rings == (("srv0/gpu0", "srv1/gpu1", "srv2/gpu0", "srv3/gpu1"),)


def test_gpus_are_ranks_in_the_order_written():
    s = scenario(ar(gpus=["srv2/gpu1", "srv0/gpu0", "srv[13]/gpu0"]))
    assert s.collectives[0].rings == (("srv2/gpu1", "srv0/gpu0", "srv1/gpu0", "srv3/gpu0"),)


@pytest.mark.parametrize("item, message", [
    (ar(), "either 'gpus'"),
    (ar(gpus=["srv0/gpu0", "srv1/gpu0"], servers=["srv0"]), "either 'gpus'"),
    (ar(gpus=["srv0/gpu0", "srv1/gpu0"], placement="rail-aligned"), "'placement' goes with"),
    (ar(servers=["srv9"]), "matches no server"),
    (ar(servers=["srv0"]), "at least 2 ranks"),
    (ar(gpus=["srv0/gpu0", "srv0/gpu1"]), "nothing crosses the fabric"),
    (ar(gpus=["srv0/gpu0", "srv0/gpu0"]), "twice"),
    (ar(gpus=["srv0/gpu0", "srv[01]/gpu0"]), "is a rank twice"),
    (ar(servers=["srv[0-3]"], size=3), "smaller than"),
    (ar(servers=["srv[0-3]"], placement="random"), "one of rail-aligned, rail-unaware"),
    ({"kind": "broadcast", "id": "b", "size": "1MB"}, "one of all-reduce"),
])
def test_bad_collectives_get_one_line_errors(item, message):
    with pytest.raises(ScenarioError) as exc:
        scenario(item)
    text = str(exc.value)
    assert message in text and text.startswith("t.yaml") and "\n" not in text


def test_collective_ids_are_unique():
    with pytest.raises(ScenarioError, match="collective ids must be unique"):
        scenario(ar(servers=["srv0", "srv1"]), ar(servers=["srv2", "srv3"]))


# -- plans -------------------------------------------------------------------------------

def test_ring_all_reduce_sends_2_n_minus_1_steps_of_blocks():
    s = scenario(ar(servers=["srv[0-3]"], chunks=2))
    plan = plan_collective(s.collectives[0], s.topology)
    assert plan.steps == 6 and plan.ranks == 4
    assert [f.id for f in plan.flows] == [f"ar/c0/r{i}" for i in range(4)]
    assert all(f.size_bytes == 6 * 250_000 for f in plan.flows)
    assert len(plan.ops) == 4 * 6 * 2
    by_tag = {op.tag: op for op in plan.ops}
    # rank 1's chunk 1 of step 3 waits for chunk 1 of step 2 from rank 0
    mine = [op for op in plan.ops if op.flow == "ar/c0/r1" and op.step == 3][1]
    assert mine.after == (("ar/c0/r0", 2 * 2 + 1 + 1),)
    assert by_tag["ar/c0/r1#0"].after == ()


def test_reduce_scatter_and_all_gather_are_half_of_it():
    for kind in ("reduce-scatter", "all-gather"):
        s = scenario({"kind": kind, "id": "x", "size": "1MB", "servers": ["srv[0-3]"]})
        assert plan_collective(s.collectives[0], s.topology).steps == 3


def test_hops_inside_a_server_pass_dependencies_through():
    # ranks srv0/gpu0 -> srv0/gpu1 (NVLink) -> srv1/gpu0 -> back
    s = scenario(ar(gpus=["srv0/gpu0", "srv0/gpu1", "srv1/gpu0"], size=3000))
    plan = plan_collective(s.collectives[0], s.topology)
    assert plan.local_hops == 4  # one per step
    hop = [op for op in plan.ops if op.flow == "ar/c0/r1"]
    # rank 1 has rank 0's step-0 data at once (NVLink); its step-2 data is
    # what rank 0 forwarded at step 1, which came from rank 2 over the fabric
    assert hop[1].after == ()
    assert hop[2].after == (("ar/c0/r2", 1),)


def test_pxn_keeps_cross_rail_hops_on_the_receivers_rail():
    s = scenario(ar(servers=["srv[0-3]"], placement="rail-unaware", pxn=True))
    plan = plan_collective(s.collectives[0], s.topology)
    rail = {g.name: g.rail for g in s.topology.gpus}
    assert all(rail[f.src] == rail[f.dst] for f in plan.flows)
    assert plan.flows[0].src == "srv0/gpu1" and plan.flows[0].dst == "srv1/gpu1"


def test_all_to_all_skips_peers_on_the_same_server():
    s = scenario({"kind": "all-to-all", "id": "a", "size": "800KB", "gpus": ["srv*/gpu*"]})
    plan = plan_collective(s.collectives[0], s.topology)
    assert len(plan.flows) == 8 * 6 and plan.local_hops == 8
    assert all(op.after == () and op.size_bytes == 100_000 for op in plan.ops)


def test_pipeline_forwards_each_microbatch_after_compute():
    s = scenario({"kind": "pipeline", "id": "pp", "size": "64KB", "microbatches": 3,
                  "compute": "2ms", "servers": ["srv[0-3]"]})
    plan = plan_collective(s.collectives[0], s.topology)
    s0 = [op for op in plan.ops if op.flow == "pp/s0"]
    assert [op.at_ns for op in s0] == [2_000_000, 4_000_000, 6_000_000]
    s2 = [op for op in plan.ops if op.flow == "pp/s2"]
    assert [op.after for op in s2] == [(("pp/s1", 1),), (("pp/s1", 2),), (("pp/s1", 3),)]
    assert all(op.delay_ns == 2_000_000 for op in s2)


def test_kv_handoff_arrivals_are_seeded_poisson():
    item = {"kind": "kv-handoff", "id": "kv", "size": "64KB", "requests": 50, "interval": "10ms",
            "prefill": ["srv0/gpu0", "srv1/gpu0"], "decode": ["srv2/gpu0", "srv3/gpu0"]}
    a = plan_collective(scenario(item, seed=3).collectives[0], scenario(item).topology, seed=3)
    b = plan_collective(scenario(item, seed=3).collectives[0], scenario(item).topology, seed=3)
    c = plan_collective(scenario(item).collectives[0], scenario(item).topology, seed=4)
    assert a.request_at_ns == b.request_at_ns != c.request_at_ns
    gaps = [y - x for x, y in zip(a.request_at_ns, a.request_at_ns[1:])]
    assert 5e6 < sum(gaps) / len(gaps) < 20e6
    assert {op.flow for op in a.ops} == {"kv/p0-d0", "kv/p1-d1"}


# -- agent configs --------------------------------------------------------------------

def test_agent_configs_carry_the_graph():
    s = scenario(ar(servers=["srv[0-2]"], size=3000))
    flows = expand_workload(s)
    graph = [op for plan in collective_plans(s) for op in plan.ops]
    qps = plan_qps(s, flows)
    configs = build_agent_configs(s, flows, 100.0, qps, graph)
    qpn = {q.flow: q.qpn for q in qps}
    msgs = configs["srv1"]["workload"]["messages"]
    assert [m["tag"] for m in msgs] == [f"ar/c0/r1#{k}" for k in range(4)]
    assert msgs[0]["after_rx"] == [] and msgs[1]["after_rx"] == [[qpn["ar/c0/r0"], 1]]
    assert all(m["qp"] == qpn["ar/c0/r1"] for m in msgs)


# -- metrics ----------------------------------------------------------------------------

def test_metrics_follow_the_nccl_tests_definitions():
    s = scenario(ar(servers=["srv[0-3]"]))
    plan = plan_collective(s.collectives[0], s.topology)
    # every op of step k arrives at 0.1 * (k + 1) s after a start at Unix 1000
    arrived = {f.id: [1000 + 0.1 * (k + 1) for k in range(6)] for f in plan.flows}
    r = collective_result(plan, arrived, 1000.0)
    assert r["completed"] and r["time_s"] == pytest.approx(0.6)
    assert r["algbw_bps"] == pytest.approx(1_000_000 * 8 / 0.6)
    assert r["busbw_bps"] == pytest.approx(r["algbw_bps"] * 2 * 3 / 4)
    assert [st["time_s"] for st in r["steps"]] == pytest.approx([0.1] * 6)
    arrived["ar/c0/r2"].pop()
    r = collective_result(plan, arrived, 1000.0)
    assert not r["completed"] and r["time_s"] is None and r["ops_done"] == 23


def test_an_op_striped_over_qps_waits_for_every_stripe():
    s = scenario(ar(servers=["srv[0-2]"], size=3000, qps=2))
    flows = expand_workload(s)
    graph = [op for plan in collective_plans(s) for op in plan.ops]
    qps = plan_qps(s, flows)
    configs = build_agent_configs(s, flows, 100.0, qps, graph)
    qpns = {}
    for q in qps:
        qpns.setdefault(q.flow, []).append(q.qpn)
    msgs = configs["srv1"]["workload"]["messages"]
    assert [m["tag"] for m in msgs[:2]] == ["ar/c0/r1#0", "ar/c0/r1#0.1"]
    assert [m["qp"] for m in msgs[:2]] == qpns["ar/c0/r1"]
    assert msgs[0]["size_bytes"] + msgs[1]["size_bytes"] == 1000
    assert msgs[2]["after_rx"] == [[q, 1] for q in qpns["ar/c0/r0"]]


def test_a_striped_op_arrives_with_its_last_stripe():
    from emulator.measure.collective_metrics import arrivals

    s = scenario(ar(servers=["srv[0-2]"], size=3000, qps=2))
    qps = plan_qps(s, expand_workload(s))
    r0 = [q for q in qps if q.flow == "ar/c0/r0"]
    stats = {"srv1": {"messages": {"received": [
        {"qpn": r0[0].qpn, "last_at": 1.0}, {"qpn": r0[1].qpn, "last_at": 1.5},
        {"qpn": r0[0].qpn, "last_at": 2.0}]}}}
    # the second op has only one stripe in: not arrived yet
    assert arrivals(qps, stats, {"ar/c0/r0"}) == {"ar/c0/r0": [1.5]}


# -- send-recv (nccl-tests' sendrecv) ------------------------------------------------------

def test_send_recv_sends_the_whole_size_to_the_next_rank_per_channel_and_chunk():
    s = scenario({"kind": "send-recv", "id": "sr", "size": "1MB", "servers": ["srv[0-3]"],
                  "channels": 2, "chunks": 4})
    plan = plan_collective(s.collectives[0], s.topology)
    assert plan.steps == 1 and plan.ranks == 4
    # channel c on rail c: rank i -> rank i+1, S/c bytes in 4 chunks, nothing waited for
    flows = {f.id: (f.src, f.dst, f.size_bytes) for f in plan.flows}
    assert flows == {f"sr/c{c}/r{i}": (f"srv{i}/gpu{c}", f"srv{(i + 1) % 4}/gpu{c}", 500_000)
                     for c in range(2) for i in range(4)}
    assert len(plan.ops) == 2 * 4 * 4 and all(op.after == () for op in plan.ops)
    # every rank sends and receives the whole size once
    sent = {}
    for f in plan.flows:
        sent[f.src.split("/")[0]] = sent.get(f.src.split("/")[0], 0) + f.size_bytes
    assert sent == {f"srv{i}": 1_000_000 for i in range(4)}


def test_send_recv_size_must_cover_its_pieces_and_takes_no_algorithm():
    with pytest.raises(ScenarioError,
                       match=r"size 7 B is smaller than its 8 pieces \(channels x chunks\)"):
        scenario({"kind": "send-recv", "id": "sr", "size": "7B", "gpus": ["srv[0-3]/gpu0"],
                  "channels": 2, "chunks": 4})
    with pytest.raises(ScenarioError, match="algorithm"):
        scenario({"kind": "send-recv", "id": "sr", "size": "1MB", "gpus": ["srv[0-3]/gpu0"],
                  "algorithm": "ring"})
