"""The topology model: servers, GPUs (one NIC each), switches, ports, links.

Everything here is plain, immutable data built by :mod:`emulator.topology.build`.
Conventions the other layers rely on:

- A server is one Mininet host. GPU ``r`` of server ``s`` is ``srv{s}/gpu{r}``;
  its NIC is the host's ``eth{r}`` (host ports count from 0, as in Mininet).
- Switch ports count from 1: ports facing down (hosts in server then GPU
  order, then lower-tier switches) first, then ports facing up, each group in
  the order of the switches it reaches.
- A host link goes from the server (``node_a``, ``port_a`` = NIC index) to its
  switch; a fabric link from the lower-tier switch (``node_a``) to the upper.
- ``graph`` has one node per GPU NIC and per switch (servers are not nodes, so
  no path runs through a server) and one edge per link.
- Every link carries the network it belongs to (one of :data:`NETWORKS`), so
  results and drawings can group by network: ``backend`` (scale-out),
  ``dci`` between sites, ``front-end`` and ``storage`` for the fabrics of
  :mod:`emulator.topology.networks`, whose NICs (``Topology.nics``) and
  hosts (storage nodes, clients: ``Topology.others``) come after the
  backend's, so a topology without them is as before. Scale-up domains are listed in
  ``Topology.domains`` (empty without a ``scale_up`` key) with the servers and
  GPUs each holds. :func:`emulator.topology.scale_up.scale_up_tier` adds the
  scale-up tier itself (a ``scale-up`` switch per domain, each GPU's
  scale-up NIC plugged into it by a ``scale-up`` host link) to the switches
  and links, for the virtual-time target; ``graph`` never holds it (paths
  and routes of the backend stay what they were).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from emulator.topology.errors import TopologyError
from emulator.topology.spec import TopologySpec

SWITCH_ROLES: tuple[str, ...] = ("leaf", "spine", "edge", "agg", "core", "border", "scale-up")
LEAF_ROLES: frozenset[str] = frozenset({"leaf", "edge"})
LINK_KINDS: tuple[str, ...] = ("host", "fabric")
# The networks of an AI cluster a link can belong to.
NETWORKS: tuple[str, ...] = ("backend", "scale-up", "dci", "front-end", "storage")


@dataclass(frozen=True)
class Port:
    """One switch port and what is plugged into it."""

    number: int
    mac: str
    intf: str  # network interface name, at most 15 characters (Linux IFNAMSIZ)
    peer: str  # a GPU name for host ports, a switch name for fabric ports
    peer_port: int  # NIC index on the host for host ports
    peer_mac: str
    kind: str  # "host" or "fabric"
    facing: str  # "down" (hosts, lower tier) or "up"


@dataclass(frozen=True)
class Switch:
    name: str
    role: str  # leaf, spine (rail-optimized, leaf-spine); edge, agg, core (fat-tree)
    tier: int  # 1 = leaf/edge, 2 = spine/agg, 3 = core
    index: int  # position in Topology.switches
    rail: int | None  # the rail (plane) of a leaf or edge switch; None above
    leaf_index: int | None  # a leaf's or edge switch's number inside its rail
    pod: int | None  # fat-tree pod of edge and agg switches
    site: int | None  # the site (``sites`` key); None in a one-site fabric
    router_id: str
    prefix: str | None  # the /24 this leaf or edge switch owns
    gateway_ip: str | None  # virtual gateway address of that prefix
    ports: tuple[Port, ...]
    # the fabric it belongs to: backend, front-end or storage (a separate storage fabric)
    network: str = "backend"

    def port(self, number: int) -> Port:
        if not 1 <= number <= len(self.ports):
            raise TopologyError(f"switch {self.name} has ports 1..{len(self.ports)}, not {number}")
        return self.ports[number - 1]


@dataclass(frozen=True)
class Gpu:
    """A GPU and its NIC; addressing is in :mod:`emulator.topology.addressing`.

    The same record describes every other NIC a flow can start or end at
    (``network`` front-end or storage, :mod:`emulator.topology.networks`): a
    server's front-end NIC ``srv{s}/fe{n}`` or storage NIC ``srv{s}/st{n}``,
    a storage node's ``stor{i}/nic{n}``, a client's ``cli{i}/nic0``; those
    are in :attr:`Topology.nics`, not :attr:`Topology.gpus`.
    """

    name: str  # srv{s}/gpu{r}
    server: str
    server_index: int
    index: int  # r, the GPU's index inside its server
    rail: int  # rail of its NIC; 0 for every NIC in designs without rails
    nic: str  # eth{r}, the host-side interface
    intf: str  # srv{s}-eth{r}, the interface name on the Mininet host
    ip: str
    prefix_len: int
    mac: str
    gateway_ip: str
    gateway_mac: str  # MAC of the switch port this NIC is plugged into
    switch: str
    switch_port: int
    network: str = "backend"  # the network of the link it is plugged into


@dataclass(frozen=True)
class Server:
    """A host: a GPU server (``srv{s}``), a storage node (``stor{i}``) or a
    front-end client (``cli{i}``); ``role`` says which."""

    name: str  # srv{s}
    index: int
    gpus: tuple[str, ...]
    pod: int | None = None
    site: int | None = None  # the site (``sites`` key); None in a one-site fabric
    nics: tuple[str, ...] = ()  # its NICs other than GPUs' (front-end, storage)
    role: str = "gpu"  # gpu, storage or client


@dataclass(frozen=True)
class Link:
    node_a: str
    port_a: int
    node_b: str
    port_b: int
    rate_bps: int
    delay_ns: int
    kind: str  # "host" (server NIC to switch) or "fabric" (switch to switch)
    gpu: str | None = None  # the GPU whose NIC is node_a's port_a, for host links
    network: str = "backend"  # one of NETWORKS


@dataclass(frozen=True)
class ScaleUpNic:
    """A GPU's scale-up port: its own address on the domain's switch
    (:mod:`emulator.topology.scale_up` numbers them)."""

    gpu: str
    server: str
    nic_index: int  # the host's NIC number: after its GPU, front-end and storage NICs
    intf: str  # srv{s}-eth{G+r}
    ip: str
    mac: str
    switch: str  # the domain's scale-up switch, su{d}
    switch_port: int
    gateway_mac: str  # MAC of that switch port


@dataclass(frozen=True)
class ScaleUpDomain:
    """GPUs that meet at one scale-up (NVLink-class) switch.

    ``rate_bps`` is each GPU's scale-up rate per direction and
    ``hop_latency_ns`` the switch's hop latency (from the spec's ``scale_up``).
    ``nics`` are the GPUs' scale-up ports, in ``gpus`` order.
    """

    name: str  # su{d}, also the name of its switch
    index: int
    servers: tuple[str, ...]
    gpus: tuple[str, ...]
    rate_bps: int
    hop_latency_ns: int
    nics: tuple[ScaleUpNic, ...] = ()


@dataclass
class Topology:
    """A built fabric. Look things up with :meth:`gpu` and :meth:`switch`."""

    spec: TopologySpec
    servers: tuple[Server, ...]
    gpus: tuple[Gpu, ...]
    switches: tuple[Switch, ...]
    links: tuple[Link, ...]
    graph: nx.Graph = field(repr=False)
    domains: tuple[ScaleUpDomain, ...] = ()
    nics: tuple[Gpu, ...] = ()  # NICs that are not a GPU's (front-end, storage; Gpu's docstring)
    others: tuple[Server, ...] = ()  # storage nodes and clients
    _gpu_by_name: dict[str, Gpu] = field(init=False, repr=False)
    _switch_by_name: dict[str, Switch] = field(init=False, repr=False)
    _host_by_name: dict[str, Server] = field(init=False, repr=False)
    _domain_by_gpu: dict[str, ScaleUpDomain] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._gpu_by_name = {gpu.name: gpu for gpu in self.gpus + self.nics}
        self._host_by_name = {host.name: host for host in self.hosts}
        self._switch_by_name = {switch.name: switch for switch in self.switches}
        self._domain_by_gpu = {gpu: domain for domain in self.domains for gpu in domain.gpus}

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def params(self) -> dict[str, Any]:
        """The parameters as a topology file writes them."""
        return self.spec.to_dict()

    @property
    def rails(self) -> int:
        """Rails (planes) the fabric separates NICs into: 1 without rails."""
        return self.spec.gpus_per_server if self.kind == "rail-optimized" else 1

    @property
    def leaves(self) -> tuple[Switch, ...]:
        """Switches hosts plug into: leaves, ToRs or fat-tree edge switches."""
        return tuple(s for s in self.switches if s.role in LEAF_ROLES)

    @property
    def hosts(self) -> tuple[Server, ...]:
        """Every host: the GPU servers, then storage nodes and clients."""
        return self.servers + self.others

    def host(self, name: str) -> Server:
        found = self._host_by_name.get(name)
        if found is None:
            raise TopologyError(f"unknown host {name!r} in topology {self.name}")
        return found

    def gpu(self, name: str) -> Gpu:
        """The GPU called ``srv{s}/gpu{r}``, or another NIC (:attr:`nics`) by
        name; a one-line error names the valid range."""
        found = self._gpu_by_name.get(name)
        if found is None:
            others = (f"; other NICs are {self.nics[0].name} .. {self.nics[-1].name}"
                      if self.nics else "")
            raise TopologyError(
                f"unknown GPU {name!r} in topology {self.name}; use srvS/gpuR with S in "
                f"0..{len(self.servers) - 1} and R in 0..{self.spec.gpus_per_server - 1} "
                f"(e.g. srv0/gpu0){others}"
            )
        return found

    def switch(self, name: str) -> Switch:
        found = self._switch_by_name.get(name)
        if found is None:
            raise TopologyError(f"unknown switch {name!r} in topology {self.name}")
        return found

    def domain_of(self, gpu: str) -> ScaleUpDomain | None:
        """The scale-up domain holding ``gpu``; None without a ``scale_up`` key."""
        self.gpu(gpu)
        return self._domain_by_gpu.get(gpu)

    def same_domain(self, a: str, b: str) -> bool:
        """Whether GPUs ``a`` and ``b`` share a scale-up domain (never without ``scale_up``)."""
        domain = self._domain_by_gpu.get(a)
        return domain is not None and domain is self._domain_by_gpu.get(b)

    def scale_up_nic(self, gpu: str) -> ScaleUpNic:
        """``gpu``'s scale-up port; a one-line error when it has none."""
        domain = self.domain_of(gpu)
        if domain is None:
            raise TopologyError(f"{gpu} has no scale-up port: topology {self.name} has no "
                                f"scale_up key")
        return domain.nics[domain.gpus.index(gpu)]

    @property
    def has_scale_up_tier(self) -> bool:
        """Whether the scale-up switches and links are built in (see the module docstring)."""
        return any(switch.role == "scale-up" for switch in self.switches)

    def switches_with_role(self, role: str) -> tuple[Switch, ...]:
        return tuple(s for s in self.switches if s.role == role)


