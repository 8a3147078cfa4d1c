"""Pictures of a scale-across cluster (README "Sites"): each site a panel of
its own, border switches on top, DCI links as arcs between the sites; as
blocks, every block named by its site, a border row and one DCI bundle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.image import imread

from emulator.cli.main import main
from emulator.topology import load_topology
from emulator.topology.aggregate import aggregate
from emulator.topology.draw import LinkValues, draw_topology
from emulator.topology.draw_style import NETWORK_COLOURS
from emulator.topology.layout import layout_topology

AI_CLUSTER = Path(__file__).resolve().parents[2] / "topologies" / "ai-cluster.yaml"


def _dci_pixels(path: Path) -> int:
    image = imread(path)[..., :3]
    return int((np.abs(image - np.array(to_rgb(NETWORK_COLOURS["dci"]))) < 0.04)
               .all(axis=-1).sum())


def test_each_site_is_a_panel_of_its_own_with_its_borders_on_top():
    t = load_topology(AI_CLUSTER)
    place = layout_topology(t)
    assert [label for label, _ in place.sites] == ["site 0", "site 1"]
    (_, left), (_, right) = place.sites
    assert left.x + left.width / 2 < right.x - right.width / 2  # panels do not overlap
    for host in t.hosts:
        panel = place.sites[host.site][1]
        box = place.servers[host.name]
        assert panel.x - panel.width / 2 <= box.x <= panel.x + panel.width / 2
    for switch in t.switches:
        panel = place.sites[switch.site][1]
        assert abs(place.switches[switch.name].x - panel.x) <= panel.width / 2
    border_y = {place.switches[s.name].y for s in t.switches if s.role == "border"}
    spine_y = {place.switches[s.name].y for s in t.switches if s.role == "spine"}
    assert len(border_y) == 1 and min(border_y) > max(spine_y)
    assert place.tier_names[-1] == "border"
    assert place.height_in > max(border_y)  # room for the DCI arcs


def test_sites_are_drawn_node_by_node_and_as_blocks(tmp_path):
    t = load_topology(AI_CLUSTER)
    nodes, blocks = tmp_path / "nodes.png", tmp_path / "blocks.png"
    draw_topology(t, nodes, aggregate="off")
    draw_topology(t, blocks, aggregate="on")
    # the border switches and the DCI arcs are in the DCI colour
    assert _dci_pixels(nodes) > 2000 and _dci_pixels(blocks) > 2000
    dci = [(l.node_a, l.port_a) for l in t.links if l.network == "dci"]
    busy = tmp_path / "busy.png"
    draw_topology(t, busy, LinkValues({dci[0]: 0.9}, "utilisation"), aggregate="off")
    assert busy.stat().st_size > 0


def test_blocks_are_named_by_site_with_a_border_row_and_one_dci_bundle():
    t = load_topology(AI_CLUSTER)
    agg = aggregate(t)
    labels = [g.label for g in agg.groups]
    assert {"s0 border", "s1 border", "s0 spines", "s1 spines", "s0 srv0–3",
            "s1 srv4–7"} <= set(labels)
    assert agg.row_names[-1] == "border"
    border_row = agg.first_row + len(agg.row_names) - 1
    # the front-end and storage fabrics: two rows below the servers
    assert agg.first_row == -2 and {"s0 storage nodes", "s1 clients", "s0 front-end leaves",
                                    "s1 storage spines"} <= set(labels)
    assert {g.label for g in agg.groups if g.key.row == border_row} == {"s0 border",
                                                                         "s1 border"}
    # site 0's blocks come before site 1's in every row
    for row in {g.key.row for g in agg.groups}:
        sites = [g.label[:2] for g in agg.groups if g.key.row == row]
        assert sites == sorted(sites)
    (dci,) = [b for b in agg.bundles if b.low.row == b.high.row]
    assert len(dci.links) == 2 and {dci.low.label, dci.high.label} == {"s0 border",
                                                                        "s1 border"}
    assert sorted(k for b in agg.bundles for k in b.links) == sorted(
        (l.node_a, l.port_a) for l in t.links)


def test_topo_show_counts_sites(capsys):
    assert main(["topo", "show", str(AI_CLUSTER), "--json"]) == 0
    import json
    found = json.loads(capsys.readouterr().out)
    assert found["sites"] == 2 and found["border_switches"] == 4 and found["dci_links"] == 2
    assert found["servers"] == 8 and found["gpus"] == 64
    assert (found["storage_nodes"], found["clients"], found["hosts"]) == (8, 4, 20)


@pytest.mark.parametrize("kind,network", [("fat-tree", "backend"), ("leaf-spine", "front-end"),
                                          ("rail-optimized", "separate")])
def test_every_kind_draws_its_front_end_and_storage_node_by_node_and_as_blocks(
        kind, network, tmp_path):
    from emulator.topology import topology_from_dict

    link = {"rate": "100Gbps", "delay": "1us"}
    shape = ({"k": 4} if kind == "fat-tree" else
             {"servers": 4, "gpus_per_server": 2, "servers_per_leaf": 2, "spines": 2})
    t = topology_from_dict({"name": "x", "kind": kind, **shape, "host_link": link,
                            "fabric_link": link, "front_end": {"link": link},
                            "storage": {"nodes": 2, "link": link, "network": network},
                            "sites": {"count": 2, "dci_link": {"rate": "400Gbps",
                                                               "delay": "20us"}}})
    place = layout_topology(t)
    # every host, NIC and switch has a place; storage nodes sit in the host row
    assert set(place.servers) == {h.name for h in t.hosts}
    assert set(place.nics) == {n.name for n in t.gpus + t.nics}
    assert set(place.switches) == {s.name for s in t.switches}
    assert {place.servers[h.name].y for h in t.hosts} == {place.server_y}
    side = [s for s in t.switches if s.network != "backend"]
    assert all(place.switches[s.name].y < place.server_y for s in side)
    values = LinkValues({(l.node_a, l.port_a): 0.5 for l in t.links}, "u")
    for mode in ("off", "on"):
        draw_topology(t, tmp_path / f"{mode}.png", aggregate=mode)
        draw_topology(t, tmp_path / f"{mode}-v.png", values, aggregate=mode)
    agg = aggregate(t)
    assert sorted(k for b in agg.bundles for k in b.links) == sorted(
        (l.node_a, l.port_a) for l in t.links)
    assert {b.network for b in agg.bundles} >= {"front-end", "storage", "dci"}


def test_switches_of_a_scale_up_tier_get_a_row_under_the_servers(tmp_path):
    """A topology holding a scale-up switch per domain (role ``scale-up``, as
    the sim's scale-up tier builds them) is drawn with those switches in a
    row of their own right under the servers, node by node and as blocks."""
    from dataclasses import replace

    from emulator.topology import Link, Port, Topology

    t = load_topology(AI_CLUSTER)
    switches, links = list(t.switches), list(t.links)
    for d, server in enumerate(t.servers):
        index = len(switches)
        ports = tuple(Port(number=r + 1, mac=f"02:02:00:00:{d:02x}:{r + 1:02x}",
                           intf=f"su{d}-eth{r + 1}", peer=gpu, peer_port=8 + r,
                           peer_mac="02:00:00:00:00:00", kind="host", facing="down")
                      for r, gpu in enumerate(server.gpus))
        switches.append(replace(t.switches[0], name=f"su{d}", role="scale-up", tier=1,
                                index=index, rail=None, leaf_index=None, prefix=None,
                                gateway_ip=None, ports=ports, site=server.site))
        links += [Link(node_a=server.name, port_a=8 + r, node_b=f"su{d}", port_b=r + 1,
                       rate_bps=3_600_000_000_000, delay_ns=125, kind="host", gpu=gpu,
                       network="scale-up") for r, gpu in enumerate(server.gpus)]
    tiered = Topology(spec=t.spec, servers=t.servers, gpus=t.gpus, switches=tuple(switches),
                      links=tuple(links), graph=t.graph, domains=t.domains, nics=t.nics,
                      others=t.others)
    place = layout_topology(tiered)
    su_y = {place.switches[f"su{d}"].y for d in range(len(t.servers))}
    assert len(su_y) == 1 and max(su_y) < place.server_y
    side = [place.switches[s.name].y for s in t.switches if s.network != "backend"]
    assert max(side) < min(su_y)  # the front-end and storage rows are further down
    assert "scale-up" in place.tier_names
    agg = aggregate(tiered)
    # one block a site, under the site's servers, named by its domains
    assert {g.label for g in agg.groups if g.key.row == -1} == {"s0 su0–3", "s1 su4–7"}
    for mode in ("off", "on"):
        draw_topology(tiered, tmp_path / f"{mode}.png", aggregate=mode)
