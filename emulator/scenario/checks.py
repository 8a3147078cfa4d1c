"""Checks across keys of a parsed scenario, each failing as one line.

- Traffic classes: the RoCE and CNP DSCPs differ; with PFC on, the RoCE
  priority is lossless; with ECN and DCQCN on, ECN marks the RoCE priority.
- Every port (the defaults, then each override as it applies): ECN
  ``kmin <= kmax`` and (without PFC) ``kmin`` below the buffer; PFC ``xon <
  xoff`` (lossless queues have no static cap: ``buffer`` is the lossy
  queues'). Packet thresholds count full-size frames (MTU + 58 bytes).
- Buffers: a headroom the file gives holds what is in flight on each
  lossless port's link (:func:`~emulator.targets.builtin.mmu.headroom_bytes`
  of its rate and delay, the largest frame and ``pfc.response``); a pool the
  file gives is larger than the headrooms of each switch.
- Flows (written and generated): ids unique, ``src`` and ``dst`` on
  different servers (GPUs of one server talk over the scale-up domain, not
  the fabric) unless the topology has ``scale_up`` (then a flow inside a
  domain crosses its scale-up switch), starting before the end; at least
  one flow.
- Events: before the end; a link goes down only when up and up only when
  down; a flow is stopped once, at or after its start; a GPU's PFC storm
  starts only when it is not storming and stops only when it is (a storm
  without priorities pauses the scenario's PFC priorities).
- DCQCN's minimum rate is at most the host link rate.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import networkx as nx

from emulator.scenario.apart import apart_groups
from emulator.scenario.errors import KeyPath, ScenarioError, Where
from emulator.scenario.spec import RETH_BYTES, EventSpec, FlowSpec, PortSettings, Scenario
from emulator.targets.builtin.mmu import headroom_bytes
from emulator.scenario.units import Threshold, format_duration, format_size
from emulator.scenario.collectives import plan_collective
from emulator.scenario.jobs_plan import plan_job
from emulator.scenario.workload import expand_generator
from emulator.topology import Topology
from emulator.topology.units import format_rate

Fail = Callable[[str, str], ScenarioError]  # (section.key, message) -> error


def check_scenario(scenario: Scenario, where: Where) -> Scenario:
    """The scenario with its events in time order, or the first problem found."""
    _check_classes(scenario, where)
    _check_ports(scenario, where)
    _check_buffers(scenario, where)
    flows = _check_flows(scenario, where)
    events = _check_events(scenario, flows, where)
    host_rate_bps = scenario.topology.spec.host_link.rate_bps
    dcqcn = scenario.hosts.dcqcn
    if dcqcn.enabled and dcqcn.min_rate_bps > host_rate_bps:
        raise where.error(["hosts", "dcqcn", "min_rate"], (
            f"{format_rate(dcqcn.min_rate_bps)} is above the host link rate "
            f"{format_rate(host_rate_bps)}; the rate floor must not exceed line rate"))
    return replace(scenario, events=events)


def _check_classes(scenario: Scenario, where: Where) -> None:
    switches = scenario.switches
    prio = switches.priorities
    if prio.roce_dscp == prio.cnp_dscp:
        raise where.error(["switches", "priorities", "cnp_dscp"], (
            f"{prio.cnp_dscp} is also roce_dscp; the switches could not tell data from CNPs, "
            f"give them different DSCPs (e.g. 26 and 48)"))
    if switches.pfc.enabled and prio.roce not in switches.pfc.priorities:
        raise where.error(["switches", "pfc", "priorities"], (
            f"{list(switches.pfc.priorities)} leaves the RoCE priority {prio.roce} lossy; add "
            f"{prio.roce} or set switches.priorities.roce to a PFC priority"))
    if (switches.ecn.enabled and scenario.hosts.dcqcn.enabled
            and prio.roce not in switches.ecn.priorities):
        raise where.error(["switches", "ecn", "priorities"], (
            f"{list(switches.ecn.priorities)} does not mark the RoCE priority {prio.roce}, so "
            f"DCQCN would never see a mark; add {prio.roce}"))


def _show(threshold: Threshold, frame_bytes: int) -> str:
    if threshold.unit == "pkts":
        return f"{threshold} (= {format_size(threshold.to_bytes(frame_bytes))})"
    return str(threshold)


def _check_port(port: PortSettings, frame_bytes: int, fail: Fail) -> None:
    ecn, pfc, buffer_bytes = port.ecn, port.pfc, port.buffer_bytes
    if ecn.enabled:
        same_unit = ecn.kmin.unit == ecn.kmax.unit
        if (ecn.kmin.amount > ecn.kmax.amount if same_unit
                else ecn.kmin.to_packets(frame_bytes) > ecn.kmax.to_packets(frame_bytes)):
            raise fail("ecn.kmin", f"kmin {_show(ecn.kmin, frame_bytes)} is above kmax "
                                   f"{_show(ecn.kmax, frame_bytes)}; ECN marks more and more "
                                   f"from kmin up to kmax, so kmin <= kmax")
        if not pfc.enabled and ecn.kmin.to_bytes(frame_bytes) >= buffer_bytes:
            raise fail("ecn.kmin", f"kmin {_show(ecn.kmin, frame_bytes)} is not below the buffer "
                                   f"{format_size(buffer_bytes)}; the queue never gets that "
                                   f"deep, so nothing would be marked")
    if pfc.enabled:
        same_unit = pfc.xon.unit == pfc.xoff.unit
        if (pfc.xon.amount >= pfc.xoff.amount if same_unit
                else pfc.xon.to_bytes(frame_bytes) >= pfc.xoff.to_bytes(frame_bytes)):
            raise fail("pfc.xon", f"xon {_show(pfc.xon, frame_bytes)} is not below xoff "
                                  f"{_show(pfc.xoff, frame_bytes)}; PFC pauses above xoff and "
                                  f"resumes below xon, so xon < xoff")


def _check_ports(scenario: Scenario, where: Where) -> None:
    switches = scenario.switches
    frame_bytes = scenario.hosts.frame_bytes

    def fail_default(key: str, message: str) -> ScenarioError:
        return where.error(["switches", *key.split(".")], message)

    _check_port(switches.for_port(""), frame_bytes, fail_default)
    seen: dict[tuple[str, int | None], int] = {}
    for index, override in enumerate(switches.overrides):
        path: list[str | int] = ["switches", "overrides", index]
        target = (override.switch, override.port)
        if target in seen:
            raise where.error(path, f"overrides {_place(*target)} again (first in "
                                    f"switches.overrides[{seen[target]}]); merge the two")
        seen[target] = index

        def fail_override(key: str, message: str, override=override,
                          path=path) -> ScenarioError:
            section, name = key.split(".")
            given = getattr(override, section)
            if name in given:
                return where.error([*path, section, name], message)
            return where.error(path, f"with this override, "
                                     f"{_place(override.switch, override.port)}: {message}")

        _check_port(switches.for_port(override.switch, override.port), frame_bytes,
                    fail_override)


def _check_buffers(scenario: Scenario, where: Where) -> None:
    """Given headrooms hold their link's in-flight bytes; a given pool holds
    the headrooms (see the module docstring)."""
    switches = scenario.switches
    frame_bytes = scenario.hosts.frame_bytes
    response_s = switches.pfc.response_ns * 1e-9
    links = {}
    for link in scenario.topology.links:
        links[(link.node_a, link.port_a)] = link
        links[(link.node_b, link.port_b)] = link
    for sw in scenario.topology.switches:
        reserved = 0
        for port in sw.ports:
            pfc = switches.for_port(sw.name, port.number).pfc
            link = links.get((sw.name, port.number))
            if not pfc.enabled or link is None:
                continue
            need = headroom_bytes(link.rate_bps, link.delay_ns * 1e-9, frame_bytes + RETH_BYTES,
                                  response_s=response_s)
            given = None if pfc.headroom is None else pfc.headroom.to_bytes(frame_bytes)
            reserved += (given or need) * len(pfc.priorities)
            if given is not None and given < need:
                path: KeyPath = ["switches", "pfc", "headroom"]
                for index, override in enumerate(switches.overrides):
                    if override.switch == sw.name and override.port in (None, port.number) \
                            and "headroom" in override.pfc:
                        path = ["switches", "overrides", index, "pfc", "headroom"]
                raise where.error(path, (
                    f"{_show(pfc.headroom, frame_bytes)} cannot hold what is in flight on port "
                    f"{sw.name}:{port.number} ({format_rate(link.rate_bps)}, "
                    f"{format_duration(link.delay_ns)}): it needs {need} B = 2 x rate x delay + "
                    f"3 frames of {frame_bytes + RETH_BYTES} B + a pause frame + the response "
                    f"time; raise it or write auto"))
        if switches.pool_bytes and switches.pool_bytes <= reserved:
            dci = any(links[(sw.name, p.number)].network == "dci" for p in sw.ports
                      if (sw.name, p.number) in links
                      and switches.for_port(sw.name, p.number).pfc.enabled)
            raise where.error(["switches", "pool", "size"], (
                f"{format_size(switches.pool_bytes)} does not exceed the {reserved} B of headroom "
                f"the lossless ports of {sw.name} reserve; raise it or write auto"
                + (", or keep the class lossy on the DCI (switches.pfc.dci: lossy)"
                   if dci else "")))


def _place(switch: str, port: int | None) -> str:
    return f"switch {switch}" if port is None else f"port {switch}:{port}"


def _fabric_of(topology: Topology) -> dict[str, int]:
    """NIC name -> the number of the fabric (switches joined by links) it is
    plugged into; empty when every NIC is a GPU's (one fabric)."""
    if not topology.nics:
        return {}
    switches = topology.graph.subgraph(s.name for s in topology.switches)
    fabric = {name: n for n, part in enumerate(nx.connected_components(switches))
              for name in part}
    return {nic.name: fabric[nic.switch] for nic in topology.gpus + topology.nics}


