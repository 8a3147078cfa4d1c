"""scenarios/scale-up-allreduce.yaml live (root), ``time_scale: auto``: the
scale-up tier of each server timed inside its agent (README "The AI
cluster"), the rails on the built-in switches. Faithful, and the
hierarchical all-reduce's bytes per tier are the algorithm's, as on sim:
448 MB over the scale-up switches, 32 MB across the rails, none on the
spine; the scale-up network's links carry every scale-up byte twice (GPU
to switch, switch to GPU). A run takes 1-2 min here."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.measure.results import check_invariants
from emulator.run import run_scenario
from emulator.scenario import load_scenario
from tests.root.host_noise import skip_if_the_host_stalled

pytestmark = pytest.mark.root

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "scale-up-allreduce.yaml"
ATTEMPTS = 2


@pytest.mark.timeout(900)
def test_scale_up_allreduce_runs_live_with_the_scale_up_tier_in_the_agents(tmp_path):
    scenario = load_scenario(SCENARIO, target_override="builtin", time_scale_override="auto")
    for attempt in range(ATTEMPTS):
        results = run_scenario(scenario, tmp_path / f"out{attempt}", progress=False)
        assert results["partial"] is False and results["errors"] == [], results["errors"]
        if results["fidelity"]["faithful"]:
            break
    skip_if_the_host_stalled(results, "scale-up-allreduce live")
    assert results["fidelity"]["faithful"], results["fidelity"]["reasons"]
    check_invariants(results)
    (ar,) = results["collectives"]
    assert ar["completed"]
    assert ar["scale_up_bytes"] == 448_000_000 and ar["fabric_bytes"] == 32_000_000
    su = results["networks"]["scale-up"]
    assert su["links"] == 16 and su["drops"] == 0
    assert 2 * 448_000_000 <= su["bytes"] <= 2 * 448_000_000 * 1.03  # headers and ACKs
    failed = [c for c in results["checks"] if not c["passed"]]
    assert not failed, failed
