"""``series.csv`` and ``pauses.csv`` (:mod:`emulator.measure.run_series`)
from synthetic agent stats and queue series, and from a real agent run on
the virtual clock."""

from __future__ import annotations

import csv
from dataclasses import dataclass

import pytest

from emulator.measure.run_series import (
    PAUSE_COLUMNS,
    SERIES_COLUMNS,
    host_pause_rows,
    qp_series_rows,
    sampled_pause_intervals,
    switch_pause_rows,
    write_run_series_csvs,
)
from emulator.measure.results import write_series_csvs
from tests.unit.test_agent_support import QPN, pair

START = 1_700_000_000.0


@dataclass(frozen=True)
class Plan:
    flow: str
    qpn: int
    src_server: str
    dst_server: str


def series(start_unix: float, bin_s: float = 0.01, **counts) -> dict:
    base = {k: [] for k in ("tx_bytes", "retx_bytes", "rx_bytes", "ce_packets_rx",
                            "cnps_sent", "cnps_rx")}
    return {"bin_s": bin_s, "start_unix": start_unix, "coarsenings": 0, **base, **counts}


def read(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_both_ends_of_a_queue_pair_make_one_row_per_bin():
    # sender's NIC started 20 ms before the run, receiver's 10 ms before; both
    # on the grid through the run's start
    stats = {
        "s0": {"qps": [{"qpn": 7, "series": series(
            START - 0.02, tx_bytes=[0, 0, 1250, 2500, 0, 1250], retx_bytes=[0, 0, 0, 0, 125],
            cnps_rx=[0, 0, 0, 0, 1, 2])}]},
        "s1": {"qps": [{"qpn": 7, "series": series(
            START - 0.01, rx_bytes=[0, 1000, 2000, 0, 0, 500], ce_packets_rx=[0, 0, 3],
            cnps_sent=[0, 0, 1, 1])}]},
        "s2": None,                                   # an agent that wrote no stats
    }
    plans = [Plan("f0", 7, "s0", "s1"), Plan("f1", 8, "s2", "s1")]
    rows = qp_series_rows(plans, stats, START)
    assert rows == [
        # flow, qp, t_s, tx_bps, retx_bps, rx_bps, ce, cnps_sent, cnps_rx
        ("f0", 7, 0.0, 1_000_000.0, 0.0, 800_000.0, 0, 0, 0),
        ("f0", 7, 0.01, 2_000_000.0, 0.0, 1_600_000.0, 3, 1, 0),
        ("f0", 7, 0.02, 0.0, 100_000.0, 0.0, 0, 1, 1),
        ("f0", 7, 0.03, 1_000_000.0, 0.0, 0.0, 0, 0, 2),
        ("f0", 7, 0.04, 0.0, 0.0, 400_000.0, 0, 0, 0),
    ]
    # every byte and packet of the agents' series is in the rows once
    assert sum(r[5] for r in rows) * 0.01 / 8 == 3500
    assert sum(r[3] for r in rows) * 0.01 / 8 == 5000


def test_unix_rounding_and_a_coarsened_end():
    # the receiver's start is a hair (0.1 µs) below the grid line; the
    # sender's bins were coarsened to 20 ms: the receiver's are summed into them
    stats = {
        "s0": {"qps": [{"qpn": 1, "series": series(START, 0.02, tx_bytes=[2500, 0, 2500])}]},
        "s1": {"qps": [{"qpn": 1, "series": series(
            START - 1e-7, 0.01, rx_bytes=[100, 200, 300, 400, 500])}]},
    }
    rows = qp_series_rows([Plan("f", 1, "s0", "s1")], stats, START)
    assert [r[2] for r in rows] == [0.0, 0.02, 0.04]
    assert [r[3] for r in rows] == [1_000_000.0, 0.0, 1_000_000.0]
    assert [r[5] for r in rows] == [120_000.0, 280_000.0, 200_000.0]   # (100+200)*8/0.02 ...


def test_a_queue_pair_that_moved_nothing_has_no_rows():
    stats = {"s0": {"qps": [{"qpn": 1, "series": series(START)}]},
             "s1": {"qps": [{"qpn": 1}]}}                           # an agent without series
    assert qp_series_rows([Plan("f", 1, "s0", "s1")], stats, START) == []


def test_consecutive_paused_samples_make_one_interval():
    samples = [[0.01, 3, 3000, False], [0.02, 5, 5000, True], [0.03, 5, 5000, True],
               [0.04, 2, 2000, False], [0.05, 9, 9000, True], [0.09, 9, 9000, True]]
    assert sampled_pause_intervals(samples, 0.01) == [
        (pytest.approx(0.01), 0.03), (pytest.approx(0.04), 0.05), (pytest.approx(0.08), 0.09)]
    # a sampler running a little late still makes one interval; a missing
    # sample (the queue was idle and unpaused) ends it
    late = [[0.01, 1, 1, True], [0.0204, 1, 1, True], [0.0311, 1, 1, True],
            [0.0511, 1, 1, True]]
    assert sampled_pause_intervals(late, 0.01) == [
        (pytest.approx(0.0), 0.0311), (pytest.approx(0.0411), 0.0511)]
    offset = 1000.0                                       # switch clock = unix - 1000
    answer = {"unix_offset_s": offset, "interval_s": 0.01, "queues": [
        {"port": 4, "priority": 3,
         "samples": [[START - offset + t, p, b, paused] for t, p, b, paused in samples]},
        {"port": 1, "priority": 0, "samples": [[START - offset + 0.5, 1, 100, False]]}]}
    rows = switch_pause_rows({"leaf1": answer, "leaf0": None}, START)
    assert rows == [("switch", "leaf1", 4, 3, 0.01, 0.03), ("switch", "leaf1", 4, 3, 0.04, 0.05),
                    ("switch", "leaf1", 4, 3, 0.08, 0.09)]


def test_host_pauses_come_from_the_nics_intervals():
    spans = [[] for _ in range(8)]
    spans[3] = [[START + 0.1, START + 0.125], [START + 0.2, START + 0.3]]
    spans[6] = [[START - 0.05, START + 0.001]]
    stats = {"srv1": {"nics": [{"name": "srv1-eth0", "pause_intervals": spans}]},
             "srv0": None, "srv2": {"nics": [{"name": "srv2-eth0"}]}}
    assert host_pause_rows(stats, START) == [
        ("host", "srv1", "srv1-eth0", 3, 0.1, 0.125), ("host", "srv1", "srv1-eth0", 3, 0.2, 0.3),
        ("host", "srv1", "srv1-eth0", 6, -0.05, 0.001)]


def test_files_have_their_headers_even_when_empty(tmp_path):
    write_run_series_csvs(tmp_path, {}, [], {}, START)
    assert read(tmp_path / "series.csv") == [list(SERIES_COLUMNS)]
    assert read(tmp_path / "pauses.csv") == [list(PAUSE_COLUMNS)]
    other = tmp_path / "runner"
    other.mkdir()
    write_series_csvs(other, {}, [], {}, START)            # what the runner calls
    assert sorted(p.name for p in other.iterdir()) == [
        "buffer.csv", "ecn_marks.csv", "pauses.csv", "pfc_frames.csv", "port_bytes.csv",
        "priority_groups.csv", "queues.csv", "rates.csv", "series.csv"]


def test_an_agent_run_gives_rows_that_add_up_to_its_counters(tmp_path):
    start = 0.0037                      # the run's common start, 3.7 ms after the agents'
    net = pair(a={"workload": {"start_at_unix": start,
                               "messages": [{"qp": QPN["a"], "size_bytes": 50_000}]}},
               b={"workload": {"start_at_unix": start}})
    net.run(0.3)
    stats = {name: agent.snapshot(net.clock.now) for name, agent in net.agents.items()}
    # QP a on host a talks to QP b on host b: give both the same number, as the runner does
    stats["b"]["qps"][0]["qpn"] = QPN["a"]
    assert stats["a"]["qps"][0]["series"]["start_unix"] == pytest.approx(start - 0.01)
    write_run_series_csvs(tmp_path, {}, [Plan("f", QPN["a"], "a", "b")], stats, start)
    rows = read(tmp_path / "series.csv")[1:]
    assert rows and rows[0][2] == "0.0"
    assert sum(float(r[3]) for r in rows) * 0.01 / 8 == pytest.approx(50_000)
    assert sum(float(r[5]) for r in rows) * 0.01 / 8 == pytest.approx(50_000)
    times = [float(r[2]) for r in rows]
    assert times == pytest.approx([0.01 * i for i in range(len(rows))])
    # 50 KB at 10 Mb/s: ~45 ms of sending, the rate near the line in full bins
    assert 4 <= len(rows) <= 7
    assert 8e6 < float(rows[1][3]) <= 10e6
