"""Inference serving as a job graph: disaggregated (prefill GPUs, decode GPUs
and the KV cache handed between them over the fabric) or colocated (each GPU
prefills and decodes its own requests: :mod:`.jobs_coloc`).

Requests arrive at given times (:func:`poisson_requests`: a Poisson process
at a mean gap, seeded), each with a prompt and an output length. Request r
is prefilled on prefill GPU r mod P and decoded on decode GPU r mod D; each
prefill GPU serves its requests one after another, in arrival order (no
chunked prefill); a decode GPU batches up to ``max_batch`` requests
(continuous batching: a request joins as soon as its KV cache is there and
a slot of the batch is free, and leaves after its last token). Per request:

- **prefill**: layers x forward FLOPs of the prompt (as
  :meth:`~.jobs_model.ModelShape.layer_fwd_flops` with one sequence) plus
  the last token's logits (2 x vocab x hidden), at peak x efficiency;
- **KV hand-off** (kind ``kv``): the prompt's KV cache,
  2 x layers x kv_heads x head_dim x bytes per element per token, from the
  prefill GPU to the decode GPU over the fabric (one transfer, or striped
  over the rails, see :func:`serve_graph`);
- **decode**: the first output token, then the others, each a step of
  the batch: max(B x FLOPs, (weight bytes + B x KV bytes) / HBM
  bandwidth), FLOPs = 2 x active params + 4 x layers x context x hidden
  (context: the prompt), weight bytes = the params a token goes through
  (active params) x bytes per element, read once a step for the whole
  batch, and every request's KV cache read. B is the batch the GPU runs at
  full load: min(max_batch, requests on that GPU) (the graph is fixed
  before the run, so a step does not shrink while the batch is not full).
  Slots are taken in turn: the k-th request of a decode GPU has slot k mod
  max_batch and waits for that slot's previous request.

HBM for KV caches (``hbm_kv`` bytes a decode GPU) is reserved per request
on admission, prompt + output tokens (:mod:`.jobs_kv`); a request whose
reservation does not fit when its prefill ends has its cache offloaded to
storage and fetched back once room frees:

- **offload** (kind ``kv-offload``): the prompt's KV cache from the prefill
  GPU to a storage node (its storage NIC; storage nodes taken in turn),
  after the prefill;
- **fetch** (kind ``kv-fetch``): a read: a request of one byte from the
  decode GPU to that storage node, not before the prefill has ended, once
  the requests the plan counted on to make room have ended (and after the
  GPU's earlier fetches: FCFS), then the cache from storage to the decode
  GPU, once both the request and the offloaded cache are there; the first
  token waits for it instead of a hand-off.

TTFT = end of the first token - arrival; TPOT = (end of the last - end of
the first) / (output - 1). Colocated (``colocated``: ``prefill`` = ``decode``
= N GPUs, request r on GPU r mod N): no hand-off, no offload; prefills and
decode steps of the running batch on one stream per GPU, prefill first, in
the order :func:`~.jobs_coloc.plan_colocated` plans. Left out: evicting
running requests (vLLM's preemption by recompute or swap), tensor
parallelism, chunked prefill, a disaggregated step that shrinks with the
batch (a colocated step is that of the batch running), prefix caching.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

from emulator.scenario.jobs_coloc import ColocatedPlan, plan_colocated
from emulator.scenario.jobs_graph import Node
from emulator.scenario.jobs_kv import Admission, default_hbm_kv, plan_admissions
from emulator.scenario.jobs_model import Gpu, ModelShape


@dataclass(frozen=True)
class Request:
    arrival_s: float
    prompt: int
    output: int


@dataclass(frozen=True)
class ServingJob:
    """Model, GPU and the requests; ``prefill`` and ``decode`` GPUs count.

    ``hbm_kv_bytes``: HBM for KV caches per decode GPU (None: 90 % of 80 GB
    less the weights, :func:`~.jobs_kv.default_hbm_kv`). ``handoff_bps``,
    ``storage_bps`` and ``net_latency_s``: the rates and latency the plan of
    admissions (:mod:`.jobs_kv`) assumes for a hand-off, an offload or fetch."""

    model: ModelShape
    gpu: Gpu
    hbm_bytes_per_s: float
    prefill: int
    decode: int
    requests: tuple[Request, ...]
    max_batch: int = 1
    hbm_kv_bytes: int | None = None
    handoff_bps: float = 100e9
    storage_bps: float = 100e9
    net_latency_s: float = 5e-6
    # each of the ``prefill`` (= ``decode``) GPUs prefills and decodes its own requests
    colocated: bool = False

    def __post_init__(self) -> None:
        if self.colocated and self.prefill != self.decode:
            raise ValueError(f"colocated serving has one pool: prefill {self.prefill} and "
                             f"decode {self.decode} GPUs must be the same GPUs")
        if self.hbm_bytes_per_s <= 0:
            raise ValueError(f"hbm must be positive, not {self.hbm_bytes_per_s}")
        if self.max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, not {self.max_batch}")
        for r in self.requests:
            if r.prompt < 1 or r.output < 1:
                raise ValueError("prompt and output must be at least 1 token")
        if self.hbm_kv_bytes is not None and self.hbm_kv_bytes < 1:
            raise ValueError(f"hbm_kv must be a size > 0, not {self.hbm_kv_bytes} B")
        if self.hbm_kv <= 0:
            raise ValueError(
                f"hbm_kv defaults to 90 % of an 80 GB GPU less the weights, and the model's "
                f"{self.weight_bytes / 1e9:.1f} GB of weights leave nothing (no TP in "
                f"serving); give hbm_kv, the HBM a decode GPU has for KV caches (e.g. 40GB)")
        if min(self.handoff_bps, self.storage_bps) <= 0 or self.net_latency_s < 0:
            raise ValueError("handoff_bps and storage_bps must be positive, net_latency_s "
                             "at least 0")

    @property
    def weight_bytes(self) -> int:
        """The weights a decode GPU holds: the whole model (no TP in serving)."""
        return self.model.params * self.model.bytes_per_element

    @property
    def hbm_kv(self) -> int:
        """Bytes of HBM for KV caches per decode GPU."""
        if self.hbm_kv_bytes is not None:
            return self.hbm_kv_bytes
        return default_hbm_kv(self.weight_bytes)

    @cached_property
    def admissions(self) -> tuple[Admission, ...]:
        """Every request's plan on its decode GPU (:func:`~.jobs_kv.plan_admissions`),
        made once; ValueError when a request's reservation exceeds ``hbm_kv``.
        Colocated: the admissions of :attr:`colocated_plan` (none offloaded)."""
        if self.colocated:
            return self.colocated_plan.admissions
        return plan_admissions(self)

    @cached_property
    def colocated_plan(self) -> ColocatedPlan:
        """Colocated: every GPU's stream of prefills and decode steps (:mod:`.jobs_coloc`)."""
        if not self.colocated:
            raise ValueError("a disaggregated job has no colocated plan")
        return plan_colocated(self)

    def kv_bytes(self, tokens: int) -> int:
        m = self.model
        return 2 * m.layers * m.kv_heads * m.head_dim * m.bytes_per_element * tokens

    def prefill_s(self, prompt: int) -> float:
        m = self.model
        return self.gpu.seconds(m.layers * m.layer_fwd_flops(1, prompt)
                                + 2.0 * m.vocab * m.hidden)

    def step_s(self, context: int, batch: int = 1) -> float:
        """One decode step of ``batch`` requests of ``context`` tokens each;
        with batch 1 the KV read is left out (batch-1 serving: the weights
        dominate), with more every request's cache is read too."""
        m = self.model
        flops = 2.0 * m.active_params + 4.0 * m.layers * context * m.hidden
        read = m.active_params * m.bytes_per_element
        if batch > 1:
            read += batch * self.kv_bytes(context)
        return max(self.gpu.seconds(batch * flops), read / self.hbm_bytes_per_s)

    def batch_step_s(self, contexts: Sequence[int]) -> float:
        """One decode step of the requests of these contexts (a colocated GPU's
        running batch): :meth:`step_s` with each request's own context."""
        m = self.model
        flops = sum(2.0 * m.active_params + 4.0 * m.layers * c * m.hidden for c in contexts)
        read = m.active_params * m.bytes_per_element
        if len(contexts) > 1:
            read += sum(self.kv_bytes(c) for c in contexts)
        return max(self.gpu.seconds(flops), read / self.hbm_bytes_per_s)

    def batch_on(self, decode_rank: int) -> int:
        """The batch decode GPU ``decode_rank`` (0..D-1) runs at full load."""
        count = len(range(decode_rank, len(self.requests), self.decode))
        return max(1, min(self.max_batch, count))


