"""utilisation.png: which links get which value and label, the heading, and
the drawing itself from a synthetic run directory (no root)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.image import imread

from emulator.measure.link_heatmap import MAX_COLUMNS, heatmap_rows

from emulator.measure.links import link_metrics
from emulator.measure.plots import plot_run
from emulator.measure.utilisation_plot import (
    labelled_count,
    plot_utilisation,
    utilisation_heading,
    utilisation_values,
)
from emulator.topology import load_topology, topology_from_dict
from emulator.topology.aggregate import aggregate
from emulator.topology.draw import LinkValues, draw_topology
from emulator.topology.draw_style import IDLE_LINK_COLOUR, value_colours

ROOT = Path(__file__).resolve().parents[2]


def quickstart():
    return load_topology(ROOT / "topologies" / "quickstart.yaml")


def counters():
    """srv0/gpu0 -> srv1/gpu1 over spine0 at 50 % of 100 Mb/s for 2 s (12.5 MB)."""
    big, acks = 12_500_000, 200_000
    return {
        "leaf-r0-0": {"1": {"3": {"tx_bytes": acks, "rx_bytes": big}},
                      "3": {"3": {"tx_bytes": big, "rx_bytes": acks}}},
        "spine0": {"1": {"3": {"tx_bytes": acks}}, "2": {"3": {"tx_bytes": big}}},
        "leaf-r1-0": {"2": {"3": {"tx_bytes": big, "rx_bytes": acks}},
                      "3": {"3": {"tx_bytes": acks, "rx_bytes": big}}},
    }


def test_values_and_labels():
    t = quickstart()
    links, _, _ = link_metrics(t, counters(), {}, 2.0)
    v = utilisation_values(t, links, "heading")
    # keyed by the topology link's (node_a, port_a): the server and NIC index for host links
    assert v.values[("srv0", 0)] == 0.5 and v.values[("leaf-r0-0", 3)] == 0.5
    assert v.values[("srv0", 1)] == 0.0
    # ↑ towards the spine (a -> b), ↓ towards the GPU; 0.8 % links are not labelled
    assert v.labels == {("srv0", 0): "↑50 %", ("leaf-r0-0", 3): "↑50 %",
                        ("leaf-r1-0", 3): "↓50 %", ("srv1", 1): "↓50 %"}
    assert v.heading == "heading" and "utilisation" in v.label
    assert labelled_count(6) == 6 and labelled_count(96) == 12


def test_heading():
    t = quickstart()
    links, _, totals = link_metrics(t, counters(), {}, 2.0)
    text = utilisation_heading({"scenario": "qs", "duration_s": 2.0, "totals": totals}, links)
    first, second = text.split("\n")
    assert first == "Link utilisation of qs, averaged over the run (2.00 s)"
    assert second.startswith("busiest srv0/gpu0 → leaf-r0-0 at 50 %")
    assert "fabric links up to 50 %" in second and "ECMP imbalance 1.00" in second
    idle, _, _ = link_metrics(t, {}, {}, 2.0)
    assert utilisation_heading({"duration_s": 2.0}, idle, "x").endswith(
        "no traffic counted on any link")


def write_run(d: Path, with_links: bool) -> None:
    t = quickstart()
    links, ecmp, totals = link_metrics(t, counters(), {}, 2.0)
    results = {"scenario": "qs", "duration_s": 2.0, "totals": totals,
               "switches": counters(), "hosts": {}}
    if with_links:
        results.update(links=links, ecmp=ecmp)
    d.mkdir(parents=True, exist_ok=True)
    (d / "results.json").write_text(json.dumps(results))
    (d / "scenario.json").write_text(json.dumps(
        {"name": "qs", "topology": {"file": "topologies/quickstart.yaml", **t.params}}))


def test_plot_utilisation_draws_the_run(tmp_path):
    for with_links in (True, False):  # older results: links computed from the counters
        d = tmp_path / str(with_links)
        write_run(d, with_links)
        outs = plot_utilisation(d, title="qs")
        assert outs == [d / "utilisation.png"]  # no heatmap: the fabric is drawn node by node
        out = outs[0]
        image = imread(out)
        assert image.shape[0] > 600 and image.shape[1] > 1000
        # the busiest links are drawn in the colour bar's dark end, not only greys
        reds = ((image[..., 0] > 0.7) & (image[..., 1] < 0.5) & (image[..., 2] < 0.3)).sum()
        assert reds > 1000


def test_plot_run_adds_utilisation_when_the_run_has_results(tmp_path):
    names = {p.name for p in plot_run(tmp_path)}
    assert "utilisation.png" not in names  # nothing to draw it from
    write_run(tmp_path, True)
    names = {p.name for p in plot_run(tmp_path)}
    assert "utilisation.png" in names and (tmp_path / "utilisation.png").exists()


def test_draw_topology_with_values_on_every_kind(tmp_path):
    for name in ("fat-tree-k4", "leaf-spine-4x4", "rail-8x8"):
        t = load_topology(ROOT / "topologies" / f"{name}.yaml")
        values = {(lk.node_a, lk.port_a): i / len(t.links) for i, lk in enumerate(t.links)}
        labels = {key: f"{v * 100:.0f} %" for key, v in values.items() if v > 0.9}
        plain, over = tmp_path / f"{name}.png", tmp_path / f"{name}-values.png"
        draw_topology(t, plain)
        draw_topology(t, over, LinkValues(values, "utilisation", labels, "one\ntwo"))
        a, b = imread(plain), imread(over)
        # wider for the colour bar, taller for the two heading lines
        assert b.shape[1] > a.shape[1] and b.shape[0] > a.shape[0]


def test_heading_says_when_the_fabric_links_were_idle():
    t = quickstart()
    local = {"leaf-r0-0": {"1": {"3": {"tx_bytes": 1000, "rx_bytes": 2_500_000}}}}
    links, _, totals = link_metrics(t, local, {}, 1.0)
    text = utilisation_heading({"scenario": "x", "duration_s": 1.0, "totals": totals}, links)
    assert text.endswith("busiest srv0/gpu0 → leaf-r0-0 at 20 %, fabric links idle")


def test_heading_of_a_time_scaled_run_gives_the_data_centre_time_too():
    links, _, totals = link_metrics(quickstart(), counters(), {}, 8.0)
    text = utilisation_heading({"scenario": "dc", "duration_s": 8.0, "duration_dc_s": 0.002,
                                "time_scale": 4000, "totals": totals}, links)
    assert text.split("\n")[0] == ("Link utilisation of dc, averaged over the run (8.00 s "
                                   "emulated, 2 ms in the data centre at time scale 4000)")


def test_a_big_fabric_gets_blocks_and_a_heatmap_of_every_link(tmp_path):
    ft8 = {"name": "ft8", "kind": "fat-tree", "k": 8, "gpus_per_server": 1,
           "host_link": {"rate": "100Gbps", "delay": "1us"},
           "fabric_link": {"rate": "100Gbps", "delay": "1us"}}
    t = topology_from_dict(ft8)
    links, _, totals = link_metrics(t, {}, {}, 1.0)
    for i, row in enumerate(links):  # every second link busy, one of them saturated
        row["util_ab"] = 0.0 if i % 2 else 0.4
    links[2]["util_ab"] = 1.0
    (tmp_path / "results.json").write_text(json.dumps(
        {"scenario": "ft8", "duration_s": 1.0, "totals": totals, "links": links}))
    (tmp_path / "scenario.json").write_text(json.dumps({"name": "ft8", "topology": ft8}))
    outs = plot_utilisation(tmp_path, title="ft8")
    assert outs == [tmp_path / "utilisation.png", tmp_path / "link_heatmap.png"]
    blocks, grid = imread(outs[0]), imread(outs[1])
    assert blocks.shape[1] <= 4000 and blocks.shape[0] <= 1300
    assert grid.shape[1] <= 2400 and grid.shape[0] <= 2400
    # idle cells are grey, busy ones on the colour scale, the saturated one dark red
    dark = np.array(value_colours()(1.0)[:3])
    assert (np.abs(grid[..., :3] - dark) < 0.04).all(axis=-1).sum() > 100
    grey = np.array(to_rgb(IDLE_LINK_COLOUR))
    assert (np.abs(grid[..., :3] - grey) < 0.02).all(axis=-1).sum() > 100 * 100


def test_heatmap_rows_follow_the_bundles_and_wrap_long_ones():
    rail = topology_from_dict({
        "name": "r", "kind": "rail-optimized", "servers": 128, "gpus_per_server": 8,
        "servers_per_leaf": 8, "spines": 8, "host_link": {"rate": "1Gbps", "delay": "1us"},
        "fabric_link": {"rate": "1Gbps", "delay": "1us"}})
    agg = aggregate(rail)
    rows = heatmap_rows(agg, {agg.bundles[0].links[3]: 0.7, agg.bundles[0].links[4]: 2.0})
    assert rows[0] == ("srv0–7 – rail 0 leaves", [0, 0, 0, 0.7, 1.0, 0, 0, 0])
    # a rail's 16 leaves x 8 spines = 128 links: two rows of 64
    spines = [(label, cells) for label, cells in rows if "spines" in label]
    assert [label for label, _ in spines[:2]] == ["rail 0 leaves – spines [1–64]",
                                                  "rail 0 leaves – spines [65–128]"]
    assert all(len(cells) == MAX_COLUMNS for _, cells in spines)
    assert sum(len(cells) for _, cells in rows) == len(rail.links)
