"""A thousand GPUs on the page: the picture of a big fabric is the blocks
``topo draw --aggregate auto`` draws (the same grouping), and the feed's
frames fold every link direction into its bundle (busiest member, mean)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.topology import load_topology
from emulator.topology.aggregate import aggregate, aggregated
from emulator.view.frames import Deriver
from emulator.view.picture import build_picture

ROOT = Path(__file__).resolve().parents[2]
RAIL_128X8 = ROOT / "topologies" / "rail-128x8.yaml"


@pytest.fixture(scope="module")
def big():
    topology = load_topology(RAIL_128X8)
    return topology, build_picture(topology)


def test_a_big_fabric_is_drawn_as_topo_draw_blocks(big) -> None:
    topology, pic = big
    assert len(topology.gpus) == 1024 and aggregated(topology, "auto") and pic.blocks
    agg = aggregate(topology)
    nodes = pic.elements["nodes"]
    assert len(nodes) == len(agg.groups) < 40
    assert len(pic.elements["edges"]) == 2 * len(agg.bundles)
    # every server and switch is in exactly one block
    members = [m for n in nodes for m in n["data"]["members"]]
    assert sorted(members) == sorted([s.name for s in topology.servers]
                                     + [s.name for s in topology.switches])
    # every link direction folds into a bundle direction whose rate is the sum of its links
    assert set(pic.edge_bundle) == {f"L{i}{d}" for i in range(len(topology.links)) for d in "><"}
    for bundle in {b for b in pic.edge_bundle.values()}:
        members_rate = sum(pic.edge_rate_bps[e] for e, b in pic.edge_bundle.items() if b == bundle)
        assert pic.edge_rate_bps[bundle] == pytest.approx(members_rate)
    # a GPU's uplink goes up its bundle: from the servers' block to its rail's leaves
    gpu = topology.gpus[0]
    up = pic.edge_bundle[pic.nic_edge[gpu.name]]
    edge = next(e["data"] for e in pic.elements["edges"] if e["data"]["id"] == up)
    block = {n["data"]["id"]: n["data"] for n in nodes}
    assert gpu.server in block[edge["source"]]["members"]
    assert gpu.switch in block[edge["target"]]["members"]


def test_a_small_fabric_stays_node_by_node() -> None:
    pic = build_picture(load_topology(ROOT / "topologies" / "rail-4x4.yaml"))
    assert not pic.blocks and "blocks" not in pic.elements


def test_frames_fold_links_into_bundles(big) -> None:
    topology, pic = big
    gpu = topology.gpus[0]
    leaf, port = gpu.switch, gpu.switch_port
    rate_bps = pic.edge_rate_bps[pic.nic_edge[gpu.name]]

    def answer(t_s: float, rx_bytes: int) -> dict:
        return {"time_s": t_s, "ports": [{"port": port, "tx_bytes": 0, "rx_bytes": rx_bytes,
                                          "rx_packets": 0, "tx_packets": 0, "queues": []}]}
    deriver = Deriver(pic, [], 1.0)
    deriver.add(0.0, {"switches": {leaf: answer(0.0, 0)}})
    frame = deriver.add(0.01, {"switches": {leaf: answer(0.01, int(rate_bps * 0.01 / 8))}})
    up = pic.edge_bundle[pic.nic_edge[gpu.name]]
    assert frame["util"] == {up: pytest.approx(1.0)}  # the busiest link of the bundle
    links = sum(1 for b in pic.edge_bundle.values() if b == up)
    assert links > 1
    assert frame["umean"][up] == pytest.approx(1.0 / links, rel=1e-3)
    assert deriver.totals.ports[(leaf, port)]["rx_bytes"] == int(rate_bps * 0.01 / 8)


def test_scale_up_blocks_sit_under_their_servers_on_the_page() -> None:
    """A big fabric with its scale-up tier built (as sim runs it): each
    scale-up block is placed right under the server block its domains start
    in, names it (``under``), is counted in domains and GPUs, and its bundle
    carries every GPU's scale-up link."""
    from emulator.topology import scale_up_tier, topology_from_dict
    spec = {**load_topology(RAIL_128X8).spec.to_dict(),
            "scale_up": {"rate": "450GBps", "hop_latency": "250ns"}}
    topology = scale_up_tier(topology_from_dict(spec))
    pic = build_picture(topology)
    assert pic.blocks
    nodes = {n["data"]["id"]: n for n in pic.elements["nodes"]}
    su = [n for n in nodes.values() if n["data"]["role"] == "scale-up"]
    servers = [n for n in nodes.values() if n["data"]["role"] == "servers"]
    assert su and len(su) == len(servers)
    for block in su:
        data = block["data"]
        home = nodes[data["under"]]
        assert home["data"]["role"] == "servers"
        assert block["position"]["x"] == home["position"]["x"]
        assert block["position"]["y"] > home["position"]["y"]     # below it on the page
        assert data["label"].startswith("su") and "domains · " in data["label"]
        gpus = int(data["label"].split("· ")[1].split(" ")[0])
        assert gpus == sum(len(d.gpus) for d in topology.domains
                           if d.name in data["members"])
    assert "scale-up" in [t["name"] for t in pic.elements["tiers"]]
    # every GPU's scale-up link folds into its block's bundle
    index = {(lk.node_a, lk.port_a): i for i, lk in enumerate(topology.links)}
    domain = topology.domains[0]
    nic = domain.nics[0]
    bundle = pic.edge_bundle[f"L{index[(nic.server, nic.nic_index)]}>"]
    edge = next(e["data"] for e in pic.elements["edges"] if e["data"]["id"] == bundle)
    assert nic.server in nodes[edge["source"]]["data"]["members"]
    assert domain.name in nodes[edge["target"]]["data"]["members"]
    assert edge["links"] == len(domain.gpus) * sum(
        1 for d in topology.domains if d.name in nodes[edge["target"]]["data"]["members"])


