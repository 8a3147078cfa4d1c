"""The load a scenario will offer: frames per second at each switch and each
NIC agent, at their busiest, from its flows, generators and collectives.

:func:`offered_load` works on a scenario's own units (written or
emulated: frame rates scale with link rates, so a load at time scale k is
the written one ÷ k). Each flow runs at its line rate (the slower of its
two host links, or its ``rate`` cap) from its start for as long as its
bytes take at that rate (an unlimited flow until its ``stop_flow`` event
or the end); a collective's flows start with the collective and run for
their whole bytes (a ring's steps keep every hop busy at once). A flow is
spread evenly over its equal-cost paths. At every moment the traffic into
each switch port, out of each NIC and into each NIC is capped by that
link's rate, so flows that share a link add up to at most its line rate.
ACKs and CNPs add :data:`ACK_FRAMES_PER_DATA` frames per data frame, the
other way.

A flow between two GPUs of one scale-up domain (live: a domain is one
server, its switch timed inside the server's agent) runs at the slower of
their scale-up rates and loads no fabric switch: its frames are the
agent's, which sends them, passes them through its scale-up switch and
receives them (:data:`SCALE_UP_PASSES` frame operations each), capped per
GPU by the scale-up rate in each direction.

A switch's load is the frames it receives (each costs one pass through
its pipeline); an agent's is the frames its NICs send and receive. The
result keeps, for each process, the peak over time, and the peak of their
sum (frames/s the whole machine must move at its busiest moment).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from emulator.budget.load import Load
from emulator.scenario.spec import Scenario
from emulator.scenario.workload import expand_workload, stopped_flows
from emulator.topology import paths

# ACK every 16 data packets at most (the agent's ack_req_every), CNPs and
# pause frames besides: a tenth more frames than data, the other way.
ACK_FRAMES_PER_DATA = 0.1
# A frame inside a server's scale-up domain costs its agent three frame
# operations: the sending NIC, the in-agent scale-up switch, the receiving NIC.
SCALE_UP_PASSES = 3


@dataclass
class _Flow:
    start_s: float
    end_s: float
    rate_bps: float
    src_nic: str
    dst_nic: str
    # (switch, the node it receives from) -> share of the flow's rate
    ingress: dict[tuple[str, str], float]
    scale_up: bool = False  # between GPUs of one domain, over its scale-up switch


def _link_rates(scenario: Scenario) -> dict[tuple[str, str], float]:
    """(switch, neighbour: a GPU or a switch) -> the rate of their link."""
    rates: dict[tuple[str, str], float] = {}
    for link in scenario.topology.links:
        if link.kind == "host" and link.gpu:
            switch = link.node_b  # node_a is the server
            rates[(switch, link.gpu)] = rates[(link.gpu, switch)] = link.rate_bps
        else:
            rates[(link.node_a, link.node_b)] = rates[(link.node_b, link.node_a)] = link.rate_bps
    return rates


def _host_rate(scenario: Scenario) -> dict[str, float]:
    return {link.gpu: link.rate_bps for link in scenario.topology.links
            if link.kind == "host" and link.gpu}


def _flows(scenario: Scenario) -> list[_Flow]:
    topo = scenario.topology
    host = _host_rate(scenario)
    stops = stopped_flows(scenario)
    end_of_run = scenario.duration_s
    gpus = {gpu.name for gpu in topo.gpus}
    out = []
    for flow in expand_workload(scenario):
        domain = topo.domain_of(flow.src) if flow.src in gpus and flow.dst in gpus \
            and topo.same_domain(flow.src, flow.dst) else None
        line = domain.rate_bps if domain is not None else min(host[flow.src], host[flow.dst])
        rate = min(line, flow.rate_bps or math.inf)
        start = flow.start_ns / 1e9
        if flow.size_bytes is None:
            end = stops.get(flow.id, scenario.duration_ns) / 1e9
        else:
            end = start + flow.size_bytes * 8 / rate
            if flow.id in stops:
                end = min(end, stops[flow.id] / 1e9)
        end = min(end, end_of_run)
        if end <= start:
            continue
        ingress: dict[tuple[str, str], float] = defaultdict(float)
        if domain is None:
            routes = paths(topo, flow.src, flow.dst) or [[]]
            for route in routes:
                previous = flow.src
                for switch in route:
                    ingress[(switch, previous)] += 1.0 / len(routes)
                    previous = switch
        out.append(_Flow(start, end, rate, flow.src, flow.dst, dict(ingress),
                         scale_up=domain is not None))
    return out


def offered_load(scenario: Scenario) -> Load:
    """Peak frames/s per switch and agent (see the module docstring)."""
    topo = scenario.topology
    frame_bits = scenario.hosts.frame_bytes * 8
    link_rate = _link_rates(scenario)
    host = _host_rate(scenario)
    server_of = {gpu.name: gpu.server for gpu in topo.gpus + topo.nics}
    su_rate = {gpu: d.rate_bps for d in topo.domains for gpu in d.gpus}
    flows = _flows(scenario)
    load = Load(frame_bytes=scenario.hosts.frame_bytes)
    times = sorted({f.start_s for f in flows} | {f.end_s for f in flows})
    factor = (1 + ACK_FRAMES_PER_DATA) / frame_bits
    for t0, t1 in zip(times, times[1:]):
        mid = (t0 + t1) / 2
        active = [f for f in flows if f.start_s <= mid < f.end_s]
        if not active:
            continue
        into: dict[tuple[str, str], float] = defaultdict(float)
        nic_tx: dict[str, float] = defaultdict(float)
        nic_rx: dict[str, float] = defaultdict(float)
        su_tx: dict[str, float] = defaultdict(float)
        su_rx: dict[str, float] = defaultdict(float)
        for f in active:
            if f.scale_up:
                su_tx[f.src_nic] += f.rate_bps
                su_rx[f.dst_nic] += f.rate_bps
                continue
            nic_tx[f.src_nic] += f.rate_bps
            nic_rx[f.dst_nic] += f.rate_bps
            for key, share in f.ingress.items():
                into[key] += f.rate_bps * share
        switches: dict[str, float] = defaultdict(float)
        for (switch, neighbour), bps in into.items():
            switches[switch] += min(bps, link_rate.get((switch, neighbour), bps)) * factor
        agents: dict[str, float] = defaultdict(float)
        for nic, bps in nic_tx.items():
            agents[server_of[nic]] += min(bps, host[nic]) * factor
        for nic, bps in nic_rx.items():
            agents[server_of[nic]] += min(bps, host[nic]) * factor
        # scale-up frames: sent, switched and received inside one agent; a
        # server's are what its GPUs can send and receive (each GPU's scale-up
        # rate caps it both ways), whichever is less
        su_sent: dict[str, float] = defaultdict(float)
        su_taken: dict[str, float] = defaultdict(float)
        for gpu, bps in su_tx.items():
            su_sent[server_of[gpu]] += min(bps, su_rate[gpu])
        for gpu, bps in su_rx.items():
            su_taken[server_of[gpu]] += min(bps, su_rate[gpu])
        for server, bps in su_sent.items():
            agents[server] += SCALE_UP_PASSES * min(bps, su_taken[server]) * factor
        for name, pps in switches.items():
            load.switch_pps[name] = max(load.switch_pps.get(name, 0.0), pps)
        for name, pps in agents.items():
            load.agent_pps[name] = max(load.agent_pps.get(name, 0.0), pps)
        total_switch, total_agent = sum(switches.values()), sum(agents.values())
        if total_switch + total_agent > load.peak_switch_pps + load.peak_agent_pps:
            load.peak_switch_pps, load.peak_agent_pps = total_switch, total_agent
            load.peak_at_s = t0
    return load