def _check_flow(flow: FlowSpec, scenario: Scenario, where: Where, path: KeyPath,
                server_of: dict[str, str], start_path: KeyPath | None = None,
                fabric_of: dict[str, int] | None = None) -> None:
    if flow.src == flow.dst:
        raise where.error(path, f"flow {flow.id} goes from {flow.src} to itself; "
                                f"give a dst on another server")
    if server_of[flow.src] == server_of[flow.dst] \
            and not scenario.topology.same_domain(flow.src, flow.dst):
        raise where.error(path, (
            f"{flow.src} and {flow.dst} are both on server {server_of[flow.src]}: GPUs of one "
            f"server talk over the scale-up domain, not the fabric; pick GPUs of different "
            f"servers"))
    if fabric_of and fabric_of[flow.src] != fabric_of[flow.dst]:
        networks = [scenario.topology.gpu(name).network for name in (flow.src, flow.dst)]
        raise where.error(path, (
            f"flow {flow.id}: {flow.src} ({networks[0]}) and {flow.dst} ({networks[1]}) are on "
            f"fabrics with no link between them; pick NICs of one network (a server's "
            f"srvS/feN or srvS/stN NICs reach the front-end and storage)"))
    if flow.start_ns >= scenario.duration_ns:
        raise where.error(start_path or path, (
            f"flow {flow.id} starts at {format_duration(flow.start_ns)}, not before the end at "
            f"{format_duration(scenario.duration_ns)}; start it earlier or lengthen duration"))


