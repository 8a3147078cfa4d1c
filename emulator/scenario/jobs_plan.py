"""A job's graph on every GPU to flows and the NIC agents' work: :func:`plan_job`.

Every node of the job's world graph (:meth:`~.jobs_spec.JobSpec.world`)
becomes entries of its server's work graph
(:mod:`emulator.traffic.agent.workgraph`), all waiting for what the node
waits for (the node before it on its stream and its dependencies) by
``after`` (an entry of the same agent done) or ``after_rx`` (the n-th
message of a flow arrived here):

- **compute**: one compute entry of the node's duration (not before its
  ``release_s``, a request's arrival);
- **transfer** (PP activations, a KV cache: a send to another GPU): a message
  on the flow ``{job}/{kind}/r{a}-r{b}`` (not before its ``release_s``), and at
  the receiver a zero-length compute entry that waits for its arrival (what
  the receiver does next waits for that); a KV cache offloaded to storage or
  fetched from it (kinds ``kv-offload``, ``kv-fetch``) goes between the GPU's
  storage NIC (:func:`~.storage_traffic.storage_nic`: over the storage network
  where the topology has one) and a storage node's NIC, the job's ranks after
  its GPUs (:attr:`~.jobs_spec.JobSpec.storage`);
  to a GPU of the same server: one zero-length entry (the scale-up domain
  is taken as instantaneous, as for collectives) unless the topology has a
  scale-up tier (``scale_up`` key: on sim; live with domains of one server,
  the switch timed inside the agent): then it is a message like any other,
  over the domain's scale-up switch;
- **collective** (every member of an instance at once): per member a
  *join* entry (zero length, after what the member waits for) and a *done*
  entry (zero length, once the member has all its data); between them the
  messages of the algorithm, as :mod:`emulator.scenario.collectives` sends
  them: all-reduce (TP, DP) as a ring, reduce-scatter then all-gather, 2(n-1)
  steps of size/n, each step's send after the previous step's data arrived;
  all-to-all (EP) size/n to every other member at once. Hops inside a
  server make no message (whoever waits for them waits for what the sender
  had). A TP group inside one server is thus a barrier of its GPUs; with a
  scale-up tier (sim, or live) its hops are messages over the scale-up switch, at
  its rate (the groups of :func:`~emulator.scenario.apart.apart_groups`).

Flows are per (kind, sender rank, receiver rank); a flow's messages are
posted in the order planned (a QP's send queue is FIFO), which is a
topological order of the graph, so the k-th message planned on a flow is
the k-th its receiver gets.

:attr:`JobPlan.spans` says where each node's start and end are read in the
agents' records: ``("ready", tag)`` / ``("posted", tag)`` of a work-graph
entry.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from emulator.scenario.apart import apart_groups
from emulator.scenario.jobs_graph import Node, joins, predecessors
from emulator.scenario.jobs_spec import JobSpec
from emulator.scenario.spec import FlowSpec
from emulator.scenario.storage_traffic import storage_nic
from emulator.topology import Topology

STORAGE_KINDS = ("kv-offload", "kv-fetch")  # a job's transfers to and from storage

Dep = tuple[str, int]  # (flow id, messages of it arrived)
Marker = tuple[str, str] | tuple[str, str, int]  # ("local", tag) | ("rx", flow, n)
Ref = tuple[str, str]  # ("ready" | "posted", tag)


@dataclass(frozen=True)
class Work:
    """One entry of a server's work graph: ``op`` compute or write (a message)."""

    tag: str
    server: str
    op: str
    flow: str = ""
    size_bytes: int = 0
    duration_ns: int = 0
    after: tuple[str, ...] = ()
    after_rx: tuple[Dep, ...] = ()
    at_ns: int = 0


@dataclass(frozen=True)
class JobPlan:
    """What one job runs: its graph, flows and work, and where to read its times."""

    spec: JobSpec
    nodes: tuple[Node, ...]
    flows: tuple[FlowSpec, ...]
    works: tuple[Work, ...]
    spans: dict[str, tuple[Ref, Ref]] = field(repr=False)
    node_flows: dict[str, tuple[str, ...]] = field(repr=False)