def counts(topology: Topology) -> dict[str, int]:
    """How big the fabric is.

    ``hosts`` = servers (one Mininet host each). ``leaves`` counts the switches
    hosts plug into (leaf, ToR, edge); ``spines`` the top tier (spine, core);
    ``aggs`` the fat-tree aggregation tier (0 elsewhere). ``rails`` is 1 in
    designs without rails. Sites, front-end and storage add their counts
    (``sites``, ``border_switches``, ``dci_links``; ``front_end_switches``,
    ``front_end_nics``, ``storage_switches``, ``storage_nics``,
    ``storage_nodes``, ``clients``) only where the topology has them.
    """
    roles = [switch.role for switch in topology.switches if switch.network == "backend"]
    found = {
        "servers": len(topology.servers),
        "gpus": len(topology.gpus),
        "rails": topology.rails,
        "leaves": sum(role in LEAF_ROLES for role in roles),
        "spines": sum(role in ("spine", "core") for role in roles),
        "aggs": roles.count("agg"),
        "switches": len(topology.switches),
        "hosts": len(topology.hosts),
        "host_links": sum(link.kind == "host" for link in topology.links),
        "fabric_links": sum(link.kind == "fabric" for link in topology.links),
    }
    if topology.spec.sites is not None:
        found["sites"] = topology.spec.sites.count
        found["border_switches"] = roles.count("border")
        found["dci_links"] = sum(link.network == "dci" for link in topology.links)
    for network in ("front-end", "storage"):
        switches = sum(switch.network == network for switch in topology.switches)
        nics = sum(nic.network == network for nic in topology.nics)
        if switches or nics:
            found[f"{network.replace('-', '_')}_switches"] = switches
            found[f"{network.replace('-', '_')}_nics"] = nics
    for role, key in (("storage", "storage_nodes"), ("client", "clients")):
        hosts = sum(host.role == role for host in topology.others)
        if hosts:
            found[key] = hosts
    return found
