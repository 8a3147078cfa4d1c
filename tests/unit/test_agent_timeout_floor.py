"""The agents' retransmission floor (emulator/run/agent_config.py,
``min_timeout_ms``) against the switches' buffer: the fullest queue a
class can build (lossless: every other port's XOFF and headroom, within
the pool; lossy: its static cap and alpha / (1 + alpha) of the shared
pool), drained at its port's rate, at every switch of the longest path,
for the data and its ACK. Expected values are worked out by hand from the
buffer model (emulator/targets/builtin/mmu.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from emulator.run.agent_config import (
    build_agent_configs, largest_queue_drain_s, min_timeout_ms, path_switches,
)
from emulator.scenario import expand_workload, scenario_from_dict
from emulator.topology import load_topology

ROOT = Path(__file__).resolve().parents[2]

FRAME = 1024 + 58 + 16          # the largest frame: MTU 1024, headers, RETH


def _leaf(servers: int, **switches: Any) -> Any:
    """``servers`` single-GPU servers on one leaf (and one spine), 100 Mb/s,
    5 us links; srv0 and srv1 send to the last server on the RoCE priority,
    srv2 to it on priority 0 (lossy)."""
    topo = {"name": "one-leaf", "kind": "rail-optimized", "servers": servers,
            "gpus_per_server": 1, "servers_per_leaf": servers, "spines": 1,
            "host_link": {"rate": "100Mbps", "delay": "5us"},
            "fabric_link": {"rate": "100Mbps", "delay": "5us"}}
    last = f"srv{servers - 1}/gpu0"
    flows = [{"id": "a", "src": "srv0/gpu0", "dst": last, "size": "1MB"},
             {"id": "b", "src": "srv1/gpu0", "dst": last, "size": "1MB"},
             {"id": "lossy", "src": "srv2/gpu0", "dst": last, "size": "1MB", "priority": 0}]
    return scenario_from_dict({"name": "t", "topology": topo, "duration": "2s",
                               "switches": {"buffer": "20KB", **switches},
                               "workload": {"flows": flows}}, "<t>")


def _headroom(response_s: float = 0.0) -> float:
    # 2 x cable + 3 largest frames + a pause frame + the peer's response
    # (mmu rounds the cable's bytes up: within 1 B, rel=1e-4 below)
    return 2 * 100e6 * 5e-6 / 8 + 3 * FRAME + 64 + 100e6 * response_s / 8


def test_path_switches():
    assert path_switches(_leaf(8).topology) == 1
    assert path_switches(load_topology(ROOT / "topologies" / "fat-tree-k4.yaml")) == 5
    assert path_switches(load_topology(ROOT / "topologies" / "leaf-spine-4x4.yaml")) == 3


def test_lossless_queue_takes_every_other_ports_xoff_and_headroom():
    # 8 hosts and the spine on the leaf: a host port's lossless queue may
    # hold the XOFF (60 KB) and headroom of the 8 other ports
    scenario = _leaf(8, pfc={"enabled": True, "xoff": "60KB", "xon": "30KB"})
    expected_s = 8 * (60e3 + _headroom()) * 8 / 100e6
    assert largest_queue_drain_s(scenario, lossy=False) == pytest.approx(expected_s, rel=1e-4)
    # a lossy queue: its static cap (20 KB) is below 8/9 of the pool
    assert largest_queue_drain_s(scenario, lossless=False) == pytest.approx(20e3 * 8 / 100e6)
    # live switches allow 5 ms of response in the headroom: more bytes
    live = largest_queue_drain_s(scenario, response_ns=5_000_000, lossy=False)
    assert live == pytest.approx(8 * (60e3 + _headroom(5e-3)) * 8 / 100e6, rel=1e-4)
    # the floor: twice (data and ACK) that drain at the 1 switch of the path
    # and a round trip over its 2 links; the flows use both classes
    flows = expand_workload(scenario)
    assert min_timeout_ms(scenario, flows) == pytest.approx(
        (2 * 1 * expected_s + 2 * 2 * 5e-6) * 1e3, rel=1e-4)
    config = build_agent_configs(scenario, flows, 0.0)["srv0"]["defaults"]["transport"]
    assert config["min_timeout_ms"] == min_timeout_ms(scenario, flows) > 20.0
    live_config = build_agent_configs(scenario, flows, 0.0, pfc_response_ns=5_000_000)
    assert live_config["srv0"]["defaults"]["transport"]["min_timeout_ms"] == pytest.approx(
        (2 * live + 2 * 2 * 5e-6) * 1e3, rel=1e-4)


def test_the_pool_bounds_a_lossless_queue():
    # a 200 KB pool: 9 headrooms reserved, the rest shared; 8 groups of
    # 60 KB + headroom would need more than the whole pool
    scenario = _leaf(8, pfc={"enabled": True, "xoff": "60KB", "xon": "30KB"},
                     pool={"size": "200KB"})
    assert largest_queue_drain_s(scenario, lossy=False) == pytest.approx(200e3 * 8 / 100e6)
    # dynamic XOFF: a group may take up to the shared pool, so the pool bounds it
    dynamic = _leaf(8, pfc={"enabled": True, "alpha": 1, "xoff": "60KB", "xon": "30KB"},
                    pool={"size": "1MB"})
    assert largest_queue_drain_s(dynamic, lossy=False) == pytest.approx(1e6 * 8 / 100e6)


def test_lossy_queue_takes_alpha_over_one_plus_alpha_of_the_shared_pool():
    # no static cap that binds (buffer 1 MB), alpha 1/8, a 900 KB pool per
    # switch: 1/9 of what its headrooms leave shared, the most at the spine
    # (one port, one headroom; the leaf reserves 9)
    scenario = _leaf(8, buffer="1MB", pool={"size": "900KB", "alpha": 0.125},
                     pfc={"enabled": True, "xoff": "60KB", "xon": "30KB"})
    shared = 900e3 - _headroom()
    assert largest_queue_drain_s(scenario, lossless=False) == pytest.approx(
        shared / 9 * 8 / 100e6, rel=1e-4)
    # without PFC every flow is lossy, and the floor is the lossy queue's
    nopfc = _leaf(8, pfc={"enabled": False})
    assert min_timeout_ms(nopfc, expand_workload(nopfc)) == 20.0   # 20 KB drain: the floor