class _Planner:
    def __init__(self, spec: JobSpec, topology: Topology, target: str) -> None:
        self.spec = spec
        self.topology = topology
        # whose agent runs a rank: the GPUs', then the storage nodes'
        self.server = [topology.gpu(name).server for name in spec.gpus + spec.storage]
        apart = apart_groups(topology, target)
        # ranks of one group send nothing; a storage node is a group of its own
        self.group = [apart[name] for name in spec.gpus] + [f"storage {name}"
                                                            for name in spec.storage]
        self.works: list[Work] = []
        self.flows: dict[str, FlowSpec] = {}
        self.count: dict[str, int] = {}
        self.bytes: dict[str, int] = {}
        self.spans: dict[str, tuple[Ref, Ref]] = {}
        self.node_flows: dict[str, list[str]] = {}

    def tag(self, text: str) -> str:
        return f"{self.spec.id}/{text}"

    def zero(self, tag: str, rank: int, markers: list[Marker]) -> str:
        return self.compute(tag, rank, 0, markers)

    def compute(self, tag: str, rank: int, duration_ns: int, markers: list[Marker],
                release_s: float = 0.0) -> str:
        local, rx = _split(markers)
        self.works.append(Work(tag, self.server[rank], "compute", duration_ns=duration_ns,
                               after=local, after_rx=rx,
                               at_ns=self.spec.start_ns + round(release_s * 1e9)))
        return tag

    def nic(self, rank: int, kind: str) -> str:
        """The NIC rank's messages of ``kind`` leave from or arrive at."""
        gpus = self.spec.gpus
        if rank >= len(gpus):
            return self.spec.storage[rank - len(gpus)]
        return storage_nic(self.topology, gpus[rank]) if kind in STORAGE_KINDS else gpus[rank]

    def send(self, node: str, tag: str, kind: str, a: int, b: int, size: int,
             markers: list[Marker], release_s: float = 0.0) -> Marker:
        """A message from rank a to rank b; what b waits for to have it."""
        flow = f"{self.spec.id}/{kind}/r{a}-r{b}"
        if flow not in self.flows:
            s = self.spec
            self.flows[flow] = FlowSpec(id=flow, src=self.nic(a, kind), dst=self.nic(b, kind),
                                        size_bytes=0,
                                        start_ns=s.start_ns, priority=s.priority, dscp=s.dscp,
                                        qps=s.qps, generator=s.id)
            self.count[flow] = 0
            self.bytes[flow] = 0
        size = max(size, 1)  # a message carries at least a byte
        self.count[flow] += 1
        self.bytes[flow] += size
        local, rx = _split(markers)
        self.works.append(Work(tag, self.server[a], "write", flow, size, after=local,
                               after_rx=rx,
                               at_ns=self.spec.start_ns + round(release_s * 1e9)))
        self.node_flows.setdefault(node, []).append(flow)
        return ("rx", flow, self.count[flow])

    def flow_specs(self) -> tuple[FlowSpec, ...]:
        return tuple(FlowSpec(**{**f.to_dict(), "size_bytes": self.bytes[f.id]})
                     for f in self.flows.values())


def _split(markers: list[Marker]) -> tuple[tuple[str, ...], tuple[Dep, ...]]:
    local = tuple(dict.fromkeys(m[1] for m in markers if m[0] == "local"))
    rx = tuple(dict.fromkeys((m[1], m[2]) for m in markers if m[0] == "rx"))  # type: ignore
    return local, rx


def _topological(nodes: list[Node], preds: dict[str, list[str]]) -> list[str]:
    """Node ids, each after what it waits for, else in list order."""
    index = {n.id: i for i, n in enumerate(nodes)}
    succ: dict[str, list[str]] = {n.id: [] for n in nodes}
    waiting = {}
    for nid, ps in preds.items():
        waiting[nid] = len(set(ps))
        for p in set(ps):
            succ[p].append(nid)
    heap = [index[nid] for nid, w in waiting.items() if not w]
    heapq.heapify(heap)
    order = []
    while heap:
        nid = nodes[heapq.heappop(heap)].id
        order.append(nid)
        for s in succ[nid]:
            waiting[s] -= 1
            if not waiting[s]:
                heapq.heappush(heap, index[s])
    if len(order) != len(nodes):
        raise ValueError("the job's graph has a cycle")
    return order


