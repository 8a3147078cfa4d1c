"""Big fabrics as blocks: the group every server and switch falls in, and the
bundles of links between two groups (pure data; :mod:`.draw_blocks` draws it).

A thousand-GPU fabric drawn node by node is tens of thousands of pixels wide
with unreadable labels; drawn as blocks (a pod's edge switches, a rail's
leaves, the spines, the servers under one pod or one group of leaves) joined
by one line per bundle it fits a screen. Which block a node falls in comes
from one function, :func:`group_of`: it keys on pods (fat-tree), rails
(rail-optimized) and leaf groups, then on the site (each site's blocks side
by side, named ``s0 ...``, border switches in a row on top) and the network
(storage nodes and clients right of the servers; front-end and storage
fabrics in rows below the servers, numbered -1 (leaves) and -2 (spines)).

A topology with its scale-up tier built (:func:`~.scale_up.scale_up_tier`)
has a row of scale-up blocks right under the servers (row -1, the other
rows below it one lower): the switches of the domains that start in a
server block make one block, ``su{a}–{b}``, with that server block's
order, so the drawing puts it under its servers
(:attr:`Aggregation.scale_up_row`, :meth:`Aggregation.domains_of`).

A row holds at most :data:`MAX_BLOCKS_PER_ROW` blocks: where a tier has more
natural groups (many ToRs, many leaves per rail), neighbouring ones share a
block, so the picture's width stays bounded whatever the fabric's size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from emulator.topology.layout import SCALE_UP_ROLE, below_rows
from emulator.topology.model import Server, Topology

MAX_BLOCKS_PER_ROW = 16
# "auto" draws blocks above this many servers and switches together; the
# shipped fabrics (at most 36) stay drawn node by node.
AGGREGATE_NODES = 64
AGGREGATE_MODES = ("auto", "on", "off")


@dataclass(frozen=True)
class GroupKey:
    """Where a node goes: its row (0 = servers, then switch tiers bottom to
    top), its place in the row, and the words naming the block."""

    row: int
    order: int
    label: str
    rail: int | None = None  # blocks of one rail's leaves: coloured as the rail


@dataclass(frozen=True)
class Group:
    key: GroupKey
    members: tuple[str, ...]  # server or switch names, in topology order

    @property
    def label(self) -> str:
        return self.key.label


@dataclass(frozen=True)
class Bundle:
    """Every link between two groups; ``links`` are keyed by the topology
    link's ``(node_a, port_a)`` (as :class:`emulator.topology.draw.LinkValues`)."""

    low: GroupKey
    high: GroupKey
    kind: str  # "host" or "fabric"
    links: tuple[tuple[str, int], ...]
    network: str = "backend"  # its links' network (Link.network)


@dataclass(frozen=True)
class Aggregation:
    groups: tuple[Group, ...]  # by row, then order
    bundles: tuple[Bundle, ...]  # by the rows and orders of their ends
    row_names: tuple[str, ...]  # bottom to top
    first_row: int = 0  # the row of row_names[0] (below 0 with front-end or storage fabrics)
    scale_up_row: int | None = None  # the scale-up blocks' row (-1), None without the tier

    def row_name(self, row: int) -> str:
        return self.row_names[row - self.first_row]

    def server_block(self, group: Group) -> Group | None:
        """The server block a scale-up block sits under (the same order), None
        for any other block."""
        if group.key.row != self.scale_up_row:
            return None
        return next((g for g in self.groups
                     if g.key.row == 0 and g.key.order == group.key.order), None)


def _span(first: int, last: int) -> str:
    return f"{first}" if first == last else f"{first}–{last}"


def _chunk(count: int) -> int:
    """How many neighbouring groups share a block so that a row of
    ``count`` groups has at most MAX_BLOCKS_PER_ROW blocks."""
    return max(1, math.ceil(count / MAX_BLOCKS_PER_ROW))


# Blocks of site s take orders from s * SITE_ORDERS in every row.
SITE_ORDERS = 1000


def _side_rows(topology: Topology) -> tuple[str, ...]:
    """Names of the rows below the servers, bottom to top (:func:`below_rows`)."""
    return tuple(name for name, _ in reversed(below_rows(topology)))


