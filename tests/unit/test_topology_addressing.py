"""The addressing plan: unique, stable, and as documented."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from emulator.topology import load_topology, topology_from_dict
from emulator.topology.addressing import FABRIC_SUPERNET, switch_intf

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
SHIPPED = sorted(TOPOLOGIES.glob("*.yaml"))


def _all_macs(topology):
    return [gpu.mac for gpu in topology.gpus] + [
        port.mac for switch in topology.switches for port in switch.ports]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_addresses_are_unique(path):
    topology = load_topology(path)
    ips = [gpu.ip for gpu in topology.gpus]
    assert len(set(ips)) == len(ips)
    macs = _all_macs(topology)
    assert len(set(macs)) == len(macs)
    router_ids = [switch.router_id for switch in topology.switches]
    assert len(set(router_ids)) == len(router_ids)
    assert not set(router_ids) & set(ips)
    prefixes = [switch.prefix for switch in topology.switches if switch.prefix]
    assert len(set(prefixes)) == len(prefixes) == len(topology.leaves)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_addresses_are_stable_across_loads(path):
    first, second = load_topology(path), load_topology(path)
    assert first.gpus == second.gpus
    assert first.switches == second.switches
    assert first.links == second.links


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_nic_is_inside_its_leafs_prefix(path):
    topology = load_topology(path)
    supernet = ipaddress.IPv4Network(FABRIC_SUPERNET)
    for gpu in topology.gpus:
        leaf = topology.switch(gpu.switch)
        network = ipaddress.IPv4Network(leaf.prefix)
        assert network.prefixlen == gpu.prefix_len == 24
        assert ipaddress.IPv4Address(gpu.ip) in network and network.subnet_of(supernet)
        assert gpu.ip == f"10.{leaf.rail}.{leaf.leaf_index}.{gpu.switch_port}"
        assert gpu.gateway_ip == leaf.gateway_ip == f"10.{leaf.rail}.{leaf.leaf_index}.254"
        assert gpu.gateway_mac == leaf.port(gpu.switch_port).mac


def test_rail_optimized_scheme_shows_rail_leaf_and_server():
    topology = topology_from_dict({
        "name": "t", "kind": "rail-optimized", "servers": 8, "gpus_per_server": 4,
        "servers_per_leaf": 4, "spines": 2,
        "host_link": {"rate": "100Mbps", "delay": "5us"},
        "fabric_link": {"rate": "100Mbps", "delay": "5us"},
    })
    for gpu in topology.gpus:
        s, r = gpu.server_index, gpu.index
        assert gpu.ip == f"10.{r}.{s // 4}.{s % 4 + 1}"
        assert gpu.nic == f"eth{r}" and gpu.intf == f"srv{s}-eth{r}"
    gpu = topology.gpu("srv6/gpu3")
    assert (gpu.ip, gpu.mac) == ("10.3.1.3", "02:00:0a:03:01:03")
    assert topology.switch("leaf-r3-1").prefix == "10.3.1.0/24"


def test_documented_examples():
    topology = load_topology(TOPOLOGIES / "rail-4x4.yaml")
    gpu = topology.gpu("srv2/gpu1")
    assert (gpu.ip, gpu.mac, gpu.gateway_ip) == ("10.1.0.3", "02:00:0a:01:00:03", "10.1.0.254")
    leaf = topology.switch("leaf-r1-0")
    assert (leaf.index, leaf.router_id) == (1, "10.255.0.1")
    assert leaf.port(5).mac == "02:01:00:01:00:05"
    assert leaf.port(5).intf == "leaf-r1-0-eth5"
    assert load_topology(TOPOLOGIES / "leaf-spine-4x4.yaml").switch("tor1").prefix == "10.0.1.0/24"
    fat_tree = load_topology(TOPOLOGIES / "fat-tree-k4.yaml")
    assert fat_tree.switch("edge-p1-1").prefix == "10.0.3.0/24"


def test_macs_are_locally_administered_unicast():
    topology = load_topology(TOPOLOGIES / "rail-8x8.yaml")
    for mac in _all_macs(topology):
        first = int(mac.split(":")[0], 16)
        assert first & 0b10 and not first & 0b1


def test_long_switch_interface_names_fall_back_to_the_index():
    assert switch_intf("leaf-r1-0", 1, 64) == "leaf-r1-0-eth64"
    assert switch_intf("leaf-r10-10", 123, 64) == "s123-eth64"
