"""The view's frames start from a baseline: a flow or switch seen for the first
time gives no rate from a zero start (the first point of a chart is no spike)."""

from __future__ import annotations

from emulator.view.frames import Deriver, QpEnds
from emulator.view.picture import build_picture
from emulator.scenario import load_scenario
from tests.unit.view_run import QUICKSTART


def _deriver() -> tuple[Deriver, str]:
    topology = load_scenario(QUICKSTART, target_override="sim").topology
    src, dst = topology.servers[0].name, topology.servers[-1].name
    return Deriver(build_picture(topology), [QpEnds("f", 1, src, dst)], 1.0), src + "|" + dst


def _agents(ends: str, rx: int, ce: int, cnps: int) -> dict:
    src, dst = ends.split("|")
    return {src: {"qps": {"1": {"rate_bps": 1e9, "bytes_acked": rx}}},
            dst: {"qps": {"1": {"payload_bytes_rx": rx, "ce_packets_rx": ce,
                                "cnps_sent": cnps}}}}


def test_a_flow_first_seen_mid_run_starts_from_its_own_counters() -> None:
    deriver, ends = _deriver()
    deriver.add(0.0, {"agents": {}})  # the agents not answering yet
    # first answer 1 ms later, with 10 MB delivered and 500 marks since the start
    first = deriver.add(0.001, {"agents": _agents(ends, 10_000_000, 500, 50)})
    assert first["fl"]["f"] == [1e9, None]
    assert first["ecn"] == 0 and first["cnp"] == 0
    second = deriver.add(0.002, {"agents": _agents(ends, 10_125_000, 510, 51)})
    assert second["fl"]["f"] == [1e9, 1e9]  # 125 kB in 1 ms
    assert second["ecn"] == 10_000 and second["cnp"] == 1_000
    assert deriver.totals.flows["f"]["goodput_bps"] == 1e9


def _switch(paused_s: float, frames: int) -> dict:
    return {"ports": [{"port": 1, "tx_bytes": 0, "rx_bytes": 0, "rx_packets": 0,
                       "tx_packets": 0, "queues": [{"priority": 3, "received": 1,
                                                   "paused_s": paused_s, "pfc_rx": frames}]}]}


def test_a_switch_first_seen_mid_run_gives_no_pause_burst() -> None:
    deriver, _ends = _deriver()
    deriver.add(0.0, {"switches": {"s": None}})
    first = deriver.add(0.001, {"switches": {"s": _switch(0.5, 100)}})
    assert first["pfc"] == {}
    second = deriver.add(0.002, {"switches": {"s": _switch(0.5005, 102)}})
    assert second["pfc"] == {"s:1:3": [2000.0, 0.5]}


def test_a_receiver_that_misses_a_sample_gives_no_negative_goodput() -> None:
    deriver, ends = _deriver()
    deriver.add(0.0, {"agents": _agents(ends, 0, 0, 0)})
    deriver.add(0.001, {"agents": _agents(ends, 125_000, 0, 0)})
    gap = deriver.add(0.002, {"agents": {}})
    assert gap["fl"]["f"][1] is None and gap["ecn"] == 0
    back = deriver.add(0.003, {"agents": _agents(ends, 375_000, 0, 0)})
    assert back["fl"]["f"][1] == 1e9  # 250 kB over the 2 ms since it last answered
