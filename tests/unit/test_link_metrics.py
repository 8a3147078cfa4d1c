"""Per-link bytes and utilisation, ECMP spread and links.csv from synthetic
switch and NIC counters (emulator.measure.links), and their invariant in
results.check_invariants."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from emulator.measure.links import (
    LINK_COLUMNS,
    imbalance,
    link_invariant_problem,
    link_metrics,
    upper_sent_bytes,
    write_links_csv,
)
from emulator.scenario import expand_workload, scenario_from_dict
from emulator.run.qps import plan_qps
from emulator.measure.results import ResultsInvariantError, assemble, check_invariants
from emulator.topology import load_topology

ROOT = Path(__file__).resolve().parents[2]
MBPS_100 = 100_000_000


def topo(name):
    return load_topology(ROOT / "topologies" / f"{name}.yaml")


def slot(tx=0, rx=None, prio="3"):
    s = {"tx_packets": 1, "tx_bytes": tx, "rx_packets": 1, "drops": 0, "ecn_marked": 0,
         "pfc_tx": 0, "pfc_rx": 0, "paused_s": None, "max_qdepth": None}
    if rx is not None:
        s["rx_bytes"] = rx
    return {prio: s}


def by_ends(links):
    return {(r["a"], r["b"]): r for r in links}


def test_quickstart_links_bytes_and_utilisation():
    t = topo("quickstart")
    # srv0/gpu0 -> srv1/gpu1 across spine0: 1.25 MB up, 0.25 MB of acks back
    switches = {
        "leaf-r0-0": {"1": {**slot(tx=250_000, rx=1_000_000), **slot(tx=500, rx=700, prio="6")},
                      "3": slot(tx=1_000_000, rx=250_000), "_port_drops": {}},
        "spine0": {"1": slot(tx=250_000, rx=1_000_000), "2": slot(tx=1_000_000, rx=250_000),
                   "_port_drops": {}},
        "leaf-r1-0": {"2": slot(tx=1_000_000, rx=250_000), "3": slot(tx=250_000, rx=1_000_000),
                      "_port_drops": {}},
    }
    links, ecmp, totals = link_metrics(t, switches, {}, 2.0)
    assert [(r["a"], r["a_port"], r["b"], r["b_port"], r["kind"]) for r in links] == [
        ("srv0/gpu0", 0, "leaf-r0-0", 1, "host"), ("srv0/gpu1", 1, "leaf-r1-0", 1, "host"),
        ("srv1/gpu0", 0, "leaf-r0-0", 2, "host"), ("srv1/gpu1", 1, "leaf-r1-0", 2, "host"),
        ("leaf-r0-0", 3, "spine0", 1, "fabric"), ("leaf-r1-0", 3, "spine0", 2, "fabric")]
    ends = by_ends(links)
    nic = ends[("srv0/gpu0", "leaf-r0-0")]
    # GPU -> leaf: the leaf port's rx bytes over every priority; leaf -> GPU: its tx bytes
    assert (nic["bytes_ab"], nic["bytes_ba"]) == (1_000_700, 250_500)
    assert nic["util_ab"] == pytest.approx(1_000_700 * 8 / (MBPS_100 * 2.0))
    assert nic["rate_bps"] == MBPS_100
    up = ends[("leaf-r0-0", "spine0")]
    assert (up["bytes_ab"], up["bytes_ba"]) == (1_000_000, 250_000)
    assert up["util_ab"] == 0.04 and up["util_ba"] == 0.01
    idle = ends[("srv0/gpu1", "leaf-r1-0")]
    assert (idle["bytes_ab"], idle["bytes_ba"], idle["util_ab"]) == (0, 0, 0.0)
    assert ends[("srv1/gpu1", "leaf-r1-0")]["bytes_ba"] == 1_000_000
    # one spine: every leaf has one uplink, so a leaf that sent up is balanced
    assert ecmp == {"leaf-r0-0": {"uplinks": {"spine0:1": 1_000_000}, "imbalance": 1.0},
                    "leaf-r1-0": {"uplinks": {"spine0:2": 250_000}, "imbalance": 1.0}}
    assert totals == {"ecmp_imbalance": 1.0, "max_link_util": nic["util_ab"],
                      "max_spine_link_util": 0.04}
    # the spines' bytes down the leaves' uplinks = what spine0 transmitted
    assert upper_sent_bytes(links) == 1_250_000


def test_gpu_side_falls_back_to_the_nic_counters_without_switch_rx_bytes():
    t = topo("quickstart")
    switches = {"leaf-r0-0": {"1": slot(tx=4000), "_port_drops": {}}}  # no rx_bytes counted
    hosts = {"srv0": {"nics": {"srv0-eth0": {"tx_bytes": 12_500_000, "rx_bytes": 4000}}}}
    links, _, totals = link_metrics(t, switches, hosts, 1.0)
    nic = by_ends(links)[("srv0/gpu0", "leaf-r0-0")]
    assert (nic["bytes_ab"], nic["bytes_ba"], nic["util_ab"]) == (12_500_000, 4000, 1.0)
    assert totals["max_link_util"] == 1.0 and totals["max_spine_link_util"] == 0.0
    # nothing went up: no ECMP spread to speak of
    assert totals["ecmp_imbalance"] is None
    assert all(e["imbalance"] is None for e in _ecmp(t, switches, hosts).values())


def _ecmp(t, switches, hosts):
    return link_metrics(t, switches, hosts, 1.0)[1]


def test_ecmp_imbalance_over_two_spines():
    t = topo("rail-4x4")
    switches = {
        "leaf-r0-0": {"5": slot(tx=300_000), "6": slot(tx=100_000), "_port_drops": {}},
        "leaf-r1-0": {"5": slot(tx=200_000), "6": slot(tx=200_000), "_port_drops": {}},
        "leaf-r2-0": {"6": slot(tx=50_000), "_port_drops": {}},
    }
    _, ecmp, totals = link_metrics(t, switches, {}, 1.0)
    assert ecmp["leaf-r0-0"] == {"uplinks": {"spine0:1": 300_000, "spine1:1": 100_000},
                                 "imbalance": 1.5}
    assert ecmp["leaf-r1-0"]["imbalance"] == 1.0
    assert ecmp["leaf-r2-0"]["imbalance"] == 2.0  # one of two uplinks carried everything
    assert ecmp["leaf-r3-0"] == {"uplinks": {"spine0:4": 0, "spine1:4": 0}, "imbalance": None}
    assert totals["ecmp_imbalance"] == 2.0
    assert imbalance([]) is None and imbalance([0, 0]) is None and imbalance([5]) == 1.0


def test_fat_tree_upper_bytes_count_agg_to_core():
    t = topo("fat-tree-k4")
    switches = {"agg-p0-0": {"1": slot(tx=10), "3": slot(tx=100), "_port_drops": {}},
                "core0": {"1": slot(tx=1000), "_port_drops": {}},
                "edge-p0-0": {"3": slot(tx=7), "_port_drops": {}}}
    links, ecmp, _ = link_metrics(t, switches, {}, 1.0)
    # agg -> edge 10, agg -> core 100, core -> agg 1000; the edge's 7 are tier 1
    assert upper_sent_bytes(links) == 1110
    # every switch with uplinks: the edges and the aggregation switches
    assert set(ecmp) == {s.name for s in t.switches if s.tier < 3}
    assert ecmp["edge-p0-0"]["uplinks"] == {"agg-p0-0:1": 7, "agg-p0-1:1": 0}
    assert ecmp["agg-p0-0"]["uplinks"] == {"core0:1": 100, "core1:1": 0}


def test_zero_duration_gives_zero_utilisation():
    links, _, totals = link_metrics(topo("quickstart"), {"spine0": {"1": slot(tx=99)}}, {}, 0.0)
    assert all(r["util_ab"] == r["util_ba"] == 0.0 for r in links)
    assert totals["max_link_util"] == 0.0


# -- in results.json ---------------------------------------------------------------------

def run_results():
    s = scenario_from_dict({
        "name": "t", "topology": "rail-4x4.yaml", "duration": "1s",
        "workload": {"flows": [{"id": "x", "src": "srv0/gpu0", "dst": "srv1/gpu1",
                                "size": "1MB"}]}}, base_dir=ROOT / "topologies")
    flows = expand_workload(s)
    counters = {
        "leaf-r0-0": {1: {3: {"rx_packets": 1000, "rx_bytes": 1_080_000}},
                      5: {3: {"tx_packets": 600, "tx_bytes": 648_000}},
                      6: {3: {"tx_packets": 400, "tx_bytes": 432_000}}},
        "spine0": {2: {3: {"tx_packets": 600, "tx_bytes": 648_000},
                       6: {"tx_packets": 3, "tx_bytes": 222}}},
        "spine1": {2: {3: {"tx_packets": 400, "tx_bytes": 432_000}}},
        "leaf-r1-0": {2: {3: {"tx_packets": 1000, "tx_bytes": 1_080_000}}},
    }
    return assemble(s, "builtin", flows, plan_qps(s, flows), {"srv0": None, "srv1": None},
                    counters, {}, start_unix=0.0, end_unix=1.0)


def test_assembled_results_carry_links_ecmp_and_totals():
    r = run_results()
    check_invariants(r)
    t = r["totals"]
    assert t["ecmp_imbalance"] == 1.2  # 648 KB and 432 KB: max / mean = 648 / 540
    assert t["max_spine_link_util"] == pytest.approx(648_222 * 8 / 100e6, abs=1e-6)
    assert t["max_link_util"] == pytest.approx(1_080_000 * 8 / 100e6, abs=1e-6)
    assert r["ecmp"]["leaf-r0-0"]["uplinks"] == {"spine0:1": 648_000, "spine1:1": 432_000}
    # the spines' share per leaf: what they sent down leaf-r1-0's uplinks is spine_bytes
    down = sum(lk["bytes_ba"] for lk in r["links"]
               if lk["kind"] == "fabric" and lk["a"] == "leaf-r1-0")
    assert down == t["spine_bytes"] == 1_080_222
    assert r["switches"]["leaf-r0-0"]["1"]["3"]["rx_bytes"] == 1_080_000


def test_invariants_catch_links_that_do_not_add_up():
    r = run_results()
    r["links"][-1]["bytes_ba"] += 1
    with pytest.raises(ResultsInvariantError, match="spine_bytes"):
        check_invariants(r)
    r = run_results()
    r["ecmp"]["leaf-r0-0"]["uplinks"]["spine0:1"] = 0
    assert "ecmp.leaf-r0-0" in link_invariant_problem(r)
    r = run_results()
    r["totals"]["max_link_util"] = 0.5
    assert "max_link_util" in link_invariant_problem(r)
    assert link_invariant_problem({"totals": {}}) is None  # results from before links


def test_links_csv(tmp_path):
    r = run_results()
    write_links_csv(r, tmp_path)
    with open(tmp_path / "links.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == LINK_COLUMNS and len(rows) == 24
    up = next(row for row in rows if (row["a"], row["b"]) == ("leaf-r0-0", "spine0"))
    assert up["bytes_ab"] == "648000" and float(up["util_ab"]) == pytest.approx(0.05184)
    write_links_csv({}, tmp_path)
    assert (tmp_path / "links.csv").read_text().strip() == ",".join(LINK_COLUMNS)


def test_a_leaf_that_only_returns_acks_does_not_decide_the_imbalance():
    from emulator.measure.links import link_totals

    ecmp = {"leaf-a": {"uplinks": {"spine0:1": 5_000_000, "spine1:1": 4_000_000},
                       "imbalance": 1.1111},
            "leaf-b": {"uplinks": {"spine0:2": 60_000, "spine1:2": 0}, "imbalance": 2.0}}
    assert link_totals([], ecmp)["ecmp_imbalance"] == 1.1111
    ecmp["leaf-b"]["uplinks"]["spine0:2"] = 2_000_000  # now a real sender
    assert link_totals([], ecmp)["ecmp_imbalance"] == 2.0
