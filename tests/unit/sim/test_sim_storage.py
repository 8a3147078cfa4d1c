"""A checkpoint burst during a backend all-reduce, on the virtual clock:
with a storage fabric of its own the backend's counters and the all-reduce
do not change at all; with storage on the backend the checkpoint shares the
GPUs' NICs, leaves and spines with the ring and slows it measurably."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim_kit import run, write_wire_bytes

LINK = {"rate": "100Gbps", "delay": "1us"}
SHARD_BYTES = 2_000_000  # per GPU, striped over the 2 storage nodes


def _scenario(network: str, checkpoint: bool) -> dict:
    topology = {"name": "ckpt", "kind": "rail-optimized", "servers": 4, "gpus_per_server": 2,
                "servers_per_leaf": 4, "spines": 2, "host_link": LINK, "fabric_link": LINK,
                "storage": {"nodes": 2, "link": LINK, "network": network}}
    workload: dict = {"collectives": [{"kind": "all-reduce", "id": "ar", "servers": ["srv[0-3]"],
                                       "placement": "rail-aligned", "size": "4MB"}]}
    if checkpoint:
        workload["generators"] = [{"kind": "checkpoint", "id": "ck", "size": SHARD_BYTES}]
    return {"name": f"ckpt-{network}", "target": "sim", "topology": topology,
            "duration": "3ms", "seed": 1, "workload": workload,
            "switches": {"buffer": "1MB", "pfc": {"enabled": True, "xoff": "100KB",
                                                  "xon": "80KB"}}}


def test_a_checkpoint_burst_leaves_a_separate_backend_alone_and_slows_a_converged_one(
        tmp_path: Path) -> None:
    alone = run(_scenario("separate", False), tmp_path / "alone")
    separate = run(_scenario("separate", True), tmp_path / "separate")
    converged = run(_scenario("backend", True), tmp_path / "converged")
    for results in (alone, separate, converged):
        assert results["errors"] == [] and results["totals"]["flows_incomplete"] == 0
        assert results["collectives"][0]["completed"] is True
    ring = {name: r["collectives"][0] for name, r in
            (("alone", alone), ("separate", separate), ("converged", converged))}
    # separate storage: the backend sees exactly what it saw without the checkpoint
    # (a run of sized work ends when all of it is done, so the checkpoint's
    # longer run spreads the same busiest-link bytes over more time)
    backend = {name: dict(r["networks"]["backend"]) for name, r in
               (("alone", alone), ("separate", separate))}
    util = {name: b.pop("max_link_util") for name, b in backend.items()}
    assert backend["separate"] == backend["alone"]
    assert separate["duration_s"] > alone["duration_s"]
    assert util["separate"] * separate["duration_s"] == pytest.approx(
        util["alone"] * alone["duration_s"], rel=1e-5)
    assert ring["separate"]["time_s"] == ring["alone"]["time_s"]
    # every shard crossed two storage links (NIC to leaf, leaf to node); ACKs add < 1 %
    data_bytes = 8 * 2 * 2 * write_wire_bytes(SHARD_BYTES // 2)[0]
    stored = separate["networks"]["storage"]["bytes"]
    assert data_bytes <= stored < 1.01 * data_bytes
    assert alone["networks"]["storage"]["bytes"] == 0
    # converged: the same bytes share GPU 0's NIC and rail with the ring
    assert converged["networks"]["backend"]["bytes"] > alone["networks"]["backend"]["bytes"]
    assert converged["networks"]["backend"]["ecn_marked"] > 0
    slowdown = ring["converged"]["time_s"] / ring["alone"]["time_s"]
    print(f"\nall-reduce 4 MB over 4 ranks [sim]: alone {ring['alone']['time_s'] * 1e6:.1f} us, "
          f"with a separate-storage checkpoint {ring['separate']['time_s'] * 1e6:.1f} us, "
          f"converged {ring['converged']['time_s'] * 1e6:.1f} us (x{slowdown:.2f})")
    assert slowdown > 1.2


def test_a_256_gpu_cluster_with_every_tier_runs_on_sim(tmp_path: Path) -> None:
    """2 sites x 16 servers x 8 GPUs (8-GPU scale-up domains, 8 rails, 4
    spines, 10 km DCI), a front-end with clients and a separate storage
    fabric: a ring all-reduce over site 0 (rail 0), a checkpoint of every GPU,
    requests in and tokens out. About 13 s [wall] on this machine."""
    from emulator.measure.results import check_invariants

    fast = {"rate": "400Gbps", "delay": "1us"}
    topology = {"name": "ai256", "kind": "rail-optimized", "servers": 16, "gpus_per_server": 8,
                "servers_per_leaf": 16, "spines": 4, "host_link": fast, "fabric_link": fast,
                "scale_up": {"rate": "450GBps", "hop_latency": "250ns"},
                "sites": {"count": 2, "border_switches": 2,
                          "dci_link": {"rate": "400Gbps", "distance": "10km"}},
                "front_end": {"link": LINK, "clients": 2},
                "storage": {"nodes": 4, "nics_per_node": 2,
                            "link": {"rate": "200Gbps", "delay": "1us"}}}
    workload = {"collectives": [{"kind": "all-reduce", "id": "ar", "servers": ["srv[0-15]"],
                                 "placement": "rail-aligned", "size": "1MB"}],
                "generators": [{"kind": "checkpoint", "id": "ck", "size": "256KB"},
                               {"kind": "requests", "id": "rq", "size": "4KB"},
                               {"kind": "tokens", "id": "tk", "size": "16KB", "start": "50us"}]}
    results = run({"name": "ai256", "target": "sim", "topology": topology, "duration": "1ms",
                   "seed": 1, "hosts": {"mtu": "4096B"}, "workload": workload,
                   "switches": {"pfc": {"enabled": True}}}, tmp_path)
    assert results["errors"] == [] and results["partial"] is False
    check_invariants(results)
    assert results["totals"]["flows_incomplete"] == 0 and results["totals"]["drops"] == 0
    assert len(results["flows"]) == 256 * 4 + 2 * 32 + 4 * 4  # shards, requests+tokens, ring
    networks = results["networks"]
    # every shard's bytes crossed two storage links; nothing else touched the DCI
    assert networks["storage"]["bytes"] >= 256 * 4 * 2 * write_wire_bytes(64_000, 4096)[0]
    assert networks["front-end"]["bytes"] > 0 and networks["dci"]["bytes"] == 0
    assert results["collectives"][0]["completed"] is True
