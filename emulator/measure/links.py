"""Per-link utilisation and ECMP spread of one run, from the switches' port
counters and the NIC agents' counters (pure functions over the dicts of
``results.json``, no root). :func:`link_metrics` fills three keys of
results.json; :func:`write_links_csv` writes ``links.csv``.

``links``: one entry per topology link, in the topology's order::

    {a, a_port, b, b_port, kind, network, rate_bps, bytes_ab, bytes_ba, util_ab, util_ba}

- ``kind`` ``host``: ``a`` is the GPU (``srv0/gpu1``), ``a_port`` its NIC
  index, ``b`` the leaf and ``b_port`` the leaf's port. ``kind`` ``fabric``:
  ``a`` is the lower-tier switch, ``b`` the upper (leaf → spine, edge → agg,
  agg → core), each with its port; a DCI link joins two border switches.
- ``network``: the network the link belongs to (``backend``, ``dci``, …;
  per-network totals are in ``networks``, :mod:`.networks`).
- ``bytes_ab`` = bytes on the wire from ``a`` to ``b``; ``bytes_ba`` the
  other way. A switch end's bytes out are its port's ``tx_bytes`` summed
  over priorities. For the GPU end of a host link (a NIC has no switch
  counters) the leaf port's ``rx_bytes`` are used when the switch counted
  them, else the NIC's ``tx_bytes`` from ``hosts``. Bytes are Ethernet
  frames as the P4 counters see them (no preamble, inter-frame gap or FCS),
  PFC frames and CNPs included.
- ``util_ab`` = ``bytes_ab`` × 8 / (``rate_bps`` × ``duration_s``) (and
  likewise ``util_ba``): the fraction of the run's traffic window the link
  was busy in that direction, 0 for a zero-length run. It is not clipped:
  traffic counted just outside the window can take it slightly above 1.

``ecmp``: for every switch with uplinks (leaf, ToR or edge switch, and a
fat-tree's aggregation switches, whose ECMP over the cores is where a hash
shared by every tier polarizes)::

    {switch: {"uplinks": {"<upper switch>:<its port>": bytes leaf → upper},
            "imbalance": max / mean over the uplinks, or None}}

An uplink is named by its far end, as capture points name switch ports.
``imbalance`` is 1.0 when ECMP spread the leaf's upward bytes evenly, k for
one of k uplinks carrying everything, None when no uplink carried anything.
ECMP places flows, not bytes: a leaf with a single flow going up (or only
one flow's ACKs) is at k by construction, so read ``imbalance`` with the
number of flows a leaf sent up in mind.

``totals`` gains ``ecmp_imbalance`` (max over the leaves that sent at least
:data:`QUIET_LEAF_SHARE` of what the busiest leaf sent up, so a leaf that
only returns ACKs does not decide it; None when no leaf sent anything up), ``max_link_util`` (max over links and directions) and
``max_spine_link_util`` (the same over fabric links only; None without any).

Invariants (:func:`link_invariant_problem`, checked by
``results.check_invariants``):

- the bytes the upper ends of fabric links sent (``bytes_ba`` of every
  fabric link, plus ``bytes_ab`` of the links whose lower end is itself an
  upper end, agg → core) equal ``totals.spine_bytes``, the bytes
  transmitted by switches above tier 1. In a two-tier fabric: the bytes the
  spines sent down the leaves' uplinks add up to ``spine_bytes``;
- a switch's ``ecmp`` uplink bytes add up to the ``bytes_ab`` of its fabric
  links;
- ``totals.max_link_util`` is the largest ``util_ab``/``util_ba``.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterable, Mapping

from emulator.topology.model import Link, Topology

LINK_COLUMNS = ("a", "a_port", "b", "b_port", "kind", "network", "rate_bps", "bytes_ab",
                "bytes_ba", "util_ab", "util_ba")
UTIL_DIGITS = 6


def _port_sum(switches: Mapping[str, Any], switch: str, port: int, key: str) -> int | None:
    """Σ over priorities of ``key`` at (switch, port); None when no slot has the key."""
    prios = switches.get(switch, {}).get(str(port), {})
    values = [slot[key] for slot in prios.values() if key in slot]
    return sum(values) if values else None


def _nic_tx_bytes(hosts: Mapping[str, Any], topology: Topology, link: Link) -> int:
    """What the host end of a host link sent: its own NIC's (a GPU's scale-up
    port on a scale-up link, not the GPU's backend NIC)."""
    return _nic_bytes(hosts, topology, link, "tx_bytes")


def _nic_bytes(hosts: Mapping[str, Any], topology: Topology, link: Link, key: str) -> int:
    assert link.gpu is not None
    gpu = topology.gpu(link.gpu)
    intf = topology.scale_up_nic(link.gpu).intf if link.network == "scale-up" else gpu.intf
    nic = hosts.get(gpu.server, {}).get("nics", {}).get(intf)
    return int(nic[key]) if nic else 0


def _util(nbytes: int, rate_bps: int, duration_s: float) -> float:
    if duration_s <= 0 or rate_bps <= 0:
        return 0.0
    return round(nbytes * 8 / (rate_bps * duration_s), UTIL_DIGITS)


