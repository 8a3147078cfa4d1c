"""A job of a scenario's ``workload.jobs``, resolved: its step graph on every
GPU and the GPU of each rank (parsed by :mod:`.jobs_parse`, planned into
flows and agent work by :mod:`.jobs_plan`).

Kinds: ``training`` (a :class:`~.jobs_graph.TrainingJob`, expanded by
:func:`~.jobs_graph.world_step`), ``inference`` (a
:class:`~.jobs_serve.ServingJob`: prefill GPUs first, then decode GPUs, by
:func:`~.jobs_serve.serve_graph`; colocated: the pool's GPUs once; one "iteration"; the storage nodes that
take offloaded KV caches are ranks after the GPUs) and ``chakra`` (Chakra ET traces, one per
rank, made a graph by :func:`~.chakra.trace_graph`; ``iterations`` repeats
the traced step, each repeat's first nodes waiting for the whole step before).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from emulator.scenario.jobs_graph import Node, TrainingJob, world_step
from emulator.scenario.jobs_serve import ServingJob, serve_graph


@dataclass(frozen=True)
class JobSpec:
    """One job: ``gpus[r]`` is the GPU of rank r."""

    id: str
    kind: str
    gpus: tuple[str, ...]
    iterations: int = 1
    start_ns: int = 0
    placement: str = "rail-aware"
    training: TrainingJob | None = None
    serving: ServingJob | None = None
    trace: tuple[Node, ...] = field(default=(), repr=False)  # chakra: one step, every rank
    traces: tuple[str, ...] = ()  # chakra: the files read
    priority: int = 3
    dscp: int = 26
    qps: int = 1
    # inference striped over rails: (server, GPU index) of each rank
    places: tuple[tuple[str, int], ...] = ()
    # inference: storage-node NICs that take offloaded KV caches, ranks len(gpus)...
    storage: tuple[str, ...] = ()
    # a live run slowed time_scale times runs the GPUs' compute that much slower too
    compute_scale: float = 1.0

    def world(self) -> list[Node]:
        """The graph of every rank over all iterations (ids prefixed ``i{k}/``)."""
        if self.training is not None or self.serving is not None:
            nodes = world_step(self.training, self.iterations) if self.training is not None \
                else serve_graph(self.serving, self.places,  # type: ignore[arg-type]
                                 len(self.storage))
            if self.compute_scale == 1:
                return nodes
            return [replace(n, duration_s=n.duration_s * self.compute_scale,
                            release_s=n.release_s * self.compute_scale) for n in nodes]
        out: list[Node] = []
        needed = {d for node in self.trace for d in node.deps}
        sinks = [node.id for node in self.trace if node.id not in needed]
        for k in range(self.iterations):
            for node in self.trace:
                deps = [f"i{k}/{d}" for d in node.deps]
                if k and not node.deps:  # a root of the step: after the whole previous step
                    deps += [f"i{k - 1}/{s}" for s in sinks]
                out.append(Node(f"i{k}/{node.id}", node.kind, f"i{k}/{node.stream}",
                                tuple(deps), node.duration_s * self.compute_scale,
                                node.size_bytes, node.group,
                                node.rank, node.peer,
                                f"i{k}/{node.instance}" if node.instance else ""))
        return out

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "kind": self.kind, "gpus": list(self.gpus),
                                "iterations": self.iterations, "start_ns": self.start_ns,
                                "placement": self.placement, "priority": self.priority,
                                "qps": self.qps}
        if self.training is not None:
            t = self.training
            data["training"] = {
                "model": vars(t.model).copy(), "gpu": vars(t.gpu).copy(), "seq": t.seq,
                "micro_batch": t.micro_batch, "global_batch": t.global_batch, "tp": t.tp,
                "pp": t.pp, "dp": t.dp, "ep": t.ep, "bucket_bytes": t.bucket_bytes,
                "overlap_dp": t.overlap_dp, "micro_batches": t.micro_batches}
        elif self.serving is not None:
            v = self.serving
            data["inference"] = {
                "model": vars(v.model).copy(), "gpu": vars(v.gpu).copy(),
                "hbm_bytes_per_s": v.hbm_bytes_per_s, "prefill": v.prefill, "decode": v.decode,
                "requests": [vars(r).copy() for r in v.requests], "max_batch": v.max_batch,
                "hbm_kv_bytes": v.hbm_kv, "storage": list(self.storage),
                "colocated": v.colocated}
        else:
            data["traces"] = list(self.traces)
        return data
