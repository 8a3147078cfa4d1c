"""From a scenario's flows and queue-pair plan (:mod:`.qps`) to the host NIC
agents' configurations, the same on both clocks (pure; tested in
``tests/unit/test_run_agents.py``):

- :func:`build_agent_configs`: one agent config (the JSON of
  :mod:`emulator.traffic.agent.config`) per server that sends or receives a
  flow or has a GPU named by a PFC storm event. NICs are the server's GPUs
  that take part, storming ones included (name = the GPU's
  interface in the namespace, ``line_rate_bps`` = its host link's rate,
  PFC honoured on the scenario's PFC priorities). A queue pair between two
  GPUs of one scale-up domain, on a topology with the scale-up tier built
  (:func:`~emulator.topology.scale_up_tier`, the virtual clock), runs
  between their scale-up ports instead (``srv{s}-eth{G+r}``, the scale-up
  address and rate); on a live fabric (domains, no tier built: one server a
  domain) those ports are NICs of the agent's in-process scale-up switch
  (``scale_up_hop_s``, :mod:`emulator.traffic.agent.scale_up`). Sized flows without a
  ``stop_flow`` event are posted by the agent itself: one message per QP at
  ``at_s`` = the flow's start, counted from the common ``start_at_unix``.
  *Fed* flows (``size: unlimited``, or named by a ``stop_flow`` event) have
  no message in the config: the runner posts them chunk by chunk over the
  control channel and stops posting at the stop event (see :class:`~.feeder.Feeder`).
- DCQCN: on/off from ``hosts.dcqcn.enabled``. When every other value is the
  :class:`~emulator.scenario.spec.DcqcnSpec` default the agent's own
  (time-scaled) defaults are kept; otherwise all values are given
  explicitly and unscaled (``time_scale`` 1, ``reference_rate_bps`` = the
  NIC's line rate), see :func:`dcqcn_params`.

A flow's ``rate`` cap is shared by its QPs (``max_rate_bps`` = rate /
qps each). ``op: read`` is carried as a WRITE from ``src`` (same bytes
in the same direction; the READ request packet is not emulated) and the
flow's result says so (``op_emulated``).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Sequence

from emulator.run.qps import QpPlan, plan_qps
from emulator.scenario.errors import ScenarioError
from emulator.scenario.spec import RETH_BYTES, DcqcnSpec, FlowSpec, Scenario, stripes
from emulator.targets.builtin.mmu import auto_shared_bytes, headroom_bytes
from emulator.topology import Topology

if TYPE_CHECKING:
    from emulator.scenario.collectives import Op
    from emulator.scenario.jobs_plan import Work

# Rate samples kept per QP: the runner polls full stats for its progress bar.
MAX_RATE_SAMPLES = 2000
# The agent's own minimum retransmission timeout (TransportParams).
MIN_TIMEOUT_FLOOR_MS = 20.0
# ... and its timeout before any RTT sample (TransportParams.timeout_ms).
INITIAL_TIMEOUT_MS = 200.0
# The agent's own ceiling of the retransmission timeout (TransportParams).
MAX_TIMEOUT_MS = 5000.0


def host_rate_bps(topology: Topology, gpu: str) -> int:
    """The rate of the host link of ``gpu``'s (backend) NIC."""
    for link in topology.links:
        if link.kind == "host" and link.gpu == gpu and link.network != "scale-up":
            return link.rate_bps
    raise ScenarioError(f"topology {topology.name}: no host link for {gpu}")


