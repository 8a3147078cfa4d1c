"""The routing plan: per-switch routes with equal-cost next hops, and paths.

Routes follow the addressing plan (:mod:`emulator.topology.addressing`):

- a leaf (or fat-tree edge) switch has a /32 host route to every NIC plugged
  into it, whose one next hop is that NIC;
- every switch has a route to every *other* leaf's /24 prefix, whose next hops
  are all neighbours one hop closer to that leaf on a shortest path (ECMP:
  a rail-optimized leaf reaches a remote leaf through every spine; a spine
  reaches each leaf through its one link). A leaf has no route for its own
  prefix: only its host routes, so traffic between NICs under one leaf stays
  on that leaf.
- a scale-up switch (:mod:`.scale_up`) has only its host routes, to the
  scale-up ports of its domain's GPUs; no other switch reaches it.

Lookups are longest-prefix match. :func:`paths` lists the switches of every
shortest path between two NICs; following the routes hop by hop
(:func:`routed_paths`) gives the same set, and the tests check it.
"""

from __future__ import annotations

import ipaddress
from collections import deque
from dataclasses import dataclass
from typing import Mapping, Sequence

import networkx as nx

from emulator.topology.errors import TopologyError
from emulator.topology.model import Topology


@dataclass(frozen=True)
class NextHop:
    port: int  # egress port on this switch
    neighbor: str  # switch or GPU name at the other end
    neighbor_mac: str  # destination MAC to write when forwarding through it
    neighbor_port: int  # its port (NIC index for a GPU)


@dataclass(frozen=True)
class Route:
    prefix: str  # CIDR, e.g. "10.1.0.0/24" or "10.1.0.3/32"
    next_hops: tuple[NextHop, ...]  # equal cost, in port order
    kind: str  # "host" (/32 to an attached NIC) or "leaf" (a leaf's prefix)


RoutingPlan = Mapping[str, tuple[Route, ...]]


def routing_plan(topology: Topology) -> dict[str, tuple[Route, ...]]:
    """Routes of every switch, by switch name: host routes, then leaf prefixes."""
    routes: dict[str, list[Route]] = {switch.name: [] for switch in topology.switches}
    # One NextHop per fabric port, shared by every route through it; one
    # breadth-first search per leaf over switch-to-switch ports (a thousand-GPU
    # fabric has hundreds of leaves, so this loop is what the plan costs).
    uplinks: dict[str, list[tuple[str, NextHop]]] = {}
    for switch in topology.switches:
        uplinks[switch.name] = [
            (port.peer, NextHop(port.number, port.peer, port.peer_mac, port.peer_port))
            for port in switch.ports if port.kind == "fabric"]
        for port in switch.ports:
            if port.kind == "host":
                # a scale-up switch reaches the GPUs' scale-up ports
                nic = topology.gpu(port.peer) if switch.role != "scale-up" \
                    else topology.scale_up_nic(port.peer)
                hop = NextHop(port.number, port.peer, nic.mac, port.peer_port)
                routes[switch.name].append(Route(f"{nic.ip}/32", (hop,), "host"))
    for leaf in topology.switches:
        if leaf.prefix is None:
            continue
        distance = _hops_to(leaf.name, uplinks)
        for switch in topology.switches:
            here = distance.get(switch.name)
            if switch.name == leaf.name or here is None:
                continue
            hops = tuple(hop for peer, hop in uplinks[switch.name]
                         if distance.get(peer) == here - 1)
            routes[switch.name].append(Route(leaf.prefix, hops, "leaf"))
    return {name: tuple(switch_routes) for name, switch_routes in routes.items()}


def _hops_to(origin: str, uplinks: Mapping[str, list[tuple[str, NextHop]]]) -> dict[str, int]:
    """Switch-to-switch hop count from ``origin`` to every switch it reaches."""
    distance = {origin: 0}
    frontier = deque([origin])
    while frontier:
        node = frontier.popleft()
        for peer, _ in uplinks[node]:
            if peer not in distance:
                distance[peer] = distance[node] + 1
                frontier.append(peer)
    return distance


def lookup(routes: Sequence[Route], dst_ip: str) -> Route | None:
    """The longest-prefix match for ``dst_ip`` among ``routes``, or None."""
    address = ipaddress.IPv4Address(dst_ip)
    best: Route | None = None
    best_len = -1
    for route in routes:
        network = ipaddress.IPv4Network(route.prefix)
        if address in network and network.prefixlen > best_len:
            best, best_len = route, network.prefixlen
    return best


def _endpoints(topology: Topology, src_gpu: str, dst_gpu: str) -> tuple[str, str]:
    src = topology.gpu(src_gpu).name
    dst = topology.gpu(dst_gpu).name
    if src == dst:
        raise TopologyError(f"source and destination are the same GPU ({src}); pick two GPUs")
    return src, dst


def paths(topology: Topology, src_gpu: str, dst_gpu: str) -> list[list[str]]:
    """Every equal-cost shortest path from one GPU NIC to another, as the
    switches crossed in order (the GPUs themselves left out), sorted."""
    src, dst = _endpoints(topology, src_gpu, dst_gpu)
    try:
        found = [path[1:-1] for path in nx.all_shortest_paths(topology.graph, src, dst)]
    except nx.NetworkXNoPath:
        networks = [topology.gpu(name).network for name in (src, dst)]
        raise TopologyError(
            f"no path from {src} ({networks[0]}) to {dst} ({networks[1]}): their fabrics have "
            f"no link between them; a server reaches the front-end and storage through its "
            f"srvS/feN and srvS/stN NICs") from None
    return sorted(found)


def routed_paths(topology: Topology, plan: RoutingPlan, src_gpu: str,
                 dst_gpu: str) -> list[list[str]]:
    """Every path a packet can take by following ``plan`` hop by hop, taking
    each ECMP next hop in turn, sorted. Raises if routes loop or end nowhere."""
    src, dst = _endpoints(topology, src_gpu, dst_gpu)
    dst_ip = topology.gpu(dst).ip
    found: list[list[str]] = []
    pending: list[list[str]] = [[topology.gpu(src).switch]]
    while pending:
        path = pending.pop()
        here = path[-1]
        if len(path) > len(topology.switches):
            raise TopologyError(f"routes from {src} to {dst} loop: {' -> '.join(path)}")
        route = lookup(plan[here], dst_ip)
        if route is None or not route.next_hops:
            raise TopologyError(f"switch {here} has no route to {dst} ({dst_ip})")
        for hop in route.next_hops:
            if hop.neighbor == dst:
                found.append(path)
            elif hop.neighbor in plan:
                pending.append(path + [hop.neighbor])
            else:
                raise TopologyError(f"switch {here} sends {dst_ip} to {hop.neighbor}, not {dst}")
    return sorted(found)
