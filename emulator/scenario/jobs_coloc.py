"""Colocated serving: every GPU prefills and decodes its own requests, one
thing at a time (:func:`plan_colocated`).

Request r goes to GPU r mod N of the colocated pool; its KV cache stays in
that GPU's HBM (nothing crosses the fabric). A GPU runs one stream: a prefill
or a decode step of its running batch, never both at once (no chunked
prefill). Its scheduler is vLLM's default without chunked prefill, at the
granularity of steps, prefill first:

- after every step it looks at the head of its FCFS queue (its requests in
  arrival order; nobody overtakes): if that request has arrived, the batch
  has a free slot (fewer than ``max_batch`` running) and the request's
  reservation (KV of prompt + output tokens, TensorRT-LLM's
  guaranteed-no-evict as in :mod:`.jobs_kv`) fits in ``hbm_kv`` beside the
  running ones, it is **prefilled** now, and the running batch waits;
- otherwise the running batch takes one **decode step**: every running
  request makes one token. A step of the requests of contexts c_i (their
  prompts) is max(sum of FLOPs, (active weight bytes + sum of KV bytes) /
  HBM bandwidth) (:meth:`~.jobs_serve.ServingJob.batch_step_s`, the
  disaggregated model's step with the batch actually running; at batch 1
  the KV read is left out as there);
- an idle GPU waits for its next request's arrival.

A request's first token is the end of the first step after its prefill
(TTFT = prefill + queueing + that step, as disaggregated less the hand-off);
the steps of a running request stall while the GPU prefills a newcomer, so
its TPOT includes the prefills that joined its batch. Nothing is offloaded:
a request whose reservation does not fit waits in the queue, unprefilled,
until running requests end (so ``hbm_kv`` is admission control here).

Every decision depends on compute and arrivals alone (no transfer), so the
plan's clock is the run's: the graph (:func:`~.jobs_serve.serve_graph`) puts
the operations on the GPU's stream in the plan's order, consecutive steps of
the same batch as one node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from emulator.scenario.jobs_kv import Admission

if TYPE_CHECKING:
    from emulator.scenario.jobs_serve import ServingJob


@dataclass(frozen=True)
class Op:
    """One operation of a GPU's stream: ``prefill`` (of ``request``), ``decode``
    (``steps`` steps of the requests in ``batch``), or a zero-length mark after
    the step that made ``request``'s ``first`` or ``last`` token."""

    kind: str
    start_s: float
    duration_s: float
    request: int = -1
    steps: int = 0
    batch: tuple[int, ...] = ()


@dataclass(frozen=True)
class ColocatedPlan:
    ops: tuple[tuple[Op, ...], ...]  # per GPU, in the order of its stream
    admissions: tuple[Admission, ...]  # per request: admitted = prefill start


def plan_colocated(job: ServingJob) -> ColocatedPlan:
    """The stream of every GPU of a colocated job (module docstring); ValueError
    when one request's reservation exceeds ``hbm_kv`` alone."""
    requests, capacity = job.requests, job.hbm_kv
    out: list[Admission | None] = [None] * len(requests)
    streams = []
    for r, req in enumerate(requests):
        need = job.kv_bytes(req.prompt + req.output)
        if need > capacity:
            raise ValueError(
                f"hbm_kv {capacity} B cannot hold request {r}'s reservation alone: "
                f"{req.prompt} + {req.output} tokens x {job.kv_bytes(1)} B = {need} B")
    for g in range(job.prefill):
        mine = range(g, len(requests), job.prefill)
        ops: list[Op] = []
        t, head, reserved = 0.0, 0, 0
        running: list[list] = []  # [request, tokens made, prefill start, prefill end]
        while head < len(mine) or running:
            nxt = mine[head] if head < len(mine) else -1
            need = job.kv_bytes(requests[nxt].prompt + requests[nxt].output) if nxt >= 0 else 0
            room = nxt >= 0 and len(running) < job.max_batch and reserved + need <= capacity
            if room and (requests[nxt].arrival_s <= t or not running):
                start = max(t, requests[nxt].arrival_s)
                took = job.prefill_s(requests[nxt].prompt)
                ops.append(Op("prefill", start, took, nxt))
                t = start + took
                running.append([nxt, 0, start, t])
                reserved += need
                head += 1
                continue
            step = job.batch_step_s([requests[x[0]].prompt for x in running])
            steps = min(requests[x[0]].output - x[1] for x in running)
            if any(x[1] == 0 for x in running):
                steps = 1  # a newcomer's first token ends this step
            elif room:  # the next request arrives during these steps: prefill after its step
                steps = min(steps, max(1, math.ceil((requests[nxt].arrival_s - t) / step
                                                    - 1e-9)))
            ops.append(Op("decode", t, steps * step, steps=steps,
                          batch=tuple(x[0] for x in running)))
            t += steps * step
            for x in running:
                if x[1] == 0:
                    ops.append(Op("first", t, 0.0, x[0]))
                x[1] += steps
            for x in running:
                r, req = x[0], requests[x[0]]
                if x[1] >= req.output:
                    ops.append(Op("last", t, 0.0, r))
                    reserved -= job.kv_bytes(req.prompt + req.output)
                    out[r] = Admission(r, x[3], x[2], t, job.kv_bytes(req.prompt + req.output))
            running = [x for x in running if x[1] < requests[x[0]].output]
        streams.append(tuple(ops))
    return ColocatedPlan(tuple(streams), tuple(out))  # type: ignore[arg-type]
