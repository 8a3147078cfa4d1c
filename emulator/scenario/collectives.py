"""Collectives to flows and dependent messages: :func:`plan_collective`.

A collective (:class:`~emulator.scenario.spec.CollectiveSpec`) becomes

- **flows**: one per pair of GPUs that exchange data over the fabric
  (``qps`` queue pairs each, default 1: each op is striped over them, as
  NCCL does with several QPs per connection, and has arrived when its last
  stripe has), ids ``{id}/c{channel}/r{rank}`` (ring kinds: rank →
  next rank), ``{id}/{i}-{j}`` (all-to-all), ``{id}/s{stage}`` (pipeline),
  ``{id}/p{i}-d{j}`` (kv-handoff);
- **ops**: the messages on those flows, each with the messages it waits
  for (``after``: (flow id, n) = "the n-th message of that flow has
  arrived here"), posted by the NIC agents' work graph
  (:mod:`emulator.traffic.agent.workgraph`) as the data arrives.

Algorithms (n ranks, size S, c channels, k chunks; a step moves one block):

- ``all-reduce``: ring reduce-scatter then all-gather, 2(n−1) steps; at
  each step every rank sends a block of S/(n·c) bytes (per channel) to the
  next rank, cut into k chunks; chunk j of step s waits for chunk j of
  step s−1 from the previous rank (the data it reduces or forwards).
- ``reduce-scatter``, ``all-gather``: the n−1 steps of either half.
- ``all-to-all``: every rank sends S/n bytes to every other rank at once
  (k chunks), no dependencies.
- ``send-recv`` (nccl-tests' sendrecv): every rank sends S bytes (S/c per
  channel, k chunks) to the next rank of the ring and receives as much from
  the previous one, all at once, no dependencies: one step.
- ``pipeline``: stage i sends each of the m microbatches (S bytes) to
  stage i+1 once it has it from stage i−1, ``compute`` later (stage 0
  makes microbatch j at start + (j+1)·compute). Forward pass only.
- ``kv-handoff``: request r (r = 0..R−1) arrives at start + a_r (a_r:
  Poisson arrivals with mean gap ``interval``, seeded by the scenario seed
  and the id; all at start with interval 0) and its KV cache of S bytes
  goes from prefill GPU r mod P to decode GPU r mod D.

- ``all-reduce`` with ``algorithm: hierarchical`` (NCCL's two-level
  scheme): the ranks fall into groups, one per scale-up domain (per server
  without ``scale_up``), each of the same m ranks in the order listed; g
  groups. (1) a ring reduce-scatter inside every group, m−1 steps of
  S/(m·c); (2) local rank l of every group all-reduces its shard with
  local rank l of the others, a ring of g ranks, 2(g−1) steps of
  S/(m·g·c) (on a rail fabric with a domain per server that ring keeps to
  rail l); (3) a ring all-gather inside every group, m−1 steps of S/(m·c).
  Chunk j of a phase's first step waits for chunk j of the previous
  phase's last step at that rank. Per rank: 2(m−1)/m·S inside the domain,
  2(g−1)/(g·m)·S across domains; 2(g−1)·S over the fabric in all.
  Flows ``{id}/c{c}/rs/r{i}``, ``{id}/c{c}/x/r{i}``, ``{id}/c{c}/ag/r{i}``.

Ranks on one server exchange data over the scale-up domain (NVLink). Without
a ``scale_up`` key it is taken as instantaneous: such a hop makes no flow,
and whoever waits for it waits for what it waited for. With ``scale_up``
every hop inside a domain is a flow between the two GPUs' scale-up ports
(it crosses the domain's scale-up switch on the virtual clock). With
``pxn`` a hop between GPUs on different rails leaves from the sender's
server through the NIC on the receiver's rail (PXN: the data first crosses
NVLink to the GPU on the right rail), so it stays on one rail; with
``scale_up`` that first crossing is a flow ``{flow}/pxn`` of its own, and
the fabric send waits for it.

Metrics (:mod:`emulator.measure.collective_metrics`) use the nccl-tests definitions:
algbw = S / time, busbw = algbw × (2(n−1)/n for all-reduce, (n−1)/n for
all-gather, reduce-scatter and all-to-all, 1 for send-recv and pipeline).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from emulator.scenario.spec import stripes
from emulator.scenario.spec import CollectiveSpec, FlowSpec
from emulator.topology import Topology

Dep = tuple[str, int]  # (flow id, messages of it received)


@dataclass(frozen=True)
class Op:
    """One message of a collective on ``flow``, ``index``-th on that flow."""

    flow: str
    index: int
    size_bytes: int
    step: int
    after: tuple[Dep, ...] = ()
    at_ns: int = 0
    delay_ns: int = 0

    @property
    def tag(self) -> str:
        return f"{self.flow}#{self.index}"


@dataclass(frozen=True)
class CollectivePlan:
    """What one collective sends: flows, their ops in order, and its shape."""

    spec: CollectiveSpec
    flows: tuple[FlowSpec, ...]
    ops: tuple[Op, ...]
    ranks: int
    steps: int
    request_at_ns: tuple[int, ...] = ()  # kv-handoff: when each request arrived
    local_hops: int = 0  # hops inside a server (no flow)
    groups: int = 0  # hierarchical all-reduce: scale-up domains (or servers) taking part
    scale_up_flows: frozenset[str] = frozenset()  # flows inside a scale-up domain


BUSBW_FACTOR = {"all-reduce": lambda n: 2 * (n - 1) / n, "all-gather": lambda n: (n - 1) / n,
                "reduce-scatter": lambda n: (n - 1) / n, "all-to-all": lambda n: (n - 1) / n,
                "send-recv": lambda n: 1.0, "pipeline": lambda n: 1.0}


class _Builder:
    """Flows and ops as they are made, with the scale-up and PXN rules."""

    def __init__(self, spec: CollectiveSpec, topology: Topology) -> None:
        self.spec = spec
        self.topology = topology
        self.scale_up = bool(topology.domains)
        self.gpus = {gpu.name: gpu for gpu in topology.gpus}
        self.rail_gpu = {(gpu.server, gpu.rail): gpu.name for gpu in topology.gpus}
        self.flows: dict[str, FlowSpec] = {}
        self.ops: list[Op] = []
        self.count: dict[str, int] = {}
        self.local_hops = 0
        self.scale_up_flows: set[str] = set()

    def local(self, src: str, dst: str) -> bool:
        """A hop inside a server taken as instantaneous (no ``scale_up`` key)."""
        return not self.scale_up and self.gpus[src].server == self.gpus[dst].server

    def sender(self, src: str, dst: str) -> str:
        """The GPU whose NIC sends ``src``'s data to ``dst`` (PXN: the one on dst's rail)."""
        if self.spec.pxn:
            a, b = self.gpus[src], self.gpus[dst]
            return self.rail_gpu.get((a.server, b.rail), src)
        return src

    def send(self, flow_id: str, src: str, dst: str, size_bytes: int, step: int,
             after: tuple[Dep, ...], at_ns: int = 0, delay_ns: int = 0) -> tuple[Dep, ...]:
        """Send over the fabric or the scale-up domain, or hand over locally;
        returns what a receiver of this data waits for."""
        if self.local(src, dst):
            self.local_hops += 1
            return after
        via = src if self.topology.same_domain(src, dst) else self.sender(src, dst)
        if via != src and self.scale_up:
            # PXN: over the scale-up switch to the GPU on dst's rail first
            after = self._op(f"{flow_id}/pxn", src, via, size_bytes, step, after, at_ns,
                             delay_ns)
            at_ns = delay_ns = 0
        return self._op(flow_id, via, dst, size_bytes, step, after, at_ns, delay_ns)

    def _op(self, flow_id: str, src: str, dst: str, size_bytes: int, step: int,
            after: tuple[Dep, ...], at_ns: int, delay_ns: int) -> tuple[Dep, ...]:
        """One message on flow ``flow_id`` from ``src``'s port to ``dst``."""
        if flow_id not in self.flows:
            spec = self.spec
            self.flows[flow_id] = FlowSpec(
                id=flow_id, src=src, dst=dst, size_bytes=0,
                start_ns=spec.start_ns, priority=spec.priority, dscp=spec.dscp, op=spec.op,
                qps=spec.qps, generator=spec.id)
            self.count[flow_id] = 0
            if self.topology.same_domain(src, dst):
                self.scale_up_flows.add(flow_id)
        index = self.count[flow_id]
        self.count[flow_id] = index + 1
        self.ops.append(Op(flow_id, index, size_bytes, step, after, self.spec.start_ns + at_ns,
                           delay_ns))
        return ((flow_id, index + 1),)

    def flows_with_sizes(self) -> tuple[FlowSpec, ...]:
        total: dict[str, int] = {}
        for op in self.ops:
            total[op.flow] = total.get(op.flow, 0) + op.size_bytes
        out = []
        for flow in self.flows.values():
            out.append(FlowSpec(**{**flow.to_dict(), "size_bytes": total[flow.id]}))
        return tuple(out)