def _check_flows(scenario: Scenario, where: Where) -> dict[str, FlowSpec]:
    """Every flow by id, checked."""
    topology = scenario.topology
    server_of = {gpu.name: gpu.server for gpu in topology.gpus + topology.nics}
    apart = apart_groups(topology, scenario.target)
    fabric_of = _fabric_of(topology)
    by_id: dict[str, FlowSpec] = {}
    origin: dict[str, str] = {}
    for index, flow in enumerate(scenario.flows):
        path = ["workload", "flows", index]
        if flow.id in by_id:
            raise where.error([*path, "id"], f"{flow.id!r} is also the id of {origin[flow.id]}; "
                                             f"flow ids must be unique")
        _check_flow(flow, scenario, where, path, server_of, fabric_of=fabric_of)
        by_id[flow.id] = flow
        origin[flow.id] = f"workload.flows[{index}]"
    # generators and collectives make flows: their ids are unique in their
    # section and the flows they make join the others
    makers = (("generators", scenario.generators,
               lambda g: expand_generator(g, scenario.seed, apart),
               lambda g, path: _pair_path(g.kind, path)),
              ("collectives", scenario.collectives,
               lambda c: plan_collective(c, scenario.topology, scenario.seed).flows,
               lambda c, path: path),
              ("jobs", scenario.jobs, lambda j: plan_job(j, scenario.topology, scenario.target).flows,
               lambda j, path: path))
    for section, items, make, flow_path in makers:
        kind = section[:-1]
        ids: dict[str, int] = {}
        for index, item in enumerate(items):
            path = ["workload", section, index]
            if item.id in ids:
                raise where.error([*path, "id"], (
                    f"{item.id!r} is also the id of workload.{section}[{ids[item.id]}]; "
                    f"{kind} ids must be unique"))
            ids[item.id] = index
            try:
                made = make(item)
            except ValueError as exc:
                raise where.error(path, str(exc)) from None
            for flow in made:
                if flow.id in by_id:
                    raise where.error([*path, "id"] if "id" in _given(where, path) else path, (
                        f"makes flow {flow.id!r}, which is also the id of {origin[flow.id]}; "
                        f"give this {kind} another id"))
                _check_flow(flow, scenario, where, flow_path(item, path), server_of, path,
                            fabric_of=fabric_of)
                by_id[flow.id] = flow
                origin[flow.id] = f"workload.{section}[{index}]"
    # a colocated serving job computes alone (its KV caches stay on their GPUs)
    if not by_id and not any(j.serving is not None and j.serving.colocated
                             for j in scenario.jobs):
        raise where.error(["workload"], "makes no flows; give flows, generators or collectives "
                                        "(or jobs whose GPUs span servers)")
    return by_id