def plan_job(spec: JobSpec, topology: Topology, target: str = "builtin") -> JobPlan:
    """Flows and work of ``spec`` on ``target`` (see the module docstring); ValueError
    when a node waits for a node of another server that is not a transfer to it."""
    nodes = spec.world()
    by_id = {n.id: n for n in nodes}
    preds = predecessors(nodes)
    sync = joins(nodes, preds)
    order = _topological(nodes, {nid: preds[nid] + sync.get(nid, []) for nid in preds})
    members: dict[str, list[Node]] = {}
    for n in nodes:
        if n.instance:
            members.setdefault(n.instance, []).append(n)
    p = _Planner(spec, topology, target)
    done: dict[str, str] = {}       # node -> tag of its end on its own rank
    received: dict[str, str] = {}   # transfer -> tag of its end at the receiver

    def markers(n: Node) -> list[Marker]:
        out: list[Marker] = []
        here = p.server[n.rank]
        for q in preds[n.id]:
            other = by_id[q]
            if q in received and (other.peer == n.rank or p.server[other.peer] == here):
                out.append(("local", received[q]))  # the data is here (or on this server)
            elif other.rank == n.rank or p.server[other.rank] == here:
                out.append(("local", done[q]))
            else:
                raise ValueError(f"node {n.id} (rank {n.rank}) waits for {q} of rank "
                                 f"{other.rank} on another server, which sends it nothing")
        return out

    for nid in order:
        n = by_id[nid]
        if nid in done:
            continue
        if n.kind == "compute":
            done[nid] = p.compute(p.tag(nid), n.rank, round(n.duration_s * 1e9), markers(n),
                                  n.release_s)
            p.spans[nid] = (("ready", done[nid]), ("posted", done[nid]))
        elif n.instance:
            _collective(p, members[n.instance], markers, done)
        elif n.peer < 0 or p.group[n.peer] == p.group[n.rank]:
            done[nid] = p.zero(p.tag(nid), n.rank, markers(n))
            received[nid] = done[nid]
            p.spans[nid] = (("ready", done[nid]), ("ready", done[nid]))
        else:
            arrived = p.send(nid, p.tag(nid), n.kind, n.rank, n.peer, n.size_bytes, markers(n),
                             n.release_s)
            done[nid] = p.tag(nid)
            received[nid] = p.zero(p.tag(nid) + "/rx", n.peer, [arrived])
            p.spans[nid] = (("posted", done[nid]), ("ready", received[nid]))
    return JobPlan(spec, tuple(nodes), p.flow_specs(), tuple(p.works), p.spans,
                   {k: tuple(dict.fromkeys(v)) for k, v in p.node_flows.items()})


def _collective(p: _Planner, group: list[Node], markers, done: dict[str, str]) -> None:
    """Join entries, the algorithm's messages, done entries of one instance."""
    n = len(group)
    joined = [p.zero(p.tag(m.id) + "/join", m.rank, markers(m)) for m in group]
    mine: list[list[Marker]] = [[("local", j)] for j in joined]
    size = group[0].size_bytes
    kind = group[0].kind
    if n > 1 and kind == "ep":  # all-to-all
        block = size // n
        have = [list(m) for m in mine]
        for i, a in enumerate(group):
            for j, b in enumerate(group):
                if i == j:
                    continue
                if p.group[a.rank] == p.group[b.rank]:
                    have[j] += mine[i]
                else:
                    have[j].append(p.send(b.id, p.tag(f"{a.id}/to{b.rank}"), kind, a.rank,
                                          b.rank, block, mine[i]))
        final = have
    elif n > 1:  # ring all-reduce: reduce-scatter, then all-gather
        block = size // n
        have = [list(m) for m in mine]
        for step in range(2 * (n - 1)):
            nxt: list[list[Marker]] = [list(m) for m in mine]
            for i, a in enumerate(group):
                j = (i + 1) % n
                b = group[j]
                if p.group[a.rank] == p.group[b.rank]:
                    nxt[j] += have[i]
                else:
                    nxt[j].append(p.send(b.id, p.tag(f"{a.id}/s{step}"), kind, a.rank,
                                         b.rank, block, have[i]))
            have = nxt
        final = have
    else:
        final = mine
    for m, got in zip(group, final):
        done[m.id] = p.zero(p.tag(m.id) + "/done", m.rank, got)
        p.spans[m.id] = (("ready", p.tag(m.id) + "/join"), ("ready", done[m.id]))
