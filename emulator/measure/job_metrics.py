"""Per-job results from the NIC agents' work-graph records: the ``jobs`` block
of results.json and a timeline picture per job.

Each node of a job's graph started and ended where its plan says
(:attr:`~emulator.scenario.jobs_plan.JobPlan.spans`: when a work-graph
entry became ready or was done, Unix times in the agents' ``graph``
records). Times in seconds from the run's start. Per iteration k (the
nodes ``i{k}/...``), from the end of iteration k-1 (the job's start for
the first) to the end of its last node:

- ``time_s``, ``compute_s`` (the busiest GPU's compute), ``exposed_s`` by
  kind (TP, PP, DP, EP: communication on the critical path while its GPU
  computed nothing), and the ``critical_path``: the communication it
  waited on, with the links its flows may take (every equal-cost path);
  computed by :func:`~emulator.scenario.jobs_graph.analyse` on the measured
  times, a collective's members waiting for each other (they finish
  together);
- over iterations: ``iteration_mean_s``, ``iteration_p99_s``;
- ``collectives``: every collective instance, its time (first member's
  join to last member's end), algbw = size x 8 / time and busbw (nccl-tests
  factors: all-reduce 2(n-1)/n, all-to-all (n-1)/n); ``transfers``: PP
  sends, time from post to arrival;
- ``serving`` (inference jobs): requests completed, TTFT, TPOT and KV
  hand-off time (p50, p99, mean), the mean share of TTFT spent moving KV
  (hand-off, or offload and fetch; 0 colocated, where ``kv_handoff_*`` are
  None: the cache stays on its GPU), ``mode`` (``colocated`` or
  ``disaggregated``); ``kv_offload``: the caches offloaded to
  storage (count, bytes), offload time (post to arrival at storage), fetch
  time (the decode GPU's read request to the cache's arrival), the wait for
  room in HBM before it (prefill end to read request), the mean share of
  TTFT the fetch took;
- ``timeline``: the picture (:func:`~emulator.measure.job_timeline.plot_step`)
  of the whole run, one row per GPU, written as ``job-{id}.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from emulator.measure.job_timeline import plot_step
from emulator.measure.results import time_digits
from emulator.scenario.jobs_graph import COMM_KINDS, analyse, joins, predecessors
from emulator.topology import Topology, paths

if TYPE_CHECKING:
    from emulator.scenario.jobs_plan import JobPlan

BUSBW_FACTOR = {"dp": lambda n: 2 * (n - 1) / n, "tp": lambda n: 2 * (n - 1) / n,
                "ep": lambda n: (n - 1) / n}


def _records(stats: Mapping[str, Mapping[str, Any] | None]) -> dict[str, dict[str, Any]]:
    out = {}
    for snapshot in stats.values():
        for record in (snapshot or {}).get("graph", []):
            if record.get("tag"):
                out[record["tag"]] = record
    return out


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def measured_times(plan: JobPlan, stats: Mapping[str, Mapping[str, Any] | None],
                   start_unix: float) -> tuple[dict[str, float], dict[str, float]]:
    """Start and end (s from the run's start) of every node that ran to its end."""
    records = _records(stats)
    start, end = {}, {}

    def read(ref: tuple[str, str]) -> float | None:
        field, tag = ref
        record = records.get(tag)
        value = None if record is None else record.get(f"{field}_at")
        return None if value is None else value - start_unix

    for nid, (a, b) in plan.spans.items():
        s, e = read(a), read(b)
        if s is not None and e is not None:
            start[nid], end[nid] = s, max(s, e)
    return start, end


def _links(topology: Topology, flows: Mapping[str, Any], ids: Sequence[str]) -> list[str]:
    out: dict[str, None] = {}
    for fid in ids:
        flow = flows[fid]
        if topology.same_domain(flow.src, flow.dst):
            # inside a scale-up domain: over its switch (built on sim, in the
            # agent live), not the backend's paths
            switch = topology.domain_of(flow.src).name  # type: ignore[union-attr]
            out[f"{flow.src}--{switch}"] = out[f"{switch}--{flow.dst}"] = None
            continue
        for path in paths(topology, flow.src, flow.dst):
            hops = [flow.src, *path, flow.dst]
            for a, b in zip(hops, hops[1:]):
                out[f"{a}--{b}"] = None
    return list(out)


def job_result(plan: JobPlan, stats: Mapping[str, Mapping[str, Any] | None],
               start_unix: float, topology: Topology, out: Path | None = None,
               clock: str = "sim") -> dict[str, Any]:
    spec = plan.spec
    d = time_digits(start_unix)
    nodes = list(plan.nodes)
    by_id = {n.id: n for n in nodes}
    preds = predecessors(nodes)
    for nid, extra in joins(nodes, preds).items():
        preds[nid] = preds[nid] + [p for p in extra if p not in preds[nid]]
    start, end = measured_times(plan, stats, start_unix)
    job_start = spec.start_ns / 1e9
    flows = {f.id: f for f in plan.flows}
    iterations = []
    t0 = job_start
    for k in range(spec.iterations):
        mine = [n for n in nodes if n.id.startswith(f"i{k}/")]
        if not mine or any(n.id not in end for n in mine):
            break
        ids = {n.id for n in mine}
        result = analyse(mine, {n: [p for p in preds[n] if p in ids] for n in ids},
                         {n: start[n] for n in ids}, {n: end[n] for n in ids}, t0)
        waited = []
        for nid in result.critical_path:
            node = by_id[nid]
            if node.kind == "compute" or end[nid] <= start[nid]:
                continue
            waited.append({"node": nid, "kind": node.kind, "rank": node.rank,
                           "gpu": (spec.gpus + spec.storage)[node.rank],
                           "start_s": round(start[nid], d),
                           "end_s": round(end[nid], d),
                           "links": _links(topology, flows, plan.node_flows.get(nid, ()))})
        iterations.append({
            "index": k, "start_s": round(t0, d), "end_s": round(t0 + result.iteration_s, d),
            "time_s": round(result.iteration_s, d), "compute_s": round(result.compute_s, d),
            "exposed_s": {kind: round(result.exposed_s[kind], d) for kind in COMM_KINDS},
            "critical_path_nodes": len(result.critical_path), "critical_path": waited})
        t0 += result.iteration_s
    times = [it["time_s"] for it in iterations]
    members: dict[str, list[str]] = {}
    for n in nodes:
        if n.instance and n.kind in BUSBW_FACTOR:
            members.setdefault(n.instance, []).append(n.id)
    # inside a server (the scale-up domain, instantaneous) a collective moves nothing here
    members = {k: v for k, v in members.items()
               if any(plan.node_flows.get(i) for i in v)}
    collectives = []
    for instance, ids in members.items():
        node = by_id[ids[0]]
        done = all(i in end for i in ids)
        time_s = max(end[i] for i in ids) - min(start[i] for i in ids) if done else None
        algbw = node.size_bytes * 8 / time_s if time_s else None
        collectives.append({
            "instance": instance, "kind": node.kind, "ranks": len(ids),
            "size_bytes": node.size_bytes, "completed": done,
            "time_s": None if time_s is None else round(time_s, d),
            "algbw_bps": None if algbw is None else round(algbw, 1),
            "busbw_bps": None if algbw is None
            else round(algbw * BUSBW_FACTOR[node.kind](len(ids)), 1)})
    transfers = [end[n.id] - start[n.id] for n in nodes
                 if n.kind == "pp" and not n.instance and n.id in end]
    result_out: dict[str, Any] = {
        "id": spec.id, "kind": spec.kind, "clock": clock, "ranks": len(spec.gpus),
        "gpus": list(spec.gpus), "placement": spec.placement,
        "iterations_planned": spec.iterations, "iterations_done": len(iterations),
        "completed": len(iterations) == spec.iterations,
        "flows": len(plan.flows), "nodes": len(nodes),
        "iteration_mean_s": round(sum(times) / len(times), d) if times else None,
        "iteration_p99_s": _percentile(times, 0.99),
        "compute_mean_s": round(sum(it["compute_s"] for it in iterations) / len(times), d)
        if times else None,
        "exposed_mean_s": {kind: round(sum(it["exposed_s"][kind] for it in iterations)
                                       / len(times), d) if times else None
                           for kind in COMM_KINDS},
        "iterations": iterations, "collectives": collectives,
        "transfers": {"count": len(transfers),
                      "mean_s": round(sum(transfers) / len(transfers), d) if transfers
                      else None,
                      "max_s": round(max(transfers), d) if transfers else None}}
    if spec.serving is not None:
        result_out["serving"] = _serving(spec, start, end, job_start, d)
    if out is not None and start:
        done_nodes = [n for n in nodes if n.id in end]
        whole = analyse(done_nodes, {n.id: [p for p in preds[n.id] if p in end]
                                     for n in done_nodes},
                        {n.id: start[n.id] - job_start for n in done_nodes},
                        {n.id: end[n.id] - job_start for n in done_nodes}, 0.0)
        name = f"job-{spec.id}.png"
        plot_step(done_nodes, whole, out / name,
                  title=f"[{clock}] job {spec.id}, {len(iterations)} iteration(s):",
                  labels={len(spec.gpus) + i: nic for i, nic in enumerate(spec.storage)})
        result_out["timeline"] = name
    return result_out


def _serving(spec: Any, start: Mapping[str, float], end: Mapping[str, float],
             job_start: float, d: int) -> dict[str, Any]:
    """TTFT, TPOT and KV hand-off times of an inference job's requests; the
    caches offloaded to storage (``kv_offload``)."""
    job = spec.serving
    ttft, tpot, kv, share = [], [], [], []
    offload, fetch, wait, fetch_share = [], [], [], []
    stripes: dict[str, list[str]] = {}  # request prefix -> its KV transfer(s)
    for nid in end:
        head, _, last = nid.rpartition("/")
        if last.startswith("kv"):
            stripes.setdefault(head + "/", []).append(nid)
    for r, req in enumerate(job.requests):
        pre = f"i0/r{r}/"
        if pre + "rest" not in end:
            continue
        arrival = job_start + req.arrival_s * spec.compute_scale
        first = end[pre + "first"] - arrival
        ttft.append(first)
        if job.admissions[r].offloaded:
            # offload: from its post to its arrival at storage; fetch: from the decode
            # GPU's read request to the cache's arrival (waiting for the offload to land
            # if the room freed first); before it the request waited for room
            sent = end[pre + "offload"] - start[pre + "offload"]
            got = end[pre + "fetch"] - start[pre + "fetch-req"]
            offload.append(sent)
            fetch.append(got)
            wait.append(start[pre + "fetch-req"] - end[pre + "prefill"])
            fetch_share.append(got / first if first > 0 else 0.0)
            moving = sent + got
        elif job.colocated:
            moving = 0.0  # the cache stays on the GPU that prefilled it
        else:
            moving = (max(end[x] for x in stripes[pre]) - min(start[x] for x in stripes[pre]))
            kv.append(moving)
        share.append(moving / first if first > 0 else 0.0)
        if req.output > 1:
            tpot.append((end[pre + "rest"] - end[pre + "first"]) / (req.output - 1))

    def stats(values: list[float], name: str) -> dict[str, Any]:
        if not values:
            return {f"{name}_p50_s": None, f"{name}_p99_s": None, f"{name}_mean_s": None}
        return {f"{name}_p50_s": round(_percentile(values, 0.5) or 0.0, d),
                f"{name}_p99_s": round(_percentile(values, 0.99) or 0.0, d),
                f"{name}_mean_s": round(sum(values) / len(values), d)}

    planned = [a for a in job.admissions if a.offloaded]
    return {"requests": len(job.requests), "completed": len(ttft),
            "mode": "colocated" if job.colocated else "disaggregated",
            **stats(ttft, "ttft"), **stats(tpot, "tpot"), **stats(kv, "kv_handoff"),
            "kv_share_of_ttft": round(sum(share) / len(share), 4) if share else None,
            "kv_bytes_mean": round(sum(job.kv_bytes(q.prompt) for q in job.requests)
                                   / len(job.requests)),
            "kv_offload": {
                "hbm_kv_bytes": job.hbm_kv,
                "offloaded": len(planned), "fetched": len(fetch),
                "offloaded_bytes": sum(job.kv_bytes(job.requests[a.request].prompt)
                                       for a in planned),
                **stats(offload, "offload"), **stats(fetch, "fetch"),
                **stats(wait, "hbm_wait"),
                "fetch_share_of_ttft": round(sum(fetch_share) / len(fetch_share), 4)
                if fetch_share else None}}


def job_results(plans: Sequence[JobPlan], stats: Mapping[str, Mapping[str, Any] | None],
                start_unix: float, out: Path | None, topology: Topology, *, clock: str = "sim",
                say: Callable[[str], None] = lambda _m: None) -> list[dict[str, Any]]:
    results = []
    for plan in plans:
        try:
            results.append(job_result(plan, stats, start_unix, topology, out, clock))
            done = results[-1]
            if not done["completed"]:
                say(f"job {plan.spec.id}: {done['iterations_done']} of "
                    f"{done['iterations_planned']} iteration(s) done when the run ended; "
                    "a longer duration lets it finish")
        except ValueError as exc:  # a picture or analysis must not lose the run
            say(f"job {plan.spec.id}: {exc}")
            results.append({"id": plan.spec.id, "error": str(exc)})
    return results
