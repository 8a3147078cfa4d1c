"""From the schema-checked ``workload.collectives`` list to
:class:`~emulator.scenario.spec.CollectiveSpec` (ranks resolved).

Ranks of ring kinds (``all-reduce``, ``all-gather``, ``reduce-scatter``)
and of ``pipeline`` come from one of

- ``gpus``: GPU names and patterns, in the order written (a pattern's
  matches in topology order); ``channels: k`` runs k rings over them;
- ``servers``: server names and patterns, one rank per server, in the order
  written; the GPU of server number p (0, 1, ... in that order) on ring c
  is local GPU ``(rail + c) mod G`` with ``placement: rail-aligned`` (every
  ring keeps to one rail, as a rail-aware scheduler and NCCL's rings do),
  ``(rail + c + p) mod G`` with ``rail-unaware`` (a scheduler that ignores
  rails: consecutive ranks sit on different rails).

``all-to-all`` takes ``gpus`` (topology order) or ``servers`` (all their
GPUs); ``kv-handoff`` takes ``prefill`` and ``decode`` GPU lists.
"""

from __future__ import annotations

from typing import Any, Sequence

from emulator.scenario.errors import KeyPath
from emulator.scenario.names import is_pattern
from emulator.scenario.parse import Context, Raw, _size, duration
from emulator.scenario.spec import BEST_EFFORT_PRIORITY, CollectiveSpec, PrioritySpec

RING_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "send-recv")


def collectives(ctx: Context, raw: Sequence[Raw],
                priorities: PrioritySpec) -> tuple[CollectiveSpec, ...]:
    found = []
    for index, item in enumerate(raw):
        found.append(_collective(ctx, item, ["workload", "collectives", index], priorities))
    return tuple(found)


def _collective(ctx: Context, item: Raw, path: KeyPath,
                priorities: PrioritySpec) -> CollectiveSpec:
    kind = item["kind"]
    priority = item.get("priority", priorities.roce)
    if priority not in (priorities.roce, BEST_EFFORT_PRIORITY):
        raise ctx.where.error([*path, "priority"], (
            f"{priority} is not a traffic class of this fabric; use {priorities.roce} (RoCE, "
            f"lossless) or {BEST_EFFORT_PRIORITY} (best effort)"))
    parts: dict[str, Any] = {
        "kind": kind, "id": item["id"],
        "size_bytes": _size(ctx, item["size"], [*path, "size"], positive=True),
        "start_ns": duration(ctx, item["start"], [*path, "start"]) if "start" in item else 0,
        "priority": priority,
        "dscp": priorities.roce_dscp if priority == priorities.roce else 0,
        "op": item.get("op", "write"),
        "pxn": item.get("pxn", False),
        "chunks": item.get("chunks", 1),
        "qps": item.get("qps", 1),
    }
    if kind in RING_KINDS or kind == "pipeline":
        rings, placement = _ring_ranks(ctx, item, path,
                                       1 if kind == "pipeline" else item.get("channels", 1))
        parts.update(rings=rings, placement=placement)
        if "algorithm" in item:
            parts["algorithm"] = item["algorithm"]
        if kind == "pipeline":
            parts["microbatches"] = item.get("microbatches", 1)
            if "compute" in item:
                parts["compute_ns"] = duration(ctx, item["compute"], [*path, "compute"])
    elif kind == "all-to-all":
        parts["rings"] = (_all_ranks(ctx, item, path),)
    else:  # kv-handoff
        parts["prefill"] = tuple(ctx.gpus(item["prefill"], [*path, "prefill"])[0])
        parts["decode"] = tuple(ctx.gpus(item["decode"], [*path, "decode"])[0])
        parts["requests"] = item["requests"]
        if "interval" in item:
            parts["interval_ns"] = duration(ctx, item["interval"], [*path, "interval"])
    return CollectiveSpec(**parts)


def _ring_ranks(ctx: Context, item: Raw, path: KeyPath, channels: int
                ) -> tuple[tuple[tuple[str, ...], ...], str]:
    if ("gpus" in item) == ("servers" in item):
        raise ctx.where.error(path, "name the ranks with either 'gpus' (in ring order) or "
                                    "'servers' (one rank per server, GPU chosen by 'placement')")
    if "gpus" in item:
        for key in ("placement", "rail"):
            if key in item:
                raise ctx.where.error([*path, key], f"'{key}' goes with 'servers'; with 'gpus' "
                                                    "the ranks are the GPUs as listed")
        ring = tuple(_ordered_gpus(ctx, item["gpus"], [*path, "gpus"]))
        _two_ranks(ctx, ring, [*path, "gpus"])
        return (ring,) * channels, "as-listed"
    servers = _ordered_servers(ctx, item["servers"], [*path, "servers"])
    _two_ranks(ctx, servers, [*path, "servers"])
    placement = item.get("placement", "rail-aligned")
    base = item.get("rail", 0)
    gpus_of = {server.name: server.gpus for server in ctx.topology.servers}
    rings = []
    for c in range(channels):
        ring = []
        for p, server in enumerate(servers):
            gpus = gpus_of[server]
            local = (base + c + (p if placement == "rail-unaware" else 0)) % len(gpus)
            ring.append(gpus[local])
        rings.append(tuple(ring))
    return tuple(rings), placement


def _all_ranks(ctx: Context, item: Raw, path: KeyPath) -> tuple[str, ...]:
    if "servers" in item and "gpus" in item:
        raise ctx.where.error(path, "name the ranks with either 'gpus' or 'servers', not both")
    if "servers" in item:
        servers = set(_ordered_servers(ctx, item["servers"], [*path, "servers"]))
        ranks = tuple(g.name for g in ctx.topology.gpus if g.server in servers)
    elif "gpus" in item:
        ranks = tuple(ctx.gpus(item["gpus"], [*path, "gpus"])[0])
    else:
        ranks = tuple(g.name for g in ctx.topology.gpus)
    _two_ranks(ctx, ranks, [*path, "gpus" if "gpus" in item else "servers"])
    return ranks


def _two_ranks(ctx: Context, ranks: Sequence[str], path: KeyPath) -> None:
    if len(ranks) < 2:
        raise ctx.where.error(path, f"a collective needs at least 2 ranks, not {len(ranks)}")


def _ordered_gpus(ctx: Context, names: Sequence[str], path: KeyPath) -> list[str]:
    """GPU names and patterns in the order written; a repeat is an error."""
    out: list[str] = []
    for index, name in enumerate(names):
        if is_pattern(name):
            hits = ctx.gpus([name], [*path, index])[0]
        else:
            hits = [ctx.gpu(name, [*path, index])]
        for gpu in hits:
            if gpu in out:
                raise ctx.where.error([*path, index], f"GPU {gpu} is a rank twice")
            out.append(gpu)
    return out


def _ordered_servers(ctx: Context, names: Sequence[str], path: KeyPath) -> list[str]:
    known = [server.name for server in ctx.topology.servers]
    out: list[str] = []
    for index, name in enumerate(names):
        match = ctx.pattern(name, [*path, index])
        hits = [s for s in known if match(s)]
        if not hits:
            raise ctx.where.error([*path, index], (
                f"{name!r} matches no server of topology {ctx.topology.name} (its servers are "
                f"{known[0]} .. {known[-1]})"))
        for server in hits:
            if server in out:
                raise ctx.where.error([*path, index], f"server {server} is listed twice")
            out.append(server)
    return out