def _given(where: Where, path: KeyPath) -> set[str]:
    """Keys written under ``path``, from the line map (empty without one)."""
    prefix = tuple(str(part) for part in path)
    return {key[len(prefix)] for key in where.lines
            if len(key) == len(prefix) + 1 and key[:len(prefix)] == prefix}


def _pair_path(kind: str, path: list[str | int]) -> list[str | int]:
    return {"incast": [*path, "senders"], "pairs": [*path, "pairs"]}.get(kind, path)


def _check_events(scenario: Scenario, flows: dict[str, FlowSpec],
                  where: Where) -> tuple[EventSpec, ...]:
    """The events in time order (file order among equal times)."""
    order = sorted(range(len(scenario.events)), key=lambda i: scenario.events[i].at_ns)
    down: dict[frozenset[str], int] = {}
    stopped: dict[str, int] = {}
    storming: dict[str, int] = {}
    ordered: list[EventSpec] = []
    end = format_duration(scenario.duration_ns)
    for index in order:
        event = scenario.events[index]
        path: list[str | int] = ["events", index]
        at = format_duration(event.at_ns)
        if event.at_ns >= scenario.duration_ns:
            raise where.error([*path, "at"], f"{at} is not before the end at {end}; "
                                             f"move the event earlier or lengthen duration")
        if event.link is not None:
            link = frozenset(event.link)
            ends = f"[{event.link[0]}, {event.link[1]}]"
            if event.kind == "link_down" and link in down:
                raise where.error(path, f"link {ends} is already down at {at} (events"
                                        f"[{down[link]}]); bring it up first")
            if event.kind == "link_up" and link not in down:
                raise where.error(path, f"link {ends} is up at {at}; a link_up needs an "
                                        f"earlier link_down of the same link")
            if event.kind == "link_down":
                down[link] = index
            else:
                del down[link]
            ordered.append(event)
            continue
        if event.gpu is not None:
            if event.kind == "pfc_storm_start":
                if event.gpu in storming:
                    raise where.error(path, f"{event.gpu} is already storming at {at} (events"
                                            f"[{storming[event.gpu]}]); stop the storm first")
                storming[event.gpu] = index
                if not event.priorities:
                    event = replace(event, priorities=scenario.switches.pfc.priorities)
            else:
                if event.gpu not in storming:
                    raise where.error(path, f"{event.gpu} is not storming at {at}; a "
                                            f"pfc_storm_stop needs an earlier pfc_storm_start "
                                            f"of the same GPU")
                del storming[event.gpu]
            ordered.append(event)
            continue
        flow = flows.get(event.flow or "")
        if flow is None:
            raise where.error([*path, "flow"], f"no flow {event.flow!r}; flows are "
                                               f"{_some(list(flows))}")
        if event.at_ns < flow.start_ns:
            raise where.error([*path, "at"], f"{at} is before flow {flow.id} starts "
                                             f"({format_duration(flow.start_ns)})")
        if flow.id in stopped:
            raise where.error(path, f"flow {flow.id} is already stopped by "
                                    f"events[{stopped[flow.id]}]")
        stopped[flow.id] = index
        ordered.append(event)
    return tuple(ordered)


def _some(names: list[str]) -> str:
    return ", ".join(names) if len(names) <= 8 else ", ".join(names[:6]) + ", ..."

