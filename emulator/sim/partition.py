"""How a simulated fabric is split over MPI ranks: which rank runs each
switch and each server's NIC agent, the links that cross ranks, and the
lookahead those links allow.

**Units.** A partition places whole units, never less:

- ``auto`` (the default): a fat-tree's pod (its edge and aggregation
  switches and its servers) is one unit, each core switch another; a
  rail-optimized or leaf-spine fabric's leaf group (leaf *i* of every rail,
  or ToR *i*, with the servers plugged into it) is one unit, each spine
  another. Traffic inside a pod or group stays on one rank.
- ``switch``: every switch is a unit, and a server goes with the leaf its
  first GPU plugs into. Finer grain, more cut links.
- a file (YAML): ``rank: [names]`` for every rank from 0, or ``name: rank``
  for every switch and server, for users who know better. A name missing,
  unknown or placed twice, or a rank out of range, is an error of one line.

**Balance.** Units go to ranks largest first, each to the rank with the
least work so far (ties: the fewest units, then the lowest rank). A unit's work is an estimate of
the packets it will handle, from the scenario's flows (collectives
included): every data frame costs a pass at each switch on its path (shared
evenly over equal-cost paths) and, at :data:`AGENT_FRAME_WEIGHT` of that, a
frame at the agents that send and receive it. Units that carry nothing
still get a rank. With ``auto``, a pod or leaf group that carries more
than a rank's share (total / ranks) is halved, by rail or by tier, until
none does (:func:`_split_heavy`): more ranks than pods or groups still
balance.

**Lookahead.** A frame sent on a link whose ends are on two ranks reaches
the other rank no sooner than the link's delay later, so a rank may run
ahead of the others by the least delay of the cut links. A cut link with
no delay gives no lookahead and is refused (:class:`PartitionError`, naming
the link). The partition is a pure function of the topology, the flows and
the rank count: every rank computes the same one.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from emulator.topology import Topology, paths

# An agent's frame costs about 0.6 of a switch pass (NIC agent 6 µs a frame,
# fabric.p4 pass 9-10 µs, README "Limits of the emulation").
AGENT_FRAME_WEIGHT = 0.6
CHOICES = ("auto", "switch")


class PartitionError(ValueError):
    """A partition that cannot run: one line naming what is wrong."""


@dataclass(frozen=True)
class FlowLoad:
    """What a flow asks of the fabric, for the balance: its endpoints and
    how many data frames it sends."""

    src_gpu: str
    dst_gpu: str
    frames: float


@dataclass
class Partition:
    """Which rank runs what (see the module docstring)."""

    ranks: int
    rank_of: dict[str, int]              # switch or server name -> rank
    work: list[float]                    # estimated work per rank
    cut_links: list[str] = field(default_factory=list)
    lookahead_s: float = math.inf        # least delay of a cut link (inf: none cut)
    how: str = "auto"
    servers: frozenset[str] = frozenset()

    def local(self, rank: int) -> set[str]:
        """Names of the switches and servers rank ``rank`` runs."""
        return {name for name, r in self.rank_of.items() if r == rank}

    def to_dict(self) -> dict[str, Any]:
        return {"ranks": self.ranks, "how": self.how,
                "work": [round(w, 1) for w in self.work],
                "cut_links": len(self.cut_links),
                "lookahead_s": None if math.isinf(self.lookahead_s) else self.lookahead_s,
                "switches_per_rank": [sum(1 for n, r in self.rank_of.items()
                                          if r == k and n not in self.servers)
                                      for k in range(self.ranks)]}


def link_name(topology: Topology, link: Any) -> str:
    if link.kind == "host":  # a GPU's NIC or scale-up port, to its switch (node_b)
        return f"{topology.gpu(link.gpu).name}<->{link.node_b}:{link.port_b}"
    return f"{link.node_a}:{link.port_a}<->{link.node_b}:{link.port_b}"


def owner_of_link_end(topology: Topology, link: Any) -> tuple[str, str]:
    """The names that own the two ends of ``link``: (server, switch) for a
    host link, (switch, switch) for a fabric link."""
    if link.kind == "host":
        return topology.gpu(link.gpu).server, link.node_b
    return link.node_a, link.node_b


def work_estimate(topology: Topology, flows: Iterable[FlowLoad]) -> dict[str, float]:
    """Estimated work per switch and per server (see the module docstring)."""
    work: dict[str, float] = defaultdict(float)
    cache: dict[tuple[str, str], list[list[str]]] = {}
    for flow in flows:
        src, dst = topology.gpu(flow.src_gpu), topology.gpu(flow.dst_gpu)
        work[src.server] += AGENT_FRAME_WEIGHT * flow.frames
        work[dst.server] += AGENT_FRAME_WEIGHT * flow.frames
        if src.server == dst.server and src.switch == dst.switch and src.name == dst.name:
            continue
        if topology.has_scale_up_tier and topology.same_domain(src.name, dst.name):
            work[topology.scale_up_nic(src.name).switch] += flow.frames
            continue
        key = (src.switch, dst.switch)
        found = cache.get(key)
        if found is None:
            found = cache[key] = paths(topology, src.name, dst.name)
        share = flow.frames / max(1, len(found))
        for path in found:
            for switch in path:
                work[switch] += share
    return work


def _units(topology: Topology, how: str) -> list[list[str]]:
    """The units of a partition choice, each a list of names, in topology
    order; a scale-up switch goes with its domain's first server."""
    units = _backend_units(topology, how)
    if not topology.has_scale_up_tier:
        return units
    switch_of = {domain.servers[0]: domain.name for domain in topology.domains}
    kept = [[name for name in unit if name not in set(switch_of.values())] for unit in units]
    for unit in kept:
        unit.extend([switch_of[name] for name in list(unit) if name in switch_of])
    return [unit for unit in kept if unit]


