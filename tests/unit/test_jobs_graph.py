"""Training step model: preset params against the model cards, 1F1B arithmetic,
DP overlap knee, placement."""

import pytest

from emulator.scenario.jobs_graph import FabricCost, Node, TrainingJob, build_step, evaluate, place
from emulator.scenario.jobs_model import PRESETS, Gpu, ModelShape
from emulator.topology import build_topology, spec_from_dict


@pytest.mark.parametrize("name, params_b, active_b", [
    ("llama3-8b", 8.03, 8.03), ("llama3-70b", 70.55, 70.55), ("mixtral-8x7b", 46.7, 12.9)])
def test_presets_match_model_cards(name, params_b, active_b):
    model = PRESETS[name]
    assert model.params / 1e9 == pytest.approx(params_b, rel=0.01)
    assert model.active_params / 1e9 == pytest.approx(active_b, rel=0.01)


def test_shape_errors_name_the_key():
    with pytest.raises(ValueError, match="kv_heads"):
        ModelShape(layers=2, hidden=64, heads=4, kv_heads=3, ffn=128, vocab=100)
    small = ModelShape(layers=4, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=100)
    with pytest.raises(ValueError, match="global_batch"):
        TrainingJob(small, Gpu(1e12), seq=8, micro_batch=1, global_batch=3, dp=2)
    with pytest.raises(ValueError, match="pp 3"):
        TrainingJob(small, Gpu(1e12), seq=8, micro_batch=1, global_batch=4, pp=3)


SMALL = ModelShape(layers=8, hidden=1024, heads=8, kv_heads=8, ffn=4096, vocab=1000)


def job(**kw):
    args = dict(model=SMALL, gpu=Gpu(1e14, 0.5), seq=512, micro_batch=1, global_batch=8)
    args.update(kw)
    return TrainingJob(**args)


def test_flops_formula():
    j = job()
    fwd = 2 * SMALL.layer_params * 512 + 4 * 512 * 512 * 1024
    assert j.layer_fwd_s() == pytest.approx(fwd / 5e13)


def test_one_f_one_b_without_communication_is_the_pipeline_formula():
    j = job(pp=4)
    result = evaluate(build_step(j), lambda node: 0.0)
    m, p, per = j.micro_batches, 4, 2
    # stages are equal except the last's output layer, which lies on every micro-batch's path
    expected = (m + p - 1) * 3 * per * j.layer_fwd_s() + m * 3 * j.output_fwd_s()
    assert result.iteration_s == pytest.approx(expected, rel=1e-9)
    assert result.exposed_s == dict.fromkeys(("tp", "pp", "dp", "ep", "kv", "kv-offload",
                                             "kv-fetch"), 0.0)


def test_pp_sends_on_the_critical_path_add_their_time():
    j = job(pp=2)
    cost = FabricCost(rate_bps=100e9)
    result = evaluate(build_step(j), cost)
    free = evaluate(build_step(j), lambda node: 0.0)
    send_s = j.activation_bytes * 8 / 100e9
    on_path = [n for n in result.critical_path if n.startswith("pp/")]
    # the path crosses the stage boundary at least forward once and backward once,
    # at most once each way per micro-batch
    assert 2 <= len(on_path) <= 2 * j.micro_batches
    # a send overlapped by its sender's next compute is not exposed
    assert 0 < result.exposed_s["pp"] <= len(on_path) * send_s * (1 + 1e-9)
    assert 2 * send_s * (1 - 1e-9) <= result.iteration_s - free.iteration_s
    assert result.iteration_s - free.iteration_s <= len(on_path) * send_s * (1 + 1e-9)


