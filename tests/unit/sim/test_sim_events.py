"""Scenario events on the virtual clock happen at their exact times, and a
run interrupted with Ctrl-C leaves partial results, as on a live run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import emulator.sim.engine as engine_module
import emulator.sim.links  # noqa: F401  (its types import the real Engine, before the patch)
from emulator.sim.engine import Engine

from sim_kit import run, scenario, topology


def test_stop_flow_ends_a_fed_flow(tmp_path: Path) -> None:
    """An unlimited flow at 10 Gb/s stopped at 1 ms carries what it sent by
    then plus the chunks already posted, and nothing after."""
    data = scenario("stop", topology(2, 1, rate="10Gbps", delay="1us"),
                    {"flows": [{"id": "bg", "src": "srv0/gpu0", "dst": "srv1/gpu0",
                                "size": "unlimited", "start": "0s"}]},
                    duration="4ms", events=[{"at": "1ms", "kind": "stop_flow", "flow": "bg"}])
    results = run(data, tmp_path)
    flow = results["flows"][0]
    event = results["events"][0]
    assert event["kind"] == "stop_flow" and event["applied_at_s"] == pytest.approx(0.001)
    line_bytes = 10e9 / 8 * 0.001 * 1024 / (1024 + 58)
    assert line_bytes * 0.9 < flow["bytes"] < line_bytes * 1.2  # 8 chunks of 20 us ahead
    series = (tmp_path / "series.csv").read_text().splitlines()[1:]
    late = [row for row in series if float(row.split(",")[2]) > 0.0015
            and float(row.split(",")[3]) > 0]
    assert not late  # nothing sent after the last posted chunk


def test_link_down_loses_frames_and_the_flow_recovers_after_link_up(tmp_path: Path) -> None:
    """The receiver's host link is down from 0.2 to 0.5 ms: frames sent then
    are refused or lost; the first packet after the gap draws a sequence
    NAK, go-back-N resends from there, and the flow completes about one
    outage later than it would have."""
    data = scenario("down", topology(2, 1, rate="10Gbps", delay="1us"),
                    {"flows": [{"id": "f", "src": "srv0/gpu0", "dst": "srv1/gpu0",
                                "size": "2MB", "start": "0s"}]},
                    duration="10ms",
                    events=[{"at": "200us", "kind": "link_down", "link": ["srv1/gpu0", "leaf-r0-0"]},
                            {"at": "500us", "kind": "link_up", "link": ["srv1/gpu0", "leaf-r0-0"]}])
    results = run(data, tmp_path)
    flow = results["flows"][0]
    assert [e["link_state"] for e in results["events"]] == ["down", "up"]
    assert flow["completed"] and flow["retransmits"] > 0
    ideal = 2_000_000 * (1024 + 58) / 1024 * 8 / 10e9
    assert ideal + 0.00025 < flow["fct_s"] < ideal + 0.0006
    leaf_port = results["switches"]["leaf-r0-0"]["_port_drops"]
    assert sum(leaf_port.values()) > 0  # the leaf's sends to the down link failed


def test_ctrl_c_leaves_partial_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Interrupted(Engine):  # (Engine may be an extension type: no attribute to patch)
        def run(self, until, **kwargs):  # type: ignore[no-untyped-def]
            # a run with sized work advances in series bins: Ctrl-C at 2 ms of 4
            if until < 0.002:
                return super().run(until, **kwargs)
            super().run(0.002, **kwargs)
            raise KeyboardInterrupt
    monkeypatch.setattr(engine_module, "Engine", Interrupted)
    data = scenario("cc", topology(2, 1, rate="10Gbps", delay="1us"),
                    {"flows": [{"id": "f", "src": "srv0/gpu0", "dst": "srv1/gpu0",
                                "size": "4MB", "start": "0s"}]}, duration="4ms")
    results = run(data, tmp_path)
    assert results["partial"] is True
    assert results["duration_s"] == pytest.approx(0.002)
    assert "interrupted" in results["errors"][0]
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["partial"] is True and saved["flows"][0]["bytes"] > 0
    assert (tmp_path / "flows.csv").exists() and (tmp_path / "queue_depth.png").exists()