def link_row(link: Link, topology: Topology, switches: Mapping[str, Any],
             hosts: Mapping[str, Any], duration_s: float) -> dict[str, Any]:
    """One entry of ``links`` (see the module docstring)."""
    if link.kind == "host":
        assert link.gpu is not None
        a = link.gpu
        rx = _port_sum(switches, link.node_b, link.port_b, "rx_bytes")
        bytes_ab = rx if rx is not None else _nic_tx_bytes(hosts, topology, link)
    else:
        a = link.node_a
        bytes_ab = _port_sum(switches, link.node_a, link.port_a, "tx_bytes") or 0
    bytes_ba = _port_sum(switches, link.node_b, link.port_b, "tx_bytes")
    if bytes_ba is None and link.network == "scale-up":
        # live: the scale-up switch is in the agent; what reached the GPU's port
        bytes_ba = _nic_bytes(hosts, topology, link, "rx_bytes")
    bytes_ba = bytes_ba or 0
    return {"a": a, "a_port": link.port_a, "b": link.node_b, "b_port": link.port_b,
            "kind": link.kind, "network": link.network, "rate_bps": link.rate_bps,
            "bytes_ab": bytes_ab, "bytes_ba": bytes_ba,
            "util_ab": _util(bytes_ab, link.rate_bps, duration_s),
            "util_ba": _util(bytes_ba, link.rate_bps, duration_s)}


# Leaves sending up less than this share of the busiest leaf's upward bytes
# are left out of totals.ecmp_imbalance.
QUIET_LEAF_SHARE = 0.1


def imbalance(values: Iterable[int]) -> float | None:
    """max / mean of ``values``; None when they are all 0 (or there are none)."""
    vals = list(values)
    total = sum(vals)
    if not vals or total <= 0:
        return None
    return round(max(vals) / (total / len(vals)), 4)


def ecmp_results(topology: Topology, links: list[dict[str, Any]]) -> dict[str, Any]:
    """``ecmp`` of results.json from the ``links`` entries: every switch
    with uplinks (leaves, and a fat-tree's aggregation switches), the bytes
    it sent up each of them."""
    out: dict[str, Any] = {}
    for row in links:
        if row["kind"] == "fabric":
            uplinks = out.setdefault(row["a"], {"uplinks": {}})["uplinks"]
            uplinks[f"{row['b']}:{row['b_port']}"] = row["bytes_ab"]
    for entry in out.values():
        entry["imbalance"] = imbalance(entry["uplinks"].values())
    return dict(sorted(out.items()))


def link_totals(links: list[dict[str, Any]], ecmp: Mapping[str, Any]) -> dict[str, Any]:
    """``ecmp_imbalance``, ``max_link_util`` and ``max_spine_link_util``."""
    sent_up = {leaf: sum(e["uplinks"].values()) for leaf, e in ecmp.items()}
    floor = QUIET_LEAF_SHARE * max(sent_up.values(), default=0)
    spreads = [e["imbalance"] for leaf, e in ecmp.items()
               if e["imbalance"] is not None and sent_up[leaf] >= floor]
    utils = [max(r["util_ab"], r["util_ba"]) for r in links]
    fabric = [max(r["util_ab"], r["util_ba"]) for r in links if r["kind"] == "fabric"]
    return {"ecmp_imbalance": max(spreads) if spreads else None,
            "max_link_util": max(utils) if utils else None,
            "max_spine_link_util": max(fabric) if fabric else None}


def link_metrics(topology: Topology, switches: Mapping[str, Any], hosts: Mapping[str, Any],
                 duration_s: float) -> tuple[list[dict[str, Any]], dict[str, Any],
                                             dict[str, Any]]:
    """``(links, ecmp, totals to add)`` of one run (see the module docstring)."""
    links = [link_row(link, topology, switches, hosts, duration_s) for link in topology.links]
    ecmp = ecmp_results(topology, links)
    return links, ecmp, link_totals(links, ecmp)


def upper_sent_bytes(links: Iterable[Mapping[str, Any]]) -> int:
    """Bytes sent by the upper ends of fabric links (and by upper switches
    that are themselves the lower end of a link, agg → core)."""
    fabric = [r for r in links if r["kind"] == "fabric"]
    uppers = {r["b"] for r in fabric}
    return sum(r["bytes_ba"] + (r["bytes_ab"] if r["a"] in uppers else 0) for r in fabric)


def link_invariant_problem(results: Mapping[str, Any]) -> str | None:
    """The first documented sum the links of ``results`` break, or None
    (results without ``links`` have none to break)."""
    links = results.get("links")
    if links is None:
        return None
    totals = results["totals"]
    sent = upper_sent_bytes(links)
    if sent != totals["spine_bytes"]:
        return (f"links: upper switches sent {sent} bytes on fabric links, "
                f"totals.spine_bytes is {totals['spine_bytes']}")
    for leaf, entry in results.get("ecmp", {}).items():
        mine = sum(r["bytes_ab"] for r in links if r["kind"] == "fabric" and r["a"] == leaf)
        if sum(entry["uplinks"].values()) != mine:
            return f"ecmp.{leaf}: uplink bytes != its links' bytes_ab"
    utils = [max(r["util_ab"], r["util_ba"]) for r in links]
    if utils and totals.get("max_link_util") != max(utils):
        return "totals.max_link_util != max over links"
    return None


def write_links_csv(results: Mapping[str, Any], out_dir: str | Path) -> Path:
    """``links.csv``: the ``links`` entries, one row each (header only when none)."""
    path = Path(out_dir) / "links.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(LINK_COLUMNS)
        for row in results.get("links", []):
            w.writerow([row[c] for c in LINK_COLUMNS])
    return path
