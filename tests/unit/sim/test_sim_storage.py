"""A checkpoint burst during a backend all-reduce, on the virtual clock:
with a storage fabric of its own the backend's counters and the all-reduce
do not change at all; with storage on the backend the checkpoint shares the
GPUs' NICs, leaves and spines with the ring and slows it measurably."""

from __future__ import annotations

from pathlib import Path

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
    assert separate["networks"]["backend"] == alone["networks"]["backend"]
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
