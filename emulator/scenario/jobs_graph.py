"""A training step as a dependency graph of compute and communication, its
placement onto GPUs, and its time on a contention-free fabric.

:func:`build_step` expands a :class:`TrainingJob` into :class:`Node` s, for
one data-parallel replica (the replicas are alike; their DP all-reduce and
EP all-to-all are the nodes that join them):

- per pipeline stage, a **stream** that runs its nodes one after another:
  per micro-batch and layer the forward compute, then TP all-reduces (2 per
  layer, after attention and after the MLP, of micro_batch x seq x hidden
  elements) and, in MoE layers, EP all-to-alls (dispatch and combine, top_k
  x micro_batch x seq x hidden elements); the backward does the same
  (compute is 2 x forward). The last stage also runs the output layer.
- the stream's order is **1F1B**: stage s of p runs min(p-s-1, m) forwards,
  then one forward and one backward in turn, then the remaining backwards;
- **PP** sends (activations forward, their gradients backward, micro_batch
  x seq x hidden elements) run on a stream of their own per pair of
  stages, so they overlap compute;
- **DP** all-reduces of the gradients (stage params / tp x bytes), in
  buckets of ``bucket_bytes`` filled in reverse layer order (an MoE's expert
  gradients in buckets of their own, among the dp / ep replicas holding the
  same experts); with
  ``overlap_dp`` a bucket starts once the last micro-batch's backward has
  passed its layers (overlapping the rest of the backward), else after the
  whole backward.

A node starts when its dependencies and the node before it on its stream
have finished. :func:`evaluate` runs the graph with a communication cost
(:class:`FabricCost`: nccl-style ring all-reduce, all-to-all and send
times at a rate, with TP inside the scale-up domain taken as instantaneous
as in :mod:`emulator.scenario.collectives`) and gives the iteration time,
compute time, exposed communication by kind (the time a critical-path
communication ran while its GPU computed nothing) and the critical path.

Placement (:func:`place`): rank = tp_i + tp x (dp_i + dp x pp_i) (Megatron's
order, TP fastest), ranks onto GPUs in topology order, so TP stays inside a
server; rail-aware keeps GPU index = rank mod GPUs per server, so the DP
and PP peers of a GPU share its rail; rail-unaware rotates the index by
the server's number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from emulator.scenario.jobs_model import Gpu, ModelShape
from emulator.topology import Topology

# kv: a KV cache handed to a decode GPU; kv-offload / kv-fetch: one sent to storage,
# and read back from it (jobs_serve.py)
COMM_KINDS = ("tp", "pp", "dp", "ep", "kv", "kv-offload", "kv-fetch")


@dataclass(frozen=True)
class TrainingJob:
    """One training job: model, GPU, batch and parallelism."""

    model: ModelShape
    gpu: Gpu
    seq: int
    micro_batch: int
    global_batch: int
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    bucket_bytes: int = 25 * 2**20
    overlap_dp: bool = True

    def __post_init__(self) -> None:
        for name in ("seq", "micro_batch", "global_batch", "tp", "pp", "dp", "ep",
                     "bucket_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.model.layers % self.pp:
            raise ValueError(f"pp {self.pp} does not divide the model's {self.model.layers} "
                             "layers")
        if self.global_batch % (self.micro_batch * self.dp):
            raise ValueError(f"global_batch {self.global_batch} is not a multiple of "
                             f"micro_batch x dp = {self.micro_batch * self.dp}")
        if self.dp % self.ep:
            raise ValueError(f"ep {self.ep} does not divide dp {self.dp}")
        if self.ep > 1 and not self.model.experts:
            raise ValueError("ep above 1 needs a model with experts")
        if self.model.experts and self.model.experts % self.ep:
            raise ValueError(f"ep {self.ep} does not divide the {self.model.experts} experts")

    @property
    def world(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def micro_batches(self) -> int:
        return self.global_batch // (self.micro_batch * self.dp)

    @property
    def activation_bytes(self) -> int:
        return self.micro_batch * self.seq * self.model.hidden * self.model.bytes_per_element

    def layer_fwd_s(self) -> float:
        return self.gpu.seconds(self.model.layer_fwd_flops(self.micro_batch, self.seq) / self.tp)

    def output_fwd_s(self) -> float:
        return self.gpu.seconds(self.model.output_fwd_flops(self.micro_batch, self.seq) / self.tp)

    def stage_grad_bytes(self) -> int:
        """Gradient bytes of one GPU of a stage (its layers' params / tp; experts / ep)."""
        m = self.model
        layer = m.layer_params
        if m.experts:
            layer -= m.experts * m.mlp_params - (m.experts // self.ep) * m.mlp_params
        return (m.layers // self.pp) * layer // self.tp * m.bytes_per_element

    def stage_expert_grad_bytes(self) -> int:
        """The experts' part of :meth:`stage_grad_bytes` (0 for a dense model)."""
        m = self.model
        experts = (m.experts // self.ep) * m.mlp_params
        return (m.layers // self.pp) * experts // self.tp * m.bytes_per_element


@dataclass(frozen=True)
class Node:
    """One operation: ``kind`` compute or a COMM_KINDS member; ``size_bytes`` for communication."""

    id: str
    kind: str
    stream: str
    deps: tuple[str, ...] = ()
    duration_s: float = 0.0
    size_bytes: int = 0
    group: int = 1  # ranks taking part in the communication
    rank: int = 0  # the GPU (here: pipeline stage) it runs on; a transfer's sender
    peer: int = -1  # a transfer's receiver (rank)
    instance: str = ""  # a collective: the same on every rank taking part (world graphs)
    # not before this (s from the job's start): a request's arrival, a KV fetch's read
    release_s: float = 0.0


def _one_f_one_b(stage: int, stages: int, m: int) -> list[tuple[str, int]]:
    warm = min(stages - stage - 1, m)
    order = [("F", j) for j in range(warm)]
    for i in range(m - warm):
        order += [("F", warm + i), ("B", i)]
    order += [("B", j) for j in range(m - warm, m)]
    return order


def build_step(job: TrainingJob) -> list[Node]:
    """The nodes of one iteration (see the module docstring)."""
    nodes: list[Node] = []
    per_stage = job.model.layers // job.pp
    fwd_s, out_s = job.layer_fwd_s(), job.output_fwd_s()
    act = job.activation_bytes
    moe = bool(job.model.experts) and job.ep > 1
    a2a = act * job.model.top_k
    last_bwd: dict[tuple[int, int], str] = {}  # (stage, layer) -> last micro-batch's bwd node
    for s in range(job.pp):
        stream = f"s{s}"
        for phase, j in _one_f_one_b(s, job.pp, job.micro_batches):
            layers = range(per_stage) if phase == "F" else reversed(range(per_stage))
            deps: tuple[str, ...] = ()
            if phase == "F" and s > 0:
                deps = (f"pp/F{s - 1}>{s}/{j}",)
            if phase == "B" and s < job.pp - 1:
                deps = (f"pp/B{s + 1}>{s}/{j}",)
            if phase == "B" and s == job.pp - 1:
                nodes.append(Node(f"c/B{s}/{j}/out", "compute", stream, deps, 2 * out_s, rank=s))
                deps = ()
            for layer in layers:
                base = f"{phase}{s}/{j}/L{layer}"
                nodes.append(Node(f"c/{base}", "compute", stream, deps,
                                  fwd_s if phase == "F" else 2 * fwd_s, rank=s))
                deps = ()
                comms = [("tp", act, job.tp)] * 2 if job.tp > 1 else []
                if moe:
                    comms += [("ep", a2a, job.ep)] * 2
                for k, (kind, size, group) in enumerate(comms):
                    nodes.append(Node(f"{kind}/{base}/{k}", kind, stream, (), 0.0, size, group, s))
                if phase == "B" and j == job.micro_batches - 1:
                    last_bwd[(s, layer)] = nodes[-1].id
            if phase == "F" and s == job.pp - 1:
                nodes.append(Node(f"c/F{s}/{j}/out", "compute", stream, (), out_s, rank=s))
            done = nodes[-1].id
            if phase == "F" and s < job.pp - 1:
                nodes.append(Node(f"pp/F{s}>{s + 1}/{j}", "pp", f"pp{s}>{s + 1}", (done,),
                                  0.0, act, 2, s, s + 1))
            if phase == "B" and s > 0:
                nodes.append(Node(f"pp/B{s}>{s - 1}/{j}", "pp", f"pp{s}>{s - 1}", (done,),
                                  0.0, act, 2, s, s - 1))
        if job.dp > 1:
            nodes += _buckets(job, s, per_stage, last_bwd)
    return nodes


def _buckets(job: TrainingJob, stage: int, per_stage: int,
             last_bwd: dict[tuple[int, int], str]) -> list[Node]:
    """Dense gradients all-reduced among the dp replicas; an MoE layer's expert gradients
    among the dp / ep replicas that hold the same experts (none when that is 1)."""
    expert_bytes = job.stage_expert_grad_bytes()
    groups = [("b", (job.stage_grad_bytes() - expert_bytes) // per_stage, job.dp),
              ("e", expert_bytes // per_stage, job.dp // job.ep)]
    end = last_bwd[(stage, 0)]
    out = []
    fill = {"b": 0, "e": 0}
    index = {"b": 0, "e": 0}
    for layer in reversed(range(per_stage)):
        for name, layer_bytes, group in groups:
            if group < 2 or not layer_bytes:
                continue
            fill[name] += layer_bytes
            if fill[name] >= job.bucket_bytes or layer == 0:
                dep = last_bwd[(stage, layer)] if job.overlap_dp else end
                out.append(Node(f"dp/{stage}/{name}{index[name]}", "dp", f"dp{stage}", (dep,),
                                0.0, fill[name], group, stage))
                fill[name], index[name] = 0, index[name] + 1
    return out


@dataclass(frozen=True)
class FabricCost:
    """Communication times on an idle fabric: ``rate_bps`` per NIC, ``latency_s`` per step.

    TP (inside a server or scale-up domain) is free with ``scale_up_free``, as
    runs without a scale-up tier take it; otherwise it runs over
    ``scale_up`` (the scale-up tier's own cost, as a topology with
    ``scale_up`` runs it, on sim and live), or over the NICs when that is None."""

    rate_bps: float
    latency_s: float = 0.0
    scale_up_free: bool = True  # TP inside a server: instantaneous, as collectives.py takes it
    scale_up: FabricCost | None = None  # TP's cost over the scale-up tier (scale_up_free off)

    @classmethod
    def frames(cls, rate_bps: float, mtu_bytes: int, link_delay_s: float, links: int,
               overhead_bytes: int = 58) -> FabricCost:
        """The idle fabric in frames: ``mtu_bytes`` of payload per frame of
        ``overhead_bytes`` more (RoCEv2 over Ethernet: 58), a message's last frame
        stored and forwarded by each of the ``links - 1`` switches, and the links' delays."""
        frame_s = (mtu_bytes + overhead_bytes) * 8 / rate_bps
        return cls(rate_bps * mtu_bytes / (mtu_bytes + overhead_bytes),
                   latency_s=links * link_delay_s + (links - 1) * frame_s)

    def __call__(self, node: Node) -> float:
        n, size = node.group, node.size_bytes
        if node.kind == "tp" and self.scale_up_free:
            return 0.0
        tier = self.scale_up if node.kind == "tp" and self.scale_up is not None else self
        wire = size * 8 / tier.rate_bps
        if node.kind in ("dp", "tp"):  # ring all-reduce
            return 2 * (n - 1) / n * wire + 2 * (n - 1) * tier.latency_s
        if node.kind == "ep":
            return (n - 1) / n * wire + self.latency_s
        return wire + self.latency_s


@dataclass
class StepResult:
    """One evaluated iteration; times in seconds from the step's start."""

    iteration_s: float
    compute_s: float  # the busiest GPU's compute
    exposed_s: dict[str, float]
    critical_path: list[str]
    start_s: dict[str, float] = field(repr=False)
    end_s: dict[str, float] = field(repr=False)


def predecessors(nodes: Sequence[Node]) -> dict[str, list[str]]:
    """What each node waits for: the node before it on its stream, then its deps;
    ValueError on a missing dependency."""
    ids = {node.id for node in nodes}
    preds: dict[str, list[str]] = {}
    last_on: dict[str, str] = {}
    for node in nodes:
        missing = [d for d in node.deps if d not in ids]
        if missing:
            raise ValueError(f"node {node.id} depends on unknown {missing[0]}")
        before = [last_on[node.stream]] if node.stream in last_on else []
        preds[node.id] = before + list(node.deps)
        last_on[node.stream] = node.id
    return preds


def joins(nodes: Sequence[Node], preds: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """A collective finishes on no rank before every rank has joined it: each member
    of an instance also waits, for the analysis, for what the other members wait for."""
    members: dict[str, list[str]] = {}
    for node in nodes:
        if node.instance:
            members.setdefault(node.instance, []).append(node.id)
    out: dict[str, list[str]] = {}
    for ids in members.values():
        for nid in ids:
            out[nid] = [p for other in ids if other != nid for p in preds[other]]
    return out


def evaluate(nodes: Sequence[Node], cost: Callable[[Node], float]) -> StepResult:
    """Start and end of every node; ValueError on a cycle or a missing dependency.
    Members of a collective instance (world graphs) start together (:func:`joins`)."""
    preds = predecessors(nodes)
    for nid, extra in joins(nodes, preds).items():
        preds[nid] = preds[nid] + [p for p in extra if p not in preds[nid]]
    return analyse(nodes, preds, *_schedule(nodes, preds, cost))


def _schedule(nodes: Sequence[Node], preds: Mapping[str, Sequence[str]],
              cost: Callable[[Node], float]) -> tuple[dict[str, float], dict[str, float]]:
    by_id = {node.id: node for node in nodes}
    succ: dict[str, list[str]] = {node.id: [] for node in nodes}
    waiting = {}
    for nid, ps in preds.items():
        waiting[nid] = len(ps)
        for p in ps:
            succ[p].append(nid)
    ready = [nid for nid, w in waiting.items() if w == 0]
    start, end = {}, {}
    while ready:
        nid = ready.pop()
        node = by_id[nid]
        start[nid] = max([end[p] for p in preds[nid]] + [node.release_s])
        end[nid] = start[nid] + (node.duration_s if node.kind == "compute" else cost(node))
        for s in succ[nid]:
            waiting[s] -= 1
            if not waiting[s]:
                ready.append(s)
    if len(end) != len(nodes):
        raise ValueError("the step's graph has a cycle")
    return start, end


def analyse(nodes: Sequence[Node], preds: Mapping[str, Sequence[str]],
            start: Mapping[str, float], end: Mapping[str, float],
            t0: float | None = None) -> StepResult:
    """Iteration time (from ``t0``, default the first start), compute, exposed
    communication and critical path of a step whose nodes ran from ``start`` to
    ``end`` (computed by :func:`evaluate`, or measured); ``preds`` only among ``nodes``."""
    by_id = {node.id: node for node in nodes}
    if t0 is None:
        t0 = min(start.values(), default=0.0)
    last = max(end, key=lambda nid: end[nid])
    path = [last]
    while any(p in end for p in preds[path[-1]]):
        nid = path[-1]
        # what it waited for: the last to finish; on a tie (within 1 ps, sums of floats),
        # communication rather than compute, then the one that started last, then by kind
        mine = [p for p in preds[nid] if p in end]
        latest = max(end[p] for p in mine)
        path.append(max((p for p in mine if end[p] >= latest - 1e-12),
                        key=lambda p: (by_id[p].kind != "compute", start[p], by_id[p].kind)))
    path.reverse()
    exposed = _exposed(nodes, path, start, end)
    compute: dict[int, float] = {}
    for node in nodes:
        if node.kind == "compute":
            compute[node.rank] = compute.get(node.rank, 0.0) + node.duration_s
    return StepResult(iteration_s=end[last] - t0, compute_s=max(compute.values(), default=0.0),
                      exposed_s=exposed, critical_path=path, start_s=dict(start),
                      end_s=dict(end))


def _exposed(nodes: Sequence[Node], path: list[str], start: dict[str, float],
             end: dict[str, float]) -> dict[str, float]:
    """Per kind, the time communication on the critical path ran while its GPU (a
    transfer's: the receiver's) computed nothing."""
    busy: dict[int, list[tuple[float, float]]] = {}
    for node in nodes:
        if node.kind == "compute" and end[node.id] > start[node.id]:
            busy.setdefault(node.rank, []).append((start[node.id], end[node.id]))
    for spans in busy.values():
        spans.sort()
    by_id = {node.id: node for node in nodes}
    exposed = {kind: 0.0 for kind in COMM_KINDS}
    for nid in path:
        node = by_id[nid]
        if node.kind not in exposed:
            continue
        a, b = start[nid], end[nid]
        who = node.peer if node.peer >= 0 else node.rank  # a transfer: its receiver waits
        covered = sum(max(0.0, min(b, e) - max(a, s)) for s, e in busy.get(who, ()))
        exposed[node.kind] += b - a - covered
    return exposed


def place(job: TrainingJob, topology: Topology, rail_aware: bool = True,
          among: Sequence[str] | None = None) -> list[str]:
    """GPU name of each rank (from ``among``, default every GPU, in topology order);
    ValueError when the job does not fit or TP would leave a server."""
    chosen = None if among is None else set(among)
    gpus = [g for g in topology.gpus if chosen is None or g.name in chosen]
    if job.world > len(gpus):
        raise ValueError(f"needs tp x pp x dp = {job.world} GPUs, the topology has {len(gpus)}")
    per_server: dict[str, list] = {}
    for gpu in gpus:
        per_server.setdefault(gpu.server, []).append(gpu)
    width = min(len(v) for v in per_server.values())
    if width % job.tp and job.tp % width:
        raise ValueError(f"tp {job.tp} does not fit servers of {width} GPUs")
    if job.tp > width:
        raise ValueError(f"tp {job.tp} is larger than a server's {width} GPUs (TP stays "
                         "inside the scale-up domain)")
    servers = list(per_server.values())
    site_of = {s.name: s.site for s in topology.servers}
    sites = sorted({site_of[v[0].server] or 0 for v in servers})
    slot = _site_slots(job, servers, site_of, width, sites) if len(sites) > 1 else None
    out = []
    for rank in range(job.world):
        server, local = divmod(rank if slot is None else slot[rank], width)
        if not rail_aware:
            local = (local + server) % width
        out.append(sorted(servers[server], key=lambda g: g.index)[local].name)
    return out


def _site_slots(job: TrainingJob, servers: list[list], site_of: dict[str, int | None],
                width: int, sites: list[int]) -> list[int] | None:
    """Across sites, DP is the dimension that crosses them (its all-reduce is
    the one that overlaps the backward and runs once a step; TP stays in a
    server, PP's activations in a site): the dp replicas are split into one
    part a site, each site holding every stage of its part. Returns the GPU
    slot (in ``servers`` order, reordered by site in place) of every rank, or
    None (Megatron's order as on one site) when dp does not split evenly over
    the sites or a site has too few GPUs for its part."""
    count = len(sites)
    if job.dp % count:
        return None
    servers.sort(key=lambda v: sites.index(site_of[v[0].server] or 0))
    per_site = [sum(1 for v in servers if (site_of[v[0].server] or 0) == site) * width
                for site in sites]
    part = job.dp // count
    need = part * job.pp * job.tp
    if any(have < need for have in per_site):
        return None
    offsets = [sum(per_site[:i]) for i in range(count)]
    slots = []
    for rank in range(job.world):
        t, rest = rank % job.tp, rank // job.tp
        d, stage = rest % job.dp, rest // job.dp
        site, d_local = divmod(d, part)
        slots.append(offsets[site] + (d_local + part * stage) * job.tp + t)
    return slots


def world_step(job: TrainingJob, iterations: int = 1) -> list[Node]:
    """The step graph of every GPU (rank as :func:`place` numbers them), ``iterations``
    steps one after the other: ids ``i{k}/d{dp}/t{tp}/{replica node id}``, streams per
    rank, each collective's members sharing an ``instance``: DP buckets among the dp
    replicas (expert buckets among those holding the same experts), EP all-to-alls
    among the ep replicas of a group, TP all-reduces among the tp GPUs of a stage. A
    stage's next iteration starts once its gradients are all-reduced (the optimizer
    step, taken as instantaneous)."""
    replica = build_step(job)
    tp, dp, ep = job.tp, job.dp, job.ep

    def rank(t: int, d: int, stage: int) -> int:
        return t + tp * (d + dp * stage)

    last_dp: dict[int, str] = {}
    for n in replica:
        if n.kind == "dp":
            last_dp[n.rank] = n.id
    first_on: dict[str, str] = {}
    for n in replica:
        first_on.setdefault(n.stream, n.id)
    out: list[Node] = []
    for k in range(iterations):
        for n in replica:
            for d in range(dp):
                for t in range(tp):
                    pre = f"i{k}/d{d}/t{t}/"
                    deps = [pre + x for x in n.deps]
                    if k and first_on[n.stream] == n.id and n.rank in last_dp \
                            and n.stream.startswith("s"):
                        deps.append(f"i{k - 1}/d{d}/t{t}/{last_dp[n.rank]}")
                    instance = ""
                    if n.kind == "tp":
                        instance = f"i{k}/d{d}/{n.id}"
                    elif n.kind == "ep":
                        instance = f"i{k}/t{t}/g{d // ep}/{n.id}"
                    elif n.kind == "dp":
                        expert = n.id.split("/")[-1].startswith("e")
                        instance = f"i{k}/t{t}/" + (f"x{d % ep}/" if expert else "") + n.id
                    out.append(Node(pre + n.id, n.kind, f"d{d}/t{t}/{n.stream}", tuple(deps),
                                    n.duration_s, n.size_bytes, n.group,
                                    rank(t, d, n.rank),
                                    -1 if n.peer < 0 else rank(t, d, n.peer), instance))
    return out
