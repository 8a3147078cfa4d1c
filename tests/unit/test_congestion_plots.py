"""The run plots drawn from ``series.csv`` and ``pauses.csv``:
``flow_rates.png`` (measured throughput over DCQCN Rc), ``pauses.png`` and
``ecn_cnp.png``, on synthetic rows; the figures are caught before they are
closed and their lines and texts checked."""

from __future__ import annotations

import pytest

from emulator.measure import congestion_plots as cp
from emulator.measure import plots
from emulator.measure.plots import plot_flow_rates, plot_run
from tests.unit.plot_kit import PNG, figures, legend, texts  # noqa: F401 (figures: a fixture)

def series_row(flow, qp, t, rx=0.0, tx=0.0, ce=0, cnps=0):
    return {"flow": flow, "qp": str(qp), "t_s": str(t), "tx_bps": str(tx), "retx_bps": "0.0",
            "rx_bps": str(rx), "ce_packets": str(ce), "cnps_sent": str(cnps), "cnps_rx": "0"}


def two_flows():
    """f0 over QPs 1 and 2, f1 over QP 3; 10 ms bins from 0 to 50 ms."""
    rows = []
    for i in range(5):
        t = round(0.01 * i, 2)
        rows.append(series_row("f0", 1, t, rx=1e6 * (i + 1), tx=2e6, ce=i, cnps=1 if i else 0))
        rows.append(series_row("f0", 2, t, rx=5e5, tx=1e6, ce=1))
        rows.append(series_row("f1", 3, t, rx=3e6, tx=3e6))
    return rows


def test_flow_rates_goodput_on_top_and_rc_until_each_flow_completed(tmp_path, figures):
    rates = [{"flow": f, "qp": q, "t_s": t, "rate_bps": r, "target_bps": r, "alpha": "1"}
             for f, q, t, r in [("f0", 1, 0.0, 10e6), ("f0", 1, 0.02, 5e6),
                                ("f0", 1, 0.3, 8e6), ("f1", 3, 0.0, 10e6)]]
    flows = [{"id": "f0", "start_s": 0.0, "fct_s": 0.1}, {"id": "f1", "start_s": 0.0,
                                                          "fct_s": None}]
    path = plot_flow_rates(rates, tmp_path / "flow_rates.png", title="t", duration_s=0.5,
                           series_rows=two_flows(), flows=flows)
    assert path.read_bytes()[:8] == PNG
    (fig,) = figures
    ax_gp, ax_rc = fig.axes
    lines = {ln.get_label(): ln for ln in ax_gp.get_lines()}
    # the goodput of f0 is the sum of its two QPs per bin, in Mb/s
    assert list(lines["f0"].get_ydata()) == pytest.approx([1.5, 2.5, 3.5, 4.5, 5.5, 5.5])
    assert list(lines["f0"].get_xdata()) == pytest.approx([0, 0.01, 0.02, 0.03, 0.04, 0.05])
    assert list(lines["f1"].get_ydata()) == pytest.approx([3.0] * 6)
    rc = {ln.get_label(): ln for ln in ax_rc.get_lines() if not ln.get_label().startswith("_")}
    # f0 completed at 0.1 s: its Rc line stops there (the sample at 0.3 s is not drawn)
    assert list(rc["f0"].get_xdata()) == pytest.approx([0.0, 0.02, 0.1])
    assert list(rc["f0"].get_ydata()) == pytest.approx([10, 5, 5])
    # f1 never completed: its line runs to the end of the run
    assert rc["f1"].get_xdata()[-1] == pytest.approx(0.5)
    assert ax_rc.get_xlabel() == "time since run start (s)"
    assert "Mb/s" in ax_gp.get_ylabel() and "Mb/s" in ax_rc.get_ylabel()


def test_many_bins_get_an_average_line(tmp_path, figures):
    rows = [series_row("f0", 1, round(0.01 * i, 2), rx=1e6 if i % 2 else 3e6)
            for i in range(40)]
    plot_flow_rates([], tmp_path / "fr.png", series_rows=rows)
    ax_gp = figures[0].axes[0]
    (avg,) = [ln for ln in ax_gp.get_lines() if ln.get_label() == "f0"]
    assert max(avg.get_ydata()[2:-2]) == pytest.approx(2.2)   # 5-bin centred mean of 1/3 Mb/s
    assert min(avg.get_ydata()[2:-2]) == pytest.approx(1.8)
    assert "50 ms average" in ax_gp.get_title()
    assert "no rate samples" in texts(figures[0])


def test_pause_timeline_rows_and_totals(tmp_path, figures):
    rows = [{"kind": k, "node": n, "port": p, "priority": pr, "start_s": a, "end_s": b}
            for k, n, p, pr, a, b in [
                ("host", "srv0", "srv0-eth0", "3", "0.1", "0.2"),
                ("switch", "spine0", "2", "3", "0.05", "0.08"),
                ("host", "srv0", "srv0-eth0", "3", "0.3", "0.35"),
                ("switch", "leaf0", "4", "3", "0.0", "0.01")]]
    path = cp.plot_pauses(rows, tmp_path / "pauses.png", title="t", duration_s=1.0,
                          switch_sample_s=0.01)
    assert path.read_bytes()[:8] == PNG
    ax = figures[0].axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "leaf0 port 4 prio 3", "spine0 port 2 prio 3", "srv0 NIC srv0-eth0 prio 3"]
    assert "150 ms, 2 pauses" in texts(figures[0])
    bars = [c for c in ax.collections]
    assert len(bars) == 3 and sum(len(b.get_paths()) for b in bars) == 4
    assert ax.get_xlim() == pytest.approx((0.0, 1.0))
    labels = legend(ax)
    assert labels == ["switch egress queue paused (from 10 ms queue samples)",
                      "host NIC priority paused (exact)"]


