"""The fabric plan on fabric.p4: every pair of GPUs on different servers
reaches each other through the switches the topology predicts."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from emulator.control.fabric_plan import (
    CLASSIFY, ECN_CONFIG, PFC_INGRESS, FabricSettings, PfcSettings, plan_fabric,
)
from emulator.topology import load_topology, paths
from tests.unit.control.fabric_sim import SimFabric

TOPOLOGIES = Path(__file__).resolve().parents[3] / "topologies"


def _frame(src, dst, sport=0xC000):
    return bytes(Ether(src=src.mac, dst=src.gateway_mac)
                 / IP(src=src.ip, dst=dst.ip, tos=26 << 2 | 2, ttl=64)
                 / UDP(sport=sport, dport=4791) / (b"\x04" + bytes(11) + b"x" * 64))


@pytest.mark.parametrize("name", ["quickstart", "rail-4x4", "leaf-spine-4x4", "fat-tree-k4"])
def test_every_cross_server_pair_is_delivered_on_a_shortest_path(name):
    topo = load_topology(TOPOLOGIES / f"{name}.yaml")
    fabric = SimFabric(topo, plan_fabric(topo))
    for src in topo.gpus:
        for dst in topo.gpus:
            if src.server == dst.server:
                continue
            got, crossed, frame = fabric.send(src.name, _frame(src, dst))
            assert got == dst.name, (src.name, dst.name, crossed)
            assert crossed in paths(topo, src.name, dst.name)
            pkt = Ether(frame)
            assert pkt.dst == dst.mac and pkt.src == dst.gateway_mac
            assert pkt[IP].ttl == 64 - len(crossed)


def test_rail_4x4_cross_rail_flows_use_both_spines():
    topo = load_topology(TOPOLOGIES / "rail-4x4.yaml")
    fabric = SimFabric(topo, plan_fabric(topo))
    src, dst = topo.gpu("srv0/gpu1"), topo.gpu("srv3/gpu2")
    spines = {fabric.send(src.name, _frame(src, dst, sport))[1][1] for sport in range(0xC000, 0xC040)}
    assert spines == {"spine0", "spine1"}


def test_plan_contents_follow_settings():
    topo = load_topology(TOPOLOGIES / "quickstart.yaml")
    plans = plan_fabric(topo, FabricSettings(pfc=PfcSettings(enabled=False)))
    leaf = plans[topo.switches[0].name]
    assert leaf.table(PFC_INGRESS) == []
    assert len(leaf.table(CLASSIFY)) == 3
    nports = len(topo.switches[0].ports)
    assert len(leaf.table(ECN_CONFIG)) == nports
    assert {s.session_id for s in leaf.clone_sessions} == {1000 + p.number for p in topo.switches[0].ports}
    assert all(p.pfc_priorities == () for p in leaf.ports)