def dcqcn_params(spec: DcqcnSpec, line_rate_bps: float,
                 default_time_scale: float | None = None) -> dict[str, Any]:
    """The agent's ``dcqcn`` settings: only ``enabled`` when the scenario keeps
    the defaults (the agent's scaled defaults apply; with
    ``default_time_scale``, that time scale instead of the agent's), else
    every value explicit and unscaled."""
    if {f.name: getattr(spec, f.name) for f in fields(spec) if f.name != "enabled"} == \
            {f.name: getattr(DcqcnSpec(), f.name) for f in fields(spec) if f.name != "enabled"}:
        if default_time_scale is not None:
            return {"enabled": spec.enabled, "time_scale": float(default_time_scale)}
        return {"enabled": spec.enabled}
    return {
        "enabled": spec.enabled,
        "time_scale": 1.0,
        "reference_rate_bps": float(line_rate_bps),
        "g": spec.g,
        "alpha_timer_us": spec.alpha_timer_ns / 1e3,
        "rate_timer_us": spec.timer_ns / 1e3,
        "byte_counter_bytes": float(spec.byte_counter_bytes),
        "fast_recovery_stages": spec.fast_recovery_steps,
        "rate_ai_bps": float(spec.rate_ai_bps),
        "rate_hai_bps": float(spec.rate_hai_bps),
        "min_rate_bps": float(min(spec.min_rate_bps, line_rate_bps)),
        "cnp_interval_us": spec.cnp_interval_ns / 1e3,
        "clamp_target_rate": spec.clamp_target_rate,
    }


def path_switches(topology: Topology) -> int:
    """The most switches a shortest path between two GPUs crosses (3 in a
    leaf-spine, 5 in a fat-tree): what ECMP routes over."""
    neighbours: dict[str, set[str]] = {sw.name: set() for sw in topology.switches}
    for sw in topology.switches:
        for port in sw.ports:
            if port.kind == "fabric":
                neighbours[sw.name].add(port.peer)
    edges = [sw.name for sw in topology.switches if any(p.kind == "host" for p in sw.ports)]
    most = 1
    for first in edges:
        distance = {first: 0}
        frontier = deque([first])
        while frontier:
            here = frontier.popleft()
            for there in neighbours[here]:
                if there not in distance:
                    distance[there] = distance[here] + 1
                    frontier.append(there)
        most = max([most] + [distance[e] + 1 for e in edges if e in distance])
    return most


def largest_queue_drain_s(scenario: Scenario, *, response_ns: int | None = None,
                          lossless: bool = True, lossy: bool = True) -> float:
    """How long the fullest egress queue the switches' buffer lets a class
    build takes to drain at its port's rate, the worst port of the fabric
    (the buffer model of :mod:`emulator.targets.builtin.mmu`):

    - a **lossless** queue has no cap: every other lossless ingress port of
      its switch may hold its XOFF (the whole shared pool when XOFF is
      dynamic) and its headroom there, and all of it within the pool;
    - a **lossy** queue holds at most its static cap (``switches.buffer``)
      and alpha / (1 + alpha) of the shared pool.

    Headrooms are the scenario's, or computed from each link with the peer's
    ``response_ns`` (default the scenario's ``pfc.response``; live runs add
    :data:`~emulator.control.fabric_plan.LIVE_RESPONSE_NS`), as the switches
    size them; an ``auto`` pool is sized as they size it."""
    switches = scenario.switches
    frame_bytes = scenario.hosts.frame_bytes
    response_s = (switches.pfc.response_ns if response_ns is None else response_ns) * 1e-9
    alpha = max(switches.alpha)
    links = {}
    for link in scenario.topology.links:
        links[(link.node_a, link.port_a)] = link
        links[(link.node_b, link.port_b)] = link
    worst_s = 0.0
    for sw in scenario.topology.switches:
        ports = []       # (rate_bps, lossy cap, lossless bytes a group can hold or None)
        reserved = 0
        for port in sw.ports:
            link = links[(sw.name, port.number)]
            settings = switches.for_port(sw.name, port.number)
            pfc = settings.pfc
            held = None
            if pfc.enabled and pfc.priorities:
                headroom = pfc.headroom.to_bytes(frame_bytes) if pfc.headroom is not None \
                    else headroom_bytes(link.rate_bps, link.delay_ns * 1e-9,
                                        frame_bytes + RETH_BYTES, response_s=response_s)
                reserved += headroom * len(pfc.priorities)
                # a dynamic XOFF is at most the shared pool (filled in below)
                held = (None if pfc.alpha else pfc.xoff.to_bytes(frame_bytes), headroom)
            ports.append((link.rate_bps, settings.buffer_bytes, held))
        shared = switches.pool_bytes - reserved if switches.pool_bytes else \
            auto_shared_bytes((rate, cap) for rate, cap, _ in ports)
        pool = shared + reserved
        groups = [(shared if xoff is None else xoff) + headroom
                  for _, _, held in ports if held is not None for xoff, headroom in [held]]
        for rate, cap, held in ports:
            queue = 0.0
            if lossless and groups:
                mine = 0 if held is None else (shared if held[0] is None else held[0]) + held[1]
                queue = min(pool, sum(groups) - mine)
            if lossy:
                queue = max(queue, min(cap or math.inf, alpha / (1 + alpha) * shared))
            worst_s = max(worst_s, queue * 8 / rate)
    return worst_s


