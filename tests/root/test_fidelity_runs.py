"""The fidelity monitor on real runs (root, built-in target):

- an overloaded scenario (1 Gb/s links emulated as written, time scale 1)
  comes out ``faithful: false`` with reasons and a time scale that would do;
- the same scenario with ``time_scale: auto`` comes out faithful and
  lossless;
- a low-rate scenario (quickstart) run live and on the virtual clock gives
  flow completion times within 25 % of each other when the live run says
  it was faithful.

Each live run takes 10-30 s; the machine may be shared, which is what the
monitor is for: a run that comes out unfaithful for that reason is
reported, and the comparison with the virtual clock is then skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.scenario import load_scenario
from emulator.scenario.loader import scenario_from_dict
from emulator.measure.results import check_invariants
from emulator.run import run_scenario
from tests.root.host_noise import skip_if_the_host_stalled

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
ATTEMPTS = 3


def overloaded(time_scale):
    """Four 1 MB WRITEs at once on 1 Gb/s links, PFC on: lossless if the
    switches keep up."""
    return scenario_from_dict({
        "name": "overload", "duration": "60ms", "seed": 1, "time_scale": time_scale,
        "topology": {"name": "ov", "kind": "rail-optimized", "servers": 2,
                     "gpus_per_server": 2, "servers_per_leaf": 2, "spines": 1,
                     "host_link": {"rate": "1Gbps", "delay": "5us"},
                     "fabric_link": {"rate": "1Gbps", "delay": "5us"}},
        "switches": {"buffer": "512KB", "pfc": {"xoff": "200KB", "xon": "100KB"}},
        "workload": {"flows": [
            {"id": "a", "src": "srv0/gpu0", "dst": "srv1/gpu0", "size": "1MB"},
            {"id": "b", "src": "srv0/gpu1", "dst": "srv1/gpu1", "size": "1MB"},
            {"id": "c", "src": "srv1/gpu0", "dst": "srv0/gpu1", "size": "1MB"},
            {"id": "d", "src": "srv1/gpu1", "dst": "srv0/gpu0", "size": "1MB"}]}},
        "<overload>")


def test_an_overloaded_run_is_not_faithful(tmp_path):
    results = run_scenario(overloaded(1), tmp_path / "k1", progress=False)
    f = results["fidelity"]
    assert f["faithful"] is False and f["reasons"], f
    assert f["suggested_time_scale"] >= 2
    assert f["switch_late_p99_us"] > f["limit_us"] or f["lag_given_up_s"] > 0 \
        or f["rx_overruns"] > 0
    assert (tmp_path / "k1" / "behind.csv").read_text().count("\n") >= 2  # spans drawn


def test_the_same_with_time_scale_auto_is_faithful_and_lossless(tmp_path):
    scenario = overloaded("auto")
    assert scenario.time_scale >= 10
    # The scale auto picks keeps up on a quiet machine (about 7 s a run); a
    # stall from outside the run (the kernel still tearing down the previous
    # test's namespaces, another process) can still cost one run its
    # fidelity (CI once saw 47.5 ms of lag given up by a NIC pacer at time
    # scale 200): the choice must keep up in one of three runs.
    for attempt in range(ATTEMPTS):
        results = run_scenario(scenario, tmp_path / f"auto{attempt}", progress=False)
        f = results["fidelity"]
        if f["faithful"]:
            break
    assert results["time_scale_choice"]["mode"] == "auto"
    skip_if_the_host_stalled(results, "the overloaded scenario under auto")
    assert f["faithful"] is True, f"not faithful {ATTEMPTS} times: {f['reasons']}"
    assert results["totals"]["drops"] == 0 and results["totals"]["flows_incomplete"] == 0
    check_invariants(results)


def test_live_and_virtual_time_agree_on_completion_times(tmp_path):
    live = run_scenario(load_scenario(ROOT / "scenarios" / "quickstart.yaml"),
                        tmp_path / "live", progress=False)
    sim = run_scenario(load_scenario(ROOT / "scenarios" / "quickstart.yaml",
                                     target_override="sim"), tmp_path / "sim", progress=False)
    if not live["fidelity"]["faithful"]:
        pytest.skip(f"the live run was not faithful here: {live['fidelity']['reasons'][:2]}")
    for a, b in zip(live["flows"], sim["flows"]):
        assert a["id"] == b["id"] and a["completed"] and b["completed"]
        assert a["fct_dc_s"] == pytest.approx(b["fct_dc_s"], rel=0.25), (a["id"], a, b)