def poisson_requests(count: int, mean_gap_s: float, prompt: tuple[int, int],
                     output: tuple[int, int], seed: str) -> tuple[Request, ...]:
    """``count`` requests, the first at 0, gaps exponential with mean ``mean_gap_s``
    (0: all at once); lengths uniform in [min, max] (inclusive)."""
    rng = random.Random(seed)
    at, out = 0.0, []
    for r in range(count):
        if r and mean_gap_s:
            at += rng.expovariate(1.0 / mean_gap_s)
        out.append(Request(at, rng.randint(*prompt), rng.randint(*output)))
    return tuple(out)


def serve_graph(job: ServingJob, places: Sequence[tuple[str, int]] = (),
                storage: int = 0) -> list[Node]:
    """Ranks 0..P-1 prefill, P..P+D-1 decode, then ``storage`` storage endpoints;
    ids ``i0/r{r}/{prefill,kv,first,rest}``, an offloaded request's
    ``offload``, ``fetch-req`` and ``fetch`` instead of ``kv`` (module docstring).

    With ``places`` ((server, GPU index) of each rank), the KV cache is striped over
    rails: in equal parts ``kv{i}`` from the prefill server's GPU i to the decode
    server's GPU i (over NVLink to and from them: free), for every index i both
    servers have in their pools, as a transfer engine spreads it over the NICs.
    ValueError when a cache must be offloaded and there is no storage endpoint.

    Colocated: ranks 0..N-1, each GPU's stream as planned: ``prefill`` (released at
    the arrival), ``i0/g{g}/d{k}`` (consecutive decode steps of one batch), and
    zero-length ``first`` and ``rest`` after the steps that made a request's first
    and last tokens."""
    if job.colocated:
        return _colocated_graph(job)
    nodes: list[Node] = []
    p_count = job.prefill
    rank_at = {place: rank for rank, place in enumerate(places)}
    plan = job.admissions
    offloads = 0
    for r, req in enumerate(job.requests):
        p, d = r % p_count, p_count + r % job.decode
        pre = f"i0/r{r}/"
        nodes.append(Node(pre + "prefill", "compute", f"g{p}", (), job.prefill_s(req.prompt),
                          rank=p, release_s=req.arrival_s))
        size = job.kv_bytes(req.prompt)
        kv = []
        if plan[r].offloaded:
            if not storage:
                raise ValueError(
                    f"request {r}'s KV cache ({size} B) must be offloaded (its reservation "
                    f"does not fit hbm_kv {job.hbm_kv} B beside the running batch) and the "
                    f"topology has no storage nodes; give the topology a storage key or "
                    f"raise hbm_kv")
            s = p_count + job.decode + offloads % storage
            offloads += 1
            nodes.append(Node(pre + "offload", "kv-offload", f"off{p}>{s}", (pre + "prefill",),
                              0.0, size, 2, p, s))
            # the decode GPU reads it back: its request, once the room is free (FCFS)
            # and not before the prefill ends (when it learns of the request; the
            # prefill's end is compute alone, the same in the plan and the run)
            waits = tuple(f"i0/r{w}/rest" for w in plan[r].waits_for)
            nodes.append(Node(pre + "fetch-req", "kv-fetch", f"fetch-req{d}", waits, 0.0, 1,
                              2, d, s, release_s=plan[r].ready_s))
            kv.append(pre + "fetch")
            nodes.append(Node(kv[-1], "kv-fetch", f"fetch{s}>{d}",
                              (pre + "offload", pre + "fetch-req"), 0.0, size, 2, s, d))
        else:
            pairs = [(p, d)]
            if places:
                (ps, _), (ds, _) = places[p], places[d]
                pairs = [(a, rank_at[(ds, i)]) for (server, i), a in rank_at.items()
                         if server == ps and a < p_count and (ds, i) in rank_at
                         and rank_at[(ds, i)] >= p_count] or pairs
            for k, (a, b) in enumerate(pairs):
                kv.append(pre + ("kv" if len(pairs) == 1 else f"kv{k}"))
                nodes.append(Node(kv[-1], "kv", f"kv{a}>{b}", (pre + "prefill",), 0.0,
                                  size // len(pairs) + (k < size % len(pairs)), 2, a, b))
        batch = job.batch_on(d - p_count)
        step = job.step_s(req.prompt, batch)
        # the decode GPU's slot: one stream per slot of its batch
        slot = f"g{d}" if job.max_batch == 1 else f"g{d}/b{(r // job.decode) % batch}"
        nodes.append(Node(pre + "first", "compute", slot, tuple(kv), step, rank=d))
        nodes.append(Node(pre + "rest", "compute", slot, (), (req.output - 1) * step,
                          rank=d))
    return nodes


def _colocated_graph(job: ServingJob) -> list[Node]:
    nodes: list[Node] = []
    for g, ops in enumerate(job.colocated_plan.ops):
        stream = f"g{g}"
        for k, op in enumerate(ops):
            if op.kind == "decode":
                nodes.append(Node(f"i0/g{g}/d{k}", "compute", stream, (), op.duration_s,
                                  rank=g))
            elif op.kind == "prefill":
                nodes.append(Node(f"i0/r{op.request}/prefill", "compute", stream, (),
                                  op.duration_s, rank=g,
                                  release_s=job.requests[op.request].arrival_s))
            else:
                mark = "first" if op.kind == "first" else "rest"
                nodes.append(Node(f"i0/r{op.request}/{mark}", "compute", stream, (), 0.0,
                                  rank=g))
    return nodes
