"""``time_scale``: a scenario written in data-centre units runs k times slower
(rates ÷ k, times × k, bytes as written), and results carry both units."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulator.cli.main import main
from emulator.scenario import ScenarioError, expand_workload, load_scenario, scenario_from_dict
from emulator.run.agent_config import build_agent_configs, min_timeout_ms
from emulator.run.qps import plan_qps
from emulator.measure.results import assemble, check_invariants, write_csvs
from emulator.measure.summary import summary
from emulator.scenario.scale import (
    COMFORTABLE_RATE_BPS,
    DC_FIELDS,
    MAX_EMULATED_RATE_BPS,
    auto_time_scale,
    dc_name,
    emulated,
    emulation_warnings,
    to_dc,
)
from emulator.scenario.workload import collective_plans

ROOT = Path(__file__).resolve().parents[2]
K = 4000


def dc_data(time_scale: Any = K, rate: str = "400Gbps", delay: str = "1us") -> dict[str, Any]:
    """A scenario in data-centre units using every key that has a unit."""
    return {
        "name": "dc", "duration": "2ms", "seed": 3, "time_scale": time_scale,
        "topology": {"name": "dc4", "kind": "rail-optimized", "servers": 4,
                     "gpus_per_server": 2, "servers_per_leaf": 4, "spines": 1,
                     "host_link": {"rate": rate, "delay": delay},
                     "fabric_link": {"rate": rate, "delay": delay}},
        "switches": {"buffer": "2MB",
                     "ecn": {"enabled": True, "kmin": "50KB", "kmax": "400pkts", "pmax": 0.2},
                     "pfc": {"enabled": True, "xoff": "200KB", "xon": "150KB", "quanta": 1000},
                     "overrides": [{"switch": "leaf-r0-0", "port": 1, "buffer": "1MB"}]},
        "hosts": {"mtu": "1024B", "dcqcn": {
            "enabled": True, "g": 0.00390625, "rate_ai": "400Mbps", "rate_hai": "4Gbps",
            "min_rate": "4Gbps", "timer": "55us", "alpha_timer": "50us",
            "byte_counter": "10MB", "fast_recovery_steps": 5, "cnp_interval": "50us"}},
        "workload": {
            "flows": [{"id": "f1", "src": "srv0/gpu0", "dst": "srv1/gpu0", "size": "1MB",
                       "start": "5us", "rate": "100Gbps"},
                      {"id": "bg", "src": "srv2/gpu1", "dst": "srv3/gpu1",
                       "size": "unlimited", "priority": 0}],
            "generators": [{"kind": "incast", "id": "in", "senders": ["srv[0-2]/gpu1"],
                            "receiver": "srv3/gpu0", "size": "2MB", "start": "10us",
                            "stagger": "3us"}],
            "collectives": [
                {"kind": "all-reduce", "id": "ar", "gpus": ["srv[0-3]/gpu0"], "size": "4MB",
                 "start": "20us"},
                {"kind": "pipeline", "id": "pp", "gpus": ["srv0/gpu1", "srv1/gpu1"],
                 "size": "1MB", "microbatches": 2, "compute": "7us", "start": "30us"},
                {"kind": "kv-handoff", "id": "kv", "prefill": ["srv0/gpu0"],
                 "decode": ["srv2/gpu0"], "size": "1MB", "requests": 3, "interval": "40us"}]},
        "events": [{"at": "100us", "kind": "link_down", "link": ["leaf-r0-0", "spine0"]},
                   {"at": "200us", "kind": "link_up", "link": ["leaf-r0-0", "spine0"]},
                   {"at": "300us", "kind": "stop_flow", "flow": "bg"}],
        "capture": {"ports": ["leaf-r0-0:1"], "max_packets": 100},
        "expect_checks": [{"metric": "flows.0.fct_dc_s", "op": "<", "value": 0.001}],
    }


def load(data: dict[str, Any]):
    return scenario_from_dict(data, source="dc.yaml")


def assert_scaled(written: Any, emulated_: Any, k: float, path: str = "") -> None:
    """Every ``*_ns`` × k, every ``*_bps`` ÷ k, everything else equal."""
    if isinstance(written, dict):
        assert written.keys() == emulated_.keys(), path
        for key, value in written.items():
            there = emulated_[key]
            if key.endswith("_ns") and value is not None:
                assert there == round(value * k), f"{path}.{key}"
            elif key.endswith("_bps") and value is not None:
                assert there == max(1, round(value / k)), f"{path}.{key}"
            else:
                assert_scaled(value, there, k, f"{path}.{key}")
    elif isinstance(written, list):
        assert len(written) == len(emulated_), path
        for i, (a, b) in enumerate(zip(written, emulated_)):
            assert_scaled(a, b, k, f"{path}[{i}]")
    else:
        assert written == emulated_, path


# -- scaling -------------------------------------------------------------------------

def test_every_quantity_scales_by_its_unit():
    scenario = load(dc_data())
    written = scenario.written
    assert written is not None and scenario.time_scale == written.time_scale == K
    assert written.duration_ns == 2_000_000 and scenario.duration_ns == 8 * 10**9
    w, e = written.to_dict(), scenario.to_dict()
    assert e.pop("written") == w
    topology_w, topology_e = w.pop("topology"), e.pop("topology")
    assert_scaled(w, e, K)  # durations, starts, staggers, events, DCQCN, caps; bytes equal
    assert topology_e["host_link"] == topology_e["fabric_link"] == {"rate": "100Mbps",
                                                                    "delay": "4ms"}
    assert {k: v for k, v in topology_e.items() if "link" not in k} == \
        {k: v for k, v in topology_w.items() if "link" not in k}
    for a, b in zip(written.topology.links, scenario.topology.links):
        assert (b.rate_bps, b.delay_ns) == (a.rate_bps // K, a.delay_ns * K)
        assert (a.node_a, a.port_a, a.node_b, a.port_b) == (b.node_a, b.port_a, b.node_b, b.port_b)


def test_spot_values_in_both_units():
    scenario = load(dc_data())
    written = scenario.written
    dcqcn = scenario.hosts.dcqcn
    assert (dcqcn.rate_ai_bps, dcqcn.rate_hai_bps, dcqcn.min_rate_bps) == (100_000, 10**6, 10**6)
    assert (dcqcn.timer_ns, dcqcn.alpha_timer_ns, dcqcn.cnp_interval_ns) == (
        220 * 10**6, 200 * 10**6, 200 * 10**6)
    assert dcqcn.byte_counter_bytes == written.hosts.dcqcn.byte_counter_bytes == 10_000_000
    assert dcqcn.g == written.hosts.dcqcn.g and dcqcn.fast_recovery_steps == 5
    # bytes as written: buffers, thresholds, sizes, MTU; PFC quanta untouched
    assert scenario.switches == written.switches and scenario.hosts.mtu_bytes == 1024
    assert scenario.switches.pfc.quanta == 1000
    assert scenario.capture == written.capture and scenario.expect_checks == written.expect_checks
    assert [e.at_ns for e in scenario.events] == [400 * 10**6, 800 * 10**6, 1200 * 10**6]
    pp = next(c for c in scenario.collectives if c.id == "pp")
    kv = next(c for c in scenario.collectives if c.id == "kv")
    assert (pp.start_ns, pp.compute_ns, kv.interval_ns) == (120 * 10**6, 28 * 10**6, 160 * 10**6)


def test_flows_and_collective_ops_come_out_scaled():
    scenario = load(dc_data())
    written = scenario.written
    flows_w, flows_e = expand_workload(written), expand_workload(scenario)
    assert [f.id for f in flows_w] == [f.id for f in flows_e]
    for a, b in zip(flows_w, flows_e):
        assert b.start_ns == a.start_ns * K and b.size_bytes == a.size_bytes
        assert b.rate_bps == (None if a.rate_bps is None else a.rate_bps // K)
    assert [f.start_ns for f in flows_e if f.generator == "in"] == [
        40 * 10**6, 52 * 10**6, 64 * 10**6]
    ops_w = [op for plan in collective_plans(written) for op in plan.ops]
    ops_e = [op for plan in collective_plans(scenario) for op in plan.ops]
    assert len(ops_w) == len(ops_e) > 0
    for a, b in zip(ops_w, ops_e):  # kv-handoff arrivals: the same draws, k times later
        assert (b.tag, b.size_bytes) == (a.tag, a.size_bytes)
        assert b.at_ns == pytest.approx(a.at_ns * K, abs=K)
        assert b.delay_ns == pytest.approx(a.delay_ns * K, abs=K)


def test_the_agents_see_only_emulated_values():
    scenario = load(dc_data())
    flows = [f for f in expand_workload(scenario) if f.id != "bg"]
    configs = build_agent_configs(scenario, flows, 0.0)
    srv0 = configs["srv0"]
    assert {nic["line_rate_bps"] for nic in srv0["nics"]} == {100e6}
    f1 = next(m for m in srv0["workload"]["messages"] if m["at_s"] == pytest.approx(0.02))
    assert f1["size_bytes"] == 1_000_000
    dcqcn = srv0["qps"][0]["dcqcn"]
    assert (dcqcn["rate_ai_bps"], dcqcn["rate_timer_us"], dcqcn["cnp_interval_us"]) == (
        100e3, 220e3, 200e3)
    assert dcqcn["byte_counter_bytes"] == 10e6 and dcqcn["time_scale"] == 1.0
    # the retransmission timeout covers a full queue at each of the 3 switches
    # of a path, for the data and its ACK, and the 4 ms links, from the start.
    # These flows are lossless: a leaf's egress queue may take XOFF (200 KB)
    # and the headroom of its 4 other ports (2 x 100 Mb/s x 4 ms + 3 frames
    # of 1098 B + a pause frame), emulated at 100 Mb/s
    transport = srv0["defaults"]["transport"]
    headroom = 2 * 100e6 * 4e-3 / 8 + 3 * (1082 + 16) + 64
    lossless_ms = 4 * (200e3 + headroom) * 8 / 100e6 * 1e3
    assert transport["min_timeout_ms"] == min_timeout_ms(scenario, flows) == pytest.approx(
        2 * 3 * lossless_ms + 2 * 4 * 4.0, abs=1e-3)
    assert transport["timeout_ms"] == transport["min_timeout_ms"]
    # with the lossy background flow, a lossy queue's static cap (2 MB) is larger
    assert min_timeout_ms(scenario) == pytest.approx(2 * 3 * 2e6 * 8 / 100e6 * 1e3 + 32.0)


def test_time_scale_one_and_repeated_emulation_change_nothing():
    data = dc_data(time_scale=1, rate="100Mbps", delay="5us")
    data["hosts"]["dcqcn"]["min_rate"] = "1Mbps"
    scenario = load(data)
    assert scenario.written is None and scenario.time_scale == 1
    assert "written" not in scenario.to_dict()
    assert emulated(scenario) is scenario
    scaled = load(dc_data())
    assert emulated(scaled) is scaled


def test_round_trip_written_in_emulated_units_gives_the_same_scenario():
    """The DC scenario emulated == the same scenario written directly in
    emulated units with time_scale 1: to_dict agrees key for key."""
    scaled = load(dc_data()).to_dict()
    direct = copy.deepcopy(dc_data(time_scale=1, rate="100Mbps", delay="4ms"))
    direct.update(duration="8s")
    direct["hosts"]["dcqcn"].update(rate_ai="100Kbps", rate_hai="1Mbps", min_rate="1Mbps",
                                    timer="220ms", alpha_timer="200ms", cnp_interval="200ms")
    wl = direct["workload"]
    wl["flows"][0].update(start="20ms", rate="25Mbps")
    wl["generators"][0].update(start="40ms", stagger="12ms")
    for collective, start in zip(wl["collectives"], ("80ms", "120ms", "0s")):
        collective["start"] = start
    wl["collectives"][1]["compute"] = "28ms"
    wl["collectives"][2]["interval"] = "160ms"
    for event, at in zip(direct["events"], ("400ms", "800ms", "1200ms")):
        event["at"] = at
    plain = load(direct).to_dict()
    scaled.pop("written")
    assert (scaled.pop("time_scale"), plain.pop("time_scale")) == (K, 1)
    assert scaled == plain
    assert json.loads(json.dumps(scaled)) == scaled


def test_every_time_and_rate_of_the_spec_is_in_ns_or_bps():
    """The scale goes by the ``_ns``/``_bps`` suffix: a field in another time
    or rate unit would silently not scale."""
    import dataclasses
    import re

    from emulator.scenario import spec

    odd = [f"{cls.__name__}.{f.name}" for cls in vars(spec).values()
           if dataclasses.is_dataclass(cls) for f in dataclasses.fields(cls)
           if re.search(r"_(s|ms|us|ps|pps|kbps|mbps|gbps|hz)$", f.name)]
    assert odd == []


def test_rates_stay_whole_and_positive():
    scenario = load(dc_data(time_scale=3000))  # 400 Gb/s / 3000 is not whole
    assert scenario.topology.links[0].rate_bps == 133_333_333
    data = dc_data(time_scale=10**6, rate="400Gbps")
    data["hosts"]["dcqcn"]["rate_ai"] = "1Kbps"
    assert load(data).hosts.dcqcn.rate_ai_bps == 1


# -- auto ----------------------------------------------------------------------------

@pytest.mark.parametrize("fastest_bps, k", [
    (100e6, 1), (40e6, 1), (100_000_001, 10), (1e9, 10), (25e9, 1000), (400e9, 10**4),
    (800e9, 10**4), (1.6e12, 10**5),
])
def test_auto_is_the_smallest_power_of_ten_down_to_100_mbps(fastest_bps, k):
    assert auto_time_scale(fastest_bps) == k
    assert fastest_bps / k <= COMFORTABLE_RATE_BPS and (k == 1 or fastest_bps / (k / 10) >
                                                        COMFORTABLE_RATE_BPS)


def test_auto_in_a_file_is_chosen_from_the_load_and_recorded(monkeypatch):
    # auto is the budget's choice for this machine (tests/unit/test_time_budget.py);
    # here a fixed calibration stands in for the measurement
    from emulator.budget import calibrate
    from tests.unit.test_time_budget import CAL

    monkeypatch.setattr(calibrate, "calibration", lambda **_: CAL)
    scenario = load(dc_data(time_scale="auto"))
    choice = scenario.time_scale_choice
    assert choice["mode"] == "auto" and choice["time_scale"] == scenario.time_scale > 1
    assert scenario.written.time_scale == scenario.time_scale
    assert choice["budget"]["calibration"]["switch_us"] == CAL.switch_us
    assert load(dc_data(time_scale=K)).time_scale_choice == {"mode": "fixed", "time_scale": K}


# -- errors and warnings -------------------------------------------------------------

def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "dc.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("value, fragments", [
    (0.5, ["key 'time_scale': 0.5 is too small", "a number >= 1", "or auto"]),
    (0, ["key 'time_scale': 0 is too small"]),
    ("fast", ["key 'time_scale': 'fast' is not allowed", "a number >= 1"]),
    (True, ["key 'time_scale': true is not a number or text"]),
    ([2], ["key 'time_scale': a list is not a number or text"]),
])
def test_a_bad_time_scale_is_a_schema_error_naming_the_key(tmp_path, capsys, value, fragments):
    path = write(tmp_path, dc_data(time_scale=value))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:4: ") and "\n" not in message
    for fragment in fragments:
        assert fragment in message
    assert main(["scenario", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("time_scale, emulated_rate", [(10, "40Gbps"), (1, "400Gbps"),
                                                       (None, "400Gbps")])
def test_links_too_fast_to_emulate_name_time_scale_and_a_value(tmp_path, capsys, time_scale,
                                                               emulated_rate):
    data = dc_data(time_scale=time_scale)
    if time_scale is None:
        del data["time_scale"]
    path = write(tmp_path, data)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    message = str(caught.value)
    line = f"{path}:4: " if time_scale is not None else f"{path}: "
    assert message.startswith(line + "key 'time_scale': links of 400Gbps")
    assert f"emulated at {emulated_rate}" in message and "above the 1Gbps" in message
    assert "use time_scale: 10000 (links at 40Mbps) or time_scale: auto" in message
    assert main(["scenario", "check", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_the_limits_are_named_and_ordered():
    assert COMFORTABLE_RATE_BPS < MAX_EMULATED_RATE_BPS
    load(dc_data(time_scale=400))  # 1 Gb/s: at the limit, allowed
    with pytest.raises(ScenarioError):
        load(dc_data(time_scale=399))


def test_warnings_for_fast_links_and_unscaled_dcqcn_defaults():
    assert emulation_warnings(load(dc_data())) == []
    fast = emulation_warnings(load(dc_data(time_scale=1000)))
    assert len(fast) == 1 and "emulated at 400Mbps (time_scale 1000)" in fast[0]
    assert "time_scale: 10000 brings them to 40Mbps" in fast[0]
    data = dc_data()
    data["hosts"]["dcqcn"] = {"enabled": True}
    scenario = load(data)
    assert scenario.hosts == scenario.written.hosts  # the agent's own defaults, unscaled
    (note,) = emulation_warnings(scenario)
    assert note.startswith("hosts.dcqcn keeps the NIC agent's defaults")
    data["hosts"]["dcqcn"] = {"enabled": False}
    assert emulation_warnings(load(data)) == []


# -- scenario check ------------------------------------------------------------------

def test_check_shows_written_and_emulated_values(tmp_path, capsys):
    path = write(tmp_path, dc_data())
    assert main(["scenario", "check", str(path)]) == 0
    captured = capsys.readouterr()
    out = captured.out
    for text in ("duration 2ms, seed 3, time scale 4000",
                 "time scale 4000: emulated 4000 times slower than written",
                 "host links 400Gbps 1us -> 100Mbps 4ms",
                 "fabric links 400Gbps 1us -> 100Mbps 4ms", "duration 2ms -> 8s",
                 "DCQCN AI 400Mbps -> 100Kbps, HAI 4Gbps -> 1Mbps, min 4Gbps -> 1Mbps, "
                 "timer 55us -> 220ms, alpha timer 50us -> 200ms, CNP interval 50us -> 200ms",
                 "latest flow start 30us -> 120ms", "flow rate caps f1 100Gbps -> 25Mbps",
                 "events at 100us, 200us, 300us -> 400ms, 800ms, 1.2s",
                 "buffer 2MB per port and priority"):
        assert text in out, text
    assert captured.err == ""
    assert main(["scenario", "check", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["duration_ns"] == 2_000_000 and data["time_scale"] == K
    assert data["emulated"]["duration_ns"] == 8 * 10**9 and "written" not in data["emulated"]
    assert data["emulated"]["flows"][0]["start_ns"] == data["flows"][0]["start_ns"] * K


def test_check_prints_warnings_on_stderr(tmp_path, capsys):
    path = write(tmp_path, dc_data(time_scale=1000))
    assert main(["scenario", "check", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)
    assert captured.err.startswith("warning: links are emulated at 400Mbps")


def test_time_scale_one_check_output_has_no_emulated_part(capsys):
    assert main(["scenario", "check", str(ROOT / "scenarios" / "dc-incast-sim.yaml")]) == 0
    assert "emulated" not in capsys.readouterr().out


def test_the_shipped_dc_incast_is_slowed_as_far_as_this_machine_needs(monkeypatch):
    from emulator.budget import calibrate
    from tests.unit.test_time_budget import CAL

    monkeypatch.setattr(calibrate, "calibration", lambda **_: CAL)
    scenario = load_scenario(ROOT / "scenarios" / "incast-dc.yaml")
    k = scenario.time_scale
    assert scenario.time_scale_choice["mode"] == "auto" and k >= 4000
    assert emulation_warnings(scenario) == []
    assert {link.rate_bps for link in scenario.written.topology.links} == {400 * 10**9}
    assert {link.rate_bps for link in scenario.topology.links} == {round(400e9 / k)}


# -- results in data-centre units ----------------------------------------------------

def test_dc_names():
    assert dc_name("fct_s") == "fct_dc_s" and dc_name("goodput_bps") == "goodput_dc_bps"
    assert dc_name("latency_p50_s") == "latency_p50_dc_s"
    assert all(name.endswith(("_s", "_bps")) for names in DC_FIELDS.values() for name in names)


def test_to_dc_converts_the_known_fields_of_every_section():
    results = {
        "duration_s": 8.0, "scheduled_duration_s": 8.0, "started_unix": 1e9,
        "flows": [{"id": "a", "fct_s": 2.0, "goodput_bps": 4e6, "start_s": 0.04,
                   "min_rate_bps": None},
                  {"id": "b", "fct_s": None, "goodput_bps": 0.0}],
        "totals": {"max_fct_s": 2.0, "paused_s": 0.4, "switch_paused_s": 0.1,
                   "host_paused_s": 0.3, "bytes": 10},
        "links": [{"rate_bps": 100e6, "util_ab": 0.5}],
        "collectives": [{"id": "ar", "time_s": 0.8, "algbw_bps": 40e6, "busbw_bps": 60e6,
                         "latency_p50_s": None, "steps": [{"time_s": 0.1}]}],
    }
    before = copy.deepcopy(results)
    assert to_dc(results, 4000) is results
    a, b = results["flows"]
    assert a["fct_dc_s"] == pytest.approx(0.0005) and a["goodput_dc_bps"] == 16e9
    assert a["min_rate_dc_bps"] is None and "start_dc_s" not in a
    assert b["fct_dc_s"] is None and b["goodput_dc_bps"] == 0.0
    t = results["totals"]
    assert (t["max_fct_dc_s"], t["paused_dc_s"]) == (pytest.approx(0.0005), pytest.approx(1e-4))
    assert "bytes_dc" not in str(t)
    assert results["duration_dc_s"] == pytest.approx(0.002)
    assert results["links"][0]["rate_dc_bps"] == 400e9
    c = results["collectives"][0]
    assert (c["time_dc_s"], c["algbw_dc_bps"], c["busbw_dc_bps"]) == (
        pytest.approx(0.0002), 160e9, 240e9)
    assert c["latency_p50_dc_s"] is None and "time_dc_s" not in c["steps"][0]
    for key, value in before.items():  # nothing emulated is changed
        if isinstance(value, dict):
            assert {k: v for k, v in results[key].items() if k in value} == value
    assert to_dc(before, 1) == before  # time_scale 1: nothing added


def _fake_stats(t0: float) -> dict[str, Any]:
    def qp(qpn: int, nic: str, acked: int = 0) -> dict[str, Any]:
        return {"qpn": qpn, "nic": nic, "messages_outstanding": 0,
                "counters": {"bytes_acked": acked, "retransmit_packets": 0, "cnps_rx": 2,
                             "messages_completed": int(bool(acked)), "messages_failed": 0,
                             "cnps_sent": 0 if acked else 2, "ce_packets_rx": 5}}

    def nic(name: str) -> dict[str, Any]:
        return {"name": name, "counters": {"tx_packets": 1, "tx_bytes": 1, "rx_packets": 1,
                                           "rx_bytes": 1, "pfc_rx": 0},
                "paused_s": [0, 0, 0, 0.4, 0, 0, 0, 0]}

    return {"srv0": {"nics": [nic("srv0-eth0")], "qps": [qp(0x100, "srv0-eth0", 1_000_000)],
                     "messages": {"sent": [{"qpn": 0x100, "size": 1_000_000, "status": "ok",
                                            "first_tx_at": t0 + 0.5, "acked_at": t0 + 2.5}]}},
            "srv1": {"nics": [nic("srv1-eth0")], "qps": [qp(0x100, "srv1-eth0")],
                     "messages": {"sent": []}}}


def _results(time_scale: float) -> dict[str, Any]:
    data = {"name": "t", "topology": "quickstart.yaml", "duration": "10s",
            "time_scale": time_scale,
            "workload": {"flows": [{"id": "a", "src": "srv0/gpu0", "dst": "srv1/gpu0",
                                    "size": "1MB"}]},
            "expect_checks": [{"metric": "flows.0.fct_dc_s", "op": "<", "value": 0.3}]}
    scenario = scenario_from_dict(data, base_dir=ROOT / "topologies")
    flows = expand_workload(scenario)
    t0 = 1000.0
    return assemble(scenario, "builtin", flows, plan_qps(scenario, flows), _fake_stats(t0),
                    {}, {}, start_unix=t0, end_unix=t0 + scenario.duration_s)


def test_results_json_has_both_units_and_checks_can_name_them(tmp_path):
    results = _results(10)  # quickstart's 100 Mb/s links emulated at 10 Mb/s
    check_invariants(results)
    assert results["time_scale"] == 10 and results["duration_s"] == 100.0
    assert results["duration_dc_s"] == pytest.approx(10.0)
    (flow,) = results["flows"]
    assert flow["fct_s"] == pytest.approx(2.0) and flow["fct_dc_s"] == pytest.approx(0.2)
    assert flow["goodput_bps"] == pytest.approx(4e6)
    assert flow["goodput_dc_bps"] == pytest.approx(40e6)
    assert results["totals"]["max_fct_dc_s"] == pytest.approx(0.2)
    assert results["totals"]["paused_dc_s"] == pytest.approx(0.08)
    assert {link["rate_dc_bps"] for link in results["links"]} == {100e6}
    assert results["checks"][0]["passed"] and results["checks"][0]["found"] == pytest.approx(0.2)
    write_csvs(results, tmp_path)
    header, row = (tmp_path / "flows.csv").read_text().splitlines()
    assert header.endswith(",fct_dc_s,goodput_dc_bps") and row.split(",")[-2] == "0.2"


def test_results_without_time_scale_say_1_and_add_nothing(tmp_path):
    results = _results(1)
    assert results["time_scale"] == 1
    assert "_dc_" not in json.dumps({k: v for k, v in results.items() if k != "checks"})
    assert results["checks"][0]["found"] is None and not results["checks"][0]["passed"]
    write_csvs(results, tmp_path)
    assert "_dc_" not in (tmp_path / "flows.csv").read_text()


def test_the_summary_shows_data_centre_columns_only_when_scaled():
    from rich.console import Console

    def render(results: dict[str, Any]) -> str:
        console = Console(width=200, record=True)
        console.print(summary(results))
        return console.export_text()

    scaled = render(_results(10))
    assert "DC FCT µs" in scaled and "DC Gb/s" in scaled and "time scale 10" in scaled
    assert "200000.0" in scaled and "max_fct_dc_s" in scaled
    plain = render(_results(1))
    assert "DC FCT" not in plain and "time scale" not in plain


def test_the_sim_target_runs_data_centre_units_as_written():
    """On sim nothing is slowed: time_scale is recorded as 1 with the file's
    value kept, and links no live machine could emulate are no error."""
    data = dc_data(time_scale=K)
    scenario = scenario_from_dict({**data, "target": "sim"}, source="dc.yaml")
    assert scenario.target == "sim" and scenario.time_scale == 1
    assert scenario.ignored_time_scale == K and scenario.written is None
    assert scenario.topology.links[0].rate_bps == 400_000_000_000
    fast = dc_data(time_scale=1, rate="800Gbps")
    with pytest.raises(ScenarioError, match="time_scale"):
        load(fast)                                     # live: too fast to emulate
    assert scenario_from_dict(fast, source="dc.yaml", target_override="sim").time_scale == 1