def min_timeout_ms(scenario: Scenario, flows: Sequence[FlowSpec] | None = None, *,
                   response_ns: int | None = None) -> float:
    """The agents' lowest retransmission timeout: long enough that a packet
    and its ACK, each waiting behind a full queue at every switch of the
    longest path, never make a sender time out (go-back-N on a spurious
    timeout resends a window that was only waiting, and a PFC pause can
    hold a lossless queue full for its whole drain): twice
    :func:`path_switches` × :func:`largest_queue_drain_s` (of the classes
    ``flows`` use, lossless and lossy; all of them without ``flows``) plus
    a round trip over that path, and never under
    :data:`MIN_TIMEOUT_FLOOR_MS`. The agents also start with it before
    their first RTT sample when it is above their :data:`INITIAL_TIMEOUT_MS`
    (a time-scaled scenario's emulated RTTs can be far longer than that)."""
    pfc = scenario.switches.pfc
    lossless_prios = set(pfc.priorities) if pfc.enabled else set()
    lossless = lossy = flows is None
    for flow in flows or ():
        if flow.priority in lossless_prios:
            lossless = True
        else:
            lossy = True
    hops = path_switches(scenario.topology)
    drain_s = largest_queue_drain_s(scenario, response_ns=response_ns, lossless=lossless,
                                    lossy=lossy)
    delay_ns = max(link.delay_ns for link in scenario.topology.links)
    return round(max(MIN_TIMEOUT_FLOOR_MS,
                     2 * hops * drain_s * 1e3 + 2 * (hops + 1) * delay_ns / 1e6), 3)


