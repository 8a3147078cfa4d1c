"""Disaggregated inference serving as a job graph: prefill GPUs, decode GPUs
and the KV cache handed between them over the fabric.

Requests arrive at given times (:func:`poisson_requests`: a Poisson process
at a mean gap, seeded), each with a prompt and an output length. Request r
is prefilled on prefill GPU r mod P and decoded on decode GPU r mod D; each
GPU serves its requests one after another, in arrival order (batch 1: no
continuous batching, no chunked prefill). Per request:

- **prefill**: layers x forward FLOPs of the prompt (as
  :meth:`~.jobs_model.ModelShape.layer_fwd_flops` with one sequence) plus
  the last token's logits (2 x vocab x hidden), at peak x efficiency;
- **KV hand-off** (kind ``kv``): the prompt's KV cache,
  2 x layers x kv_heads x head_dim x bytes per element per token, from the
  prefill GPU to the decode GPU over the fabric (one transfer, or striped
  over the rails, see :func:`serve_graph`);
- **decode**: the first output token, then the others, each a step of
  max(FLOPs, weight bytes / HBM bandwidth): FLOPs = 2 x active params +
  4 x layers x context x hidden (context: the prompt), bytes = the params
  a token goes through (active params) x bytes per element.

TTFT = end of the first token - arrival; TPOT = (end of the last - end of
the first) / (output - 1). Left out: batching, KV offload to storage when
HBM is full, tensor parallelism.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from emulator.scenario.jobs_graph import Node
from emulator.scenario.jobs_model import Gpu, ModelShape


@dataclass(frozen=True)
class Request:
    arrival_s: float
    prompt: int
    output: int


@dataclass(frozen=True)
class ServingJob:
    """Model, GPU and the requests; ``prefill`` and ``decode`` GPUs count."""

    model: ModelShape
    gpu: Gpu
    hbm_bytes_per_s: float
    prefill: int
    decode: int
    requests: tuple[Request, ...]

    def __post_init__(self) -> None:
        if self.hbm_bytes_per_s <= 0:
            raise ValueError(f"hbm must be positive, not {self.hbm_bytes_per_s}")
        for r in self.requests:
            if r.prompt < 1 or r.output < 1:
                raise ValueError("prompt and output must be at least 1 token")

    def kv_bytes(self, tokens: int) -> int:
        m = self.model
        return 2 * m.layers * m.kv_heads * m.head_dim * m.bytes_per_element * tokens

    def prefill_s(self, prompt: int) -> float:
        m = self.model
        return self.gpu.seconds(m.layers * m.layer_fwd_flops(1, prompt)
                                + 2.0 * m.vocab * m.hidden)

    def step_s(self, context: int) -> float:
        m = self.model
        flops = 2.0 * m.active_params + 4.0 * m.layers * context * m.hidden
        return max(self.gpu.seconds(flops),
                   m.active_params * m.bytes_per_element / self.hbm_bytes_per_s)


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


def serve_graph(job: ServingJob, places: Sequence[tuple[str, int]] = ()) -> list[Node]:
    """Ranks 0..P-1 prefill, P..P+D-1 decode; ids ``i0/r{r}/{prefill,kv,first,rest}``.

    With ``places`` ((server, GPU index) of each rank), the KV cache is striped over
    rails: in equal parts ``kv{i}`` from the prefill server's GPU i to the decode
    server's GPU i (over NVLink to and from them: free), for every index i both
    servers have in their pools, as a transfer engine spreads it over the NICs."""
    nodes: list[Node] = []
    p_count = job.prefill
    rank_at = {place: rank for rank, place in enumerate(places)}
    for r, req in enumerate(job.requests):
        p, d = r % p_count, p_count + r % job.decode
        pre = f"i0/r{r}/"
        nodes.append(Node(pre + "prefill", "compute", f"g{p}", (), job.prefill_s(req.prompt),
                          rank=p, release_s=req.arrival_s))
        size = job.kv_bytes(req.prompt)
        pairs = [(p, d)]
        if places:
            (ps, _), (ds, _) = places[p], places[d]
            pairs = [(a, rank_at[(ds, i)]) for (server, i), a in rank_at.items()
                     if server == ps and a < p_count and (ds, i) in rank_at
                     and rank_at[(ds, i)] >= p_count] or pairs
        kv = []
        for k, (a, b) in enumerate(pairs):
            kv.append(pre + ("kv" if len(pairs) == 1 else f"kv{k}"))
            nodes.append(Node(kv[-1], "kv", f"kv{a}>{b}", (pre + "prefill",), 0.0,
                              size // len(pairs) + (k < size % len(pairs)), 2, a, b))
        step = job.step_s(req.prompt)
        nodes.append(Node(pre + "first", "compute", f"g{d}", tuple(kv), step, rank=d))
        nodes.append(Node(pre + "rest", "compute", f"g{d}", (), (req.output - 1) * step,
                          rank=d))
    return nodes
