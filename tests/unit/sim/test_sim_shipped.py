"""Every shipped scenario also runs on the virtual clock, without root, and
every one of its expect_checks holds there: the emulated scenarios (at
20-100 Mb/s, written for a live run) as they are, the data-centre ones as
written (their time_scale is not applied on sim)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.measure.inspect import inspect_pcap
from emulator.scenario import load_scenario
from emulator.measure.results import check_invariants
from emulator.run import run_scenario

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"
SHIPPED = sorted(p.name for p in SCENARIOS.glob("*.yaml"))


def test_a_data_centre_scenario_ships_for_sim():
    assert [n for n in SHIPPED if load_scenario(SCENARIOS / n).target == "sim"]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_scenario_holds_on_sim(name: str, tmp_path: Path) -> None:
    scenario = load_scenario(SCENARIOS / name, target_override="sim")
    results = run_scenario(scenario, tmp_path, progress=False)
    assert results["target"] == "sim" and results["time_scale"] == 1
    assert results["partial"] is False and results["errors"] == [], results["errors"]
    check_invariants(results)
    failed = [c for c in results["checks"] if not c["passed"]]
    assert not failed, f"{name} on sim: {failed}; totals {results['totals']}"
    assert len(results["checks"]) == len(scenario.expect_checks)
    for png in ("queue_depth.png", "flow_rates.png", "pauses.png", "ecn_cnp.png",
                "utilisation.png", "buffer.png"):
        assert (tmp_path / png).stat().st_size > 10_000, png
    kinds = set()
    for point, capture in (results.get("captures") or {}).items():
        records = list(inspect_pcap(tmp_path / capture["file"]))
        assert len(records) == capture["packets"] > 0, point
        roce = [r for r in records if r.kind == "roce"]
        assert roce and all(r.fields["icrc_ok"] for r in roce), point
        assert all(b.time >= a.time for a, b in zip(records, records[1:])), point
        kinds |= {r.kind for r in records}
    if results.get("captures") and results["totals"]["pfc_tx"]:
        assert "pfc" in kinds, kinds