def plan_collective(spec: CollectiveSpec, topology: Topology, seed: int = 0) -> CollectivePlan:
    """Flows and ops of ``spec``; ValueError when it moves nothing over the fabric."""
    b = _Builder(spec, topology)
    requests: tuple[int, ...] = ()
    if spec.rings:
        per_rank = spec.kind == "send-recv"  # each rank sends all of it: no share a rank
        pieces = (1 if per_rank else len(spec.rings[0])) * spec.channels * spec.chunks
        if spec.size_bytes < pieces:
            what = "channels x chunks" if per_rank else "ranks x channels x chunks"
            raise ValueError(f"collective {spec.id!r}: size {spec.size_bytes} B is smaller than "
                             f"its {pieces} pieces ({what})")
    groups = 0
    if spec.kind == "all-reduce" and spec.algorithm == "hierarchical":
        ranks = len(spec.rings[0])
        steps, groups = _hierarchical(b, spec, topology)
    elif spec.kind == "send-recv":
        ranks = len(spec.rings[0])
        steps = 1
        _send_recv(b, spec)
    elif spec.kind in BUSBW_FACTOR and spec.kind not in ("all-to-all", "pipeline"):
        ranks = len(spec.rings[0])
        steps = _ring(b, spec)
    elif spec.kind == "all-to-all":
        ranks = len(spec.rings[0])
        steps = 1
        _all_to_all(b, spec)
    elif spec.kind == "pipeline":
        ranks = len(spec.rings[0])
        steps = ranks - 1
        _pipeline(b, spec)
    else:
        ranks = len(set(spec.prefill) | set(spec.decode))
        requests = _kv_handoff(b, spec, seed)
        steps = spec.requests
    if not b.ops:
        raise ValueError(f"collective {spec.id!r}: every rank is on one server, nothing crosses "
                         "the fabric (ranks of a server talk over the scale-up domain)")
    return CollectivePlan(spec=spec, flows=b.flows_with_sizes(), ops=tuple(b.ops), ranks=ranks,
                          steps=steps, request_at_ns=requests, local_hops=b.local_hops,
                          groups=groups, scale_up_flows=frozenset(b.scale_up_flows))


