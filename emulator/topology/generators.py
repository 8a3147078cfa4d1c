"""Which switches a fabric has and what plugs into what, per kind.

A generator turns a :class:`TopologySpec` into a :class:`Wiring`: the
switches in order, the switch each GPU NIC plugs into, and the switch-to-switch
links. Port numbers, addresses and the graph come later
(:mod:`emulator.topology.build`), the same way for every kind.

- ``rail-optimized``: one rail per GPU index. Rail ``r`` has
  ceil(servers / servers_per_leaf) leaves ``leaf-r{r}-{i}``; NIC ``r`` of
  server ``s`` plugs into ``leaf-r{r}-{s // servers_per_leaf}``. Every leaf has
  one link to every spine ``spine{j}``.
- ``leaf-spine``: no rails. Every NIC of server ``s`` plugs into the
  top-of-rack leaf ``tor{s // servers_per_leaf}``; every ToR links to every
  spine.
- ``fat-tree``: the k-ary fat-tree: k pods of k/2 edge switches
  ``edge-p{p}-{i}`` and k/2 aggregation switches ``agg-p{p}-{i}``, full
  bipartite inside a pod; (k/2)² core switches ``core{c}``, aggregation switch
  ``i`` of every pod linked to cores ``i*k/2 .. i*k/2 + k/2 - 1``. Each of the
  k/2 host positions of an edge switch is a server whose ``gpus_per_server``
  NICs all plug into that edge switch; servers are numbered pod by pod, edge by
  edge.
- ``sites`` (any kind): the kind's wiring once per site, switch names
  prefixed ``s{site}-``, servers numbered site by site, leaf numbers
  continuing per rail (so addresses stay unique); each site's border
  switches ``s{site}-border{b}`` link to every top-tier switch of the site,
  and border ``b`` of each site to border ``b`` of every other site (DCI).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from emulator.topology.spec import TopologySpec


@dataclass(frozen=True)
class SwitchPlan:
    name: str
    role: str
    tier: int
    rail: int | None = None  # leaves: the rail (plane) they serve; 0 without rails
    leaf_index: int | None = None  # leaves: their number inside that rail
    pod: int | None = None
    site: int | None = None  # None in a one-site fabric
    network: str = "backend"  # front-end and storage fabrics: emulator.topology.networks


@dataclass(frozen=True)
class Attachment:
    """NIC ``gpu`` of server ``server`` plugs into switch ``switch``."""

    server: int
    gpu: int
    switch: str


@dataclass(frozen=True)
class Wiring:
    switches: tuple[SwitchPlan, ...]
    attachments: tuple[Attachment, ...]  # in (server, gpu) order
    fabric_links: tuple[tuple[str, str], ...]  # (lower tier, upper tier)
    server_pods: tuple[int | None, ...]  # per server
    dci_links: tuple[tuple[str, str], ...] = ()  # border to border, across sites
    server_sites: tuple[int | None, ...] = ()  # per server; () in a one-site fabric


def _spines(count: int) -> list[SwitchPlan]:
    return [SwitchPlan(name=f"spine{j}", role="spine", tier=2) for j in range(count)]


def rail_optimized(spec: TopologySpec) -> Wiring:
    leaves_per_rail = math.ceil(spec.servers / spec.servers_per_leaf)
    rails = spec.gpus_per_server
    leaves = [
        SwitchPlan(name=f"leaf-r{rail}-{i}", role="leaf", tier=1, rail=rail, leaf_index=i)
        for rail in range(rails)
        for i in range(leaves_per_rail)
    ]
    spines = _spines(spec.spines)
    attachments = tuple(
        Attachment(server=s, gpu=r, switch=f"leaf-r{r}-{s // spec.servers_per_leaf}")
        for s in range(spec.servers)
        for r in range(rails)
    )
    links = tuple((leaf.name, spine.name) for leaf in leaves for spine in spines)
    return Wiring(tuple(leaves + spines), attachments, links, (None,) * spec.servers)


def leaf_spine(spec: TopologySpec) -> Wiring:
    tors = [
        SwitchPlan(name=f"tor{i}", role="leaf", tier=1, rail=0, leaf_index=i)
        for i in range(math.ceil(spec.servers / spec.servers_per_leaf))
    ]
    spines = _spines(spec.spines)
    attachments = tuple(
        Attachment(server=s, gpu=r, switch=f"tor{s // spec.servers_per_leaf}")
        for s in range(spec.servers)
        for r in range(spec.gpus_per_server)
    )
    links = tuple((tor.name, spine.name) for tor in tors for spine in spines)
    return Wiring(tuple(tors + spines), attachments, links, (None,) * spec.servers)


def fat_tree(spec: TopologySpec) -> Wiring:
    if spec.k is None:
        raise ValueError("a fat-tree spec needs k")
    k = spec.k
    half = k // 2
    edges = [
        SwitchPlan(name=f"edge-p{p}-{i}", role="edge", tier=1, rail=0,
                   leaf_index=p * half + i, pod=p)
        for p in range(k)
        for i in range(half)
    ]
    aggs = [
        SwitchPlan(name=f"agg-p{p}-{i}", role="agg", tier=2, pod=p)
        for p in range(k)
        for i in range(half)
    ]
    cores = [SwitchPlan(name=f"core{c}", role="core", tier=3) for c in range(half * half)]
    attachments: list[Attachment] = []
    server_pods: list[int | None] = []
    for edge in edges:
        for h in range(half):
            server = len(server_pods)
            server_pods.append(edge.pod)
            attachments.extend(
                Attachment(server=server, gpu=r, switch=edge.name)
                for r in range(spec.gpus_per_server)
            )
    links = [
        (f"edge-p{p}-{e}", f"agg-p{p}-{a}")
        for p in range(k)
        for e in range(half)
        for a in range(half)
    ]
    links += [
        (f"agg-p{p}-{a}", f"core{a * half + j}")
        for p in range(k)
        for a in range(half)
        for j in range(half)
    ]
    return Wiring(tuple(edges + aggs + cores), tuple(attachments), tuple(links), tuple(server_pods))


def with_sites(spec: TopologySpec, one_site: Wiring) -> Wiring:
    """``one_site`` copied per site of ``spec.sites``, joined by border switches."""
    sites = spec.sites
    if sites is None:
        return one_site
    top_tier = max(plan.tier for plan in one_site.switches)
    per_rail: dict[int, int] = {}
    for plan in one_site.switches:
        if plan.rail is not None and plan.leaf_index is not None:
            per_rail[plan.rail] = max(per_rail.get(plan.rail, 0), plan.leaf_index + 1)
    servers = len(one_site.server_pods)
    switches: list[SwitchPlan] = []
    attachments: list[Attachment] = []
    links: list[tuple[str, str]] = []
    for site in range(sites.count):
        def name(switch: str, site: int = site) -> str:
            return f"s{site}-{switch}"
        for plan in one_site.switches:
            leaf_index = (None if plan.leaf_index is None or plan.rail is None
                          else plan.leaf_index + site * per_rail[plan.rail])
            switches.append(SwitchPlan(name=name(plan.name), role=plan.role, tier=plan.tier,
                                       rail=plan.rail, leaf_index=leaf_index, pod=plan.pod,
                                       site=site))
        attachments += [Attachment(server=a.server + site * servers, gpu=a.gpu,
                                   switch=name(a.switch)) for a in one_site.attachments]
        links += [(name(lower), name(upper)) for lower, upper in one_site.fabric_links]
        tops = [plan.name for plan in one_site.switches if plan.tier == top_tier]
        for b in range(sites.border_switches):
            border = name(f"border{b}")
            switches.append(SwitchPlan(name=border, role="border", tier=top_tier + 1, site=site))
            links += [(name(top), border) for top in tops]
    dci = tuple((f"s{a}-border{b}", f"s{z}-border{b}")
                for b in range(sites.border_switches)
                for a in range(sites.count) for z in range(a + 1, sites.count))
    # attachments in (server, gpu) order: sites were appended in server order
    return Wiring(tuple(switches), tuple(attachments), tuple(links),
                  one_site.server_pods * sites.count, dci_links=dci,
                  server_sites=tuple(site for site in range(sites.count)
                                     for _ in range(servers)))


# The registry of generators by ``kind``; read-only.
GENERATORS: Mapping[str, Callable[[TopologySpec], Wiring]] = MappingProxyType({
    "rail-optimized": rail_optimized,
    "leaf-spine": leaf_spine,
    "fat-tree": fat_tree,
})
