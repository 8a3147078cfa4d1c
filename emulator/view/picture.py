"""The fabric as the web page draws it: nodes with positions, one edge per
link direction, and which switch port feeds which edge.

Positions come from :func:`emulator.topology.layout.layout_topology` (the
layout ``topo draw`` uses), turned from inches with y up into page pixels
with y down. Nodes: every switch (a box, with its tier and rail), every
server (a box around its NICs) and every GPU NIC (a dot). Edges: link ``i``
(in topology order) gives ``L{i}>`` (from ``node_a`` to ``node_b``: a host
link's NIC to its leaf, a fabric link's lower switch to the upper) and
``L{i}<`` (back).

A big fabric (more nodes than ``topo draw --aggregate auto`` draws one by
one, :func:`emulator.topology.aggregate.aggregated`) is drawn as
``topo draw`` draws it: one block per group of servers or switches
(:func:`~emulator.topology.aggregate.aggregate`, placed by
:func:`~emulator.topology.draw_blocks.block_layout`) and one edge per bundle
direction, ``B{j}>`` (from the lower block up) and ``B{j}<``. A topology
with its scale-up tier built (sim) has its scale-up blocks right under the
server blocks their domains start in (``under`` names that block), counted
in domains and GPUs, as ``topo draw`` places them. The feed still
computes every link direction's use; :meth:`Picture.fold` turns a frame's
per-link values into per-bundle ones (the busiest member, as ``topo
draw``, and the bundle's mean), so a thousand GPUs cost the page a few
dozen elements. A block carries its members: a click lists them and their
queues.

:class:`Picture` also answers, for the feed: which edge a switch port sends
on (its egress), which edge a GPU's NIC sends on, and each edge's line rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from emulator.topology.aggregate import aggregate, aggregated, member_words
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
    # (switch, port) -> the network of its link (backend, scale-up, dci, front-end, storage)
    port_network: dict[tuple[str, int], str] = field(default_factory=dict)
    # drawn as blocks: each link direction's bundle direction (else empty)
    edge_bundle: dict[str, str] = field(default_factory=dict)

    @property
    def blocks(self) -> bool:
        return bool(self.edge_bundle)

    def fold(self, frame: dict[str, Any]) -> None:
        """Blocks: a frame's ``util`` per link direction -> per bundle direction
        (the busiest member), its mean in ``umean``; ``paused`` likewise (a
        bundle with a paused member). Node by node: nothing to do."""
        if not self.edge_bundle:
            return
        busiest: dict[str, float] = {}
        moved: dict[str, float] = {}
        for edge, value in frame.get("util", {}).items():
            bundle = self.edge_bundle[edge]
            busiest[bundle] = max(busiest.get(bundle, 0.0), value)
            moved[bundle] = moved.get(bundle, 0.0) + value * self.edge_rate_bps[edge]
        frame["util"] = {b: round(v, 4) for b, v in busiest.items()}
        frame["umean"] = {b: round(v / self.edge_rate_bps[b], 4) for b, v in moved.items()}
        frame["paused"] = sorted({self.edge_bundle[e] for e in frame.get("paused", [])})


def build_picture(topology: Topology, mode: str = "auto") -> Picture:
    """The picture of ``topology``: node by node, or as blocks (``mode`` as
    ``topo draw --aggregate``: auto, on, off; module docstring)."""
    if aggregated(topology, mode):
        pic = _links(Picture(topology), topology, [])
        return _blocks(pic, topology)
    place = layout_topology(topology)
    height = place.height_in

    def xy(x: float, y: float) -> dict[str, float]:
        return {"x": round(x * PX_PER_IN, 1), "y": round((height - y) * PX_PER_IN, 1)}

    pic = Picture(topology)
    nodes: list[dict[str, Any]] = []
    for server in topology.hosts:  # storage nodes and clients too
        box = place.servers[server.name]
        nodes.append({"data": {"id": server.name, "label": server.name, "kind": "server",
                               "w": round(box.width * PX_PER_IN, 1),
                               "h": round(box.height * PX_PER_IN, 1)},
                      "position": xy(box.x, box.y)})
    for gpu in topology.gpus + topology.nics:  # front-end and storage NICs too
        x, y = place.nics[gpu.name]
        label = f"gpu{gpu.index}" if gpu.network == "backend" else gpu.name.split("/")[1]
        nodes.append({"data": {"id": gpu.name, "label": label, "kind": "nic",
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
    _links(pic, topology, edges)
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


def _links(pic: Picture, topology: Topology, edges: list[dict[str, Any]]) -> Picture:
    """Every link direction: its edge (into ``edges``) and the port maps."""
    for gpu in topology.gpus:
        pic.nic_gpu[(gpu.server, gpu.intf)] = gpu.name
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
        pic.port_network[(link.node_b, link.port_b)] = link.network
        if link.gpu is None:
            pic.switch_ports[(link.node_a, link.port_a)] = (link.kind, describe)
            pic.port_network[(link.node_a, link.port_a)] = link.network
        pic.egress_edge[(link.node_b, link.port_b)] = down
        if link.gpu is not None:
            if link.network != "scale-up":
                # a GPU's NIC is its backend one: its scale-up port (sim) has a
                # link of its own, which must not take the NIC's place
                pic.nic_edge[link.gpu] = up
                pic.nic_rx_edge[link.gpu] = down
            # the leaf's port counts both directions of a host link
            pic.edge_counter[up] = (link.node_b, link.port_b, "rx")
        else:
            pic.egress_edge[(link.node_a, link.port_a)] = up
            pic.edge_counter[up] = (link.node_a, link.port_a, "tx")
        pic.edge_counter[down] = (link.node_b, link.port_b, "tx")
    return pic


def _blocks(pic: Picture, topology: Topology) -> Picture:
    """The block picture (module docstring): nodes are groups, edges bundles."""
    from emulator.topology.draw_blocks import block_layout  # (it imports matplotlib)

    agg = aggregate(topology)
    width, height, boxes, row_y = block_layout(agg)

    def xy(x: float, y: float) -> dict[str, float]:
        return {"x": round(x * PX_PER_IN, 1), "y": round((height - y) * PX_PER_IN, 1)}

    block_id = {g.key: f"G{i}" for i, g in enumerate(agg.groups)}
    nodes = []
    for group in agg.groups:
        box = boxes[group.key]
        servers = group.key.row == 0
        first = None if servers else topology.switch(group.members[0])
        count = member_words(topology, group)
        under = agg.server_block(group)  # a scale-up block: the servers it sits under
        nodes.append({"data": {"id": block_id[group.key], "label": f"{group.label}\n{count}",
                               "kind": "block", "row": group.key.row, "rail": group.key.rail,
                               "role": "servers" if servers else first.role,
                               "members": list(group.members),
                               **({"under": block_id[under.key]} if under else {}),
                               "w": round(box.width * PX_PER_IN, 1),
                               "h": round(box.height * PX_PER_IN, 1)},
                      "position": xy(box.x, box.y)})
    key_of = {m: g.key for g in agg.groups for m in g.members}
    index_of = {link_key: j for j, b in enumerate(agg.bundles) for link_key in b.links}
    rates = [0.0] * len(agg.bundles)
    for link in topology.links:
        rates[index_of[(link.node_a, link.port_a)]] += float(link.rate_bps)
    edges = []
    for j, bundle in enumerate(agg.bundles):
        describe = f"{bundle.low.label} – {bundle.high.label} ({len(bundle.links)} links)"
        rate = rates[j]
        for edge_id, src, dst, direction in ((f"B{j}>", bundle.low, bundle.high, "ab"),
                                             (f"B{j}<", bundle.high, bundle.low, "ba")):
            edges.append({"data": {"id": edge_id, "source": block_id[src],
                                   "target": block_id[dst], "bundle": j, "dir": direction,
                                   "kind": bundle.kind, "links": len(bundle.links),
                                   "rate_bps": rate, "describe": describe}})
            pic.edge_rate_bps[edge_id] = rate
    for i, link in enumerate(topology.links):
        j = index_of[(link.node_a, link.port_a)]
        upward = key_of[link.node_a] == agg.bundles[j].low
        pic.edge_bundle[f"L{i}>"] = f"B{j}>" if upward else f"B{j}<"
        pic.edge_bundle[f"L{i}<"] = f"B{j}<" if upward else f"B{j}>"
    pic.elements = {
        "nodes": nodes, "edges": edges, "blocks": True,
        "tiers": [{"name": name, "y": xy(0, y)["y"]} for name, y in zip(agg.row_names, row_y)],
        "rails": topology.kind == "rail-optimized",
        "width": round(width * PX_PER_IN, 1), "height": round(height * PX_PER_IN, 1),
    }
    return pic
