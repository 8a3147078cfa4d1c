"""Front-end and storage networks (README "Topologies", :mod:`emulator.topology.networks`):
what the keys add, their addresses and routes, the three places storage can
sit, one-line errors for every malformed key, and files without the keys
building exactly as before."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from emulator.cli.main import main
from emulator.topology import (TopologyError, counts, load_topology, scale_up_tier,
                               topology_from_dict)
from emulator.topology.routing import paths, routed_paths, routing_plan
from emulator.topology.spec import spec_from_dict

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
LINK = {"rate": "400Gbps", "delay": "1us"}
FE = {"nics_per_server": 1, "link": {"rate": "100Gbps", "delay": "1us"}, "clients": 2}


def cluster(network: str = "separate", **extra):
    data = {"name": "x", "kind": "rail-optimized", "servers": 4, "gpus_per_server": 4,
            "servers_per_leaf": 4, "spines": 2, "host_link": LINK, "fabric_link": LINK,
            "front_end": FE,
            "storage": {"nodes": 2, "nics_per_node": 2, "network": network,
                        "link": {"rate": "200Gbps", "delay": "1us"}}}
    data.update(extra)
    return data


def test_a_separate_storage_fabric_and_a_front_end_of_their_own():
    t = topology_from_dict(cluster())
    c = counts(t)
    assert (c["front_end_switches"], c["front_end_nics"], c["clients"]) == (3, 6, 2)
    assert (c["storage_switches"], c["storage_nics"], c["storage_nodes"]) == (3, 8, 2)
    assert c["hosts"] == 8 and c["gpus"] == 16  # GPUs are GPUs only
    assert [n.name for n in t.nics if n.server == "srv1"] == ["srv1/fe0", "srv1/st0"]
    fe, st = t.gpu("srv1/fe0"), t.gpu("srv1/st0")
    assert (fe.ip, fe.intf, fe.switch, fe.network) == ("10.100.0.2", "srv1-eth4", "fe-leaf0",
                                                       "front-end")
    assert (st.ip, st.intf, st.switch) == ("10.101.0.2", "srv1-eth5", "st-leaf0")
    assert t.gpu("stor1/nic1").ip == "10.101.0.8" and t.host("stor1").role == "storage"
    assert t.host("srv1").nics == ("srv1/fe0", "srv1/st0")
    by_network = {}
    for link in t.links:
        by_network.setdefault(link.network, []).append(link)
    assert {n: len(v) for n, v in by_network.items()} == {
        "backend": 16 + 8, "front-end": 6 + 2, "storage": 8 + 2}
    assert {l.rate_bps for l in by_network["storage"] if l.kind == "host"} == {200 * 10 ** 9}
    plan = routing_plan(t)
    # each fabric routes only its own prefixes: no path from the storage to the backend
    assert routed_paths(t, plan, "srv0/st0", "stor1/nic1") == [["st-leaf0"]]
    assert not any(r.prefix.startswith("10.101.") for r in plan["spine0"])
    assert not any(r.prefix.startswith("10.0.") for r in plan["st-spine0"])
    assert t.graph.number_of_nodes() == len(t.gpus) + len(t.nics) + len(t.switches)


def test_storage_on_the_front_end_shares_its_leaves():
    t = topology_from_dict(cluster("front-end"))
    assert not any(s.network == "storage" for s in t.switches)
    node = t.gpu("stor0/nic0")
    assert node.switch == "fe-leaf0" and node.ip.startswith("10.100.")
    assert routed_paths(t, routing_plan(t), "srv0/fe0", "stor0/nic0") == [["fe-leaf0"]]
    assert {l.network for l in t.links if l.gpu == "stor0/nic0"} == {"storage"}
    assert not any(n.name.startswith("srv0/st") for n in t.nics)


def test_storage_on_the_backend_hangs_storage_leaves_off_the_spines():
    t = topology_from_dict(cluster("backend"))
    leaf = t.switch("st-leaf0")
    assert (leaf.network, leaf.prefix) == ("backend", "10.101.0.0/24")
    assert {p.peer for p in leaf.ports if p.kind == "fabric"} == {"spine0", "spine1"}
    plan = routing_plan(t)
    found = routed_paths(t, plan, "srv0/gpu0", "stor1/nic0")
    assert found == paths(t, "srv0/gpu0", "stor1/nic0") == [
        ["leaf-r0-0", "spine0", "st-leaf0"], ["leaf-r0-0", "spine1", "st-leaf0"]]
    uplinks = [l for l in t.links if l.node_a == "st-leaf0"]
    assert {l.network for l in uplinks} == {"storage"} and len(uplinks) == 2


def test_sites_get_their_own_front_end_and_storage():
    t = topology_from_dict(cluster("separate", sites={
        "count": 2, "dci_link": {"rate": "400Gbps", "distance": "10km"}}))
    assert t.host("stor3").site == 1 and t.gpu("stor3/nic0").switch == "s1-st-leaf0"
    assert t.gpu("srv5/fe0").switch == "s1-fe-leaf0"
    assert t.switch("s1-fe-leaf0").prefix == "10.100.1.0/24"  # leaf numbers continue
    assert t.host("cli3").site == 1


def test_files_without_the_keys_build_as_before():
    for path in sorted(TOPOLOGIES.glob("*.yaml")):
        t = load_topology(path)
        if t.spec.front_end is None and t.spec.storage is None:
            assert t.nics == () and t.others == () and t.hosts == t.servers
            assert all(s.network == "backend" for s in t.switches)
            assert "front_end" not in t.params and "storage" not in t.params


@pytest.mark.parametrize("network", ["separate", "front-end", "backend"])
def test_the_keys_round_trip(network):
    spec = spec_from_dict(cluster(network))
    assert spec_from_dict(spec.to_dict()) == spec


BAD = [
    ({"storage": {"nodes": 2, "link": LINK, "network": "san"}}, "storage.network",
     "'san' is not a known network; use one of separate, front-end, backend"),
    ({"storage": {"nodes": 0, "link": LINK}}, "storage.nodes", "below the minimum 1"),
    ({"storage": {"nodes": 2}}, "storage.link", "is missing; storage needs nodes, link"),
    ({"storage": {"nodes": 2, "link": LINK, "disks": 4}}, "storage.disks",
     "unknown key; storage takes nodes"),
    ({"storage": {"nodes": 2, "link": {"rate": "1Gbs", "delay": "1us"}}}, "storage.link.rate",
     "is not a rate"),
    ({"storage": {"nodes": 2, "link": LINK, "network": "backend", "server_nics": 2}},
     "storage.server_nics", "applies to a storage fabric of its own only"),
    ({"storage": {"nodes": 2, "link": LINK, "network": "front-end"}}, "storage.network",
     "front-end needs a front_end key"),
    ({"front_end": {"nics_per_server": 2}}, "front_end.link", "is missing"),
    ({"front_end": {"link": LINK, "nics_per_server": 0}}, "front_end.nics_per_server",
     "below the minimum 1"),
    ({"front_end": {"link": {"rate": "1Gbps"}}}, "front_end.link.delay", "is missing"),
    ({"front_end": {"link": LINK, "nics_per_leaf": 250, "spines": 8}}, "front_end.nics_per_leaf",
     "need 258 ports"),
    ({"front_end": "yes"}, "front_end", "is not a mapping"),
    ({"front_end": {"link": LINK, "nics_per_leaf": 1}, "servers": 512, "servers_per_leaf": 16},
     "front_end.nics_per_leaf", "the addressing plan has room for 256"),
    ({"front_end": {"link": LINK, "nics_per_leaf": 1, "clients": 0},
      "storage": {"nodes": 260, "link": LINK, "network": "front-end"}},
     "front_end.nics_per_leaf", "264 front-end NICs per site need 264 leaves"),
]


@pytest.mark.parametrize("extra,key,message", BAD)
def test_malformed_keys_get_one_line(extra, key, message):
    data = {"name": "x", "kind": "rail-optimized", "servers": 4, "gpus_per_server": 4,
            "servers_per_leaf": 4, "spines": 2, "host_link": LINK, "fabric_link": LINK, **extra}
    with pytest.raises(TopologyError) as info:
        spec_from_dict(data, "t.yaml")
    text = str(info.value)
    assert "\n" not in text and f"key '{key}'" in text and message in text, text


def test_topo_show_of_a_2_site_2x512_gpu_cluster_with_front_end_and_storage_is_quick(
        tmp_path, capsys):
    path = tmp_path / "big.yaml"
    path.write_text("""
