"""The fabric as the web page draws it: nodes with positions, one edge per
link direction, and which switch port feeds which edge.

Positions come from :func:`emulator.topology.layout.layout_topology` (the
layout ``topo draw`` uses), turned from inches with y up into page pixels
with y down. Nodes: every switch (a box, with its tier and rail), every
server (a box around its NICs) and every GPU NIC (a dot). Edges: link ``i``
(in topology order) gives ``L{i}>`` (from ``node_a`` to ``node_b``: a host
link's NIC to its leaf, a fabric link's lower switch to the upper) and
``L{i}<`` (back).

:class:`Picture` also answers, for the feed: which edge a switch port sends
on (its egress), which edge a GPU's NIC sends on, and each edge's line rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from emulator.topology.layout import layout_topology
from emulator.topology.model import Topology

PX_PER_IN = 90.0


@dataclass
class Picture:
    """What the page draws of one topology, and the port → edge maps."""

    topology: Topology
    elements: dict[str, Any] = field(default_factory=dict)  # sent to the page as is
    egress_edge: dict[tuple[str, int], str] = field(default_factory=dict)  # (switch, port)
    nic_edge: dict[str, str] = field(default_factory=dict)  # GPU name -> edge it sends on
    nic_rx_edge: dict[str, str] = field(default_factory=dict)  # GPU name -> edge it receives on
    nic_gpu: dict[tuple[str, str], str] = field(default_factory=dict)  # (server, intf) -> GPU
    edge_rate_bps: dict[str, float] = field(default_factory=dict)
    # how each edge's bytes are counted: (switch, port, "tx"|"rx")
    edge_counter: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    link_edges: dict[tuple[str, int, str, int], tuple[str, str]] = field(default_factory=dict)
    # (switch, port) -> (link kind, "a:port - b:port")
    switch_ports: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)


def build_picture(topology: Topology) -> Picture:
    place = layout_topology(topology)
    height = place.height_in

    def xy(x: float, y: float) -> dict[str, float]:
        return {"x": round(x * PX_PER_IN, 1), "y": round((height - y) * PX_PER_IN, 1)}

    pic = Picture(topology)
    nodes: list[dict[str, Any]] = []
    for server in topology.servers:
        box = place.servers[server.name]
        nodes.append({"data": {"id": server.name, "label": server.name, "kind": "server",
                               "w": round(box.width * PX_PER_IN, 1),
                               "h": round(box.height * PX_PER_IN, 1)},
                      "position": xy(box.x, box.y)})
    for gpu in topology.gpus:
        pic.nic_gpu[(gpu.server, gpu.intf)] = gpu.name
        x, y = place.nics[gpu.name]
        nodes.append({"data": {"id": gpu.name, "label": f"gpu{gpu.index}", "kind": "nic",
                               "rail": gpu.rail, "server": gpu.server, "intf": gpu.intf},
                      "position": xy(x, y)})
    for tier_index, tier in enumerate(place.tiers):
        for switch in tier:
            box = place.switches[switch.name]
            nodes.append({"data": {"id": switch.name, "label": switch.name, "kind": "switch",
                                   "role": switch.role, "tier": tier_index,
                                   "rail": switch.rail, "prefix": switch.prefix,
                                   "w": round(box.width * PX_PER_IN, 1),
                                   "h": round(box.height * PX_PER_IN, 1)},
                          "position": xy(box.x, box.y)})
    edges: list[dict[str, Any]] = []
    for i, link in enumerate(topology.links):
        a = link.gpu or link.node_a
        up, down = f"L{i}>", f"L{i}<"
        describe = f"{a}:{link.port_a} - {link.node_b}:{link.port_b}"
        for edge_id, src, dst, direction in ((up, a, link.node_b, "ab"),
                                             (down, link.node_b, a, "ba")):
            edges.append({"data": {"id": edge_id, "source": src, "target": dst,
                                   "link": i, "dir": direction, "kind": link.kind,
                                   "rate_bps": link.rate_bps, "describe": describe}})
            pic.edge_rate_bps[edge_id] = float(link.rate_bps)
        pic.link_edges[(a, link.port_a, link.node_b, link.port_b)] = (up, down)
        pic.switch_ports[(link.node_b, link.port_b)] = (link.kind, describe)
        if link.gpu is None:
            pic.switch_ports[(link.node_a, link.port_a)] = (link.kind, describe)
        pic.egress_edge[(link.node_b, link.port_b)] = down
        if link.gpu is not None:
            pic.nic_edge[link.gpu] = up
            pic.nic_rx_edge[link.gpu] = down
            # the leaf's port counts both directions of a host link
            pic.edge_counter[up] = (link.node_b, link.port_b, "rx")
        else:
            pic.egress_edge[(link.node_a, link.port_a)] = up
            pic.edge_counter[up] = (link.node_a, link.port_a, "tx")
        pic.edge_counter[down] = (link.node_b, link.port_b, "tx")
    pic.elements = {
        "nodes": nodes, "edges": edges,
        "tiers": [{"name": name, "y": xy(0, y)["y"]}
                  for name, y in [("servers", place.servers[topology.servers[0].name].y),
                                  *zip(place.tier_names, place.tier_y)]],
        "rails": topology.kind == "rail-optimized",
        "width": round(place.width_in * PX_PER_IN, 1),
        "height": round(height * PX_PER_IN, 1),
    }
    return pic