def _backend_units(topology: Topology, how: str) -> list[list[str]]:
    kind = topology.spec.kind
    servers_of_switch: dict[str, list[str]] = defaultdict(list)
    for server in topology.hosts:  # storage nodes and clients have NICs, no GPUs
        first = topology.gpu((server.gpus + server.nics)[0]).switch
        servers_of_switch[first].append(server.name)
    if how == "switch" or kind not in ("fat-tree", "rail-optimized", "leaf-spine"):
        return [[sw.name] + servers_of_switch.get(sw.name, []) for sw in topology.switches]
    groups: dict[Any, list[str]] = {}
    alone: list[list[str]] = []
    for sw in topology.switches:
        if kind == "fat-tree" and sw.pod is not None:
            groups.setdefault(("pod", sw.pod), []).append(sw.name)
        elif sw.leaf_index is not None:
            groups.setdefault(("leaf", sw.leaf_index), []).append(sw.name)
        else:
            alone.append([sw.name])
    for server in topology.hosts:
        sw = topology.switch(topology.gpu((server.gpus + server.nics)[0]).switch)
        key = ("pod", sw.pod) if kind == "fat-tree" and sw.pod is not None \
            else ("leaf", sw.leaf_index)
        groups[key].append(server.name)
    return list(groups.values()) + alone