def row_names(topology: Topology) -> tuple[str, ...]:
    if topology.kind == "fat-tree":
        names: tuple[str, ...] = ("servers", "edge", "aggregation", "core")
    else:
        names = ("servers", "leaves" if topology.kind == "rail-optimized" else "ToR leaves",
                 "spines")
    if topology.spec.sites is not None:
        names += ("border",)
    return _side_rows(topology) + names


def _pods(pod: int, chunk: int, pods: int) -> str:
    """'pod 3', or 'pods 2–3' where neighbouring pods share a block."""
    if chunk == 1:
        return f"pod {pod}"
    first = pod // chunk * chunk
    return f"pods {_span(first, min(first + chunk, pods) - 1)}"


def _server(topology: Topology, node: str) -> Server | None:
    """The host called ``node`` (``srv{s}``, ``stor{i}``, ``cli{i}``), or None for a switch."""
    if node.startswith("srv") and node[3:].isdigit() and int(node[3:]) < len(topology.servers):
        return topology.servers[int(node[3:])]
    if node.startswith(("stor", "cli")):
        return topology.host(node)
    return None


def group_of(topology: Topology, node: str) -> GroupKey:
    """The block a host or switch is drawn in (module docstring)."""
    server = _server(topology, node)
    site = (server.site if server is not None else topology.switch(node).site) or 0
    key = _site_group(topology, node, server)
    if topology.spec.sites is None:
        return key
    return GroupKey(key.row, site * SITE_ORDERS + key.order, f"s{site} {key.label}", key.rail)


