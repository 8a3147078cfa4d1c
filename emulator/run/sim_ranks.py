"""A sim run over MPI ranks: what each rank runs, and how what the ranks
measured becomes the one run's record on rank 0.

- :func:`plan_ranks`: the partition of the scenario's fabric
  (:mod:`emulator.sim.partition`, balanced by the work of the scenario's
  flows) and, for this rank, the names it runs and an outbox per other rank
  (:class:`~emulator.sim.parallel.Outbox`).
- :func:`checkpoint`: every rank says whether its last phase worked; a
  failure anywhere becomes the same error on every rank (no rank is left
  waiting in a collective).
- :class:`RankShare`: what one rank measured (its agents, switches, links,
  captured files, event records, engine figures); :func:`merge` puts the
  shares together on rank 0 in the order one engine would have produced
  them, so results.json, the CSVs and the pcaps are the same whatever the
  number of ranks.

Only rank 0 writes the run's files; the others build in a temporary
directory and send their captures' bytes to rank 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator.scenario.errors import ScenarioError
from emulator.scenario.spec import Scenario
from emulator.sim.parallel import Outbox
from emulator.sim.partition import Partition, PartitionError, flow_loads, partition


@dataclass
class Ranks:
    """This rank's place in a run over ``comm``."""

    comm: Any
    rank: int
    size: int
    part: Partition
    local: set[str]
    outboxes: dict[int, Outbox]          # other rank -> its outbox
    by_name: dict[str, Outbox]           # a name run elsewhere -> the outbox to its rank

    @property
    def lead(self) -> bool:
        return self.rank == 0


def plan_ranks(comm: Any, scenario: Scenario, flows: list[Any], how: str | Path,
               clock: Any) -> Ranks:
    """The partition for ``comm``'s size and this rank's share of it."""
    size, rank = comm.Get_size(), comm.Get_rank()
    loads = flow_loads(scenario.topology, flows, scenario.hosts.mtu_bytes, scenario.duration_s)
    try:
        part = partition(scenario.topology, size, loads, how)
    except PartitionError as exc:
        raise ScenarioError(f"{scenario.source}: {exc}") from None
    outboxes = {r: Outbox(r, clock) for r in range(size) if r != rank}
    by_name = {name: outboxes[r] for name, r in part.rank_of.items() if r != rank}
    return Ranks(comm, rank, size, part, part.local(rank), outboxes, by_name)


def checkpoint(ranks: Ranks | None, error: BaseException | None, phase: str) -> None:
    """Raise on every rank when ``error`` happened on any (``phase`` names
    what was being done)."""
    if ranks is None:
        if error is not None:
            raise error
        return
    text = None if error is None else (
        "interrupted (Ctrl-C)" if isinstance(error, KeyboardInterrupt)
        else str(error) if isinstance(error, ScenarioError)
        else f"{type(error).__name__}: {error}")
    messages = ranks.comm.allgather(text)
    failed = [(r, m) for r, m in enumerate(messages) if m is not None]
    if failed:
        rank, message = failed[0]
        if isinstance(error, ScenarioError) and rank == ranks.rank:
            raise error
        raise ScenarioError(f"{phase} failed on rank {rank} of {ranks.size}: {message}")


@dataclass
class RankShare:
    """What one rank measured (see the module docstring)."""

    rank: int
    agent_stats: dict[str, Any] = field(default_factory=dict)
    counters: dict[str, Any] = field(default_factory=dict)
    queue_stats: dict[str, Any] = field(default_factory=dict)
    queue_series: dict[str, Any] = field(default_factory=dict)
    # (kind, event index, applied time, record): storms first, then by time
    events: list[tuple[int, int, float, dict[str, Any]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    nic_wire_wait: dict[str, float] = field(default_factory=dict)   # GPU -> seconds
    frames_to_idle_gpus: int = 0
    lost_on_down_links: int = 0
    files: dict[str, bytes] = field(default_factory=dict)           # out-relative path -> bytes
    engine: dict[str, Any] = field(default_factory=dict)
    partial: bool = False
    end_s: float = 0.0
    work_done: bool = False                                         # ended before the duration


def merge(shares: list[RankShare], scenario: Scenario) -> RankShare:
    """The shares as one: keyed figures in topology order, event records in
    the order one engine makes them, sums of the counts."""
    topo = scenario.topology
    out = RankShare(0)
    agent_stats: dict[str, Any] = {}
    for share in shares:
        agent_stats.update(share.agent_stats)
        out.counters.update(share.counters)
        out.queue_stats.update(share.queue_stats)
        out.queue_series.update(share.queue_series)
        out.nic_wire_wait.update(share.nic_wire_wait)
        out.files.update(share.files)
        out.errors.extend(e for e in share.errors if e not in out.errors)
        out.frames_to_idle_gpus += share.frames_to_idle_gpus
        out.lost_on_down_links += share.lost_on_down_links
        out.partial = out.partial or share.partial
    out.end_s = min(share.end_s for share in shares)
    order = {sw.name: i for i, sw in enumerate(topo.switches)}
    for name in ("counters", "queue_stats", "queue_series"):
        part = getattr(out, name)
        setattr(out, name, {k: part[k] for k in sorted(part, key=order.__getitem__)})
    servers = [s.name for s in topo.hosts]  # storage nodes and clients too
    out.agent_stats = {s: agent_stats[s] for s in servers if s in agent_stats}
    gpus = [g.name for g in topo.gpus + topo.nics]
    out.nic_wire_wait = {g: out.nic_wire_wait[g] for g in gpus if g in out.nic_wire_wait}
    seen: dict[int, tuple[int, int, float, dict[str, Any]]] = {}
    for share in shares:
        for entry in share.events:
            seen.setdefault(entry[1], entry)
    out.events = sorted(seen.values(), key=lambda e: (e[0], e[2] if e[0] else 0, e[1]))
    return out


def rank_figures(shares: list[RankShare], ranks: Ranks) -> dict[str, Any]:
    """results.json's ``sim.ranks`` part: the partition and each rank's figures."""
    per_rank = []
    for share in shares:
        local = ranks.part.local(share.rank)
        per_rank.append({"rank": share.rank,
                         "switches": sum(1 for n in local if n not in ranks.part.servers),
                         "servers": sum(1 for n in local if n in ranks.part.servers),
                         "estimated_work": round(ranks.part.work[share.rank], 1),
                         **share.engine})
    return {"partition": ranks.part.to_dict(), "per_rank": per_rank}
