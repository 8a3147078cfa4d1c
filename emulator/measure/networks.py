"""Per-network totals of one run: the ``networks`` block of results.json.

Every topology link belongs to one network (``backend``, ``scale-up``,
``dci``, ``front-end``, ``storage``; :data:`emulator.topology.model.NETWORKS`)
and every switch port to the network of the link plugged into it. For each
network the topology has::

    {links, bytes, drops, ecn_marked, pfc_tx, busiest_link, max_link_util}

- ``bytes`` = Σ ``bytes_ab`` + ``bytes_ba`` of its entries in ``links``
  (frames on the wire both ways, as :mod:`.links` counts them);
- ``drops``, ``ecn_marked``, ``pfc_tx`` (pause frames sent) = Σ over the
  switch ports of the network's links, per-queue counters plus the port's
  ``_port_drops``;
- ``max_link_util`` = the largest ``util_ab``/``util_ba`` of its links and
  ``busiest_link`` names that link ``a:a_port-b:b_port`` (None when nothing
  moved).

Invariant: the networks' ``bytes``, ``drops``, ``ecn_marked`` and ``pfc_tx``
add up to the sums over all links and switch ports (every port belongs to
exactly one network).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from emulator.topology.model import NETWORKS, Topology

COUNTERS = ("drops", "ecn_marked", "pfc_tx")


def _port_network(topology: Topology) -> dict[tuple[str, int], str]:
    """(switch, port) -> the network of the link plugged into it."""
    out = {}
    for link in topology.links:
        out[(link.node_b, link.port_b)] = link.network
        if link.kind != "host":
            out[(link.node_a, link.port_a)] = link.network
    return out


def network_results(topology: Topology, links: Sequence[Mapping[str, Any]],
                    switches: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``networks`` of results.json (see the module docstring), in NETWORKS order."""
    present = [net for net in NETWORKS if any(l.network == net for l in topology.links)]
    out: dict[str, dict[str, Any]] = {
        net: {"links": 0, "bytes": 0, **{c: 0 for c in COUNTERS},
              "busiest_link": None, "max_link_util": 0.0} for net in present}
    for link, row in zip(topology.links, links):
        entry = out[link.network]
        entry["links"] += 1
        entry["bytes"] += row["bytes_ab"] + row["bytes_ba"]
        util = max(row["util_ab"], row["util_ba"])
        if util > entry["max_link_util"]:
            entry["max_link_util"] = util
            entry["busiest_link"] = f"{row['a']}:{row['a_port']}-{row['b']}:{row['b_port']}"
    network_of = _port_network(topology)
    for name, ports in switches.items():
        for port, slots in ports.items():
            if not port.isdigit():
                continue
            net = network_of.get((name, int(port)))
            if net is None:
                continue
            for slot in slots.values():
                for counter in COUNTERS:
                    out[net][counter] += slot.get(counter, 0)
        for port, dropped in ports.get("_port_drops", {}).items():
            net = network_of.get((name, int(port)))
            if net is not None:
                out[net]["drops"] += dropped
    return out
