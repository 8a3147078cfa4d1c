"""What the network layer will configure, computed from the topology alone.

Pure functions, no root: :func:`host_plan` gives, per server, the NICs
(name, MAC, address, MTU), the static neighbours, the policy rules and the
routes; :func:`switch_port_plan` gives each switch port's interface and
settings (rate and delay of its link, a buffer size). :mod:`.netlink`
applies a host plan; tests check both plans as data.

Host configuration (one Mininet host per server, NIC ``r`` is
``srv{s}-eth{r}``):

- **Addresses** are added with ``noprefixroute``: no on-link route, so a
  NIC never ARPs for a peer; every frame goes to its leaf's gateway (the
  switches route, and do not answer ARP).
- **Neighbours**: on each NIC, a permanent entry gateway IP → gateway MAC
  (the MAC of the leaf port the NIC is plugged into).
- **Source routing**: for NIC ``r``, rule ``from <ip_r> lookup <100+r>``
  (priority ``1000+r``) and, in table ``100+r``, ``default via <gw_r> dev
  eth_r onlink``: a socket bound to a GPU's address leaves through that
  GPU's NIC.
- **Main table** (unbound sockets): each NIC's own prefix via its gateway
  (the first NIC wins when several share a prefix, as in a plain
  leaf-spine) and ``default via`` NIC 0's gateway.
"""

from __future__ import annotations

import ipaddress
from dataclasses import asdict, dataclass
from typing import Any

from emulator.network.errors import NetworkError
from emulator.network.naming import switch_ifalias, switch_ifname
from emulator.topology import Link, Topology

MAIN_TABLE = 254
TABLE_BASE = 100
RULE_PRIORITY_BASE = 1000
DEFAULT_MTU = 1500
DEFAULT_ROUTE = "0.0.0.0/0"


@dataclass(frozen=True)
class NicPlan:
    ifname: str  # srv{s}-eth{r}
    gpu: str
    mac: str
    ip: str
    prefix_len: int
    mtu: int


@dataclass(frozen=True)
class NeighbourPlan:
    ifname: str
    ip: str
    mac: str


@dataclass(frozen=True)
class RulePlan:
    src: str  # a /32 source address
    table: int
    priority: int


@dataclass(frozen=True)
class RoutePlan:
    dst: str  # CIDR; DEFAULT_ROUTE for the default route
    gateway: str
    ifname: str
    table: int  # MAIN_TABLE or TABLE_BASE + NIC index


@dataclass(frozen=True)
class HostPlan:
    server: str
    nics: tuple[NicPlan, ...]
    neighbours: tuple[NeighbourPlan, ...]
    rules: tuple[RulePlan, ...]
    routes: tuple[RoutePlan, ...]

    def nic(self, ifname: str) -> NicPlan:
        for nic in self.nics:
            if nic.ifname == ifname:
                return nic
        raise NetworkError(f"server {self.server} has no NIC {ifname!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def host_plan(topology: Topology, server: str, mtu: int = DEFAULT_MTU) -> HostPlan:
    """The configuration of one server's host; see the module docstring."""
    # GPUs' NICs, then front-end and storage NICs (storage nodes and clients have only those)
    gpus = sorted((g for g in topology.gpus + topology.nics if g.server == server),
                  key=lambda g: g.index)
    if not gpus:
        known = ", ".join(s.name for s in topology.hosts)
        raise NetworkError(f"no server {server!r} in topology {topology.name} (servers: {known})")
    nics, neighbours, rules, routes = [], [], [], []
    main_prefixes: set[str] = set()
    for gpu in gpus:
        nics.append(NicPlan(gpu.intf, gpu.name, gpu.mac, gpu.ip, gpu.prefix_len, mtu))
        neighbours.append(NeighbourPlan(gpu.intf, gpu.gateway_ip, gpu.gateway_mac))
        table = TABLE_BASE + gpu.index
        rules.append(RulePlan(gpu.ip, table, RULE_PRIORITY_BASE + gpu.index))
        routes.append(RoutePlan(DEFAULT_ROUTE, gpu.gateway_ip, gpu.intf, table))
        prefix = str(ipaddress.ip_interface(f"{gpu.ip}/{gpu.prefix_len}").network)
        if prefix not in main_prefixes:
            main_prefixes.add(prefix)
            routes.append(RoutePlan(prefix, gpu.gateway_ip, gpu.intf, MAIN_TABLE))
    first = gpus[0]
    routes.append(RoutePlan(DEFAULT_ROUTE, first.gateway_ip, first.intf, MAIN_TABLE))
    return HostPlan(server, tuple(nics), tuple(neighbours), tuple(rules), tuple(routes))


def host_plans(topology: Topology, mtu: int = DEFAULT_MTU) -> dict[str, HostPlan]:
    return {s.name: host_plan(topology, s.name, mtu) for s in topology.hosts}


@dataclass(frozen=True)
class PortPlan:
    """One switch port: its interface in the root namespace and the settings
    the switch target realises (the link's rate and delay, a queue buffer)."""

    switch: str
    port: int
    ifname: str  # afx<run>s<index>p<port>
    alias: str  # aifabric:<run>:<topology interface name>
    mac: str
    peer: str  # GPU name or switch name
    peer_port: int
    kind: str  # host | fabric
    rate_bps: int
    delay_us: float
    buffer_bytes: int


def _links_by_end(topology: Topology) -> dict[tuple[str, int], Link]:
    ends: dict[tuple[str, int], Link] = {}
    for link in topology.links:
        ends[(link.node_a, link.port_a)] = link
        ends[(link.node_b, link.port_b)] = link
    return ends


def switch_port_plan(topology: Topology, run_id: str,
                     buffer_bytes: int) -> dict[str, tuple[PortPlan, ...]]:
    """Every switch's ports, in port order."""
    ends = _links_by_end(topology)
    plans: dict[str, tuple[PortPlan, ...]] = {}
    for switch in topology.switches:
        ports = []
        for port in switch.ports:
            link = ends.get((switch.name, port.number))
            if link is None:
                raise NetworkError(f"switch {switch.name} port {port.number}: no link in "
                                   f"topology {topology.name}")
            ports.append(PortPlan(
                switch=switch.name, port=port.number,
                ifname=switch_ifname(run_id, switch.index, port.number),
                alias=switch_ifalias(run_id, port.intf), mac=port.mac, peer=port.peer,
                peer_port=port.peer_port, kind=port.kind, rate_bps=link.rate_bps,
                delay_us=link.delay_ns / 1000.0, buffer_bytes=buffer_bytes))
        plans[switch.name] = tuple(ports)
    return plans