def _split_heavy(topology: Topology, units: list[list[str]], work: dict[str, float],
                 ranks: int) -> list[list[str]]:
    """Halve every unit that carries more than a rank's share of the work
    (total / ranks), until none does or it is one switch: its switches in
    topology order, cut in two (a leaf group: rails 0..R/2-1 and the rest; a
    pod: edge and aggregation halves), its servers with the half holding
    their switches (a server whose NICs plug into both halves: the lighter
half). Fewer cut links than ``switch``, and ranks
    beyond the pods or leaf groups still get a share."""
    share = sum(work.values()) / ranks
    servers = {s.name: {topology.gpu(g).switch for g in s.gpus + s.nics} for s in topology.hosts}
    out: list[list[str]] = []
    todo = list(units)
    while todo:
        unit = todo.pop(0)
        switches = [n for n in unit if n not in servers]
        if len(switches) < 2 or sum(work.get(n, 0.0) for n in unit) <= share:
            out.append(unit)
            continue
        first = set(switches[:len(switches) // 2])
        halves: list[list[str]] = [[n for n in switches if n in first],
                                   [n for n in switches if n not in first]]
        loads = [sum(work.get(n, 0.0) for n in half) for half in halves]
        for name in unit:
            if name in servers:
                sides = {0 if sw in first else 1 for sw in servers[name]}
                side = sides.pop() if len(sides) == 1 else min((0, 1), key=lambda h: loads[h])
                halves[side].append(name)
                loads[side] += work.get(name, 0.0)
        todo[:0] = halves
    return out


def _from_file(path: Path, topology: Topology, ranks: int) -> dict[str, int]:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise PartitionError(f"{path}: cannot read the partition: {exc}") from None
    names = [sw.name for sw in topology.switches] + [s.name for s in topology.hosts]
    known = set(names)
    rank_of: dict[str, int] = {}
    if not isinstance(data, dict) or not data:
        raise PartitionError(f"{path}: a partition is a mapping, rank: [names] or name: rank")

    def place(name: Any, rank: Any) -> None:
        if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < ranks:
            raise PartitionError(f"{path}: {name}: rank {rank!r} is not one of 0..{ranks - 1}")
        if name not in known:
            raise PartitionError(f"{path}: {name!r} is neither a switch nor a server of "
                                 f"{topology.name}")
        if name in rank_of:
            raise PartitionError(f"{path}: {name} is placed twice")
        rank_of[name] = rank

    if all(isinstance(k, int) and not isinstance(k, bool) for k in data):
        for rank, members in data.items():
            if not isinstance(members, list):
                raise PartitionError(f"{path}: rank {rank}: give a list of names")
            for name in members:
                place(name, rank)
    else:
        for name, rank in data.items():
            place(name, rank)
    missing = [n for n in names if n not in rank_of]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise PartitionError(f"{path}: no rank for {', '.join(missing[:3])}{more}")
    return rank_of


def partition(topology: Topology, ranks: int, flows: Iterable[FlowLoad] = (),
              how: str | Path = "auto") -> Partition:
    """Split ``topology`` over ``ranks`` ranks (see the module docstring)."""
    if ranks < 1:
        raise PartitionError(f"ranks must be 1 or more, not {ranks}")
    work = work_estimate(topology, flows)
    if isinstance(how, Path) or how not in CHOICES:
        path = Path(how)
        if not path.is_file():
            raise PartitionError(f"partition {str(how)!r} is neither one of "
                                 f"{', '.join(CHOICES)} nor a file")
        rank_of = _from_file(path, topology, ranks)
        loads = [0.0] * ranks
        for name, rank in rank_of.items():
            loads[rank] += work.get(name, 0.0)
        how_text = str(path)
    else:
        rank_of = {}
        loads = [0.0] * ranks
        units = _units(topology, how)
        if how == "auto":
            units = _split_heavy(topology, units, work, ranks)
        weighed = sorted(((sum(work.get(n, 0.0) for n in unit), i, unit)
                          for i, unit in enumerate(units)), key=lambda u: (-u[0], u[1]))
        units_of = [0] * ranks
        for weight, _index, unit in weighed:
            rank = min(range(ranks), key=lambda r: (loads[r], units_of[r], r))
            loads[rank] += weight
            units_of[rank] += 1
            for name in unit:
                rank_of[name] = rank
        how_text = how
    cut: list[str] = []
    lookahead = math.inf
    for link in topology.links:
        a, b = owner_of_link_end(topology, link)
        if rank_of[a] != rank_of[b]:
            name = link_name(topology, link)
            if link.delay_ns <= 0:
                raise PartitionError(
                    f"link {name} joins rank {rank_of[a]} and rank {rank_of[b]} with no delay: "
                    "a link between ranks needs a delay above 0 (it is how far one rank may "
                    "run ahead of another); give it a delay, or keep its ends on one rank "
                    "(--partition FILE)")
            cut.append(name)
            lookahead = min(lookahead, link.delay_ns / 1e9)
    return Partition(ranks, rank_of, loads, cut, lookahead, how_text,
                     frozenset(s.name for s in topology.hosts))


def flow_loads(topology: Topology, flows: Iterable[Any], mtu_bytes: int,
               duration_s: float) -> list[FlowLoad]:
    """:class:`FlowLoad` of scenario flows (``src``, ``dst``, ``size_bytes``
    or None for unlimited, ``start_ns``): an unlimited flow at its host
    link's rate from its start to the end."""
    rates = {link.gpu: link.rate_bps for link in topology.links if link.kind == "host"}
    out = []
    for flow in flows:
        if flow.size_bytes is None:
            seconds = max(0.0, duration_s - flow.start_ns / 1e9)
            frames = rates.get(flow.src, 0) * seconds / 8 / mtu_bytes
        else:
            frames = math.ceil(flow.size_bytes / mtu_bytes) if flow.size_bytes else 1
        out.append(FlowLoad(flow.src, flow.dst, float(frames)))
    return out


def describe(part: Partition) -> str:
    """One line: ranks, cut links, lookahead, the estimated work per rank."""
    look = "no link cut" if math.isinf(part.lookahead_s) else \
        f"lookahead {part.lookahead_s * 1e6:g} us over {len(part.cut_links)} cut links"
    spread = ", ".join(f"{w:.0f}" for w in part.work)
    return f"{part.ranks} ranks ({part.how}), {look}, estimated work per rank: {spread}"