name: big
kind: rail-optimized
servers: 64
gpus_per_server: 8
servers_per_leaf: 16
spines: 8
host_link: {rate: 400Gbps, delay: 1us}
fabric_link: {rate: 400Gbps, delay: 1us}
scale_up: {rate: 450GBps, hop_latency: 250ns}
sites: {count: 2, border_switches: 2, dci_link: {rate: 400Gbps, distance: 10km}}
front_end: {nics_per_server: 1, link: {rate: 100Gbps, delay: 1us}, clients: 4}
storage: {nodes: 8, nics_per_node: 2, link: {rate: 200Gbps, delay: 1us}}
""")
    start = time.perf_counter()
    assert main(["topo", "show", str(path)]) == 0
    took = time.perf_counter() - start
    out = capsys.readouterr().out
    assert "front end nics" in out and "storage nodes" in out and "16" in out
    assert took < 5.0, f"topo show took {took:.1f} s [wall]"


def test_live_hosts_get_their_front_end_and_storage_nics():
    from emulator.network.plan import host_plans

    t = load_topology(TOPOLOGIES / "ai-cluster.yaml")
    plans = host_plans(t)
    assert set(plans) == {h.name for h in t.hosts}  # servers, storage nodes, clients
    srv = plans["srv5"]
    assert [n.ifname for n in srv.nics][-2:] == ["srv5-eth8", "srv5-eth9"]
    assert [n.ip for n in srv.nics][-2:] == [t.gpu("srv5/fe0").ip, t.gpu("srv5/st0").ip]
    # every NIC answers from its own routing table, through its own gateway
    assert len({r.table for r in srv.rules}) == len(srv.nics) == 10
    node = plans["stor6"]
    assert [n.ip for n in node.nics] == [t.gpu("stor6/nic0").ip, t.gpu("stor6/nic1").ip]


def test_the_web_views_picture_places_every_host_and_nic_an_edge_names():
    from emulator.view.picture import build_picture

    t = load_topology(TOPOLOGIES / "ai-cluster.yaml")
    elements = build_picture(t).elements
    ids = {node["data"]["id"] for node in elements["nodes"]}
    assert {"stor7", "cli3", "srv5/fe0", "stor0/nic1"} <= ids
    assert all(e["data"]["source"] in ids and e["data"]["target"] in ids
               for e in elements["edges"])


def test_topo_paths_between_unlinked_fabrics_is_one_line(capsys):
    assert main(["topo", "paths", str(TOPOLOGIES / "ai-cluster.yaml"), "srv0/gpu0",
                 "stor0/nic0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no path from srv0/gpu0 (backend) to stor0/nic0 (storage)" in err
    assert main(["topo", "paths", str(TOPOLOGIES / "ai-cluster.yaml"), "srv0/st0",
                 "stor2/nic1"]) == 0
    assert capsys.readouterr().out.strip() == "s0-st-leaf0"


def test_scale_up_nics_come_after_front_end_and_storage_nics():
    # ai-cluster has scale_up, front_end and storage: a sim run's scale-up NIC of
    # srv0/gpu0 once took eth8, the front-end NIC's interface, and 8,000 frames dropped
    tiered = scale_up_tier(load_topology(TOPOLOGIES / "ai-cluster.yaml"))
    intfs = [n.intf for n in tiered.gpus + tiered.nics] + [
        nic.intf for domain in tiered.domains for nic in domain.nics]
    assert tiered.domains and len(intfs) == len(set(intfs))
    first = tiered.domains[0].nics[0]
    server = next(s for s in tiered.servers if s.name == first.server)
    assert first.nic_index == len(server.gpus) + len(server.nics)
