"""HBM for KV caches on the decode GPUs of a serving job: reservations,
admission in FCFS order, and the caches offloaded to storage when they do not
fit (:func:`plan_admissions`).

The policy is TensorRT-LLM's guaranteed-no-evict: a request admitted to its
decode GPU reserves the KV cache of all its tokens (prompt + output) at once,
for as long as it runs, so no running request is ever evicted. Per decode GPU,
with ``hbm_kv`` bytes for KV caches:

- a request's cache is ready when its prefill ends; the request is **admitted**
  then, and its cache handed off to the decode GPU as before, if no earlier
  request of that GPU is waiting for admission (strict FCFS: nobody overtakes)
  and its reservation fits beside the others' for as long as it will run
  (requests admitted later in time but earlier in order included);
- otherwise the prefill GPU **offloads** the cache to storage (freeing its own
  HBM for the next prompt), and the request waits. It is admitted, in request
  order after every earlier offloaded request of its decode GPU, at the first
  end of a running request that leaves room; the decode GPU then **fetches**
  the cache back from storage (a read: its request goes to storage, the cache
  comes back) before its first token.

The graph is fixed before the run, so the decisions are taken here on the
plan's own clock: prefill GPUs serve in arrival order, a hand-off, an offload
and a fetch take size / rate + latency at the rates the topology gives
(``handoff_bps``, ``storage_bps``,
``net_latency_s`` of :class:`~.jobs_serve.ServingJob`), decode as the graph has it (the slot's
previous request, then output x step). In the run the fetch waits for the
ends of the requests whose freed space the plan counted on, and each decode
GPU's fetches go in FCFS order, so no fetched cache lands before its room
is free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from emulator.scenario.jobs_serve import ServingJob

HBM_BYTES = 80_000_000_000  # an H100 / A100 80 GB
HBM_KV_SHARE = 0.9  # of it, less the weights, for KV caches (vLLM's gpu_memory_utilization)


@dataclass(frozen=True)
class Admission:
    """One request's plan on its decode GPU (times in s from the job's start)."""

    request: int
    ready_s: float  # its prefill ends: the cache can leave the prefill GPU
    admitted_s: float  # its reservation is made: hand-off start, or fetch start
    done_s: float  # its last token
    reserved_bytes: int  # KV of prompt + output tokens
    offloaded: bool = False
    # offloaded: requests whose end makes its room, since the GPU's previous fetch
    waits_for: tuple[int, ...] = ()


def default_hbm_kv(weight_bytes: int) -> int:
    """90 % of an 80 GB GPU less the weights it holds (may be <= 0: nothing left)."""
    return int(HBM_KV_SHARE * HBM_BYTES) - weight_bytes


def _peak(active: Sequence[list], start: float, end: float) -> int:
    """Most bytes reserved at once in [start, end) by ``active`` ([admitted, done,
    bytes, request]); reservations only begin at an admission, so the peak is
    at ``start`` or at an admission inside."""
    points = [start] + [a[0] for a in active if start < a[0] < end]
    return max(sum(a[2] for a in active if a[0] <= x < a[1]) for x in points)


def plan_admissions(job: ServingJob) -> tuple[Admission, ...]:
    """The plan of every request, in request order (see the module docstring);
    ValueError when one request's reservation exceeds ``hbm_kv`` alone."""
    requests = job.requests
    capacity = job.hbm_kv
    handoff_bps, storage_bps, latency_s = job.handoff_bps, job.storage_bps, job.net_latency_s
    free = [0.0] * job.prefill
    ready = []
    for r, req in enumerate(requests):
        p = r % job.prefill
        free[p] = max(req.arrival_s, free[p]) + job.prefill_s(req.prompt)
        ready.append(free[p])
    out: list[Admission | None] = [None] * len(requests)
    for d in range(job.decode):
        mine = range(d, len(requests), job.decode)
        batch = job.batch_on(d)
        soonest = [0.0] * len(mine)  # the earliest prefill end from here on
        low = float("inf")
        for k in reversed(range(len(mine))):
            low = min(low, ready[mine[k]])
            soonest[k] = low
        active: list[list] = []  # [admitted, done, bytes, request] not yet done
        slot_free = [0.0] * batch
        queue: list[tuple[float, float]] = []  # offloaded: (ready, admitted)
        for k, r in enumerate(mine):
            req, t = requests[r], ready[r]
            need = job.kv_bytes(req.prompt + req.output)
            if need > capacity:
                raise ValueError(
                    f"hbm_kv {capacity} B cannot hold request {r}'s reservation alone: "
                    f"{req.prompt} + {req.output} tokens x {job.kv_bytes(1)} B = {need} B")
            active = [a for a in active if a[1] > soonest[k]]
            slot = k % batch
            decode_s = req.output * job.step_s(req.prompt, batch)
            size_bits = job.kv_bytes(req.prompt) * 8
            ahead = False  # an earlier request of this GPU waits for admission at t
            for came, admitted in reversed(queue):  # admitted in order: the latest first
                if admitted <= t or came <= t:
                    ahead = admitted > t
                    break
            done = max(t + size_bits / handoff_bps + latency_s, slot_free[slot]) + decode_s
            if not ahead and _peak(active, t, done) + need <= capacity:
                out[r] = Admission(r, t, t, done, need)
            else:
                stored = t + size_bits / storage_bps + latency_s
                first = max([t] + [a for _, a in queue[-1:]])
                for at in [first] + sorted(a[1] for a in active if a[1] > first):
                    back = max(at + latency_s, stored) + size_bits / storage_bps + latency_s
                    done = max(back, slot_free[slot]) + decode_s
                    if _peak(active, at, done) + need <= capacity:
                        break
                # the ends that made room since the previous fetch's admission (that
                # fetch, before this one on the GPU's stream, waited for the earlier ones)
                waits = tuple(sorted(a[3] for a in active if first < a[1] <= at))
                out[r] = Admission(r, t, at, done, need, True, waits)
                queue.append((t, at))
            active.append([out[r].admitted_s, done, need, r])  # type: ignore[union-attr]
            slot_free[slot] = done
    return tuple(out)  # type: ignore[arg-type]
