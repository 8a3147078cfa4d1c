"""Generators, port numbering, the model API, units and YAML round trips."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from emulator.topology import (
    GENERATORS,
    NETWORKS,
    TopologyError,
    counts,
    dump_topology,
    load_spec,
    load_topology,
    paths,
    routed_paths,
    routing_plan,
    topology_from_dict,
)
from emulator.topology.units import format_delay, format_rate, parse_delay_ns, parse_rate_bps

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
SHIPPED = sorted(TOPOLOGIES.glob("*.yaml"))
COUNT_KEYS = {"servers", "gpus", "rails", "leaves", "spines", "switches", "hosts",
              "host_links", "fabric_links"}


def spec(kind: str = "rail-optimized", **overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "name": "t",
        "kind": kind,
        "servers": 4,
        "gpus_per_server": 4,
        "servers_per_leaf": 4,
        "spines": 2,
        "host_link": {"rate": "100Mbps", "delay": "5us"},
        "fabric_link": {"rate": "100Mbps", "delay": "5us"},
    }
    if kind == "fat-tree":
        for key in ("servers", "servers_per_leaf", "spines"):
            del data[key]
        data["gpus_per_server"] = 1
        data["k"] = 4
    data.update(overrides)
    return data


def test_shipped_topologies_are_there_and_load():
    names = {path.stem for path in SHIPPED}
    assert {"quickstart", "rail-4x4", "rail-8x8", "leaf-spine-4x4", "fat-tree-k4"} <= names
    for path in SHIPPED:
        topology = load_topology(path)
        assert topology.name == path.stem
        assert COUNT_KEYS <= set(counts(topology))


@pytest.mark.parametrize("file, expected", [
    ("quickstart", dict(servers=2, gpus=4, rails=2, leaves=2, spines=1, switches=3, hosts=2,
                        host_links=4, fabric_links=2)),
    ("rail-4x4", dict(servers=4, gpus=16, rails=4, leaves=4, spines=2, switches=6, hosts=4,
                      host_links=16, fabric_links=8)),
    ("rail-8x8", dict(servers=8, gpus=64, rails=8, leaves=8, spines=4, switches=12, hosts=8,
                      host_links=64, fabric_links=32)),
    ("leaf-spine-4x4", dict(servers=4, gpus=16, rails=1, leaves=2, spines=2, switches=4, hosts=4,
                            host_links=16, fabric_links=4)),
    ("fat-tree-k4", dict(servers=16, gpus=16, rails=1, leaves=8, spines=4, aggs=8, switches=20,
                         hosts=16, host_links=16, fabric_links=32)),
])
def test_counts_of_shipped_topologies(file, expected):
    got = counts(load_topology(TOPOLOGIES / f"{file}.yaml"))
    assert {key: got[key] for key in expected} == expected


@pytest.mark.parametrize("overrides, expected", [
    # Multi-leaf rails: 8 servers at 4 per leaf -> 2 leaves per rail.
    (dict(servers=8, gpus_per_server=4, servers_per_leaf=4, spines=2),
     dict(servers=8, gpus=32, rails=4, leaves=8, spines=2, switches=10, host_links=32,
          fabric_links=16)),
    # A partial last leaf: 5 servers at 2 per leaf -> 3 leaves per rail.
    (dict(servers=5, gpus_per_server=2, servers_per_leaf=2, spines=3),
     dict(servers=5, gpus=10, rails=2, leaves=6, spines=3, switches=9, host_links=10,
          fabric_links=18)),
    (dict(servers=1, gpus_per_server=1, servers_per_leaf=1, spines=1),
     dict(servers=1, gpus=1, rails=1, leaves=1, spines=1, switches=2, host_links=1,
          fabric_links=1)),
])
def test_counts_of_rail_optimized_shapes(overrides, expected):
    got = counts(topology_from_dict(spec(**overrides)))
    assert {key: got[key] for key in expected} == expected
    assert got["hosts"] == got["servers"]


@pytest.mark.parametrize("k, gpus", [(2, 1), (4, 1), (4, 2), (6, 1)])
def test_fat_tree_counts(k, gpus):
    got = counts(topology_from_dict(spec("fat-tree", k=k, gpus_per_server=gpus)))
    half = k // 2
    assert got["servers"] == k ** 3 // 4
    assert got["gpus"] == got["servers"] * gpus
    assert (got["leaves"], got["aggs"], got["spines"]) == (k * half, k * half, half * half)
    assert got["switches"] == k * half * 2 + half * half
    assert got["fabric_links"] == k * half * half * 2
    assert got["rails"] == 1


def test_every_nic_of_rail_r_sits_on_a_leaf_of_rail_r():
    topology = topology_from_dict(spec(servers=8, servers_per_leaf=4))
    for gpu in topology.gpus:
        leaf = topology.switch(gpu.switch)
        assert leaf.role == "leaf" and leaf.rail == gpu.index == gpu.rail
        assert leaf.name == f"leaf-r{gpu.index}-{gpu.server_index // 4}"
        assert leaf.leaf_index == gpu.server_index // 4


def test_leaf_spine_puts_all_nics_of_a_server_on_one_tor():
    topology = topology_from_dict(spec("leaf-spine", servers_per_leaf=2))
    for server in topology.servers:
        assert {topology.gpu(name).switch for name in server.gpus} == {f"tor{server.index // 2}"}
    assert {s.name for s in topology.switches} == {"tor0", "tor1", "spine0", "spine1"}


def test_fat_tree_servers_sit_under_their_pods_edge():
    topology = topology_from_dict(spec("fat-tree", gpus_per_server=2))
    for server in topology.servers:
        edge = {topology.gpu(name).switch for name in server.gpus}
        assert edge == {f"edge-p{server.index // 4}-{server.index % 4 // 2}"}
        assert server.pod == server.index // 4
    core = topology.switch("core3")
    assert [port.peer for port in core.ports] == [f"agg-p{p}-1" for p in range(4)]


def test_ports_are_numbered_hosts_first_then_uplinks():
    topology = load_topology(TOPOLOGIES / "rail-4x4.yaml")
    leaf = topology.switch("leaf-r1-0")
    assert [(p.number, p.peer, p.kind, p.facing) for p in leaf.ports] == [
        (1, "srv0/gpu1", "host", "down"), (2, "srv1/gpu1", "host", "down"),
        (3, "srv2/gpu1", "host", "down"), (4, "srv3/gpu1", "host", "down"),
        (5, "spine0", "fabric", "up"), (6, "spine1", "fabric", "up"),
    ]
    spine = topology.switch("spine1")
    assert [p.peer for p in spine.ports] == [f"leaf-r{r}-0" for r in range(4)]
    agg = load_topology(TOPOLOGIES / "fat-tree-k4.yaml").switch("agg-p2-1")
    assert [(p.peer, p.facing) for p in agg.ports] == [
        ("edge-p2-0", "down"), ("edge-p2-1", "down"), ("core2", "up"), ("core3", "up")]


def test_links_agree_with_ports_on_both_ends():
    for path in SHIPPED:
        topology = load_topology(path)
        for link in topology.links:
            b = topology.switch(link.node_b).port(link.port_b)
            if link.kind == "host":
                gpu = topology.gpu(link.gpu)
                assert (gpu.server, gpu.index) == (link.node_a, link.port_a)
                assert (b.peer, b.peer_port, b.peer_mac) == (gpu.name, gpu.index, gpu.mac)
            else:
                a = topology.switch(link.node_a).port(link.port_a)
                assert (a.peer, a.peer_port, a.peer_mac) == (link.node_b, link.port_b, b.mac)
                assert (b.peer, b.peer_port, b.peer_mac) == (link.node_a, link.port_a, a.mac)
                tiers = topology.switch(link.node_a).tier, topology.switch(link.node_b).tier
                # a DCI link joins two border switches, of one tier
                assert tiers[0] == tiers[1] if link.network == "dci" else tiers[0] < tiers[1]
            assert topology.graph.has_edge(link.gpu or link.node_a, link.node_b)
        assert topology.graph.number_of_edges() == len(topology.links)
        assert topology.graph.number_of_nodes() == (len(topology.gpus) + len(topology.nics)
                                                    + len(topology.switches))


def test_link_rates_and_delays_come_from_the_spec():
    topology = topology_from_dict(spec(host_link={"rate": "1Gbps", "delay": "2us"},
                                       fabric_link={"rate": 400_000_000_000, "delay": 1500}))
    assert {(l.rate_bps, l.delay_ns) for l in topology.links if l.kind == "host"} == {
        (1_000_000_000, 2_000)}
    assert {(l.rate_bps, l.delay_ns) for l in topology.links if l.kind == "fabric"} == {
        (400_000_000_000, 1_500)}


def test_switch_names_fit_mininet_and_interface_names_fit_linux():
    for path in SHIPPED:
        topology = load_topology(path)
        for switch in topology.switches:
            # names label pictures and files; interfaces fall back to s{index}-eth{n}
            assert len(switch.name) <= 15
            assert all(len(port.intf) <= 15 for port in switch.ports)
        assert all(len(gpu.intf) <= 15 for gpu in topology.gpus)
    big = topology_from_dict(spec(servers=40, gpus_per_server=12, servers_per_leaf=20))
    intfs = [port.intf for switch in big.switches for port in switch.ports]
    assert max(map(len, intfs)) <= 15 and len(set(intfs)) == len(intfs)


def test_gpu_lookup_error_names_the_valid_range():
    topology = load_topology(TOPOLOGIES / "rail-4x4.yaml")
    assert topology.gpu("srv3/gpu2").ip == "10.2.0.4"
    with pytest.raises(TopologyError, match=r"srvS/gpuR with S in 0\.\.3 and R in 0\.\.3"):
        topology.gpu("srv4/gpu0")
    with pytest.raises(TopologyError, match="unknown switch"):
        topology.switch("leaf9")


def test_generators_are_registered_by_kind():
    assert set(GENERATORS) == {"rail-optimized", "leaf-spine", "fat-tree"}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_yaml_round_trip(path, tmp_path):
    topology = load_topology(path)
    out = tmp_path / "copy.yaml"
    dump_topology(topology, out)
    again = load_topology(out)
    assert again.spec == topology.spec
    assert again.params == topology.params
    dump_topology(again.spec, tmp_path / "again.yaml")
    assert (tmp_path / "again.yaml").read_text() == out.read_text()


def test_round_trip_keeps_non_default_leaf_ports(tmp_path):
    original = topology_from_dict(spec(leaf_ports=32, fabric_link={"rate": "2.5Gbps",
                                                                   "delay": "1.5us"}))
    dump_topology(original, tmp_path / "t.yaml")
    assert "leaf_ports: 32" in (tmp_path / "t.yaml").read_text()
    assert load_spec(tmp_path / "t.yaml") == original.spec


@pytest.mark.parametrize("text, rate_bps", [
    ("100Mbps", 100_000_000), ("1Gbps", 10 ** 9), ("400Gbps", 400 * 10 ** 9),
    ("10Kbps", 10_000), ("9600bps", 9600), (12345, 12345), ("2.5Gbps", 2_500_000_000),
    ("450GBps", 3_600 * 10 ** 9), ("3600Gbps", 3_600 * 10 ** 9), ("1.8TBps", 14_400 * 10 ** 9),
    ("3.2Tbps", 3_200 * 10 ** 9), ("1MBps", 8_000_000),
])
def test_parse_rate(text, rate_bps):
    assert parse_rate_bps(text) == rate_bps
    assert parse_rate_bps(format_rate(rate_bps)) == rate_bps


@pytest.mark.parametrize("text, delay_ns", [
    ("5us", 5_000), ("1ms", 10 ** 6), ("2s", 2 * 10 ** 9), ("250ns", 250), (40, 40),
    ("1.5us", 1_500), ("0us", 0),
])
def test_parse_delay(text, delay_ns):
    assert parse_delay_ns(text) == delay_ns
    assert parse_delay_ns(format_delay(delay_ns)) == delay_ns


@pytest.mark.parametrize("text", ["100Mbs", "100mbps", "fast", "0Mbps", "1.5bps", True, 1.5, ""])
def test_bad_rates(text):
    with pytest.raises(ValueError):
        parse_rate_bps(text)


@pytest.mark.parametrize("text", ["5 parsecs", "5US", "0.5ns", -1, None])
def test_bad_delays(text):
    with pytest.raises(ValueError):
        parse_delay_ns(text)


def test_scale_up_domains_group_consecutive_servers_and_round_trip(tmp_path):
    data = yaml.safe_load((TOPOLOGIES / "rail-4x4.yaml").read_text())
    plain = topology_from_dict(dict(data))
    data["scale_up"] = {"rate": "450GBps", "hop_latency": "250ns", "servers_per_domain": 2}
    topology = topology_from_dict(data)
    assert [d.servers for d in topology.domains] == [("srv0", "srv1"), ("srv2", "srv3")]
    domain = topology.domain_of("srv3/gpu1")
    assert domain is not None and domain.name == "su1" and len(domain.gpus) == 8
    assert domain.rate_bps == 450 * 8 * 10**9 and domain.hop_latency_ns == 250
    # The scale-up key changes nothing of the backend: same addresses, links, routes.
    assert topology.gpus == plain.gpus and topology.links == plain.links
    assert routing_plan(topology) == routing_plan(plain)
    assert plain.domains == () and plain.domain_of("srv0/gpu0") is None
    path = tmp_path / "su.yaml"
    dump_topology(topology, path)
    again = load_topology(path)
    assert again.spec == topology.spec and again.domains == topology.domains


def test_scale_up_defaults_to_one_domain_per_server():
    data = yaml.safe_load((TOPOLOGIES / "fat-tree-k4.yaml").read_text())
    data["scale_up"] = {"rate": "3600Gbps", "hop_latency": "1us"}
    topology = topology_from_dict(data)
    assert [d.servers for d in topology.domains] == [(s.name,) for s in topology.servers]


def test_every_link_and_graph_edge_is_tagged_backend():
    topology = load_topology(TOPOLOGIES / "rail-4x4.yaml")
    assert {link.network for link in topology.links} == {"backend"}
    assert {net for _, _, net in topology.graph.edges(data="network")} == {"backend"}
    assert set(NETWORKS) >= {"backend", "scale-up", "dci", "front-end", "storage"}


@pytest.mark.parametrize("file", ["rail-4x4.yaml", "fat-tree-k4.yaml"])
def test_sites_copy_the_fabric_and_join_borders_over_dci(file, tmp_path):
    data = yaml.safe_load((TOPOLOGIES / file).read_text())
    one = topology_from_dict(dict(data))
    data["sites"] = {"count": 3, "border_switches": 2,
                     "dci_link": {"rate": "400Gbps", "distance": "10km"}}
    topology = topology_from_dict(data)
    assert len(topology.servers) == 3 * len(one.servers)
    assert [s.site for s in topology.servers] == [i // len(one.servers)
                                                  for i in range(len(topology.servers))]
    # every switch of the one-site fabric is there per site, plus 2 borders per site
    assert len(topology.switches) == 3 * (len(one.switches) + 2)
    assert all(sw.site is not None for sw in topology.switches)
    # addresses stay unique across sites
    assert len({gpu.ip for gpu in topology.gpus}) == len(topology.gpus)
    dci = [link for link in topology.links if link.network == "dci"]
    # border b of each site to border b of every other: 2 borders x 3 site pairs
    assert len(dci) == 2 * 3
    assert {link.delay_ns for link in dci} == {50_000}  # 10 km at 5 us/km
    assert {link.rate_bps for link in dci} == {400 * 10 ** 9}
    assert {link.network for link in topology.links if link not in dci} == {"backend"}
    last = topology.gpus[-1].name
    for path in paths(topology, "srv0/gpu0", last):
        assert [n for n in path if "border" in n][0].startswith("s0-border")
        assert sum("border" in n for n in path) == 2
    # hop-by-hop routes agree with shortest paths across sites
    assert sorted(map(tuple, routed_paths(topology, routing_plan(topology), "srv0/gpu0", last))) \
        == sorted(map(tuple, paths(topology, "srv0/gpu0", last)))
    dump_topology(topology, tmp_path / "t.yaml")
    again = load_topology(tmp_path / "t.yaml")
    assert again.spec == topology.spec and again.links == topology.links


def test_dci_delay_may_be_given_instead_of_distance():
    data = yaml.safe_load((TOPOLOGIES / "rail-4x4.yaml").read_text())
    data["sites"] = {"count": 2, "dci_link": {"rate": "100Gbps", "delay": "1ms"}}
    topology = topology_from_dict(data)
    assert topology.params["sites"] == {"count": 2, "dci_link": {"rate": "100Gbps",
                                                                 "delay": "1ms"}}
    assert [l.delay_ns for l in topology.links if l.network == "dci"] == [10 ** 6]
