"""What each switch of a fabric needs, as plain data in fabric.p4's names.

:func:`plan_fabric` reads a :class:`~emulator.topology.Topology`, its
routing plan and :class:`FabricSettings`, and returns one
:class:`SwitchPlan` per switch: classification entries, routes (a member
per next hop, a group per ECMP set), port MACs, ECN thresholds, PFC
thresholds and the clone sessions that carry pause frames, plus the
settings of the switch's own queues (rate, PFC honouring) that P4Runtime
cannot express.

Nothing here talks to a switch: the controller encodes these with the
switch's P4Info and writes them.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Mapping

from emulator.topology import Topology, routing_plan

# fabric.p4's control-plane names (p4src/include/*.p4).
CLASSIFY = "FabricIngress.classify"
SET_PRIORITY = "FabricIngress.set_priority"
ROUTES = "FabricIngress.routes"
SET_NEXTHOP = "FabricIngress.set_nexthop"
ECMP_PROFILE = "FabricIngress.ecmp_selector"
PFC_INGRESS = "FabricIngress.pfc_ingress"
SET_LOSSLESS = "FabricIngress.set_lossless"
PFC_EGRESS = "FabricEgress.pfc_egress"
SET_RESUME = "FabricEgress.set_resume"
ECN_CONFIG = "FabricEgress.ecn_config"
SET_ECN = "FabricEgress.set_ecn"
PORT_MAC = "FabricEgress.port_mac"
SET_PORT_MAC = "FabricEgress.set_port_mac"
PFC_SESSION_BASE = 1000  # p4src/include/headers.p4
CPU_PORT = 255
BTH_OPCODE_CNP = 0x81
PAUSE_QUANTUM_BITS = 512  # 802.1Qbb: one quantum is 512 bit times
MAX_QUANTA = 0xFFFF


@dataclass(frozen=True)
class EcnSettings:
    """RED-like marking: none below ``kmin_pkts``, probability rising
    linearly to ``pmax`` at ``kmax_pkts``, every packet above."""

    enabled: bool = True
    kmin_pkts: int = 5
    kmax_pkts: int = 40
    pmax: float = 0.2
    priorities: tuple[int, ...] = (3,)

    @property
    def slope_q16(self) -> int:
        """Marking probability per packet of depth above kmin, ×65536."""
        span = max(self.kmax_pkts - self.kmin_pkts, 1)
        return max(round(self.pmax * 65536 / span), 0)


@dataclass(frozen=True)
class PfcSettings:
    """PFC on the lossless priorities: pause the upstream port when the
    bytes it holds in this switch's buffer pass ``xoff_bytes``, resume below
    ``xon_bytes``; pause frames carry ``quanta`` and are refreshed after half
    the pause time."""

    enabled: bool = True
    priorities: tuple[int, ...] = (3,)
    xoff_bytes: int = 30_000
    xon_bytes: int = 15_000
    quanta: int = MAX_QUANTA


@dataclass(frozen=True)
class FabricSettings:
    """Traffic classes, ECN and PFC of a fabric."""

    roce_dscp: int = 26
    roce_priority: int = 3
    cnp_dscp: int = 48
    cnp_priority: int = 6
    ecn: EcnSettings = field(default_factory=EcnSettings)
    pfc: PfcSettings = field(default_factory=PfcSettings)
    # (switch, port) -> (ECN, PFC) of that port where they differ from the
    # fabric-wide ones: ECN of traffic leaving it, PFC of traffic arriving on it
    ports: Mapping[tuple[str, int], tuple[EcnSettings, PfcSettings]] = field(
        default_factory=dict)

    def for_port(self, switch: str, port: int) -> tuple[EcnSettings, PfcSettings]:
        return self.ports.get((switch, port), (self.ecn, self.pfc))


@dataclass(frozen=True)
class TableEntry:
    """A table entry in fabric.p4 names. ``match`` maps match field names
    to values (exact: int; lpm: (value, prefix_len); ternary: (value, mask));
    fields left out are wildcards. ``member``/``group`` point into the
    table's action profile instead of ``action``."""

    table: str
    match: tuple[tuple[str, object], ...]
    action: str = ""
    params: tuple[tuple[str, int], ...] = ()
    priority: int = 0
    member: int | None = None
    group: int | None = None


@dataclass(frozen=True)
class ProfileMember:
    profile: str
    member_id: int
    action: str
    params: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ProfileGroup:
    profile: str
    group_id: int
    members: tuple[int, ...]


@dataclass(frozen=True)
class CloneSession:
    session_id: int
    replicas: tuple[tuple[int, int], ...]  # (egress port, instance)


@dataclass(frozen=True)
class PortQueueConfig:
    """Per-port settings outside P4Runtime (the queue-control interface)."""

    port: int
    rate_bps: int
    delay_us: float
    pfc_priorities: tuple[int, ...]


@dataclass
class SwitchPlan:
    name: str
    members: list[ProfileMember] = field(default_factory=list)
    groups: list[ProfileGroup] = field(default_factory=list)
    entries: list[TableEntry] = field(default_factory=list)
    clone_sessions: list[CloneSession] = field(default_factory=list)
    ports: list[PortQueueConfig] = field(default_factory=list)

    def table(self, name: str) -> list[TableEntry]:
        return [e for e in self.entries if e.table == name]


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def pause_time_s(quanta: int, rate_bps: int) -> float:
    return quanta * PAUSE_QUANTUM_BITS / rate_bps


