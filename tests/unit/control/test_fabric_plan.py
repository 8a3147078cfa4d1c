"""The fabric plan on fabric.p4: every pair of GPUs on different servers
reaches each other through the switches the topology predicts."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from emulator.control.encode import MODIFY, Encoder
from emulator.control.fabric_plan import (
    CLASSIFY, ECMP_HASH, ECN_CONFIG, PFC_INGRESS, FabricSettings, PfcSettings, plan_fabric,
)
from emulator.p4.frontend import compile_file
from emulator.p4.p4info.from_ir import p4info_for
from emulator.p4.p4info.index import P4InfoIndex
from emulator.topology import load_topology, paths
from tests.unit.control.fabric_sim import FABRIC, SimFabric

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


def test_each_tier_reads_the_hash_at_its_own_offset():
    """Edges 0, aggregation switches 8, cores 16, written as the table's
    default action (a MODIFY with is_default_action, P4Runtime 9.1.5)."""
    topo = load_topology(TOPOLOGIES / "fat-tree-k4.yaml")
    plans = plan_fabric(topo)
    offsets = {}
    for switch in topo.switches:
        (entry,) = plans[switch.name].table(ECMP_HASH)
        assert entry.default and entry.match == ()
        offsets.setdefault(switch.tier, set()).add(dict(entry.params)["offset"])
    assert offsets == {1: {0}, 2: {8}, 3: {16}}
    encoder = Encoder(P4InfoIndex(p4info_for(compile_file(FABRIC))))
    updates = encoder.plan_updates(plans[topo.switches[0].name])
    defaults = [u for u in updates if u.entity.table_entry.is_default_action]
    assert len(defaults) == 1 and defaults[0].type == MODIFY
    assert updates[-1] is defaults[0]  # after the entries it could depend on


def test_flows_an_aggregation_switch_takes_spread_over_its_cores():
    """Hash polarization: the flows that left an edge switch on its first
    uplink are spread over both of that aggregation switch's cores, which a
    hash read at the same bits on both tiers cannot do."""
    topo = load_topology(TOPOLOGIES / "fat-tree-k4.yaml")
    fabric = SimFabric(topo, plan_fabric(topo))
    src, dst = topo.gpus[0], topo.gpus[-1]
    by_agg: dict[str, set[str]] = {}
    for sport in range(0xC000, 0xC100):
        crossed = fabric.send(src.name, _frame(src, dst, sport))[1]
        by_agg.setdefault(crossed[1], set()).add(crossed[2])
    assert len(by_agg) == 2 and all(len(cores) == 2 for cores in by_agg.values()), by_agg
