"""Collectives end to end on the quickstart fabric (root, built-in target):
a pipeline whose stages forward each microbatch only after it arrived and
a compute time passed, and an all-gather ring that starts after it; the
agents' work-graph records show every message waited for its data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.scenario.loader import scenario_from_dict
from emulator.measure.results import check_invariants
from emulator.run import run_scenario

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
COMPUTE_S = 0.02
STAGES = ["srv0/gpu0", "srv1/gpu0", "srv0/gpu1", "srv1/gpu1"]


def scenario():
    return scenario_from_dict({
        "name": "collectives-run",
        "topology": "topologies/quickstart.yaml",
        "duration": "3s",
        "switches": {"buffer": "512KB", "pfc": {"xoff": "200KB", "xon": "100KB",
                                                "quanta": 2000}},
        "workload": {"collectives": [
            {"kind": "pipeline", "id": "pp", "gpus": STAGES, "size": "64KB",
             "microbatches": 3, "compute": f"{COMPUTE_S * 1e3:g}ms"},
            {"kind": "all-gather", "id": "ag", "servers": ["srv0", "srv1"], "channels": 2,
             "size": "400KB", "chunks": 2, "qps": 2, "start": "1s"},
        ]},
        "expect_checks": [{"metric": "collectives.pp.completed", "op": "==", "value": True},
                          {"metric": "collectives.ag.completed", "op": "==", "value": True}],
    }, "collectives-run.yaml", REPO)


def test_collectives_wait_for_their_data(tmp_path):
    results = run_scenario(scenario(), tmp_path, progress=False)
    assert results["errors"] == [] and not results["partial"]
    check_invariants(results)
    assert all(c["passed"] for c in results["checks"]), results["checks"]
    pp, ag = results["collectives"]
    # pipeline: 3 network hops (every stage is on another server than the next)
    assert pp["ops"] == pp["ops_done"] == 9 and pp["local_hops"] == 0
    ends = [s["end_s"] for s in pp["steps"]]
    assert ends == sorted(ends) and len(ends) == 3
    assert pp["time_s"] > 3 * COMPUTE_S
    # all-gather over 2 servers, 2 channels (rails): 1 step, 2 rings x 2 ranks x 2 chunks,
    # each op striped over 2 QPs
    assert ag["ops"] == 8 and ag["steps"][0]["step"] == 0 and ag["busbw_bps"] > 0
    assert ag["busbw_bps"] == pytest.approx(ag["algbw_bps"] / 2)
    assert all(len(f["qps"]) == 2 for f in results["flows"] if f["id"].startswith("ag/"))
    assert results["totals"]["spine_bytes"] > 0  # pp's hop srv1/gpu0 -> srv0/gpu1 crosses rails

    # every forwarded microbatch became ready when the previous stage's copy
    # arrived here, and left COMPUTE_S later
    stats = {p.name.split(".")[0]: json.loads(p.read_text())
             for p in (tmp_path / "agents").glob("*.stats.json")}
    qpn = {f["id"]: f["qps"][0] for f in results["flows"]}
    arrived: dict[int, list[float]] = {}
    for snap in stats.values():
        for rec in snap["messages"]["received"]:
            arrived.setdefault(rec["qpn"], []).append(rec["last_at"])
    graph = {rec["tag"]: rec for snap in stats.values() for rec in snap["graph"]}
    for stage in (1, 2):
        for m in range(3):
            rec = graph[f"pp/s{stage}#{m}"]
            came = arrived[qpn[f"pp/s{stage - 1}"]][m]
            assert rec["ready_at"] == pytest.approx(came, abs=1e-6)
            assert rec["posted_at"] - rec["ready_at"] >= COMPUTE_S - 0.002
