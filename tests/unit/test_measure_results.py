"""results.json assembled from fake agent stats and switch counters (pure)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from emulator.scenario import expand_workload, scenario_from_dict
from emulator.run.qps import plan_qps
from emulator.measure.results import (
    ResultsInvariantError,
    assemble,
    check_invariants,
    counter_delta,
    write_csvs,
)

ROOT = Path(__file__).resolve().parents[2]
T0 = 1000.0


def scenario():
    return scenario_from_dict({
        "name": "t", "topology": "quickstart.yaml", "duration": "2s",
        "workload": {"flows": [
            {"id": "a", "src": "srv0/gpu0", "dst": "srv1/gpu0", "size": "1MB"},
            {"id": "b", "src": "srv0/gpu1", "dst": "srv1/gpu1", "size": "2000B", "qps": 2}]},
        "expect_checks": [{"metric": "totals.drops", "op": "==", "value": 0},
                          {"metric": "totals.flows_incomplete", "op": "==", "value": 0},
                          {"metric": "flows.0.completed", "op": "==", "value": True}]},
        base_dir=ROOT / "topologies")


def qp(qpn, nic, *, acked=0, outstanding=0, completed=0, failed=0, retx=0, cnps_rx=0,
       cnps_sent=0, ce=0):
    counters = {"bytes_acked": acked, "retransmit_packets": retx, "cnps_rx": cnps_rx,
                "messages_completed": completed, "messages_failed": failed,
                "cnps_sent": cnps_sent, "ce_packets_rx": ce}
    return {"qpn": qpn, "nic": nic, "messages_outstanding": outstanding, "counters": counters}


def record(qpn, size, first, done, status="ok"):
    return {"qpn": qpn, "size": size, "status": status, "first_tx_at": first,
            "acked_at": done if status == "ok" else None}


def nic(name, paused=0.0, pfc_rx=0):
    return {"name": name, "counters": {"tx_packets": 10, "tx_bytes": 1000, "rx_packets": 5,
                                       "rx_bytes": 500, "pfc_rx": pfc_rx},
            "paused_s": [0, 0, 0, paused, 0, 0, 0, 0]}


def stats(b_done=True):
    srv0 = {"nics": [nic("srv0-eth0", 0.25, 2), nic("srv0-eth1")],
            "qps": [qp(0x100, "srv0-eth0", acked=1_000_000, completed=1, retx=3, cnps_rx=4),
                    qp(0x101, "srv0-eth1", acked=1000, completed=1),
                    qp(0x102, "srv0-eth1", acked=1000 if b_done else 400, completed=int(b_done),
                       outstanding=int(not b_done))],
            "messages": {"sent": [record(0x100, 1_000_000, T0 + 0.01, T0 + 0.11),
                                  record(0x101, 1000, T0 + 0.001, T0 + 0.002)]
                         + ([record(0x102, 1000, T0 + 0.001, T0 + 0.004)] if b_done else [])}}
    srv1 = {"nics": [nic("srv1-eth0"), nic("srv1-eth1")],
            "qps": [qp(0x100, "srv1-eth0", cnps_sent=4, ce=9), qp(0x101, "srv1-eth1"),
                    qp(0x102, "srv1-eth1")],
            "messages": {"sent": []}}
    return {"srv0": srv0, "srv1": srv1}


COUNTERS = {
    "leaf-r0-0": {1: {3: {"rx_packets": 1000, "rx_bytes": 1_080_000, "drop_packets": 1}},
                  3: {3: {"tx_packets": 500, "tx_bytes": 540_000, "ecn_packets": 7,
                          "pfc_tx_packets": 2}}},
    "spine0": {1: {3: {"rx_packets": 500, "rx_bytes": 540_000}},
               2: {3: {"tx_packets": 500, "tx_bytes": 540_000, "ecn_packets": 3}}},
    "leaf-r1-0": {},
}
QUEUES = {"spine0": {"ports": [
    {"port": 2, "drops": {"tail": 5, "tx_error": 2},
     "queues": [{"priority": 3, "tx_packets": 500, "tail_dropped": 5, "paused_s": 0.5,
                 "max_depth_packets": 40, "max_depth_bytes": 43_000, "pfc_rx": 6}]}]}}


def build(b_done=True, **kw):
    s = scenario()
    flows = expand_workload(s)
    return assemble(s, "builtin", flows, plan_qps(s, flows), stats(b_done), COUNTERS,
                    QUEUES, start_unix=T0, end_unix=T0 + 2.0, **kw)


def test_results_have_every_key_and_hold_the_invariants():
    r = build()
    assert {"scenario", "target", "topology", "duration_s", "partial", "flows", "switches",
            "hosts", "totals", "checks"} <= set(r)
    assert r["topology"]["switches"] == 3 and r["duration_s"] == 2.0 and r["partial"] is False
    check_invariants(r)
    json.dumps(r)  # serialisable


def test_flows():
    a, b = build()["flows"]
    assert a["bytes"] == 1_000_000 and a["completed"] and a["fct_s"] == pytest.approx(0.1)
    assert a["goodput_bps"] == pytest.approx(80e6)
    assert (a["retransmits"], a["cnp_received"], a["cnp_sent"], a["ce_received"]) == (3, 4, 4, 9)
    assert b["bytes"] == 2000 and b["completed"] and b["fct_s"] == pytest.approx(0.003)
    assert b["qps"] == [0x101, 0x102]


def test_an_unfinished_flow_is_not_completed_and_gets_a_goodput_over_the_run():
    r = build(b_done=False)
    b = r["flows"][1]
    assert not b["completed"] and b["fct_s"] is None and b["bytes"] == 1400
    assert b["goodput_bps"] == pytest.approx(1400 * 8 / (2.0 - 0.001))
    assert r["totals"]["flows_incomplete"] == 1
    assert [c["passed"] for c in r["checks"]] == [False, False, True]  # drops: 1 + 5 + 2
    check_invariants(r)


def test_switches_and_totals():
    r = build()
    sw = r["switches"]
    assert sw["leaf-r0-0"]["1"]["3"]["drops"] == 1
    spine = sw["spine0"]["2"]["3"]
    assert spine["drops"] == 5 and spine["pfc_rx"] == 6 and spine["paused_s"] == 0.5
    assert spine["max_qdepth"] == {"packets": 40, "bytes": 43_000}
    assert sw["spine0"]["_port_drops"] == {"2": 2}
    t = r["totals"]
    assert t["drops"] == 1 + 5 + 2 and t["ecn_marked"] == 10 and t["pfc_tx"] == 2
    assert t["pfc_rx"] == 6 and t["spine_bytes"] == 540_000
    assert t["cnp_sent"] == 4 and t["cnp_received"] == 4 and t["retransmits"] == 3
    assert t["host_paused_s"] == 0.25 and t["paused_s"] == 0.75
    assert r["hosts"]["srv0"]["nics"]["srv0-eth0"]["pfc_rx"] == 2


def test_missing_agent_stats_leave_flows_incomplete():
    s = scenario()
    flows = expand_workload(s)
    r = assemble(s, "builtin", flows, plan_qps(s, flows), {"srv0": None, "srv1": None}, {}, {},
                 start_unix=T0, end_unix=T0 + 1, partial=True)
    assert r["partial"] and r["totals"]["flows_completed"] == 0
    check_invariants(r)


def test_invariants_catch_broken_sums():
    r = build()
    r["totals"]["drops"] += 1
    with pytest.raises(ResultsInvariantError, match="drops"):
        check_invariants(r)
    r = build()
    r["flows"][0]["bytes"] = 2_000_000
    with pytest.raises(ResultsInvariantError, match="bytes > size"):
        check_invariants(r)


def test_counter_delta():
    before = {1: {3: {"tx_packets": 5, "tx_bytes": 500}}}
    after = {1: {3: {"tx_packets": 8, "tx_bytes": 800}}, 2: {0: {"rx_packets": 1}}}
    assert counter_delta(after, before) == {1: {3: {"tx_packets": 3, "tx_bytes": 300}},
                                            2: {0: {"rx_packets": 1}}}


def test_csvs(tmp_path):
    write_csvs(build(), tmp_path)
    flows = list(csv.DictReader(open(tmp_path / "flows.csv")))
    assert [f["id"] for f in flows] == ["a", "b"] and flows[0]["completed"] == "True"
    ports = list(csv.DictReader(open(tmp_path / "ports.csv")))
    assert {(p["switch"], p["port"], p["priority"]) for p in ports} == {
        ("leaf-r0-0", "1", "3"), ("leaf-r0-0", "3", "3"), ("spine0", "1", "3"),
        ("spine0", "2", "3")}