def build_agent_configs(scenario: Scenario, flows: Sequence[FlowSpec],
                        start_at_unix: float | None = None,
                        qps: Sequence[QpPlan] | None = None,
                        graph: Sequence[Op] = (), *, jobs: Sequence[Work] = (),
                        dcqcn_time_scale: float | None = None,
                        pfc_response_ns: int | None = None) -> dict[str, dict[str, Any]]:
    """Server name -> agent JSON config (see the module docstring). Flows
    that carry ``graph`` ops (collectives) get those messages, with their
    dependencies, instead of one message of their size. ``dcqcn_time_scale``
    replaces the agent's default DCQCN time scale when the scenario keeps
    the DCQCN defaults (the virtual-time target passes 1: the paper's
    timers as they are). ``pfc_response_ns`` is the peers' response time the
    switches' headrooms allow for, when not the scenario's (a live run's):
    the retransmission floor (:func:`min_timeout_ms`) covers those bytes."""
    topo = scenario.topology
    plans = list(qps) if qps is not None else plan_qps(scenario, flows)
    ops = {f.id: ("write" if f.op == "read" else f.op) for f in flows}
    pfc = scenario.switches.pfc
    pfc_prios = list(pfc.priorities) if pfc.enabled else []
    mtu = scenario.hosts.mtu_bytes
    prio = scenario.switches.priorities
    configs: dict[str, dict[str, Any]] = {}
    nics: dict[str, dict[str, dict[str, Any]]] = {}
    floor_ms = min_timeout_ms(scenario, flows, response_ns=pfc_response_ns)
    tier = topo.has_scale_up_tier
    in_agent = bool(topo.domains) and not tier  # live: the agent times the scale-up switch

    def agent(server: str) -> dict[str, Any]:
        if server not in configs:
            configs[server] = {
                "name": server, "nics": [], "qps": [],
                "defaults": {"transport": {
                    "path_mtu_bytes": mtu, "min_timeout_ms": floor_ms,
                    "timeout_ms": max(INITIAL_TIMEOUT_MS, floor_ms),
                    # a slowed fabric's floor may pass the agent's own ceiling
                    "max_timeout_ms": max(MAX_TIMEOUT_MS, 4 * floor_ms)}},
                "workload": {"start_at_unix": start_at_unix, "messages": []},
                "run": {"max_rate_samples": MAX_RATE_SAMPLES},
                "cnp_dscp": prio.cnp_dscp, "cnp_priority": prio.cnp,
            }
            nics[server] = {}
        return configs[server]

    def nic(server: str, gpu_name: str, scale_up: bool = False) -> dict[str, Any]:
        cfg = agent(server)
        port = topo.gpu(gpu_name) if not scale_up else topo.scale_up_nic(gpu_name)
        if port.intf not in nics[server]:
            rate_bps = host_rate_bps(topo, gpu_name) if not scale_up \
                else topo.domain_of(gpu_name).rate_bps  # type: ignore[union-attr]
            entry = {"name": port.intf, "ip": port.ip, "mac": port.mac,
                     "gateway_mac": port.gateway_mac, "line_rate_bps": float(rate_bps),
                     "mtu_bytes": max(1500, mtu + 100), "pfc_priorities": pfc_prios}
            if scale_up and in_agent:
                domain = topo.domain_of(gpu_name)
                entry["scale_up_hop_s"] = domain.hop_latency_ns / 1e9  # type: ignore[union-attr]
            nics[server][port.intf] = entry
            cfg["nics"].append(entry)
        return nics[server][port.intf]

    for event in scenario.events:
        if event.gpu is not None:  # a PFC storm: the GPU's NIC, with or without flows
            nic(topo.gpu(event.gpu).server, event.gpu)
    graph_flows = {op.flow for op in graph} | {w.flow for w in jobs if w.flow}
    for qp in plans:
        # inside a scale-up domain, over its switch when the topology has it built
        inside = (tier or in_agent) and topo.same_domain(qp.src_gpu, qp.dst_gpu)
        src_nic = nic(qp.src_server, qp.src_gpu, inside)
        dst_nic = nic(qp.dst_server, qp.dst_gpu, inside)
        for server, here, there, mine, theirs in (
                (qp.src_server, src_nic, dst_nic, qp.qpn, qp.responder_qpn),
                (qp.dst_server, dst_nic, src_nic, qp.responder_qpn, qp.qpn)):
            configs[server]["qps"].append({
                "qpn": mine, "nic": here["name"], "remote_ip": there["ip"],
                "remote_qpn": theirs, "priority": qp.priority, "dscp": qp.dscp,
                "max_rate_bps": qp.max_rate_bps,
                "dcqcn": dcqcn_params(scenario.hosts.dcqcn, here["line_rate_bps"],
                                      dcqcn_time_scale)})
        if not qp.fed and qp.size_bytes and qp.flow not in graph_flows:
            configs[qp.src_server]["workload"]["messages"].append({
                "qp": qp.qpn, "size_bytes": qp.size_bytes, "op": ops[qp.flow],
                "at_s": qp.start_ns / 1e9})
    stripes_of: dict[str, list[QpPlan]] = {}
    for qp in plans:
        stripes_of.setdefault(qp.flow, []).append(qp)
    for op in graph:
        # an op is one message per stripe of its flow; it waits for every
        # stripe of what it depends on (each stripe QP carries one message per op)
        mine = stripes_of[op.flow]
        here = mine[0].src_server
        after = []
        for flow, count in op.after:
            deps = stripes_of[flow]
            if deps[0].dst_server != here:
                raise ScenarioError(f"{scenario.source}: {op.tag} waits for {flow}, which "
                                    f"arrives at {deps[0].dst_server}, not at {here}")
            after.extend([dep.responder_qpn, count] for dep in deps)
        for qp, size in zip(mine, stripes(op.size_bytes, len(mine))):
            configs[here]["workload"]["messages"].append({
                "qp": qp.qpn, "size_bytes": size, "op": ops[qp.flow],
                "tag": op.tag if qp.stripe == 0 else f"{op.tag}.{qp.stripe}",
                "at_s": op.at_ns / 1e9, "after_rx": after, "delay_s": op.delay_ns / 1e9})
    for gpu in (g for job in scenario.jobs for g in job.gpus):
        # a job's GPU on a server that sends and receives nothing (a colocated serving
        # GPU computes alone): an agent on its NIC, as agent_servers has it
        if topo.gpu(gpu).server not in configs:
            nic(topo.gpu(gpu).server, gpu)
    _job_work(configs, jobs, stripes_of, ops, scenario.source)
    return configs


