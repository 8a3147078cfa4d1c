"""From a scenario's switch settings to the controller's :class:`FabricSettings`.

ECN thresholds written in bytes become packets, because the switches count
queue depth in packets (BMv2's ``enq_qdepth``; the built-in target does the
same): ``ceil(bytes / frame)`` with ``frame`` = MTU + 58 bytes of RoCEv2
headers (:data:`~emulator.scenario.spec.ROCE_FRAME_OVERHEAD_BYTES`).
Rounding up means no packet is marked while the queue holds at most
``kmin`` bytes of full-size frames, and every packet is marked once it holds
about ``kmax`` bytes. PFC thresholds and headrooms are bytes on the switch; a threshold
written in packets is that many full-size frames. The switches' shared
pool and lossy alphas, the largest frame (a WRITE's first, with RETH) and
the peers' response time go to the buffer of the built-in target, which
computes a port's headroom from its link when the scenario gives none.

Overrides are per switch or port: ``to_fabric_settings(scenario)`` gives the
fabric-wide settings with every port that differs in ``ports`` (the
controller's plan programs each port with its own), and
``to_fabric_settings(scenario, switch, port)`` those of one port.
"""

from __future__ import annotations

from emulator.control.fabric_plan import BufferSettings, EcnSettings, FabricSettings, PfcSettings
from emulator.scenario.spec import RETH_BYTES, Scenario


def to_fabric_settings(scenario: Scenario, switch: str | None = None,
                       port: int | None = None) -> FabricSettings:
    """The traffic classes, ECN and PFC of the fabric (or of one switch or
    port); the fabric's carry every port whose overrides change ECN or PFC
    in ``ports``."""
    frame_bytes = scenario.hosts.frame_bytes
    priorities = scenario.switches.priorities
    ecn, pfc = _port(scenario, switch or "", port)
    ports = {}
    if switch is None:
        overridden = {o.switch for o in scenario.switches.overrides if o.ecn or o.pfc}
        for sw in scenario.topology.switches:
            if sw.name in overridden:
                for p in sw.ports:
                    here = _port(scenario, sw.name, p.number)
                    if here != (ecn, pfc):
                        ports[(sw.name, p.number)] = here
    return FabricSettings(
        roce_dscp=priorities.roce_dscp,
        roce_priority=priorities.roce,
        cnp_dscp=priorities.cnp_dscp,
        cnp_priority=priorities.cnp,
        ecn=ecn, pfc=pfc, ports=ports,
        buffer=BufferSettings(pool_bytes=scenario.switches.pool_bytes,
                              alpha=scenario.switches.alpha),
        max_frame_bytes=frame_bytes + RETH_BYTES,
        response_ns=scenario.switches.pfc.response_ns,
    )


def _port(scenario: Scenario, switch: str, port: int | None) -> tuple[EcnSettings, PfcSettings]:
    frame_bytes = scenario.hosts.frame_bytes
    settings = scenario.switches.for_port(switch, port)
    ecn, pfc = settings.ecn, settings.pfc
    return (EcnSettings(enabled=ecn.enabled, kmin_pkts=ecn.kmin.to_packets(frame_bytes),
                        kmax_pkts=ecn.kmax.to_packets(frame_bytes), pmax=ecn.pmax,
                        priorities=ecn.priorities),
            PfcSettings(enabled=pfc.enabled, priorities=pfc.priorities,
                        xoff_bytes=pfc.xoff.to_bytes(frame_bytes),
                        xon_bytes=pfc.xon.to_bytes(frame_bytes), quanta=pfc.quanta,
                        alpha=pfc.alpha,
                        headroom_bytes=(0 if pfc.headroom is None
                                        else pfc.headroom.to_bytes(frame_bytes))))


def buffer_bytes(scenario: Scenario, switch: str, port: int) -> int:
    """The buffer of each priority queue of ``switch``'s port ``port``."""
    return scenario.switches.for_port(switch, port).buffer_bytes