def classification_entries(settings: FabricSettings) -> list[TableEntry]:
    """CNPs (BTH opcode 0x81, or their DSCP) on the CNP priority; RoCE DSCP
    on the lossless RoCE priority."""
    return [
        TableEntry(CLASSIFY, (("hdr.bth.$valid$", (1, 1)), ("hdr.bth.opcode", (BTH_OPCODE_CNP, 0xFF))),
                   SET_PRIORITY, (("priority", settings.cnp_priority),), priority=30),
        TableEntry(CLASSIFY, (("hdr.ipv4.dscp", (settings.cnp_dscp, 0x3F)),),
                   SET_PRIORITY, (("priority", settings.cnp_priority),), priority=20),
        TableEntry(CLASSIFY, (("hdr.ipv4.dscp", (settings.roce_dscp, 0x3F)),),
                   SET_PRIORITY, (("priority", settings.roce_priority),), priority=10),
    ]


def plan_fabric(topology: Topology, settings: FabricSettings | None = None) -> dict[str, SwitchPlan]:
    """One plan per switch name."""
    settings = settings or FabricSettings()
    routes = routing_plan(topology)
    rates = _port_rates(topology)
    plans: dict[str, SwitchPlan] = {}
    for switch in topology.switches:
        plan = SwitchPlan(switch.name)
        plan.entries.extend(classification_entries(settings))
        for port in switch.ports:
            plan.entries.append(TableEntry(PORT_MAC, (("standard_metadata.egress_port", port.number),),
                                           SET_PORT_MAC, (("mac", mac_int(port.mac)),)))
        _routes(plan, routes.get(switch.name, ()), switch)
        for port in switch.ports:
            rate_bps, delay_ns = rates[(switch.name, port.number)]
            ecn, pfc = settings.for_port(switch.name, port.number)
            pfc_prios = pfc.priorities if pfc.enabled else ()
            plan.ports.append(PortQueueConfig(port.number, rate_bps, delay_ns / 1000, pfc_prios))
            plan.clone_sessions.append(CloneSession(PFC_SESSION_BASE + port.number, ((port.number, 0),)))
            if pfc.enabled:
                refresh_us = max(int(pause_time_s(pfc.quanta, rate_bps) * 1e6 / 2), 1)
                for prio in pfc.priorities:
                    key = (("standard_metadata.ingress_port", port.number),
                           ("standard_metadata.priority", prio))
                    plan.entries.append(TableEntry(PFC_INGRESS, key, SET_LOSSLESS, (
                        ("xoff", pfc.xoff_bytes), ("quanta", pfc.quanta),
                        ("refresh", refresh_us))))
                    plan.entries.append(TableEntry(PFC_EGRESS, (
                        ("standard_metadata.ingress_port", port.number), ("meta.pfc_priority", prio)),
                        SET_RESUME, (("xon", pfc.xon_bytes), ("refresh", refresh_us))))
            if ecn.enabled:
                for prio in ecn.priorities:
                    plan.entries.append(TableEntry(ECN_CONFIG, (
                        ("standard_metadata.egress_port", port.number),
                        ("standard_metadata.priority", prio)), SET_ECN, (
                        ("min_pkts", ecn.kmin_pkts), ("max_pkts", ecn.kmax_pkts),
                        ("slope_q16", ecn.slope_q16))))
        plans[switch.name] = plan
    return plans


def _routes(plan: SwitchPlan, routes, switch) -> None:  # type: ignore[no-untyped-def]
    """A member per next hop (port, neighbour MAC), a group per ECMP set."""
    members: dict[tuple[int, str], int] = {}
    groups: dict[tuple[int, ...], int] = {}
    port_macs = {p.number: p.mac for p in switch.ports}
    for route in routes:
        ids = []
        for hop in route.next_hops:
            key = (hop.port, hop.neighbor_mac)
            if key not in members:
                members[key] = len(members) + 1
                plan.members.append(ProfileMember(ECMP_PROFILE, members[key], SET_NEXTHOP, (
                    ("port", hop.port), ("smac", mac_int(port_macs[hop.port])),
                    ("dmac", mac_int(hop.neighbor_mac)))))
            ids.append(members[key])
        net = ipaddress.ip_network(route.prefix)
        match = (("hdr.ipv4.dst_addr", (int(net.network_address), net.prefixlen)),)
        if len(ids) == 1:
            plan.entries.append(TableEntry(ROUTES, match, member=ids[0]))
            continue
        group_key = tuple(sorted(ids))
        if group_key not in groups:
            groups[group_key] = len(groups) + 1
            plan.groups.append(ProfileGroup(ECMP_PROFILE, groups[group_key], group_key))
        plan.entries.append(TableEntry(ROUTES, match, group=groups[group_key]))


def _port_rates(topology: Topology) -> dict[tuple[str, int], tuple[int, int]]:
    rates: dict[tuple[str, int], tuple[int, int]] = {}
    for link in topology.links:
        rates[(link.node_a, link.port_a)] = (link.rate_bps, link.delay_ns)
        rates[(link.node_b, link.port_b)] = (link.rate_bps, link.delay_ns)
    return rates