def agent_servers(scenario: Scenario, qps: Sequence[QpPlan]) -> list[str]:
    """The servers that run an agent: the ends of every QP, the servers of the
    GPUs a PFC storm names and of every job's GPUs (compute alone, as a
    colocated serving GPU's, runs in its server's agent)."""
    topo = scenario.topology
    gpus = {e.gpu for e in scenario.events if e.gpu}
    gpus |= {g for job in scenario.jobs for g in job.gpus}
    return sorted({q.src_server for q in qps} | {q.dst_server for q in qps}
                  | {topo.gpu(g).server for g in gpus})


def _job_work(configs: dict[str, dict[str, Any]], works: Sequence[Work],
              stripes_of: dict[str, list[QpPlan]], ops: dict[str, str], source: str) -> None:
    """Jobs' work-graph entries (:mod:`emulator.scenario.jobs_plan`): compute entries,
    and messages striped over their flow's QPs; ``after`` by index in the agent's list
    (a striped message is done when all its stripes are posted)."""
    index: dict[str, list[int]] = {}
    for work in works:
        if work.server not in configs:  # no agent there (a config built without it)
            continue
        messages = configs[work.server]["workload"]["messages"]
        after = sorted(i for tag in work.after for i in index[tag])
        after_rx = []
        for flow, count in work.after_rx:
            deps = stripes_of[flow]
            if deps[0].dst_server != work.server:
                raise ScenarioError(f"{source}: {work.tag} waits for {flow}, which arrives at "
                                    f"{deps[0].dst_server}, not at {work.server}")
            # the receiving end's QP: apart from the sender's inside one agent (qps.py)
            after_rx.extend([dep.responder_qpn, count] for dep in deps)
        common = {"tag": work.tag, "at_s": work.at_ns / 1e9, "after": after,
                  "after_rx": after_rx}
        if work.op == "compute":
            index[work.tag] = [len(messages)]
            messages.append({**common, "op": "compute", "delay_s": work.duration_ns / 1e9})
            continue
        mine = stripes_of[work.flow]
        index[work.tag] = []
        for qp, size in zip(mine, stripes(work.size_bytes, len(mine))):
            index[work.tag].append(len(messages))
            messages.append({**common, "qp": qp.qpn, "size_bytes": size or 1,
                             "op": ops[qp.flow],
                             "tag": work.tag if qp.stripe == 0 else f"{work.tag}.{qp.stripe}"})