def test_scale_up_blocks_stay_under_their_servers_beside_storage_and_clients() -> None:
    """The ai-cluster as blocks: the server row also holds storage nodes and
    clients, so the scale-up row (one block a site) is placed by its servers,
    not spread on a pitch of its own."""
    from emulator.topology import scale_up_tier
    topology = scale_up_tier(load_topology(ROOT / "topologies" / "ai-cluster.yaml"))
    pic = build_picture(topology, "on")
    nodes = {n["data"]["id"]: n for n in pic.elements["nodes"]}
    su = [n for n in nodes.values() if n["data"]["role"] == "scale-up"]
    assert [n["data"]["label"].split("\n")[0] for n in su] == ["s0 su0–3", "s1 su4–7"]
    for block in su:
        home = nodes[block["data"]["under"]]
        assert home["data"]["label"].split("\n")[0] in ("s0 srv0–3", "s1 srv4–7")
        assert block["position"]["x"] == home["position"]["x"]


def test_storage_and_client_blocks_count_hosts_and_nics_as_topo_draw_does() -> None:
    """A block of storage nodes or clients holds hosts with NICs, not servers
    of GPUs: the page says what topo draw's blocks say."""
    from emulator.topology.aggregate import member_words
    topology = load_topology(ROOT / "topologies" / "ai-cluster.yaml")
    pic = build_picture(topology, "on")
    agg = aggregate(topology)
    words = {g.label: member_words(topology, g) for g in agg.groups}
    labels = dict(n["data"]["label"].split("\n", 1) for n in pic.elements["nodes"])
    assert labels == words
    rows = [g for g in agg.groups if g.key.row == 0]
    others = [g for g in rows if topology.host(g.members[0]).role != "gpu"]
    assert {topology.host(g.members[0]).role for g in others} == {"storage", "client"}
    assert all(" hosts · " in labels[g.label] and labels[g.label].endswith(" NICs")
               for g in others)
    storage = next(g for g in others if topology.host(g.members[0]).role == "storage")
    nics = sum(len(topology.host(m).nics) for m in storage.members)
    assert labels[storage.label] == f"{len(storage.members)} hosts · {nics} NICs"
    assert any(text.endswith(" GPUs") and " servers · " in text for text in labels.values())


def test_a_gpus_nic_edge_stays_its_backend_link_with_the_scale_up_tier() -> None:
    """Sim builds a scale-up link per GPU after its backend link: the page's
    edge for the GPU's NIC (its pauses, a replay's flow rates) stays the
    backend one, node by node and as blocks."""
    from emulator.topology import scale_up_tier
    topology = scale_up_tier(load_topology(ROOT / "topologies" / "ai-cluster.yaml"))
    backend = {lk.gpu: i for i, lk in enumerate(topology.links)
               if lk.gpu is not None and lk.network == "backend"}
    assert any(lk.network == "scale-up" for lk in topology.links)
    for mode in ("off", "on"):
        pic = build_picture(topology, mode)
        for gpu in topology.gpus:
            i = backend[gpu.name]
            assert pic.nic_edge[gpu.name] == f"L{i}>" and pic.nic_rx_edge[gpu.name] == f"L{i}<"
