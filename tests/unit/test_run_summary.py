"""The printed run summary: readable in 80 columns, long flow lists cut to
the flows that matter, collectives in their own table."""

from __future__ import annotations

from rich.console import Console

from emulator.measure.summary import MAX_FLOW_ROWS, shown_flows, summary


def flow(n, fct, completed=True):
    return {"id": f"f{n}", "src": "srv0/gpu0", "dst": "srv1/gpu1", "bytes": 1_500_000,
            "completed": completed, "fct_s": fct if completed else None,
            "goodput_bps": 1e7, "retransmits": 0, "cnp_received": 3}


def results(flows, **extra):
    return {"scenario": "s", "target": "builtin", "duration_s": 2.0, "partial": False,
            "flows": flows, "totals": {"drops": 0, "ecmp_imbalance": 1.23456}, "checks": [],
            **extra}


def render(res):
    console = Console(width=80, record=True, color_system=None)
    console.print(summary(res))
    return console.export_text()


def test_many_flows_show_the_incomplete_then_the_slowest():
    flows = [flow(n, 0.1 * n) for n in range(30)] + [flow(99, None, completed=False)]
    shown = shown_flows(flows)
    assert len(shown) == MAX_FLOW_ROWS
    assert shown[0]["id"] == "f99" and shown[1]["id"] == "f29"
    text = render(results(flows))
    assert f"{MAX_FLOW_ROWS} of 31 flows" in text and "not done" in text
    assert "1.235" in text  # floats in totals are short


def test_few_flows_are_all_shown_in_order_without_truncation():
    text = render(results([flow(n, 1.2345) for n in range(3)]))
    assert "1234.5" in text and "srv0/gpu0→srv1/gpu1" in text and "…" not in text


def test_collectives_get_their_table():
    coll = {"id": "ar", "kind": "all-reduce", "ranks": 4, "size_bytes": 1_000_000,
            "completed": True, "time_s": 1.6, "algbw_bps": 5e6, "busbw_bps": 7.5e6, "pxn": False}
    text = render(results([flow(0, 1.0)], collectives=[coll]))
    assert "collectives" in text and "all-reduce" in text and "1600.0" in text and "7.50" in text


def test_a_run_that_did_not_keep_up_says_why_and_what_to_do():
    fidelity = {"faithful": False, "reasons": ["leaf port 1: p99 departure lateness 900 µs"],
                "switch_late_p99_us": 900, "switch_late_max_us": 2000,
                "switch_rx_wait_p99_us": 100, "agent_late_p99_us": 50,
                "agent_late_max_us": 80, "limit_us": 600.0, "lag_given_up_s": 0.0,
                "rx_overruns": 0, "cpu_busy": 0.9, "cpu_busy_max": 1.0, "cores": 2,
                "suggested_time_scale": 10}
    text = render(results([flow(0, 0.1)], fidelity=fidelity, time_scale=5, duration_dc_s=0.4,
                          time_scale_choice={"mode": "fixed", "time_scale": 5}))
    assert "not faithful" in text and "p99 departure lateness 900" in text
    assert "time_scale: 10" in text and "fixed: 5" in text
    ok = render(results([flow(0, 0.1)], fidelity={**fidelity, "faithful": True, "reasons": []}))
    assert "not faithful" not in ok and "faithful" in ok
    sim = render(results([flow(0, 0.1)], target="sim", fidelity={"faithful": True}))
    assert "fidelity" not in sim


def test_skipped_receive_ring_slots_get_a_row_only_when_there_were_some():
    fidelity = {"faithful": True, "reasons": [], "switch_late_p99_us": 9, "limit_us": 120.0,
                "lag_given_up_s": 0.0, "rx_overruns": 0, "rx_ring_holes": 0, "cpu_busy": 0.2,
                "cpu_busy_max": 0.3, "cores": 2}
    assert "ring slots" not in render(results([flow(0, 0.1)], fidelity=fidelity))
    text = render(results([flow(0, 0.1)], fidelity={**fidelity, "rx_ring_holes": 4}))
    assert "receive ring slots skipped" in text and "4 (a frame behind each" in text