def _site_group(topology: Topology, node: str, server: Server | None) -> GroupKey:
    """The block of ``node`` inside its site (``group_of`` adds the site)."""
    spec = topology.spec
    sites = spec.site_count
    if server is not None and server.role != "gpu":
        words = "storage nodes" if server.role == "storage" else "clients"
        return GroupKey(0, SITE_ORDERS - (2 if server.role == "storage" else 1), words)
    switch = topology.switch(node) if server is None else None
    if switch is not None:
        for below, (_, test) in enumerate(below_rows(topology)):
            if test(switch):
                if switch.role == SCALE_UP_ROLE:
                    return _scale_up_group(topology, switch.name, -1 - below)
                return GroupKey(-1 - below, 0 if switch.network == "front-end" else 1,
                                f"{switch.network} "
                                f"{'leaves' if switch.tier == 1 else 'spines'}")
    if switch is not None and switch.role == "border":
        return GroupKey(len(row_names(topology)) - len(_side_rows(topology)) - 1, 0, "border")
    if switch is not None and switch.rail is not None and switch.rail >= 100:
        return GroupKey(1, SITE_ORDERS - 1, "storage leaves")
    if topology.kind == "fat-tree":
        chunk = _chunk((spec.k or 2) * sites)
        if server is not None:
            pod = server.pod or 0
            return GroupKey(0, pod // chunk, f"{_pods(pod, chunk, spec.k or 2)} servers")
        switch = topology.switch(node)
        if switch.role == "core":
            return GroupKey(3, 0, "core")
        pod = switch.pod or 0
        return GroupKey(switch.tier, pod // chunk, f"{_pods(pod, chunk, spec.k or 2)} "
                        f"{'edge' if switch.role == 'edge' else 'agg'}")
    leaves_per_rail = math.ceil(spec.servers / spec.servers_per_leaf)
    chunk = _chunk(leaves_per_rail * sites)
    if server is not None:
        offset = server.index - server.index % spec.servers  # the site's first server
        block = server.index % spec.servers // spec.servers_per_leaf // chunk
        first = block * chunk * spec.servers_per_leaf
        last = min((block + 1) * chunk * spec.servers_per_leaf, spec.servers) - 1
        return GroupKey(0, block, f"srv{_span(offset + first, offset + last)}")
    switch = topology.switch(node)
    if switch.role != "leaf":
        return GroupKey(2, 0, "spines")
    if topology.kind == "rail-optimized":
        rail = switch.rail or 0
        return GroupKey(1, rail, f"rail {rail} leaves", rail)
    block = (switch.leaf_index or 0) % leaves_per_rail // chunk
    last = min((block + 1) * chunk, leaves_per_rail) - 1
    return GroupKey(1, block, f"tor{_span(block * chunk, last)}")


def _scale_up_group(topology: Topology, name: str, row: int) -> GroupKey:
    """The block of scale-up switch ``name``: under the server block its
    domain's first server is in, named by the domains starting there."""
    by_name = {d.name: d for d in topology.domains}
    home = _first_server_group(topology, by_name[name].servers[0])
    indices = [d.index for d in topology.domains
               if _first_server_group(topology, d.servers[0]) == home]
    return GroupKey(row, home.order, f"su{_span(min(indices), max(indices))}")


def _first_server_group(topology: Topology, name: str) -> GroupKey:
    server = _server(topology, name)
    return _site_group(topology, name, server)


def aggregate(topology: Topology) -> Aggregation:
    """Every node's group and every bundle of ``topology``."""
    by_key: dict[GroupKey, list[str]] = {}
    key_of: dict[str, GroupKey] = {}
    for name in [s.name for s in topology.hosts] + [s.name for s in topology.switches]:
        key_of[name] = group_of(topology, name)
        by_key.setdefault(key_of[name], []).append(name)
    bundles: dict[tuple[GroupKey, GroupKey, str], list[tuple[str, int]]] = {}
    network_of: dict[tuple[GroupKey, GroupKey, str], str] = {}
    for link in topology.links:
        low, high = key_of[link.node_a], key_of[link.node_b]
        if (low.row, low.order) > (high.row, high.order):
            low, high = high, low
        bundles.setdefault((low, high, link.kind), []).append((link.node_a, link.port_a))
        network_of.setdefault((low, high, link.kind), link.network)
    order = sorted(by_key, key=lambda k: (k.row, k.order))
    return Aggregation(
        tuple(Group(k, tuple(by_key[k])) for k in order),
        tuple(Bundle(low, high, kind, tuple(links), network_of[(low, high, kind)])
              for (low, high, kind), links in sorted(
            bundles.items(), key=lambda item: (item[0][0].row, item[0][0].order,
                                               item[0][1].row, item[0][1].order))),
        row_names(topology), -len(_side_rows(topology)),
        -1 if any(s.role == SCALE_UP_ROLE for s in topology.switches) else None)


def scale_up_words(topology: Topology, group: Group) -> str | None:
    """'4 domains · 32 GPUs' for a block of scale-up switches, None otherwise."""
    by_name = {d.name: d for d in topology.domains}
    domains = [by_name[m] for m in group.members if m in by_name]
    if not domains or len(domains) != len(group.members):
        return None
    gpus = sum(len(d.gpus) for d in domains)
    return f"{len(domains)} domain{'s' if len(domains) != 1 else ''} · {gpus} GPUs"


def member_words(topology: Topology, group: Group) -> str:
    """What a block holds, under its name: '4 servers · 32 GPUs', '2 hosts ·
    4 NICs' (storage nodes, clients), '4 domains · 32 GPUs' (scale-up
    switches) or '8 switches'."""
    words = scale_up_words(topology, group)
    if words is not None:
        return words
    if group.key.row == 0:
        role = topology.host(group.members[0]).role
        if role != "gpu":
            nics = sum(len(topology.host(m).nics) for m in group.members)
            return f"{len(group.members)} hosts · {nics} NICs"
        gpus = len(group.members) * topology.spec.gpus_per_server
        return f"{len(group.members)} servers · {gpus} GPUs"
    return f"{len(group.members)} switch{'es' if len(group.members) != 1 else ''}"


def node_count(topology: Topology) -> int:
    return len(topology.hosts) + len(topology.switches)


def aggregated(topology: Topology, mode: str = "auto") -> bool:
    """Whether ``mode`` (auto, on, off) draws ``topology`` as blocks."""
    if mode not in AGGREGATE_MODES:
        raise ValueError(f"aggregate is one of {', '.join(AGGREGATE_MODES)}, not {mode!r}")
    return mode == "on" or (mode == "auto" and node_count(topology) > AGGREGATE_NODES)
