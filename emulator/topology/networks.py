"""The front-end and storage networks: which switches, hosts and NICs the
``front_end`` and ``storage`` keys add, and what plugs into what.

:func:`side_wiring` returns a :class:`SideWiring` that
:mod:`emulator.topology.build` numbers and addresses together with the
backend's :class:`~emulator.topology.generators.Wiring`. Everything here
comes after the backend's switches, hosts and ports, so a file without these
keys builds exactly as before (same names, addresses, ports and routes).

Per site (names prefixed ``s{site}-`` where there are sites):

- **Front-end**: NIC ``n`` of GPU server ``s`` is ``srv{s}/fe{n}`` (host
  interface ``eth{gpus_per_server + n}``); client ``c`` is host ``cli{c}``
  with one NIC ``cli{c}/nic0``. The NICs fill leaves ``fe-leaf{i}``
  (``nics_per_leaf`` each: servers' NICs, then clients', then storage
  nodes' when storage shares the front-end), every leaf linked to every
  spine ``fe-spine{j}``. Leaves own ``10.100.{i}.0/24``.
- **Storage**: node ``i`` is host ``stor{i}`` with NICs ``stor{i}/nic{n}``.
  ``separate``: GPU server ``s`` has NICs ``srv{s}/st{n}`` (after its
  front-end NICs); servers' and nodes' NICs fill leaves ``st-leaf{i}``
  linked to every spine ``st-spine{j}``. ``front-end``: the nodes' NICs join
  the front-end leaves. ``backend``: the nodes' NICs fill leaves
  ``st-leaf{i}`` of the backend, each linked to every top-tier switch of its
  site (spines, or fat-tree cores) at the backend's ``fabric_link``; GPUs
  reach storage through their backend NICs. Storage leaves own
  ``10.101.{i}.0/24``.

Links are tagged by network: a storage node's NIC link and, on the backend,
its leaf's uplinks are ``storage``; everything else of the front-end fabric
``front-end``; of a separate storage fabric ``storage``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from emulator.topology.generators import SwitchPlan, Wiring
from emulator.topology.spec import LinkSpec, TopologySpec

# The second octet of the front-end and storage fabrics' prefixes (backend
# rails use 0..63, router ids 255).
FRONT_END_PLANE = 100
STORAGE_PLANE = 101


@dataclass(frozen=True)
class NicAttachment:
    """NIC ``nic`` (interface ``eth{index}`` of host ``host``) plugs into ``switch``."""

    host: str  # srv{s}, stor{i} or cli{c}
    nic: str  # srv{s}/fe{n}, srv{s}/st{n}, stor{i}/nic{n}, cli{c}/nic0
    index: int
    switch: str
    network: str  # front-end or storage: the network of its link
    link: LinkSpec


@dataclass(frozen=True)
class SideLink:
    lower: str  # a leaf
    upper: str  # a spine (or a backend top-tier switch for storage on the backend)
    network: str
    link: LinkSpec


@dataclass(frozen=True)
class HostPlan:
    """A storage node or client."""

    name: str
    role: str  # storage or client
    site: int | None
    nics: tuple[str, ...]


@dataclass(frozen=True)
class SideWiring:
    switches: tuple[SwitchPlan, ...] = ()
    attachments: tuple[NicAttachment, ...] = ()  # by switch, in port order
    links: tuple[SideLink, ...] = ()
    hosts: tuple[HostPlan, ...] = ()
    server_nics: dict[int, tuple[str, ...]] = field(default_factory=dict)  # GPU server -> NICs


@dataclass
class _Builder:
    """Collects one network's leaves as NICs are handed to it."""

    name: str  # fe or st
    plane: int
    network: str
    per_leaf: int
    first_leaf: int  # leaf_index of this site's first leaf (numbers continue across sites)
    prefix: str
    site: int | None
    switch_network: str
    nics: list[tuple[str, str, int, str, LinkSpec]] = field(default_factory=list)

    def add(self, host: str, nic: str, index: int, network: str, link: LinkSpec) -> None:
        self.nics.append((host, nic, index, network, link))

    @property
    def leaf_count(self) -> int:
        return math.ceil(len(self.nics) / self.per_leaf)

    def leaves(self) -> list[SwitchPlan]:
        return [SwitchPlan(name=f"{self.prefix}{self.name}-leaf{i}", role="leaf", tier=1,
                           rail=self.plane, leaf_index=self.first_leaf + i, site=self.site,
                           network=self.switch_network)
                for i in range(self.leaf_count)]

    def attachments(self) -> list[NicAttachment]:
        return [NicAttachment(host, nic, index,
                              f"{self.prefix}{self.name}-leaf{n // self.per_leaf}", network, link)
                for n, (host, nic, index, network, link) in enumerate(self.nics)]


