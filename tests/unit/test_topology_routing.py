"""The routing plan and paths: ECMP next hops, and routes agree with paths()."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from emulator.topology import (
    TopologyError,
    load_topology,
    lookup,
    paths,
    routed_paths,
    routing_plan,
    topology_from_dict,
)

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


def _rail(servers: int, gpus: int, per_leaf: int, spines: int, kind: str = "rail-optimized"):
    return topology_from_dict({
        "name": "t", "kind": kind, "servers": servers, "gpus_per_server": gpus,
        "servers_per_leaf": per_leaf, "spines": spines,
        "host_link": {"rate": "100Mbps", "delay": "5us"},
        "fabric_link": {"rate": "100Mbps", "delay": "5us"},
    })


def test_intra_leaf_pair_has_one_path_of_one_switch():
    topology = load_topology(TOPOLOGIES / "rail-4x4.yaml")
    assert paths(topology, "srv0/gpu1", "srv3/gpu1") == [["leaf-r1-0"]]
    leaf_spine = load_topology(TOPOLOGIES / "leaf-spine-4x4.yaml")
    assert paths(leaf_spine, "srv0/gpu0", "srv1/gpu3") == [["tor0"]]


def test_cross_rail_pair_has_one_path_per_spine():
    topology = load_topology(TOPOLOGIES / "rail-8x8.yaml")
    found = paths(topology, "srv0/gpu1", "srv5/gpu6")
    assert found == [["leaf-r1-0", f"spine{j}", "leaf-r6-0"] for j in range(4)]


def test_rail_4x4_all_pairs_on_different_servers():
    topology = load_topology(TOPOLOGIES / "rail-4x4.yaml")
    lengths: Counter[tuple[int, int]] = Counter()
    for src, dst in itertools.permutations(topology.gpus, 2):
        if src.server == dst.server:
            continue
        found = paths(topology, src.name, dst.name)
        assert len({len(path) for path in found}) == 1
        lengths[(len(found[0]), len(found))] += 1
    assert lengths == {(1, 1): 48, (3, 2): 144}


def test_same_rail_on_different_leaves_crosses_a_spine():
    topology = _rail(servers=8, gpus=2, per_leaf=4, spines=3)
    found = paths(topology, "srv0/gpu1", "srv7/gpu1")
    assert found == [["leaf-r1-0", f"spine{j}", "leaf-r1-1"] for j in range(3)]


def test_fat_tree_path_counts():
    topology = load_topology(TOPOLOGIES / "fat-tree-k4.yaml")
    assert paths(topology, "srv0/gpu0", "srv1/gpu0") == [["edge-p0-0"]]
    same_pod = paths(topology, "srv0/gpu0", "srv2/gpu0")
    assert same_pod == [["edge-p0-0", f"agg-p0-{a}", "edge-p0-1"] for a in (0, 1)]
    other_pod = paths(topology, "srv0/gpu0", "srv15/gpu0")
    assert len(other_pod) == 4 and all(len(path) == 5 for path in other_pod)
    assert {path[2] for path in other_pod} == {"core0", "core1", "core2", "core3"}


def test_ecmp_next_hop_counts():
    topology = load_topology(TOPOLOGIES / "rail-4x4.yaml")
    plan = routing_plan(topology)
    leaf = plan["leaf-r1-0"]
    host_routes = [route for route in leaf if route.kind == "host"]
    assert [route.prefix for route in host_routes] == [f"10.1.0.{i}/32" for i in range(1, 5)]
    assert all(len(route.next_hops) == 1 for route in host_routes)
    remote = [route for route in leaf if route.kind == "leaf"]
    assert [route.prefix for route in remote] == ["10.0.0.0/24", "10.2.0.0/24", "10.3.0.0/24"]
    for route in remote:
        assert [hop.neighbor for hop in route.next_hops] == ["spine0", "spine1"]
    spine = plan["spine0"]
    assert [route.kind for route in spine] == ["leaf"] * 4
    for route in spine:
        (hop,) = route.next_hops
        owner = topology.switch(hop.neighbor)
        assert owner.prefix == route.prefix
        assert hop.neighbor_mac == owner.port(hop.neighbor_port).mac
        assert topology.switch("spine0").port(hop.port).peer == owner.name


def test_fat_tree_ecmp_next_hop_counts():
    topology = load_topology(TOPOLOGIES / "fat-tree-k4.yaml")
    plan = routing_plan(topology)
    by_prefix = {route.prefix: route for route in plan["edge-p0-0"]}
    assert len(by_prefix["10.0.1.0/24"].next_hops) == 2  # same pod: both aggs
    assert len(by_prefix["10.0.7.0/24"].next_hops) == 2  # other pod: both aggs
    agg = {route.prefix: route for route in plan["agg-p0-0"]}
    assert [hop.neighbor for hop in agg["10.0.1.0/24"].next_hops] == ["edge-p0-1"]
    assert [hop.neighbor for hop in agg["10.0.7.0/24"].next_hops] == ["core0", "core1"]
    core = {route.prefix: route for route in plan["core2"]}
    assert [hop.neighbor for hop in core["10.0.7.0/24"].next_hops] == ["agg-p3-1"]


def test_a_leaf_has_no_route_for_its_own_prefix_only_host_routes():
    topology = load_topology(TOPOLOGIES / "rail-8x8.yaml")
    plan = routing_plan(topology)
    for switch in topology.leaves:
        assert switch.prefix not in {route.prefix for route in plan[switch.name]}
        route = lookup(plan[switch.name], topology.gpu("srv3/gpu0").ip)
        if switch.name == "leaf-r0-0":
            assert route.kind == "host" and route.next_hops[0].neighbor == "srv3/gpu0"
        else:
            assert route.prefix == "10.0.0.0/24" and len(route.next_hops) == 4
    assert lookup(plan["spine0"], "192.168.0.1") is None


@pytest.mark.parametrize("name", ["quickstart", "rail-4x4", "leaf-spine-4x4", "fat-tree-k4"])
def test_following_routes_hop_by_hop_gives_the_shortest_paths(name):
    topology = load_topology(TOPOLOGIES / f"{name}.yaml")
    plan = routing_plan(topology)
    for src, dst in itertools.permutations(topology.gpus, 2):
        routed = routed_paths(topology, plan, src.name, dst.name)
        assert routed == paths(topology, src.name, dst.name)


def test_routes_agree_with_paths_on_multi_leaf_rails():
    topology = _rail(servers=6, gpus=3, per_leaf=2, spines=2)
    plan = routing_plan(topology)
    for src, dst in itertools.permutations(topology.gpus, 2):
        routed = routed_paths(topology, plan, src.name, dst.name)
        assert routed == paths(topology, src.name, dst.name)


def test_routed_paths_reports_a_missing_route():
    topology = load_topology(TOPOLOGIES / "rail-4x4.yaml")
    plan = dict(routing_plan(topology))
    plan["spine0"] = ()
    with pytest.raises(TopologyError, match="spine0 has no route"):
        routed_paths(topology, plan, "srv0/gpu0", "srv0/gpu1")


def test_paths_rejects_unknown_and_identical_gpus():
    topology = load_topology(TOPOLOGIES / "quickstart.yaml")
    with pytest.raises(TopologyError, match="unknown GPU 'srv2/gpu0'"):
        paths(topology, "srv2/gpu0", "srv0/gpu0")
    with pytest.raises(TopologyError, match="same GPU"):
        paths(topology, "srv0/gpu0", "srv0/gpu0")