def ring_steps(kind: str, ranks: int) -> int:
    return 2 * (ranks - 1) if kind == "all-reduce" else ranks - 1


Arrived = list[list[tuple[Dep, ...]]]  # [rank][chunk]: what a rank waits for


def _ring(b: _Builder, spec: CollectiveSpec) -> int:
    n = len(spec.rings[0])
    steps = ring_steps(spec.kind, n)
    block = spec.size_bytes // (n * spec.channels)
    for c, ring in enumerate(spec.rings):
        _ring_steps(b, f"{spec.id}/c{c}", ring, block, spec.chunks, 0, steps,
                    [[()] * spec.chunks for _ in ring])
    return steps


def _ring_steps(b: _Builder, prefix: str, ring: tuple[str, ...], block: int, chunks: int,
                first_step: int, steps: int, arrived: Arrived,
                numbers: Sequence[int] | None = None) -> Arrived:
    """``steps`` ring steps over ``ring``, every rank sending a block of
    ``block`` bytes (``chunks`` chunks) to the next on flow ``{prefix}/r{i}``
    (``i``: the rank's place in ``ring``, or its number in ``numbers``);
    chunk j of a step waits for chunk j of the step before at that rank
    (``arrived`` before the first). Returns what each rank waits for after
    the last step."""
    n = len(ring)
    chunk_sizes = stripes(block, chunks)
    for s in range(first_step, first_step + steps):
        # arrived[i][j]: what rank i waits for to have chunk j of the previous step
        nxt: Arrived = [[()] * chunks for _ in range(n)]
        for i in range(n):
            j_rank = (i + 1) % n
            for j, size in enumerate(chunk_sizes):
                nxt[j_rank][j] = b.send(f"{prefix}/r{i if numbers is None else numbers[i]}",
                                        ring[i], ring[j_rank], size or 0, s, arrived[i][j])
        arrived = nxt
    return arrived


