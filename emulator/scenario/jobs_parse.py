"""From the schema-checked ``workload.jobs`` list to
:class:`~emulator.scenario.jobs_spec.JobSpec` (model, placement and traces
resolved); every error is one line naming the key.

- ``training``: ``model`` is a preset name or a shape; ``peak_tflops`` x
  ``efficiency`` (default 0.5) is the GPU's compute; ``placement``
  ``rail-aware`` (default) or ``rail-unaware`` puts tp x pp x dp ranks on
  ``gpus`` (default: every GPU) as :func:`~.jobs_graph.place` does.
- ``inference``: ``prefill`` and ``decode`` GPU pools (topology order),
  disjoint (disaggregated) or the same GPUs (colocated, :mod:`~.jobs_coloc`;
  pools that only partly overlap are an error naming ``decode``),
  ``requests`` arriving as a Poisson process of mean gap ``interval`` (seeded by the scenario's seed and the job's id; all at once
  without it), ``prompt`` and ``output`` lengths fixed or ``[min, max]``
  uniform, HBM bandwidth ``hbm_tb_per_s`` (default 3.35), ``stripe_rails``
  (default false) to spread each KV cache over the servers' NICs,
  ``max_batch`` (default 1) requests a decode GPU batches (continuous
  batching, :mod:`~.jobs_serve`), ``hbm_kv`` bytes of HBM a decode GPU has
  for KV caches (default 90 % of 80 GB less the model's weights; caches that
  do not fit go to the topology's storage nodes, :mod:`~.jobs_kv`);
- ``chakra``: ``traces`` (one ET file per rank), ranks onto GPUs by the
  ``gpus`` list (rank r on the r-th GPU, in the order written, patterns in
  topology order) or a ``mapping`` file (one GPU name per line), else the
  first GPUs of the topology; ``groups`` gives a process group's size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from emulator.scenario.chakra import ChakraError, read_trace, trace_graph
from emulator.scenario.errors import KeyPath
from emulator.scenario.jobs_graph import TrainingJob, place
from emulator.scenario.jobs_model import PRESETS, Gpu, ModelShape
from emulator.scenario.jobs_requests import RequestTraceError, read_request_trace
from emulator.scenario.jobs_serve import Request, ServingJob, poisson_requests
from emulator.scenario.jobs_spec import JobSpec
from emulator.scenario.parse import Context, Raw, _size, duration
from emulator.scenario.parse_collectives import _ordered_gpus
from emulator.scenario.spec import BEST_EFFORT_PRIORITY, PrioritySpec
from emulator.scenario.storage_traffic import storage_nic
from emulator.scenario.units import SIZE_HINT
from emulator.topology import Topology

DEFAULT_EFFICIENCY = 0.5
DEFAULT_HBM_TB_PER_S = 3.35  # H100 SXM's HBM3


def jobs(ctx: Context, raw: Sequence[Raw], priorities: PrioritySpec,
         base_dir: str | Path = ".", seed: int = 0) -> tuple[JobSpec, ...]:
    return tuple(_job(ctx, item, ["workload", "jobs", i], priorities, Path(base_dir), seed)
                 for i, item in enumerate(raw))


def _job(ctx: Context, item: Raw, path: KeyPath, priorities: PrioritySpec,
         base: Path, seed: int) -> JobSpec:
    priority = item.get("priority", priorities.roce)
    if priority not in (priorities.roce, BEST_EFFORT_PRIORITY):
        raise ctx.where.error([*path, "priority"], (
            f"{priority} is not a traffic class of this fabric; use {priorities.roce} (RoCE, "
            f"lossless) or {BEST_EFFORT_PRIORITY} (best effort)"))
    common: dict[str, Any] = {
        "id": item["id"], "kind": item["kind"], "iterations": item.get("iterations", 1),
        "start_ns": duration(ctx, item["start"], [*path, "start"]) if "start" in item else 0,
        "priority": priority, "qps": item.get("qps", 1),
        "dscp": priorities.roce_dscp if priority == priorities.roce else 0}
    if item["kind"] == "training":
        return _training(ctx, item, path, common)
    if item["kind"] == "inference":
        return _inference(ctx, item, path, common, seed, base)
    return _chakra(ctx, item, path, common, base)


def _model(ctx: Context, raw: Any, path: KeyPath) -> ModelShape:
    if isinstance(raw, str):
        if raw not in PRESETS:
            raise ctx.where.error(path, f"{raw!r} is not a model preset; use one of "
                                        f"{', '.join(PRESETS)} or give the shape")
        return PRESETS[raw]
    missing = [k for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
               if k not in raw]
    if missing:
        raise ctx.where.error([*path, missing[0]], "missing: a model shape gives layers, "
                                                   "hidden, heads, kv_heads, ffn and vocab")
    try:
        return ModelShape(**raw)
    except ValueError as exc:
        key = str(exc).split()[0]
        raise ctx.where.error([*path, key] if key in raw else path, str(exc)) from None


def _training(ctx: Context, item: Raw, path: KeyPath, common: dict[str, Any]) -> JobSpec:
    model = _model(ctx, item["model"], [*path, "model"])
    gpu = Gpu(item["peak_tflops"] * 1e12, item.get("efficiency", DEFAULT_EFFICIENCY))
    keys = {k: item[k] for k in ("seq", "micro_batch", "global_batch", "tp", "pp", "dp", "ep",
                                 "overlap_dp") if k in item}
    if "bucket" in item:
        keys["bucket_bytes"] = _size(ctx, item["bucket"], [*path, "bucket"], positive=True)
    try:
        job = TrainingJob(model=model, gpu=gpu, **keys)
    except ValueError as exc:
        key = str(exc).split()[0]
        raise ctx.where.error([*path, key if key in item else "model"], str(exc)) from None
    among = ctx.gpus(item["gpus"], [*path, "gpus"])[0] if "gpus" in item else None
    placement = item.get("placement", "rail-aware")
    try:
        gpus = place(job, ctx.topology, placement == "rail-aware", among)
    except ValueError as exc:
        raise ctx.where.error([*path, "gpus" if among else "tp"], str(exc)) from None
    return JobSpec(**common, gpus=tuple(gpus), placement=placement, training=job)


def _length(ctx: Context, raw: Any, path: KeyPath) -> tuple[int, int]:
    low, high = (raw, raw) if isinstance(raw, int) else raw
    if low > high:
        raise ctx.where.error(path, f"[{low}, {high}]: the minimum is above the maximum")
    return low, high


def _requests(ctx: Context, item: Raw, path: KeyPath, seed: int,
              base: Path) -> tuple[Request, ...]:
    """The job's requests: from its ``arrivals`` trace (the first ``requests``
    of it when given), or Poisson with lengths drawn from ``prompt``/``output``."""
    if "arrivals" in item:
        for key in ("interval", "prompt", "output"):
            if key in item:
                raise ctx.where.error([*path, key], f"'{key}' comes from the 'arrivals' trace; "
                                                    "give one or the other")
        try:
            return read_request_trace(base / item["arrivals"], item.get("requests"))
        except RequestTraceError as exc:
            raise ctx.where.error([*path, "arrivals"], str(exc)) from None
    missing = [key for key in ("requests", "prompt", "output") if key not in item]
    if missing:
        raise ctx.where.error(path, f"an inference job needs {', '.join(missing)} (or an "
                                    "'arrivals' trace file of requests)")
    gap_ns = duration(ctx, item["interval"], [*path, "interval"]) if "interval" in item else 0
    return poisson_requests(item["requests"], gap_ns / 1e9,
                            _length(ctx, item["prompt"], [*path, "prompt"]),
                            _length(ctx, item["output"], [*path, "output"]),
                            f"{seed}:{item['id']}")


def _inference(ctx: Context, item: Raw, path: KeyPath, common: dict[str, Any],
               seed: int, base: Path = Path(".")) -> JobSpec:
    model = _model(ctx, item["model"], [*path, "model"])
    prefill = ctx.gpus(item["prefill"], [*path, "prefill"])[0]
    decode = ctx.gpus(item["decode"], [*path, "decode"])[0]
    colocated = set(prefill) == set(decode)
    shared = sorted(set(prefill) & set(decode))
    if shared and not colocated:
        only = sorted(set(prefill) ^ set(decode))[0]
        raise ctx.where.error([*path, "decode"], (
            f"GPU {shared[0]} is in both pools but {only} only in "
            f"{'prefill' if only in prefill else 'decode'}: give the same GPUs to both "
            f"(colocated: each prefills and decodes its own requests) or disjoint pools "
            f"(disaggregated)"))
    if colocated and item.get("stripe_rails", False):
        raise ctx.where.error([*path, "stripe_rails"], (
            "colocated pools hand no KV cache over the fabric (it stays on the GPU that "
            "prefilled it): nothing to stripe; drop stripe_rails or make the pools disjoint"))
    requests = _requests(ctx, item, path, seed, base)
    hbm_kv = _size(ctx, item["hbm_kv"], [*path, "hbm_kv"], positive=True,
                   hint=f"{SIZE_HINT}; hbm_kv is the HBM a decode GPU has for KV caches"
                   ) if "hbm_kv" in item else None
    gpus = tuple(prefill if colocated else prefill + decode)
    places = ()
    if item.get("stripe_rails", False):
        by_name = {g.name: g for g in ctx.topology.gpus}
        places = tuple((by_name[g].server, by_name[g].index) for g in gpus)
    storage: tuple[str, ...] = ()
    handoff_bps, storage_bps, latency_s = 100e9, 100e9, 5e-6  # colocated: nothing moves
    if not colocated:
        storage = _storage_nics(ctx.topology, prefill)
        handoff_bps, storage_bps, latency_s = _estimates(ctx.topology, prefill, decode,
                                                         places, storage)
    try:
        serving = ServingJob(model, Gpu(item["peak_tflops"] * 1e12,
                                        item.get("efficiency", DEFAULT_EFFICIENCY)),
                             item.get("hbm_tb_per_s", DEFAULT_HBM_TB_PER_S) * 1e12,
                             len(prefill), len(decode), requests, item.get("max_batch", 1),
                             hbm_kv, handoff_bps, storage_bps, latency_s, colocated)
        offloaded = sum(a.offloaded for a in serving.admissions)
    except ValueError as exc:  # hbm_kv: too small for a request, or the weights fill it
        key = str(exc).split()[0]
        raise ctx.where.error([*path, key] if key in item or key == "hbm_kv" else path,
                              str(exc)) from None
    if offloaded and not storage:
        raise ctx.where.error([*path, "hbm_kv"], (
            f"{offloaded} of {len(requests)} KV caches do not fit hbm_kv {serving.hbm_kv} B "
            f"beside their decode GPU's batch and must be offloaded, but topology "
            f"{ctx.topology.name} has no storage nodes; give the topology a storage key "
            f"(README \"Topologies\") or raise hbm_kv"))
    return JobSpec(**common, gpus=gpus, placement="as-listed", serving=serving,
                   places=places, storage=storage if offloaded else ())


def _storage_nics(topology: Topology, prefill: Sequence[str]) -> tuple[str, ...]:
    """NICs of the storage nodes of the prefill GPUs' sites, taken in turn by
    offloaded caches: every node's first NIC, then every node's second, ..."""
    sites = {topology.host(topology.gpu(g).server).site or 0 for g in prefill}
    nodes = [h for h in topology.others if h.role == "storage" and (h.site or 0) in sites]
    width = max((len(h.nics) for h in nodes), default=0)
    return tuple(h.nics[i] for i in range(width) for h in nodes if i < len(h.nics))


def _estimates(topology: Topology, prefill: Sequence[str], decode: Sequence[str],
               places: Sequence[tuple[str, int]], storage: Sequence[str]
               ) -> tuple[float, float, float]:
    """The rates of a hand-off and of an offload or fetch, and a latency (four
    link delays), that the plan of admissions assumes (:mod:`~.jobs_kv`)."""
    link = {l.gpu: l for l in topology.links if l.gpu and l.network != "scale-up"}
    gpu = link[prefill[0]]
    stripes = 1
    if places:
        servers = [place[0] for place in places]
        stripes = min(servers.count(server) for server in servers)
    ends = [link[storage_nic(topology, prefill[0])], link[storage_nic(topology, decode[0])]]
    ends += [link[nic] for nic in storage[:1]]
    storage_bps = min(end.rate_bps for end in ends)
    latency_s = 4 * max(end.delay_ns for end in [gpu, *ends]) / 1e9
    return gpu.rate_bps * stripes, storage_bps, latency_s


def _chakra(ctx: Context, item: Raw, path: KeyPath, common: dict[str, Any],
            base: Path) -> JobSpec:
    files = [base / name for name in item["traces"]]
    ranks = []
    for i, file in enumerate(files):
        if not file.is_file():
            raise ctx.where.error([*path, "traces", i], f"{item['traces'][i]!r} does not exist "
                                                        f"(looked for {file})")
        try:
            ranks.append(read_trace(file)[1])
        except ChakraError as exc:
            raise ctx.where.error([*path, "traces", i], str(exc)) from None
    if "gpus" in item and "mapping" in item:
        raise ctx.where.error([*path, "mapping"], "give the ranks' GPUs by 'gpus' or by "
                                                  "'mapping', not both")
    if "mapping" in item:
        gpus = _mapping(ctx, base / item["mapping"], [*path, "mapping"])
    elif "gpus" in item:
        gpus = _ordered_gpus(ctx, item["gpus"], [*path, "gpus"])
    else:
        gpus = [g.name for g in ctx.topology.gpus]
    if len(gpus) < len(ranks):
        raise ctx.where.error([*path, "mapping" if "mapping" in item else "gpus"], (
            f"{len(ranks)} ranks need {len(ranks)} GPUs, {len(gpus)} given"))
    try:
        graph = trace_graph(ranks, item.get("groups"))
    except ChakraError as exc:
        raise ctx.where.error([*path, "traces"], str(exc)) from None
    return JobSpec(**common, gpus=tuple(gpus[:len(ranks)]), placement="as-listed",
                   trace=tuple(graph), traces=tuple(str(f) for f in files))


def _mapping(ctx: Context, file: Path, path: KeyPath) -> list[str]:
    if not file.is_file():
        raise ctx.where.error(path, f"{file} does not exist: give a file with one GPU name "
                                    "per line, rank 0 first")
    out = []
    for number, line in enumerate(file.read_text().splitlines(), 1):
        name = line.split("#")[0].strip()
        if not name:
            continue
        if name in out:
            raise ctx.where.error(path, f"{file}:{number}: GPU {name} is a rank twice")
        out.append(ctx.gpu(name, path))
    return out
