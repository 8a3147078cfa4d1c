"""Storage and front-end traffic kinds: who sends to whom, as pairs of NICs.

A generator of one of :data:`STORAGE_KINDS` becomes a ``pairs`` generator
at parse time (:func:`storage_pairs`), so its flows are made, checked and
run as every other generator's (RoCEv2 queue pairs on the same NIC agents,
in the class its ``priority`` says). Needs the topology's ``storage`` key
(or ``front_end`` for requests and tokens; README "Topologies").

- ``checkpoint``: every GPU of ``gpus`` (default all) writes a shard of
  ``size`` bytes striped over ``stripe`` storage nodes of its site (default
  all of them): ``stripe`` flows of ``size / stripe`` each, to nodes
  ``i, i+1, ...`` (mod the nodes) for the i-th GPU, NICs taken in turn.
- ``weight-load``: the mirror: ``stripe`` storage nodes send every GPU its
  ``size`` bytes of weights.
- ``kv-offload`` / ``kv-fetch``: every GPU sends ``size`` bytes of KV cache
  to / gets them from ``stripe`` storage nodes (default 1).
- ``requests`` / ``tokens``: one flow of ``size`` per GPU server of
  ``gpus`` (its servers; default all) from / to a client of its site
  (clients taken in turn), on the server's front-end NIC 0.

Which NIC a GPU's storage traffic leaves from follows ``storage.network``:
the GPU's own backend NIC (``backend``), its server's storage NIC
``srv{s}/st{r mod server_nics}`` (``separate``), or its server's front-end
NIC ``srv{s}/fe{r mod nics_per_server}`` (``front-end``).
"""

from __future__ import annotations

from typing import Sequence

from emulator.topology import Topology

STORAGE_KINDS: tuple[str, ...] = ("checkpoint", "weight-load", "kv-offload", "kv-fetch",
                                  "requests", "tokens")
# Kinds whose bytes go from storage (or a client) to the GPUs.
_INBOUND = ("weight-load", "kv-fetch", "requests")


def storage_nic(topology: Topology, gpu: str) -> str:
    """The NIC ``gpu``'s storage traffic leaves from (module docstring)."""
    storage = topology.spec.storage
    if storage is None or storage.network == "backend":
        return gpu
    found = topology.gpu(gpu)
    server = topology.host(found.server)
    word = "st" if storage.network == "separate" else "fe"
    mine = [nic for nic in server.nics if nic.split("/")[1].startswith(word)]
    return mine[found.index % len(mine)]


def storage_pairs(kind: str, topology: Topology, gpus: Sequence[str], size_bytes: int | None,
                  stripe: int | None) -> tuple[list[tuple[str, str]], int | None]:
    """The ``[src, dst]`` pairs and the size of each flow of a generator of
    ``kind``; ValueError, in words for a one-line error, when the topology
    or the keys cannot make them."""
    if kind in ("requests", "tokens"):
        return _front_end_pairs(kind, topology, gpus), size_bytes
    if topology.spec.storage is None:
        raise ValueError(f"{kind} needs storage nodes; topology {topology.name} has no "
                         f"storage key (README \"Topologies\")")
    nodes_by_site: dict[int, list[str]] = {}
    for host in topology.others:
        if host.role == "storage":
            nodes_by_site.setdefault(host.site or 0, []).append(host.name)
    count = topology.spec.storage.nodes
    ways = stripe if stripe is not None else (count if kind in ("checkpoint", "weight-load")
                                              else 1)
    if ways > count:
        raise ValueError(f"stripe {ways} is more than the {count} storage nodes of a site")
    per_flow = size_bytes
    if size_bytes is not None:
        if size_bytes % ways:
            raise ValueError(f"size {size_bytes} B does not split evenly over stripe {ways}; "
                             f"give a size that is a multiple of {ways} B")
        per_flow = size_bytes // ways
    pairs = []
    for i, gpu in enumerate(gpus):
        site = topology.host(topology.gpu(gpu).server).site or 0
        nodes = nodes_by_site[site]
        here = storage_nic(topology, gpu)
        for k in range(ways):
            node = topology.host(nodes[(i + k) % len(nodes)])
            there = node.nics[(i + k) // len(nodes) % len(node.nics)]
            pairs.append((there, here) if kind in _INBOUND else (here, there))
    return pairs, per_flow


def _front_end_pairs(kind: str, topology: Topology, gpus: Sequence[str]) -> list[tuple[str, str]]:
    if topology.spec.front_end is None or topology.spec.front_end.clients == 0:
        raise ValueError(f"{kind} needs front-end clients; topology {topology.name} has no "
                         f"front_end key with clients (README \"Topologies\")")
    clients_by_site: dict[int, list[str]] = {}
    for host in topology.others:
        if host.role == "client":
            clients_by_site.setdefault(host.site or 0, []).append(host.nics[0])
    servers = list(dict.fromkeys(topology.gpu(gpu).server for gpu in gpus))
    pairs = []
    for j, name in enumerate(servers):
        server = topology.host(name)
        clients = clients_by_site[server.site or 0]
        front = next(nic for nic in server.nics if nic.split("/")[1].startswith("fe"))
        client = clients[j % len(clients)]
        pairs.append((client, front) if kind in _INBOUND else (front, client))
    return pairs