def side_wiring(spec: TopologySpec, backend: Wiring) -> SideWiring:
    """The front-end and storage fabrics of ``spec`` (module docstring)."""
    fe, st = spec.front_end, spec.storage
    if fe is None and st is None:
        return SideWiring()
    sites = spec.site_count
    switches: list[SwitchPlan] = []
    attachments: list[NicAttachment] = []
    links: list[SideLink] = []
    hosts: list[HostPlan] = []
    server_nics: dict[int, tuple[str, ...]] = {}
    next_leaf = {FRONT_END_PLANE: 0, STORAGE_PLANE: 0}
    gpus = spec.gpus_per_server
    for site in range(sites):
        prefix = f"s{site}-" if spec.sites is not None else ""
        site_tag = site if spec.sites is not None else None
        front = (_Builder("fe", FRONT_END_PLANE, "front-end", fe.nics_per_leaf,
                          next_leaf[FRONT_END_PLANE], prefix, site_tag, "front-end")
                 if fe is not None else None)
        storage = None
        if st is not None and st.network != "front-end":
            storage = _Builder("st", STORAGE_PLANE, "storage", st.nics_per_leaf,
                               next_leaf[STORAGE_PLANE], prefix, site_tag,
                               "storage" if st.network == "separate" else "backend")
        for server in range(site * spec.servers, (site + 1) * spec.servers):
            names: list[str] = []
            if fe is not None and front is not None:
                for n in range(fe.nics_per_server):
                    names.append(f"srv{server}/fe{n}")
                    front.add(f"srv{server}", names[-1], gpus + n, "front-end", fe.link)
            if st is not None and st.network == "separate" and storage is not None:
                first = gpus + (fe.nics_per_server if fe is not None else 0)
                for n in range(st.server_nics):
                    names.append(f"srv{server}/st{n}")
                    storage.add(f"srv{server}", names[-1], first + n, "storage", st.link)
            if names:
                server_nics[server] = tuple(names)
        if fe is not None and front is not None:
            for c in range(site * fe.clients, (site + 1) * fe.clients):
                nic = f"cli{c}/nic0"
                front.add(f"cli{c}", nic, 0, "front-end", fe.link)
                hosts.append(HostPlan(f"cli{c}", "client", site_tag, (nic,)))
        if st is not None:
            into = front if st.network == "front-end" else storage
            for i in range(site * st.nodes, (site + 1) * st.nodes):
                nics = tuple(f"stor{i}/nic{n}" for n in range(st.nics_per_node))
                for n, nic in enumerate(nics):
                    if into is not None:
                        into.add(f"stor{i}", nic, n, "storage", st.link)
                hosts.append(HostPlan(f"stor{i}", "storage", site_tag, nics))
        for builder, side in ((front, fe), (storage, st)):
            if builder is None or side is None:
                continue
            leaves = builder.leaves()
            switches += leaves
            attachments += builder.attachments()
            next_leaf[builder.plane] += len(leaves)
            if builder.switch_network == "backend":
                tops = _backend_tops(backend, site_tag)
                links += [SideLink(leaf.name, top, "storage", spec.fabric_link)
                          for leaf in leaves for top in tops]
                continue
            spines = [SwitchPlan(name=f"{prefix}{builder.name}-spine{j}", role="spine", tier=2,
                                 site=site_tag, network=builder.network)
                      for j in range(side.spines)]
            switches += spines
            links += [SideLink(leaf.name, spine.name, builder.network, side.fabric_link)
                      for leaf in leaves for spine in spines]
    return SideWiring(tuple(switches), tuple(attachments), tuple(links), tuple(hosts),
                      server_nics)


def _backend_tops(backend: Wiring, site: int | None) -> list[str]:
    """The top tier of a site's backend below its border switches."""
    here = [plan for plan in backend.switches if plan.site == site and plan.role != "border"]
    top = max(plan.tier for plan in here)
    return [plan.name for plan in here if plan.tier == top]