def hierarchy(ranks: tuple[str, ...], topology: Topology) -> list[list[str]]:
    """The groups of a hierarchical all-reduce: ranks by scale-up domain (by
    server without ``scale_up``), groups and ranks in the order listed;
    ValueError unless every group has the same number of ranks."""
    groups: dict[str, list[str]] = {}
    for rank in ranks:
        domain = topology.domain_of(rank)
        key = domain.name if domain is not None else topology.gpu(rank).server
        groups.setdefault(key, []).append(rank)
    sizes = {len(members) for members in groups.values()}
    if len(sizes) > 1:
        what = "scale-up domain" if topology.domains else "server"
        raise ValueError(
            "a hierarchical all-reduce needs the same number of ranks in every " + what
            + "; these have " + ", ".join(f"{key}: {len(m)}" for key, m in groups.items()))
    return list(groups.values())


def hierarchical_steps(members: int, groups: int) -> int:
    """Steps of a hierarchical all-reduce: m−1 + 2(g−1) + m−1."""
    return 2 * (members - 1) + 2 * (groups - 1)


def _hierarchical(b: _Builder, spec: CollectiveSpec, topology: Topology) -> tuple[int, int]:
    """Reduce-scatter inside each group, all-reduce across groups per local
    rank, all-gather inside (see the module docstring); (steps, groups)."""
    k = spec.chunks
    m = g = 0
    for c, ranks in enumerate(spec.rings):
        groups = hierarchy(ranks, topology)
        g, m = len(groups), len(groups[0])
        number = {rank: i for i, rank in enumerate(ranks)}
        shard = spec.size_bytes // (m * spec.channels)
        ready: dict[str, list[tuple[Dep, ...]]] = {}
        for group in groups:
            done = _ring_steps(b, f"{spec.id}/c{c}/rs", tuple(group), shard, k, 0, m - 1,
                               [[()] * k for _ in group], [number[r] for r in group])
            ready.update(zip(group, done))
        for local in range(m):
            ring = tuple(group[local] for group in groups)
            done = _ring_steps(b, f"{spec.id}/c{c}/x", ring, shard // g, k, m - 1,
                               2 * (g - 1), [ready[rank] for rank in ring],
                               [number[r] for r in ring])
            ready.update(zip(ring, done))
        for group in groups:
            _ring_steps(b, f"{spec.id}/c{c}/ag", tuple(group), shard, k, m - 1 + 2 * (g - 1),
                        m - 1, [ready[rank] for rank in group], [number[r] for r in group])
    return hierarchical_steps(m, g), g


def _all_to_all(b: _Builder, spec: CollectiveSpec) -> None:
    ranks = spec.rings[0]
    n = len(ranks)
    block = spec.size_bytes // n
    for i, src in enumerate(ranks):
        for j, dst in enumerate(ranks):
            if i != j:
                for size in stripes(block, spec.chunks):
                    b.send(f"{spec.id}/{i}-{j}", src, dst, size or 0, 0, ())


def _send_recv(b: _Builder, spec: CollectiveSpec) -> None:
    block = spec.size_bytes // spec.channels
    for c, ring in enumerate(spec.rings):
        n = len(ring)
        for i, src in enumerate(ring):
            for size in stripes(block, spec.chunks):
                b.send(f"{spec.id}/c{c}/r{i}", src, ring[(i + 1) % n], size or 0, 0, ())


def _pipeline(b: _Builder, spec: CollectiveSpec) -> None:
    stages = spec.rings[0]
    compute = spec.compute_ns
    for m in range(spec.microbatches):
        have: tuple[Dep, ...] = ()
        for i in range(len(stages) - 1):
            if i == 0:
                have = b.send(f"{spec.id}/s0", stages[0], stages[1], spec.size_bytes, 0, (),
                              at_ns=(m + 1) * compute)
            else:
                have = b.send(f"{spec.id}/s{i}", stages[i], stages[i + 1], spec.size_bytes, i,
                              have, delay_ns=compute)


def _kv_handoff(b: _Builder, spec: CollectiveSpec, seed: int) -> tuple[int, ...]:
    rng = random.Random(f"{seed}:{spec.id}")
    at = 0.0
    times = []
    for r in range(spec.requests):
        if r and spec.interval_ns:
            at += rng.expovariate(1.0 / spec.interval_ns)
        times.append(int(at))
        src = spec.prefill[r % len(spec.prefill)]
        dst = spec.decode[r % len(spec.decode)]
        if b.local(src, dst):
            raise ValueError(f"collective {spec.id!r}: request {r} goes from {src} to {dst} on "
                             "the same server; give prefill and decode GPUs on other servers")
        i, j = spec.prefill.index(src), spec.decode.index(dst)
        b.send(f"{spec.id}/p{i}-d{j}", src, dst, spec.size_bytes, r, (), at_ns=int(at))
    return tuple(times)
