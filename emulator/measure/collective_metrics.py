"""Per-collective results from the NIC agents' records: completion time,
algorithm and bus bandwidth (nccl-tests definitions), per-step times, and
kv-handoff request latencies.

The k-th op of a collective flow is the k-th message the flow's receiver
records (its work graph posts a QP's messages in order and RC delivers
them in order), so each op's **arrival** is the ``last_at`` of that
record. Then, times in seconds since the run's common start:

- ``start_s``: the collective's start; ``end_s``: the last arrival;
  ``time_s`` = end − start; ``completed``: every op arrived;
- ``algbw_bps`` = size × 8 / time; ``busbw_bps`` = algbw × factor
  (see :data:`~emulator.scenario.collectives.BUSBW_FACTOR`);
- ``steps``: for step s, ``end_s`` = the last arrival of its ops and
  ``time_s`` = that minus the previous step's end (the start for step 0):
  ring steps, pipeline hops (stage s → s+1), kv-handoff requests (then
  ``time_s`` is the request's latency, arrival of its last byte minus its
  arrival time);
- kv-handoff: ``latency_p50_s``, ``latency_p99_s``, ``latency_max_s``;
- ``fabric_bytes``: payload bytes its flows carried over the fabric; on a
  topology with ``scale_up`` also ``scale_up_bytes`` (those its flows
  inside a scale-up domain carried, not in ``fabric_bytes``), ``algorithm``
  and, for a hierarchical all-reduce, ``groups``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from emulator.measure.results import time_digits
from emulator.scenario.collectives import BUSBW_FACTOR, CollectivePlan

if TYPE_CHECKING:
    from emulator.run.qps import QpPlan  # the plan a run made; only read here


def arrivals(qps: Sequence[QpPlan], stats: Mapping[str, Mapping[str, Any] | None],
             flow_ids: set[str]) -> dict[str, list[float]]:
    """Flow id -> arrival times (Unix) of its ops, in order, at its receiver:
    an op striped over several QPs has arrived when its last stripe has."""
    # by the receiver's QP number (a flow inside one server numbers its two ends apart)
    plans = {qp.responder_qpn: qp for qp in qps if qp.flow in flow_ids}
    per_qp: dict[int, list[float]] = {qpn: [] for qpn in plans}
    by_server: dict[str, set[int]] = {}
    for qp in plans.values():
        by_server.setdefault(qp.dst_server, set()).add(qp.responder_qpn)
    for server, qpns in by_server.items():
        snapshot = stats.get(server) or {}
        for record in (snapshot.get("messages") or {}).get("received", []):
            qpn = record.get("qpn")
            if qpn in qpns and record.get("last_at") is not None:
                per_qp[qpn].append(record["last_at"])
    stripes: dict[str, list[list[float]]] = {flow: [] for flow in flow_ids}
    for qpn, qp in sorted(plans.items()):
        stripes[qp.flow].append(per_qp[qpn])
    return {flow: [max(times) for times in zip(*lists)] if lists else []
            for flow, lists in stripes.items()}


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))
    return ordered[rank]


def collective_result(plan: CollectivePlan, arrived: Mapping[str, list[float]],
                      start_unix: float) -> dict[str, Any]:
    d = time_digits(start_unix)
    spec = plan.spec
    start_s = spec.start_ns / 1e9
    step_end: dict[int, float] = {}
    missing = 0
    fabric_bytes = scale_up_bytes = 0
    latencies: list[float] = []
    for op in plan.ops:
        times = arrived.get(op.flow, [])
        if op.index >= len(times):
            missing += 1
            continue
        t = times[op.index] - start_unix
        if op.flow in plan.scale_up_flows:
            scale_up_bytes += op.size_bytes
        else:
            fabric_bytes += op.size_bytes
        step_end[op.step] = max(step_end.get(op.step, t), t)
        if spec.kind == "kv-handoff":
            latencies.append(t - (start_s + plan.request_at_ns[op.step] / 1e9))
    completed = missing == 0
    end_s = max(step_end.values()) if step_end else None
    time_s = None if not completed or end_s is None else end_s - start_s
    factor = BUSBW_FACTOR.get(spec.kind)
    algbw = None
    if time_s and spec.kind != "kv-handoff":
        algbw = spec.size_bytes * 8 / time_s
        if spec.kind == "pipeline":
            algbw *= spec.microbatches
    steps = []
    previous = start_s
    for step in sorted(step_end):
        if spec.kind == "kv-handoff":
            at = start_s + plan.request_at_ns[step] / 1e9
            steps.append({"step": step, "end_s": round(step_end[step], d),
                          "time_s": round(step_end[step] - at, d)})
            continue
        steps.append({"step": step, "end_s": round(step_end[step], d),
                      "time_s": round(step_end[step] - previous, d)})
        previous = step_end[step]
    result: dict[str, Any] = {
        "id": spec.id, "kind": spec.kind, "ranks": plan.ranks, "size_bytes": spec.size_bytes,
        "placement": spec.placement, "channels": max(1, spec.channels), "chunks": spec.chunks,
        "pxn": spec.pxn, "flows": len(plan.flows), "ops": len(plan.ops),
        "ops_done": len(plan.ops) - missing, "local_hops": plan.local_hops,
        "completed": completed, "start_s": round(start_s, d),
        "end_s": None if end_s is None else round(end_s, d),
        "time_s": None if time_s is None else round(time_s, d),
        "algbw_bps": None if algbw is None else round(algbw, 1),
        "busbw_bps": None if algbw is None or factor is None
        else round(algbw * factor(plan.ranks), 1),
        "fabric_bytes": fabric_bytes, "steps": steps,
    }
    if plan.scale_up_flows or spec.algorithm != "ring":
        result.update(scale_up_bytes=scale_up_bytes, algorithm=spec.algorithm)
        if plan.groups:
            result["groups"] = plan.groups
    if spec.kind == "kv-handoff":
        result.update(requests=spec.requests,
                      latency_p50_s=_round(_percentile(latencies, 0.5), d),
                      latency_p99_s=_round(_percentile(latencies, 0.99), d),
                      latency_max_s=_round(max(latencies) if latencies else None, d))
    return result


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def collective_results(plans: Sequence[CollectivePlan], qps: Sequence[QpPlan],
                       stats: Mapping[str, Mapping[str, Any] | None],
                       start_unix: float) -> list[dict[str, Any]]:
    flow_ids = {flow.id for plan in plans for flow in plan.flows}
    arrived = arrivals(qps, stats, flow_ids)
    return [collective_result(plan, arrived, start_unix) for plan in plans]