def test_dp_all_reduce_hidden_while_fast_exposed_when_slow_with_the_knee_predicted():
    j = job(dp=4, bucket_bytes=job(dp=4).stage_grad_bytes() // 8)  # one bucket per layer
    per_layer = j.stage_grad_bytes() // 8
    bwd_layer_s = 2 * j.layer_fwd_s()
    # bucket k (k = 0..7) is ready after k+1 layers of the last backward; the bucket chain
    # hides while one all-reduce takes at most one layer's backward: the knee rate. Only
    # the last bucket (ready when the backward ends) is exposed above it.
    knee_bps = 2 * 3 / 4 * per_layer * 8 / bwd_layer_s
    rates = [knee_bps * f for f in (4, 2, 1.05, 0.9, 0.5, 0.25)]
    exposed = []
    for rate in rates:
        r = evaluate(build_step(j), FabricCost(rate_bps=rate))
        free = evaluate(build_step(j), lambda node: 0.0)
        exposed.append(r.iteration_s - free.iteration_s)
        ar_s = 2 * 3 / 4 * per_layer * 8 / rate
        assert r.iteration_s - free.iteration_s >= ar_s * (1 - 1e-9)  # the last bucket
        if rate >= knee_bps:
            assert r.iteration_s - free.iteration_s == pytest.approx(ar_s, rel=1e-6)
        else:  # every bucket queues behind the one before: 8 all-reduces minus 7 layers
            assert r.iteration_s - free.iteration_s == pytest.approx(
                8 * ar_s - 7 * bwd_layer_s, rel=1e-6)
    assert exposed == sorted(exposed)


def test_no_overlap_exposes_every_bucket():
    j = job(dp=4, bucket_bytes=job().stage_grad_bytes() // 8, overlap_dp=False)
    rate = 1e9
    r = evaluate(build_step(j), FabricCost(rate_bps=rate))
    free = evaluate(build_step(j), lambda node: 0.0)
    ar_total = 2 * 3 / 4 * j.stage_grad_bytes() * 8 / rate
    assert r.iteration_s - free.iteration_s == pytest.approx(ar_total, rel=1e-3)
    assert r.exposed_s["dp"] == pytest.approx(ar_total, rel=1e-3)
    assert r.critical_path[-1].startswith("dp/")


def test_moe_ep_all_to_all_is_on_the_stream():
    moe = ModelShape(layers=2, hidden=512, heads=8, kv_heads=8, ffn=1024, vocab=100,
                     experts=4, top_k=2)
    j = TrainingJob(moe, Gpu(1e14), seq=256, micro_batch=1, global_batch=4, dp=4, ep=4)
    nodes = build_step(j)
    ep = [n for n in nodes if n.kind == "ep"]
    assert len(ep) == 2 * 2 * 2  # 2 layers x fwd+bwd x (dispatch, combine), 1 micro-batch
    r = evaluate(nodes, FabricCost(rate_bps=1e9))
    each = 3 / 4 * j.activation_bytes * 2 * 8 / 1e9
    assert r.exposed_s["ep"] == pytest.approx(8 * each, rel=1e-9)


def test_cycle_and_missing_dependency_are_errors():
    with pytest.raises(ValueError, match="unknown"):
        evaluate([Node("a", "compute", "s", ("zz",), 1.0)], lambda n: 0.0)
    with pytest.raises(ValueError, match="cycle"):
        evaluate([Node("a", "compute", "s1", ("b",), 1.0),
                  Node("b", "compute", "s2", ("a",), 1.0)], lambda n: 0.0)


def _topology():
    return build_topology(spec_from_dict({"name": "r4x4", "kind": "rail-optimized",
                                          "servers": 4, "gpus_per_server": 4,
                                          "servers_per_leaf": 4, "spines": 2,
                                          "host_link": {"rate": "20Mbps", "delay": "5us"},
                                          "fabric_link": {"rate": "20Mbps", "delay": "5us"}}))


def test_placement_keeps_tp_in_a_server_and_dp_on_a_rail():
    topo = _topology()
    gpus = {g.name: g for g in topo.gpus}
    j = job(tp=4, dp=4, global_batch=8)
    for rail_aware in (True, False):
        ranks = place(j, topo, rail_aware)
        assert len(set(ranks)) == 16
        for group in range(4):  # TP groups: 4 consecutive ranks, one server
            assert len({gpus[r].server for r in ranks[4 * group:4 * group + 4]}) == 1
        dp_rails = [{gpus[ranks[t + 4 * d]].rail for d in range(4)} for t in range(4)]
        if rail_aware:
            assert all(len(rails) == 1 for rails in dp_rails)
        else:  # DP peers cross rails (the spine)
            assert all(len(rails) == 4 for rails in dp_rails)
    with pytest.raises(ValueError, match="scale-up"):
        place(job(tp=8, global_batch=8), topo)
    with pytest.raises(ValueError, match="GPUs"):
        place(job(tp=4, dp=8, global_batch=8), topo)


def _two_sites():
    return build_topology(spec_from_dict({"name": "x2", "kind": "rail-optimized",
                                          "servers": 4, "gpus_per_server": 2,
                                          "servers_per_leaf": 4, "spines": 2,
                                          "host_link": {"rate": "20Mbps", "delay": "5us"},
                                          "fabric_link": {"rate": "20Mbps", "delay": "5us"},
                                          "sites": {"count": 2, "dci_link": {
                                              "rate": "20Mbps", "distance": "10km"}}}))


def test_across_sites_dp_crosses_them_and_tp_and_pp_stay_in_one():
    """2 sites x 4 servers x 2 GPUs, tp 2 x pp 2 x dp 4: each site holds every stage of
    2 of the 4 DP replicas, so only DP's all-reduce crosses the DCI; TP stays in a
    server, DP peers on one rail."""
    topo = _two_sites()
    gpus = {g.name: g for g in topo.gpus}
    site = {s.name: s.site for s in topo.servers}
    j = job(tp=2, pp=2, dp=4, global_batch=8)
    ranks = place(j, topo)
    assert len(set(ranks)) == 16
    where = [site[gpus[r].server] for r in ranks]

    def rank(t: int, d: int, stage: int) -> int:
        return t + 2 * (d + 4 * stage)
    for d in range(4):  # a replica's stages (its PP chain) in one site
        assert len({where[rank(t, d, s)] for t in range(2) for s in range(2)}) == 1
    for s in range(2):
        for t in range(2):  # a DP group spans both sites, half in each, on one rail
            group = [rank(t, d, s) for d in range(4)]
            assert sorted(where[r] for r in group) == [0, 0, 1, 1]
            assert len({gpus[ranks[r]].rail for r in group}) == 1
        for d in range(4):  # TP inside a server
            assert len({gpus[ranks[rank(t, d, s)]].server for t in range(2)}) == 1
    # dp that does not split over the sites: Megatron's order, as on one site
    odd = place(job(tp=2, pp=1, dp=3, global_batch=6), topo)
    assert odd == [g.name for g in topo.gpus][:6]


def test_moe_expert_gradients_are_reduced_among_replicas_holding_the_same_experts():
    moe = ModelShape(layers=2, hidden=512, heads=8, kv_heads=8, ffn=1024, vocab=100,
                     experts=4, top_k=2)
    j = TrainingJob(moe, Gpu(1e14), seq=256, micro_batch=1, global_batch=8, dp=8, ep=2,
                    bucket_bytes=2**40)
    dp = {n.id: n for n in build_step(j) if n.kind == "dp"}
    assert set(dp) == {"dp/0/b0", "dp/0/e0"}
    assert dp["dp/0/e0"].group == 4 and dp["dp/0/b0"].group == 8
    assert dp["dp/0/e0"].size_bytes == 2 * 2 * moe.mlp_params * 2  # 2 layers, 2 experts, bf16
    assert dp["dp/0/b0"].size_bytes + dp["dp/0/e0"].size_bytes == j.stage_grad_bytes()
    # ep = dp: every replica holds its own experts, nothing to reduce for them
    k = TrainingJob(moe, Gpu(1e14), seq=256, micro_batch=1, global_batch=8, dp=4, ep=4)
    assert [n.id for n in build_step(k) if n.kind == "dp"] == ["dp/0/b0"]
