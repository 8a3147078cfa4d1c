"""``utilisation.png``: the run's fabric drawn by :mod:`emulator.topology.draw`
with every link coloured and widened by its utilisation over the run (the
larger of its two directions, 0..100 %), the busiest links labelled with
their percentage and an arrow for the busier direction (↑ towards the
spines, ↓ towards the GPUs).

Big fabrics are drawn as blocks (:mod:`emulator.topology.draw_blocks`), each
bundle coloured by its busiest link, and every link's figure goes into
``link_heatmap.png`` (:mod:`.link_heatmap`).

The data come from the run directory: the topology from ``scenario.json``
(as the runner wrote it), the ``links`` from ``results.json``; results
written before links were measured get them computed from their switch and
NIC counters (:func:`emulator.measure.links.link_metrics`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from emulator.measure.link_heatmap import draw_heatmap
from emulator.measure.links import link_metrics
from emulator.measure.report import fmt_seconds
from emulator.topology import Topology, topology_from_dict
from emulator.topology.aggregate import aggregate, aggregated
from emulator.topology.draw import LinkValues, draw_topology

MIN_LABELLED_UTIL = 0.01  # links below 1 % are not labelled
UTILISATION_LABEL = "link utilisation (busier direction)"


def labelled_count(links: int) -> int:
    """How many of the busiest links get a label: 6 on the smallest fabrics, up to 12."""
    return max(6, min(12, links // 4))


def _util(row: Mapping[str, Any]) -> float:
    return max(row["util_ab"], row["util_ba"])


def utilisation_values(topology: Topology, links: Sequence[Mapping[str, Any]],
                       heading: str = "") -> LinkValues:
    """What :func:`draw_topology` draws: ``links`` (as in results.json) keyed
    by the topology links' ``(node_a, port_a)``, the busiest labelled."""
    key_of = {(lk.gpu or lk.node_a, lk.port_a, lk.node_b, lk.port_b): (lk.node_a, lk.port_a)
              for lk in topology.links}
    values: dict[tuple[str, int], float] = {}
    for row in links:
        key = key_of.get((row["a"], row["a_port"], row["b"], row["b_port"]))
        if key is not None:
            values[key] = _util(row)
    ranked = sorted((r for r in links if _util(r) >= MIN_LABELLED_UTIL), key=_util,
                    reverse=True)[:labelled_count(len(links))]
    labels = {}
    for row in ranked:
        key = key_of.get((row["a"], row["a_port"], row["b"], row["b_port"]))
        if key is not None:
            arrow = "↑" if row["util_ab"] >= row["util_ba"] else "↓"
            labels[key] = f"{arrow}{_util(row) * 100:.0f} %"
    return LinkValues(values=values, label=UTILISATION_LABEL, labels=labels, heading=heading)


def utilisation_heading(results: Mapping[str, Any], links: Sequence[Mapping[str, Any]],
                        title: str = "") -> str:
    """Two lines: whose run and how long; the busiest link, the fabric's
    busiest, the ECMP imbalance."""
    name = title or results.get("scenario", "")
    duration_s = results.get("duration_s") or 0.0
    scale, dc_s = results.get("time_scale", 1), results.get("duration_dc_s")
    span = f"{duration_s:.2f} s"
    if scale not in (None, 1) and dc_s is not None:
        span += f" emulated, {fmt_seconds(dc_s)} in the data centre at time scale {scale:g}"
    head = f"Link utilisation of {name}, averaged over the run ({span})"
    if not links or max(_util(r) for r in links) <= 0:
        return f"{head}: no traffic counted on any link"
    top = max(links, key=_util)
    src, dst = (top["a"], top["b"]) if top["util_ab"] >= top["util_ba"] else (top["b"], top["a"])
    parts = [f"busiest {src} → {dst} at {_util(top) * 100:.0f} %"]
    fabric = [_util(r) for r in links if r["kind"] == "fabric"]
    if fabric:
        parts.append(f"fabric links up to {max(fabric) * 100:.0f} %" if max(fabric) > 0
                     else "fabric links idle")
    spread = (results.get("totals") or {}).get("ecmp_imbalance")
    if spread is not None:
        parts.append(f"ECMP imbalance {spread:.2f} (max/mean)")
    return f"{head}\n" + ", ".join(parts)


def run_topology(run_dir: Path) -> Topology:
    """The topology of a run, from the ``scenario.json`` the runner wrote."""
    scenario = json.loads((run_dir / "scenario.json").read_text())
    data = {k: v for k, v in scenario["topology"].items() if k != "file"}
    return topology_from_dict(data, str(run_dir / "scenario.json"))


def plot_utilisation(run_dir: str | Path, *, title: str = "") -> list[Path]:
    """Draw ``utilisation.png`` into ``run_dir``, and ``link_heatmap.png``
    where the fabric is drawn as blocks (:mod:`.link_heatmap`); nothing when
    the directory has no ``results.json`` or ``scenario.json``."""
    d = Path(run_dir)
    if not (d / "results.json").exists() or not (d / "scenario.json").exists():
        return []
    results = json.loads((d / "results.json").read_text())
    topology = run_topology(d)
    links = results.get("links")
    if links is None:
        links = link_metrics(topology, results.get("switches", {}), results.get("hosts", {}),
                             float(results.get("duration_s") or 0.0))[0]
    heading = utilisation_heading(results, links, title)
    values = utilisation_values(topology, links, heading)
    out = d / "utilisation.png"
    draw_topology(topology, out, values)
    if not aggregated(topology):
        return [out]
    heatmap = d / "link_heatmap.png"
    draw_heatmap(aggregate(topology), values.values, heatmap,
                 title=f"{heading}\nEvery link: one row per bundle between two blocks of "
                 "utilisation.png, one cell per link", label=UTILISATION_LABEL)
    return [out, heatmap]
