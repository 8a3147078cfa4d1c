"""The time-series CSV writers (``queues.csv``, ``rates.csv``) and the run
plots (``queue_depth.png``, ``flow_rates.png``) on synthetic data."""

from __future__ import annotations

import csv

import pytest

from emulator.measure.buffer_series import BUFFER_COLUMNS, GROUP_COLUMNS
from emulator.measure import plots
from emulator.measure.plots import pause_intervals, plot_run, queue_series, top_queues
from emulator.run.qps import QpPlan
from emulator.measure.results import QUEUES_COLUMNS, RATES_COLUMNS, write_series_csvs

START = 1_700_000_000.0


def qp(flow, qpn, src="srv0"):
    return QpPlan(flow=flow, stripe=0, qpn=qpn, src_gpu="g0", dst_gpu="g1", src_server=src,
                  dst_server="srv9", size_bytes=None, start_ns=0, priority=3, dscp=26, fed=False)


def synthetic():
    # switch clock = unix - 1000; the run starts at START
    offset = 1000.0
    samples = [[START - offset + 0.01 * i, i, 1000 * i, i >= 5] for i in range(10)]
    series = {
        "leaf0": {"unix_offset_s": offset, "interval_s": 0.01, "queues": [
            {"port": 3, "priority": 3, "samples": samples},
            {"port": 1, "priority": 0, "samples": [[START - offset + 0.05, 1, 200, False]]}],
            "buffer": [[START - offset + 0.01 * i, 900 * i, 100 * i, 1_000_000, 20_000]
                       for i in range(10)],
            "groups": [{"port": 2, "priority": 3,
                        "samples": [[START - offset + 0.01 * i, 1000 * i, 100 * i, i >= 5]
                                    for i in range(10)]}]},
        "leaf1": None,   # not read
    }
    stats = {"srv0": {"qps": [
        {"qpn": 17, "rate_samples": [[START + 0.0, 10e9, 10e9, 1.0],
                                     [START + 0.1, 5e9, 10e9, 1.0]]},
        {"qpn": 18, "rate_samples": []}]},
        "srv1": None}
    qps = [qp("f0", 17), qp("f1", 18), qp("f2", 19, src="srv1")]
    return series, qps, stats


def read(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_series_csvs(tmp_path):
    series, qps, stats = synthetic()
    write_series_csvs(tmp_path, series, qps, stats, START)
    queues = read(tmp_path / "queues.csv")
    assert tuple(queues[0]) == QUEUES_COLUMNS and len(queues) == 12
    assert queues[1] == ["leaf0", "3", "3", "0.0", "0", "0", "0"]
    assert queues[10] == ["leaf0", "3", "3", "0.09", "9", "9000", "1"]
    assert queues[11][:4] == ["leaf0", "1", "0", "0.05"]
    rates = read(tmp_path / "rates.csv")
    assert tuple(rates[0]) == RATES_COLUMNS
    assert rates[1:] == [["f0", "17", "0.0", "10000000000.0", "10000000000.0", "1.0"],
                         ["f0", "17", "0.1", "5000000000.0", "10000000000.0", "1.0"]]
    buffer = read(tmp_path / "buffer.csv")
    assert tuple(buffer[0]) == BUFFER_COLUMNS and len(buffer) == 11
    assert buffer[1] == ["leaf0", "0.0", "0", "0", "1000000", "20000"]
    assert buffer[10] == ["leaf0", "0.09", "8100", "900", "1000000", "20000"]
    groups = read(tmp_path / "priority_groups.csv")
    assert tuple(groups[0]) == GROUP_COLUMNS and len(groups) == 11
    assert groups[6] == ["leaf0", "2", "3", "0.05", "5000", "500", "1"]


def test_empty_inputs_still_write_headers_and_plots(tmp_path):
    write_series_csvs(tmp_path, {}, [], {}, START)
    assert read(tmp_path / "queues.csv") == [list(QUEUES_COLUMNS)]
    assert read(tmp_path / "rates.csv") == [list(RATES_COLUMNS)]
    assert read(tmp_path / "buffer.csv") == [list(BUFFER_COLUMNS)]
    assert read(tmp_path / "priority_groups.csv") == [list(GROUP_COLUMNS)]
    paths = plot_run(tmp_path, title="empty")
    assert [p.name for p in paths] == ["queue_depth.png", "flow_rates.png", "pauses.png",
                                       "ecn_cnp.png", "buffer.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)
    # no CSVs at all (a run interrupted early): plots that say so
    other = tmp_path / "none"
    other.mkdir()
    assert all(p.stat().st_size > 1000 for p in plot_run(other))


def test_plots_from_csvs(tmp_path):
    series, qps, stats = synthetic()
    write_series_csvs(tmp_path, series, qps, stats, START)
    paths = plot_run(tmp_path, title="synthetic", duration_s=0.2)
    assert "buffer.png" in [p.name for p in paths]
    for p in paths:
        assert p.exists() and p.stat().st_size > 5000


def test_top_queues_and_pause_intervals():
    rows = [{"switch": "s", "port": p, "priority": 0, "t_s": t, "depth_packets": d,
             "depth_bytes": d * 100, "paused": int(paused)}
            for p, t, d, paused in [(1, 0.01, 5, 0), (1, 0.02, 0, 0), (2, 0.01, 9, 1),
                                    (2, 0.02, 9, 1), (2, 0.05, 0, 1), (3, 0.01, 0, 0)]]
    series = queue_series(rows)
    assert top_queues(series, 5) == [("s", 2, 0), ("s", 1, 0)]  # never-deep, unpaused left out
    assert top_queues(series, 1) == [("s", 2, 0)]
    assert pause_intervals(series[("s", 2, 0)]) == [
        (pytest.approx(0.0), pytest.approx(0.02)), (pytest.approx(0.04), pytest.approx(0.05))]


def test_time_scale_is_read_from_the_results(tmp_path):
    import json

    from emulator.measure.plots import _time_scale

    assert _time_scale(tmp_path) == 1.0
    (tmp_path / "results.json").write_text(json.dumps({"time_scale": 4000}))
    assert _time_scale(tmp_path) == 4000.0
    (tmp_path / "results.json").write_text("{not json")
    assert _time_scale(tmp_path) == 1.0


def test_rate_lines_show_the_queue_pairs_cut_deepest_in_flow_order():
    # 20 flows: a text sort would show f1, f10..f19 and hide f2..f9 whatever they did
    flows = [f"f{i}" for i in range(20)]
    series = {(f, 0): [(0.0, 100e9), (1e-5, 100e9 * (1 - i / 40))] for i, f in enumerate(flows)}
    shown = plots.rate_lines_shown(series, flows, n=4)
    assert shown == [("f16", 0), ("f17", 0), ("f18", 0), ("f19", 0)]
    few = plots.rate_lines_shown({("f10", 1): [(0, 1.0)], ("f2", 0): [(0, 1.0)],
                                  ("f10", 0): [(0, 1.0)]}, ["f2", "f10"])
    assert few == [("f2", 0), ("f10", 0), ("f10", 1)]
