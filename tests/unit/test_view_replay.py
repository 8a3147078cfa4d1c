"""A finished run replays exactly: the frames ``aifabric view RESULTS_DIR``
rebuilds from a sim run's CSVs (``port_bytes.csv``, ``pfc_frames.csv``,
``ecn_marks.csv``, ``pauses.csv``) show the link use, the pauses (switch
queues and hosts' NICs) and the CE marks per queue that the same run's page
showed while it ran; and /metrics exports the NICs' pauses."""

from __future__ import annotations

import csv
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from emulator.run.sim import run_sim
from emulator.scenario import load_scenario
from emulator.view.feed import RunState, ViewFeed
from emulator.view.replay import load_replay
from emulator.view.server import ViewServer

ROOT = Path(__file__).resolve().parents[2]


def _fed_run(name: str, out: Path) -> tuple[list[dict], dict, RunState]:
    state = RunState(name)
    feed = ViewFeed(state, max_pending=100_000, min_wall_s=0.0)  # every bin
    results = run_sim(load_scenario(ROOT / "scenarios" / f"{name}.yaml", target_override="sim"),
                      out, progress=False, observer=feed)
    feed.on_end(results)
    feed.close()
    assert state.ended is not None and feed.dropped == 0
    return state.frames, results, state


@pytest.fixture(scope="module", params=["pfc-incast", "incast-ecn"])
def streamed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp(request.param)
    frames, results, state = _fed_run(request.param, out)
    return out, frames, results, state


def _close(a: float | None, b: float | None, tol: float) -> bool:
    return a is None or b is None or abs(a - b) <= tol + 1e-6 * max(abs(a), abs(b))


def test_replayed_frames_are_the_streamed_ones(streamed) -> None:
    out, live, results, _state = streamed
    replay = load_replay(out)
    assert "fabric_util" not in replay.info  # every link direction is exact
    bin_s = results["sim"]["series_bin_s"]
    by_t = {round(f["t"], 6): f for f in replay.frames}
    compared = 0
    for f in live[1:]:  # the first streamed frame is the baseline (no interval)
        r = by_t[round(f["t"], 6)]
        assert f["dt"] == pytest.approx(bin_s)
        assert set(r["util"]) == set(f["util"]), f["t"]
        for edge, value in f["util"].items():
            assert r["util"][edge] == pytest.approx(value, abs=2e-4), (f["t"], edge)
        switch_pfc = {k: v for k, v in f["pfc"].items() if "-eth" not in k}
        replayed = {k: v for k, v in r["pfc"].items() if "-eth" not in k}
        assert replayed.keys() == switch_pfc.keys(), f["t"]
        for key, (rate, share) in switch_pfc.items():
            assert replayed[key] == [pytest.approx(rate), pytest.approx(share, abs=1e-4)]
        nic_live = {k: v[1] for k, v in f["pfc"].items() if "-eth" in k}
        nic_replay = {k: v[1] for k, v in r["pfc"].items() if "-eth" in k}
        for key in set(nic_live) | set(nic_replay):
            assert _close(nic_live.get(key, 0.0), nic_replay.get(key, 0.0), 1e-3), (f["t"], key)
        assert r["ecnq"] == pytest.approx(f["ecnq"]), f["t"]
        compared += 1
    assert compared == len(replay.frames) == round(results["duration_s"] / bin_s)
    # what happened is in the frames: pauses in pfc-incast, marks in incast-ecn
    totals = results["totals"]
    marks = sum(v * bin_s for f in live for v in f.get("ecnq", {}).values())
    assert marks == pytest.approx(totals["ecn_marked"], abs=1e-6)
    frames_sent = sum(v[0] * bin_s for f in live for k, v in f["pfc"].items() if "-eth" not in k)
    assert frames_sent == pytest.approx(totals["pfc_tx"] + totals["pfc_rx"], abs=1e-6)
    held = sum(v[1] * bin_s for f in live for k, v in f["pfc"].items() if "-eth" in k)
    assert held == pytest.approx(totals["host_paused_s"], abs=bin_s)
    if totals["host_paused_s"]:
        assert any(f["paused"] for f in live)


def test_counter_csvs_add_up_to_the_results(streamed) -> None:
    out, _live, results, _state = streamed

    def last(name: str, column: str) -> float:
        final: dict[tuple, float] = {}
        with open(out / name, newline="") as f:
            for row in csv.DictReader(f):
                final[(row["switch"], row["port"], row.get("priority"))] = float(row[column])
        return sum(final.values())
    totals = results["totals"]
    assert last("ecn_marks.csv", "ecn_marked") == totals["ecn_marked"]
    assert last("pfc_frames.csv", "pfc_tx") == totals["pfc_tx"]
    assert last("pfc_frames.csv", "paused_s") == pytest.approx(totals["switch_paused_s"])
    tx = sum(q["tx_bytes"] for ports in results["switches"].values()
             for port, prios in ports.items() if port.isdigit() for q in prios.values())
    rx = sum(q["rx_bytes"] for ports in results["switches"].values()
             for port, prios in ports.items() if port.isdigit() for q in prios.values())
    # the sockets' bytes: what P4 counted plus the 60-byte pause frames the MACs sent
    assert last("port_bytes.csv", "tx_bytes") == tx + 60 * totals["pfc_tx"]
    assert last("port_bytes.csv", "rx_bytes") == rx


def test_nic_pauses_in_totals_and_metrics(streamed) -> None:
    _out, _live, results, state = streamed
    hosts = results["hosts"]
    live = {(h, n): v["paused_s"] for (h, n, _p), v in state.totals.nics.items()}
    expected = {(h, n): nic["paused_s"] for h, host in hosts.items()
                for n, nic in host["nics"].items() if nic["paused_s"]}
    assert live.keys() == expected.keys()
    for key, value in expected.items():
        assert live[key] == pytest.approx(value, abs=1e-9)
    frames = {(h, n): v["frames"] for (h, n, _p), v in state.totals.nics.items()}
    for (h, n), count in frames.items():
        assert 0 < count <= hosts[h]["nics"][n]["pfc_rx"]


def test_metrics_export_nic_pauses_and_queue_marks(streamed) -> None:
    out, _live, results, state = streamed
    with ViewServer([state]) as server:
        text = httpx.get(server.url + "metrics").text
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    totals = results["totals"]
    paused = samples.get("aifabric_nic_pfc_paused_seconds_total", [])
    assert sum(s.value for s in paused) == pytest.approx(totals["host_paused_s"], abs=1e-9)
    for s in paused:
        assert set(s.labels) == {"host", "nic", "priority"}
    marked = samples["aifabric_queue_ecn_marked_packets_total"]
    assert sum(s.value for s in marked) == totals["ecn_marked"]


def test_cumulative_reads_sampled_counters() -> None:
    """Rows only where a counter moved: flat until one interval before the next
    row, exact at sampling instants, a late sample's rise spread over its gap,
    a drop (a reset) counted as a restart from zero."""
    from emulator.view.replay_counters import Cumulative

    c = Cumulative(0.01)
    for t, value in ((0.0, 100), (0.05, 200), (0.062, 260), (0.07, 10)):
        c.add(t, value)
    assert c.at(-0.01) is None
    assert c.at(0.03) == 100 and c.at(0.04) == 100   # idle samples: no rows
    assert c.at(0.045) == pytest.approx(150)          # the rise of the sample at 0.05
    assert c.at(0.05) == 200
    assert c.at(0.056) == pytest.approx(230)          # 0.062 came 12 ms after 0.05
    assert c.at(0.07) == 270                          # reset to 0, then 10 more
    assert c.delta(0.0, 0.07) == 170