def test_pause_legend_names_the_sampling_interval_of_the_run(tmp_path, figures):
    # a sim run samples its queues every bin (20 us here), not every 10 ms
    rows = [{"kind": "switch", "node": "leaf0", "port": "4", "priority": "3",
             "start_s": "0.00006", "end_s": "0.00008"}]
    queues = [{"switch": "leaf0", "port": "4", "priority": "3", "t_s": t, "depth_packets": "1",
               "depth_bytes": "4096", "paused": "1"} for t in ("6e-05", "8e-05", "0.0001")]
    interval = plots.sample_interval(queues)
    assert interval == pytest.approx(20e-6)
    cp.plot_pauses(rows, tmp_path / "pauses.png", switch_sample_s=interval)
    assert legend(figures[0].axes[0]) == ["switch egress queue paused (from 20 µs queue samples)"]
    assert plots.sample_interval([]) is None


def test_pauses_shorter_than_a_millisecond_keep_their_figure(tmp_path, figures):
    # a 128-host sim run pauses for tens of microseconds: "0 ms" said nothing
    rows = [{"kind": "switch", "node": "agg-p0-0", "port": "5", "priority": "3",
             "start_s": "0.0001", "end_s": "0.000142"}]
    cp.plot_pauses(rows, tmp_path / "pauses.png", duration_s=0.02)
    assert "42 µs, 1 pause" in texts(figures[0])


def test_no_pause_says_so(tmp_path, figures):
    cp.plot_pauses([], tmp_path / "pauses.png", duration_s=2.0)
    assert "no PFC pause in this run" in texts(figures[0])
    assert (tmp_path / "pauses.png").stat().st_size > 1000


def test_ecn_cnp_stacks_flows_and_marks_the_start(tmp_path, figures):
    cp.plot_ecn_cnp(two_flows(), tmp_path / "ecn_cnp.png", title="t", duration_s=0.1)
    fig = figures[0]
    ax_ce, ax_cnp, ax_tx = fig.axes
    assert "total 15" in ax_ce.get_title()              # f0: 0+1+2+3+4 on QP 1, 5 on QP 2
    assert "total 4" in ax_cnp.get_title()
    # the stack's top is the sum over flows (f1 had no marks: not stacked)
    (f0,) = ax_ce.collections
    ys = f0.get_paths()[0].vertices[:, 1]
    assert max(ys) == pytest.approx(5)                   # 4 + 1 in the last bin
    assert "marking starts (bin at 0 ms)" in texts(fig)
    assert ax_tx.get_ylabel() == "tx rate (Mb/s)"
    assert legend(ax_tx) == ["f0", "f1"]


def test_ecn_cnp_without_marks_and_without_a_csv(tmp_path, figures):
    rows = [series_row("f0", 1, 0.0, rx=1e6, tx=1e6)]
    cp.plot_ecn_cnp(rows, tmp_path / "a.png")
    assert "no ECN marks in this run" in texts(figures[0])
    assert "no CNPs sent in this run" in texts(figures[0])
    cp.plot_ecn_cnp([], tmp_path / "b.png", missing="no series.csv here")
    assert texts(figures[1]).count("no series.csv here") == 3


def test_past_eight_flows_the_same_ones_are_drawn_and_the_rest_summed():
    marks = {f"f{i}": {0.0: float(i)} for i in range(12)}
    sent = {f"f{i}": {0.0: 100.0 - i} for i in range(12)}
    assert cp.pick_flows(marks) == ["f4", "f5", "f6", "f7", "f8", "f9", "f10", "f11"]
    # without marks, the flows that sent most
    assert cp.pick_flows({"a": {0.0: 0.0}, "b": {0.0: 0.0}},
                         {"a": {0.0: 1.0}, "b": {0.0: 5.0}}, n=1) == ["b"]
    assert cp.pick_flows({"a": {0.0: 0.0}}, {"a": {0.0: 0.0}}) == []
    keep = cp.pick_flows(marks, sent)
    top = cp._top(marks, keep)
    assert list(top) == keep + [cp.OTHER] and top[cp.OTHER] == {0.0: 0 + 1 + 2 + 3}
    assert list(cp._top(sent, keep, others=False)) == keep
    assert cp.bin_width([series_row("a", 1, 0.0), series_row("a", 1, 0.02),
                         series_row("b", 2, 0.0), series_row("b", 2, 0.04)]) == 0.02
    assert cp.moving_average([1, 2, 3, 4, 5], 3) == pytest.approx([1.5, 2, 3, 4, 4.5])


def test_plot_run_draws_all_four_and_says_what_is_missing(tmp_path, figures):
    paths = plot_run(tmp_path, title="nothing")
    assert [p.name for p in paths] == ["queue_depth.png", "flow_rates.png", "pauses.png",
                                       "ecn_cnp.png"]
    assert all(p.read_bytes()[:8] == PNG and p.stat().st_size > 1000 for p in paths)
    assert "no series.csv" in texts(figures[1])         # flow_rates: the goodput panel
    assert "no pauses.csv" in texts(figures[2])
    assert "no series.csv" in texts(figures[3])
