"""The switch buffer on the virtual clock (emulator/targets/builtin/mmu.py):
the lossless class loses nothing where pauses can hold it, pauses spread
upstream hop by hop and block victims, a lossy class stops at its dynamic
threshold, and a headroom smaller than the cable's in-flight bytes
overflows while the computed one does not.

The 128-host k = 8 permutation of the issue takes minutes on 2 cores; it is
``benchmarks/permutation_fat_tree.py``. Here: its k = 4 (16-host) twin."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from emulator.scenario.loader import scenario_from_dict
from emulator.run.sim import run_sim
from emulator.scenario.spec import SwitchOverride
from emulator.scenario.units import Threshold
from tests.unit.sim.sim_kit import (
    fat_tree_permutation, fct_summary, run, scenario, topology,
)

FT4 = {"name": "ft4", "kind": "fat-tree", "k": 4,
       "host_link": {"rate": "100Gbps", "delay": "1us"},
       "fabric_link": {"rate": "100Gbps", "delay": "1us"}}
NO_ECN = {"ecn": {"enabled": False}}


def _switch_pfc_tx(results: dict[str, Any], switch: str) -> int:
    ports = results["switches"][switch]
    return sum(slot.get("pfc_tx", 0) for port, prios in ports.items()
               if not port.startswith("_") for slot in prios.values())


@pytest.mark.parametrize("k, dcqcn, bound_us", [
    (4, False, 700), (4, True, 900), (8, False, 1000), (8, True, 1300),
], ids=["k4-pfc-only", "k4-dcqcn", "k8-pfc-only", "k8-dcqcn"])
def test_fat_tree_permutation_is_lossless(tmp_path: Path, k: int, dcqcn: bool,
                                          bound_us: float) -> None:
    """htsim's permutation case (2 MB a host, 100 Gb/s, 1 us a hop, MTU
    4096, buffer 400KB, xoff 60KB, xon 48KB) on a k-ary fat-tree (k = 8:
    the issue's 128 hosts): no lossless drop, every flow done, the FCT
    distribution printed. htsim finishes all 128 by 0.82 ms; here the
    slowest takes about 0.76 ms with PFC only and 1.0 ms with DCQCN [sim].
    The aggregation switches spread their flows over the cores: with one
    ECMP hash at every tier (before fabric.p4's per-tier hash offsets) each
    used one of its four core uplinks and the slowest flow took 1.5 ms."""
    results = run(fat_tree_permutation(k, dcqcn=dcqcn), tmp_path)
    summary = fct_summary(results)
    print(f"\nk={k} permutation, {'DCQCN' if dcqcn else 'PFC only'}: {summary}")
    assert summary["drops"] == 0 and results["totals"]["drops"] == 0
    assert summary["done"] == summary["flows"] == k ** 3 // 4
    assert summary["fct_max_us"] < bound_us
    core_uplinks = [b for name, e in results["ecmp"].items() if name.startswith("agg")
                    for b in e["uplinks"].values()]
    assert len(core_uplinks) == k ** 3 // 4  # (k pods x k/2 aggs) x k/2 cores each
    used = sum(1 for b in core_uplinks if b > 0)
    polarized = k * k // 2  # one core uplink per agg switch
    print(f"core uplinks used: {used} of {len(core_uplinks)} (polarized: {polarized})")
    assert used > polarized * (2 if k == 8 else 1)
    # an idle fabric at the end: every switch's buffer empty
    for name, ports in results["switches"].items():
        buffer = ports["_buffer"]
        assert buffer["shared_used_bytes"] == 0 and buffer["headroom_used_bytes"] == 0, name


def _incast(victim_only: bool, pfc: bool = True, **switches: Any) -> dict[str, Any]:
    # Six senders in pods 1-3 into srv0 (pod 0); the victim shares its
    # sender's NIC (the upstream port) with one incast flow and goes to an
    # idle host in that sender's own pod.
    senders = ["srv4/gpu0", "srv5/gpu0", "srv8/gpu0", "srv9/gpu0", "srv12/gpu0", "srv13/gpu0"]
    flows = [{"id": "victim", "src": "srv4/gpu0", "dst": "srv6/gpu0", "size": 1_000_000}]
    if not victim_only:
        flows += [{"id": f"in{i}", "src": s, "dst": "srv0/gpu0", "size": 1_000_000}
                  for i, s in enumerate(senders)]
    return scenario("incast-2tier", FT4, {"flows": flows}, duration="5ms",
                    switches={"buffer": "400KB", **NO_ECN,
                              "pfc": {"enabled": pfc, "xoff": "60KB", "xon": "48KB"},
                              **switches},
                    hosts={"mtu": "4096B", "dcqcn": {"enabled": False}})


def test_incast_through_two_tiers_pauses_hop_by_hop_and_blocks_the_victim(tmp_path: Path) -> None:
    alone = run(_incast(True), tmp_path / "alone")
    results = run(_incast(False), tmp_path / "incast")
    totals = results["totals"]
    assert totals["drops"] == 0 and totals["flows_incomplete"] == 0
    # pauses leave the receiver's edge, then its pod's aggregation, then the
    # cores, then the senders' aggregation and edges, and stop the NICs
    tiers = {"edge-p0": 0, "agg-p0": 0, "core": 0, "agg-p1": 0, "edge-p1": 0}
    for name in results["switches"]:
        for prefix in tiers:
            if name.startswith(prefix):
                tiers[prefix] += _switch_pfc_tx(results, name)
    print(f"\nPFC frames sent per tier: {tiers}; hosts paused {totals['host_paused_s']:.6f} s")
    assert all(tiers.values()), tiers
    assert totals["host_paused_s"] > 0
    fct = {f["id"]: f["fct_s"] for f in results["flows"]}
    victim_alone = alone["flows"][0]["fct_s"]
    # alone, 1 MB at 100 Gb/s is ~85 us; behind the paused NIC it waits for
    # the incast (6 MB into one 100 Gb/s port: ~0.5 ms)
    print(f"victim FCT alone {victim_alone * 1e6:.1f} us, in the incast "
          f"{fct['victim'] * 1e6:.1f} us")
    assert victim_alone < 120e-6
    assert fct["victim"] > 3 * victim_alone
    _check_buffer_series(tmp_path / "incast", results, tiers)


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _check_buffer_series(out: Path, results: dict[str, Any], tiers: dict[str, int]) -> None:
    """buffer.csv, priority_groups.csv and queues.csv sample the same
    instants of the same bytes: at every sample of a switch, its pool in
    use (shared + headroom) = the bytes its ingress groups hold = the
    bytes its egress queues hold, headroom in use = the groups' headroom
    bytes; no sample exceeds the high-water marks of results.json; the
    series of each switch ends empty; headroom was used in every tier
    that paused."""
    pool: dict[tuple[str, float], tuple[int, int]] = {}
    for r in _csv(out / "buffer.csv"):
        pool[r["switch"], float(r["t_s"])] = (int(r["shared_used_bytes"]),
                                             int(r["headroom_used_bytes"]))
        assert int(r["shared_used_bytes"]) <= int(r["shared_bytes"])
    groups: dict[tuple[str, float], list[int]] = {}
    for r in _csv(out / "priority_groups.csv"):
        slot = groups.setdefault((r["switch"], float(r["t_s"])), [0, 0])
        slot[0] += int(r["pg_bytes"])
        slot[1] += int(r["headroom_used_bytes"])
        held = results["switches"][r["switch"]][r["port"]][r["priority"]]
        assert int(r["pg_bytes"]) <= held["pg_max_bytes"]
        assert int(r["headroom_used_bytes"]) <= held["headroom_max_bytes"]
    queued: dict[tuple[str, float], int] = {}
    for r in _csv(out / "queues.csv"):
        key = (r["switch"], float(r["t_s"]))
        queued[key] = queued.get(key, 0) + int(r["depth_bytes"])
    assert pool and len(pool) >= 10 * len(results["switches"]) // 2
    for key, (shared, headroom) in pool.items():
        assert groups.get(key, [0, 0]) == [shared + headroom, headroom], key
        assert queued.get(key, 0) == shared + headroom, key
    for key in groups:
        assert key in pool, key     # a group holds bytes only while the pool does
    peak: dict[str, list[int]] = {}
    for (name, t), (shared, headroom) in sorted(pool.items(), key=lambda kv: kv[0][1]):
        slot = peak.setdefault(name, [0, 0, -1])
        slot[0], slot[1] = max(slot[0], shared), max(slot[1], headroom)
        slot[2] = shared + headroom   # the last sample
        buffer = results["switches"][name]["_buffer"]
        assert shared <= buffer["shared_max_bytes"] and headroom <= buffer["headroom_max_bytes"]
    assert all(last == 0 for _, _, last in peak.values()), peak
    for prefix in tiers:
        assert any(p[1] > 0 for name, p in peak.items() if name.startswith(prefix)), prefix


def test_lossy_class_stops_at_its_dynamic_threshold(tmp_path: Path) -> None:
    """The same incast with PFC off and alpha = 1/8 on the RoCE priority: the
    queue to the receiver may grow while it holds at most alpha x the free
    shared pool, so alone it settles at alpha / (1 + alpha) = 1/9 of it:
    2 MB / 9 = 222,222 B; the rest is tail-dropped. Other queues of the
    switch hold little, so the peak is between 0.8 x and 1 x that (+1 frame)."""
    results = run(_incast(False, pfc=False, buffer="4MB",
                          pool={"size": "2MB", "alpha": {3: 0.125}}), tmp_path)
    edge = results["switches"]["edge-p0-0"]
    assert edge["_buffer"]["shared_bytes"] == 2_000_000
    receiver = scenario_from_dict(_incast(False), "x").topology.gpu("srv0/gpu0")
    assert receiver.switch == "edge-p0-0"
    port = receiver.switch_port
    queue = edge[str(port)]["3"]
    expected = 2_000_000 * 0.125 / 1.125
    print(f"\nlossy queue peak {queue['max_qdepth']['bytes']} B, expected <= {expected:.0f} B")
    assert 0.8 * expected <= queue["max_qdepth"]["bytes"] <= expected + 4154
    assert edge["_drops_by_reason"].get("tail", 0) > 0
    assert "headroom_overflow" not in edge["_drops_by_reason"]


def _long_cable(headroom_bytes: int | None) -> Any:
    # srv0 (leaf 0) and srv2 (leaf 1) send to srv4 (leaf 2) over one spine:
    # the spine's port to leaf 2 is asked for twice its rate, so the spine
    # pauses leaf 0 and leaf 1. 20 us of cable at 100 Gb/s: 2 x 250 KB in
    # flight when a pause takes hold.
    topo = topology(6, 1, rate="100Gbps", delay="20us", per_leaf=2)
    flows = [{"id": f"f{i}", "src": f"srv{i}/gpu0", "dst": "srv4/gpu0", "size": 3_000_000}
             for i in (0, 2)]
    data = scenario("long-cable", topo, {"flows": flows}, duration="3ms",
                    switches={"buffer": "400KB", **NO_ECN,
                              "pfc": {"enabled": True, "xoff": "60KB", "xon": "48KB"}},
                    hosts={"mtu": "4096B", "dcqcn": {"enabled": False}})
    loaded = scenario_from_dict(data, "<long-cable>")
    leaf = loaded.topology.switch("spine0")  # the port from leaf 0
    port = next(p.number for p in leaf.ports if p.peer == "leaf-r0-0")
    if headroom_bytes is None:
        return loaded, leaf.name, port
    # forced below what the loader allows (it would refuse this file)
    small = SwitchOverride(leaf.name, port, pfc={"headroom": Threshold(headroom_bytes, "bytes")})
    switches = replace(loaded.switches, overrides=(small,))
    return replace(loaded, switches=switches), leaf.name, port


def test_headroom_below_the_cable_overflows_and_the_computed_one_holds(tmp_path: Path) -> None:
    computed, leaf, port = _long_cable(None)
    good = run_sim(computed, tmp_path / "good", progress=False)
    assert good["totals"]["drops"] == 0 and good["totals"]["flows_incomplete"] == 0
    slot = good["switches"][leaf][str(port)]["3"]
    assert slot["pfc_tx"] > 0 and slot["headroom_max_bytes"] > 100_000  # it was needed
    forced, _, _ = _long_cable(100_000)  # < 2 x 100 Gb/s x 20 us = 500 KB
    bad = run_sim(forced, tmp_path / "bad", progress=False)
    reasons = bad["switches"][leaf]["_drops_by_reason"]
    print(f"\nheadroom peak with the computed headroom {slot['headroom_max_bytes']} B; "
          f"forced to 100 KB: drops {reasons}")
    assert reasons.get("headroom_overflow", 0) > 0 and "tail" not in reasons


def _paced_victim_behind_an_incast(senders: int = 14) -> dict[str, Any]:
    # One leaf, 100 Mb/s. The victim (10 Mb/s, 60 KB) has its RTT samples
    # from an empty queue (its timeout at the 20 ms floor) when, at 20 ms,
    # 14 senders of 200 KB each fill the lossless queue to the receiver to
    # about 14 x XOFF (60 KB): ~70 ms of drain ahead of the victim's next
    # ACK request. The static cap of lossy queues (20 KB) says nothing of it.
    topo = topology(senders + 2, 1, rate="100Mbps", delay="5us", per_leaf=senders + 2)
    rx = f"srv{senders + 1}/gpu0"
    flows = [{"id": "victim", "src": "srv0/gpu0", "dst": rx, "size": 60_000, "rate": "10Mbps"}]
    flows += [{"id": f"in{i}", "src": f"srv{i}/gpu0", "dst": rx, "size": 200_000,
               "start": "20ms"} for i in range(1, senders + 1)]
    return scenario("paced-victim", topo, {"flows": flows}, duration="2s",
                    switches={"buffer": "20KB", **NO_ECN,
                              "pfc": {"enabled": True, "xoff": "60KB", "xon": "30KB"}},
                    hosts={"dcqcn": {"enabled": False}})


def test_no_spurious_timeout_behind_a_full_lossless_queue(tmp_path: Path, monkeypatch) -> None:
    """The agents' timeout floor covers the drain of the fullest lossless
    queue (emulator/run/agent_config.py, min_timeout_ms): the victim waits
    ~70 ms for its ACK and does not time out; with the floor the old rule
    gave (from the 20 KB lossy cap: 20 ms) it times out and goes back N
    while nothing was lost."""
    import emulator.run.agent_config as agent_config

    data = _paced_victim_behind_an_incast()
    floor_ms = agent_config.min_timeout_ms(scenario_from_dict(data, "<t>"))
    good = run(data, tmp_path / "floor")
    receiver_port = str(scenario_from_dict(data, "<t>").topology.gpu("srv15/gpu0").switch_port)
    queue = good["switches"]["leaf-r0-0"][receiver_port]["3"]["max_qdepth"]["bytes"]
    drain_ms = queue * 8 / 100e6 * 1e3
    victim = {f["id"]: f for f in good["flows"]}["victim"]
    monkeypatch.setattr(agent_config, "min_timeout_ms", lambda *a, **k: 20.0)
    old = run(data, tmp_path / "old")
    old_victim = {f["id"]: f for f in old["flows"]}["victim"]
    print(f"\nqueue peak {queue} B ({drain_ms:.1f} ms to drain), floor {floor_ms} ms: victim "
          f"retransmits {victim['retransmits']}, FCT {victim['fct_s'] * 1e3:.1f} ms; with a "
          f"20 ms floor: {old_victim['retransmits']}, {old_victim['fct_s'] * 1e3:.1f} ms")
    assert good["totals"]["drops"] == old["totals"]["drops"] == 0
    assert drain_ms > 50 and floor_ms > 2 * drain_ms
    assert good["totals"]["retransmits"] == 0 and good["totals"]["flows_incomplete"] == 0
    assert old_victim["retransmits"] > 0      # spurious: nothing was dropped
