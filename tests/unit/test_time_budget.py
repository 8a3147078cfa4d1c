"""``time_scale: auto`` without root: the load a scenario offers
(:mod:`emulator.scenario.load`), the budget that picks k from it
(:mod:`emulator.budget.choose`) with a fixed calibration, the calibration
cache, and ``--time-scale`` on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.budget import calibrate
from emulator.budget.choose import PROCESS_SHARE
from emulator.budget.calibrate import Calibration
from emulator.scenario.load import ACK_FRAMES_PER_DATA, SCALE_UP_PASSES, offered_load
from emulator.scenario.loader import scenario_from_dict
from emulator.scenario.scale import choose_time_scale

ROOT = Path(__file__).resolve().parents[2]
CAL = Calibration(switch_us=50.0, agent_us=25.0, io_us=6.0, io_method="fixed", key="test",
                  measured_unix=0.0, cores=2)
FRAME = 1024 + 58


def scenario(flows, rate="100Mbps", topology_extra=None, **extra):
    return scenario_from_dict({
        "name": "b", "duration": "3s",
        "topology": {"name": "t", "kind": "rail-optimized", "servers": 2, "gpus_per_server": 2,
                     "servers_per_leaf": 2, "spines": 1,
                     "host_link": {"rate": rate, "delay": "5us"},
                     "fabric_link": {"rate": rate, "delay": "5us"}, **(topology_extra or {})},
        "workload": {"flows": flows}, **extra}, "<b>")


def pps(rate_bps):
    return rate_bps / (FRAME * 8) * (1 + ACK_FRAMES_PER_DATA)


def test_a_lone_flow_loads_each_switch_on_its_path_at_line_rate():
    load = offered_load(scenario([{"id": "f", "src": "srv0/gpu0", "dst": "srv1/gpu1",
                                   "size": "1MB"}]))
    # leaf-r0-0 -> spine0 -> leaf-r1-0, each receiving the flow once
    assert set(load.switch_pps) == {"leaf-r0-0", "spine0", "leaf-r1-0"}
    assert all(v == pytest.approx(pps(100e6)) for v in load.switch_pps.values())
    assert load.agent_pps == {"srv0": pytest.approx(pps(100e6)),
                              "srv1": pytest.approx(pps(100e6))}
    assert load.peak_switch_pps == pytest.approx(3 * pps(100e6))


def test_flows_that_never_overlap_do_not_add_up():
    apart = offered_load(scenario([
        {"id": "a", "src": "srv0/gpu0", "dst": "srv1/gpu0", "size": "1MB", "start": "0s"},
        {"id": "b", "src": "srv0/gpu1", "dst": "srv1/gpu1", "size": "1MB", "start": "1s"}]))
    together = offered_load(scenario([
        {"id": "a", "src": "srv0/gpu0", "dst": "srv1/gpu0", "size": "1MB", "start": "0s"},
        {"id": "b", "src": "srv0/gpu1", "dst": "srv1/gpu1", "size": "1MB", "start": "0s"}]))
    assert apart.agent_pps["srv0"] == pytest.approx(pps(100e6))
    assert together.agent_pps["srv0"] == pytest.approx(2 * pps(100e6))
    assert together.peak_agent_pps == pytest.approx(2 * apart.peak_agent_pps)


def test_a_shared_link_caps_what_it_carries():
    # two flows from one NIC: the NIC's link carries one line rate, not two
    load = offered_load(scenario([
        {"id": "a", "src": "srv0/gpu0", "dst": "srv1/gpu0", "size": "1MB"},
        {"id": "b", "src": "srv0/gpu0", "dst": "srv1/gpu1", "size": "1MB"}]))
    assert load.switch_pps["leaf-r0-0"] == pytest.approx(pps(100e6))
    assert load.agent_pps["srv0"] == pytest.approx(pps(100e6))


def test_flows_inside_a_scale_up_domain_load_its_agent_not_the_fabric():
    """Live, a server's scale-up switch is timed in its agent: a flow between
    two of its GPUs runs at the scale-up rate, no fabric switch sees it, and
    its agent sends, switches and receives every frame."""
    su = {"scale_up": {"rate": "400Mbps", "hop_latency": "1us"}}
    lone = offered_load(scenario([{"id": "f", "src": "srv0/gpu0", "dst": "srv0/gpu1",
                                   "size": "1MB"}], topology_extra=su))
    assert lone.switch_pps == {}
    assert lone.agent_pps == {"srv0": pytest.approx(SCALE_UP_PASSES * pps(400e6))}
    # two GPUs into one: its scale-up port takes one scale-up rate, not two
    incast = offered_load(scenario([
        {"id": "a", "src": "srv0/gpu0", "dst": "srv0/gpu1", "size": "1MB"},
        {"id": "b", "src": "srv0/gpu1", "dst": "srv0/gpu0", "size": "1MB"},
        {"id": "c", "src": "srv1/gpu0", "dst": "srv1/gpu1", "size": "1MB"},
        {"id": "d", "src": "srv1/gpu0", "dst": "srv0/gpu1", "size": "1MB"}],
        topology_extra=su))
    # srv0: a and b both ways (2 x 400M) ; srv1: c (400M) and d's backend send (100M)
    assert incast.agent_pps["srv0"] == pytest.approx(SCALE_UP_PASSES * pps(800e6) + pps(100e6))
    assert incast.agent_pps["srv1"] == pytest.approx(SCALE_UP_PASSES * pps(400e6) + pps(100e6))
    # a flow between servers still crosses the fabric at its NICs' rate
    plain = offered_load(scenario([{"id": "f", "src": "srv0/gpu0", "dst": "srv1/gpu1",
                                    "size": "1MB"}], topology_extra=su))
    assert set(plain.switch_pps) == {"leaf-r0-0", "spine0", "leaf-r1-0"}


def test_the_budget_keeps_every_process_under_its_share():
    written = scenario([{"id": "f", "src": "srv0/gpu0", "dst": "srv1/gpu0", "size": "1MB"}])
    k, budget = choose_time_scale(written, CAL, cores=2, load1=0.0)
    assert k in (1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 25, 30, 40, 50, 60, 80, 100)
    shares = budget["core_share_at_scale"]
    assert max(shares.values()) <= PROCESS_SHARE + 1e-9
    assert budget["busiest"] == "switch leaf-r0-0" and budget["cost_us"] == 50.0
    assert budget["load_written"]["busiest_pps"] == pytest.approx(pps(100e6), rel=1e-3)
    # ten times the rate, ten times the slowdown (or the next nice value)
    fast = scenario([{"id": "f", "src": "srv0/gpu0", "dst": "srv1/gpu0", "size": "1MB"}],
                    rate="1Gbps")
    assert choose_time_scale(fast, CAL, cores=2, load1=0.0)[0] >= 10 * k / 2.5
    # a busy machine leaves fewer cores: never a smaller k
    assert choose_time_scale(written, CAL, cores=2, load1=5.0)[0] >= k


def test_the_calibration_is_cached_and_remeasured_when_the_source_changes(tmp_path,
                                                                           monkeypatch):
    calls = []

    def fake_measure(key=""):
        calls.append(key)
        return Calibration(1.0, 2.0, 0.5, "fake", key, __import__("time").time(), 2)

    monkeypatch.setattr(calibrate, "measure", fake_measure)
    path = tmp_path / "cal.json"
    first = calibrate.calibration(path=path)
    again = calibrate.calibration(path=path)
    assert len(calls) == 1 and again == first and json.loads(path.read_text())["switch_us"] == 1.0
    monkeypatch.setattr(calibrate, "source_key", lambda: "changed")
    calibrate.calibration(path=path)
    assert calls[-1] == "changed" and len(calls) == 2


def test_time_scale_on_the_command_line(tmp_path):
    from emulator.cli.run import parse_time_scale
    from emulator.scenario.errors import ScenarioError

    assert parse_time_scale(None) is None and parse_time_scale("auto") == "auto"
    assert parse_time_scale("20") == 20 and parse_time_scale("2.5") == 2.5
    for bad in ("0.5", "fast", "inf", "nan"):
        with pytest.raises(ScenarioError, match="--time-scale"):
            parse_time_scale(bad)
    from emulator.scenario import load_scenario
    s = load_scenario(ROOT / "scenarios" / "quickstart.yaml", time_scale_override=5)
    assert s.time_scale == 5 and s.written.time_scale == 5
    assert {link.rate_bps for link in s.topology.links} == {20_000_000}


def test_a_fast_pass_does_not_shrink_the_frame_time_below_the_schedulers_lateness():
    from emulator.budget.choose import FRAME_COSTS, MIN_FRAME_TIME_US, required_scale
    from emulator.budget.load import Load
    idle = Load({}, {})
    frame_s = 1500 * 8 / 100e9  # one 1,500-byte frame at 100 Gb/s
    slow = Calibration(switch_us=50.0, agent_us=5.0, io_us=2.0, io_method="fixed", key="t",
                       measured_unix=0.0, cores=2)
    need, bound = required_scale(idle, slow, 100e9, 2, 0.0, 1e12)
    assert bound.endswith(f"{FRAME_COSTS:g} switch passes")
    assert need * frame_s == pytest.approx(FRAME_COSTS * 50e-6)  # 3 ms
    fast = Calibration(switch_us=10.0, agent_us=5.0, io_us=2.0, io_method="fixed", key="t",
                       measured_unix=0.0, cores=2)
    need, bound = required_scale(idle, fast, 100e9, 2, 0.0, 1e12)
    assert bound.endswith("2 ms") and need * frame_s == pytest.approx(MIN_FRAME_TIME_US * 1e-6)
