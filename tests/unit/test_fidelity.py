"""The fidelity monitor's pieces without root: the lateness histogram, the
switch data plane's lateness and lag accounting on a virtual clock, the
host-link receive side (``rx_link``), the NIC pacer's lag given up, the
agent loop's lateness, the runner's judgement and what the summary says."""

from __future__ import annotations

import math

import pytest

from emulator.fidelity import (
    REFERENCE_FRAME_BYTES, BehindSeries, LatenessHistogram, frame_time_us, merge_histograms,
)
from emulator.fidelity.lateness import bucket_of, bucket_upper_us
from emulator.fidelity.cpu import CpuSampler, read_cpu_times
from emulator.fidelity.verdict import (
    behind_spans, fix_line, judge, nice_ceil, suggest_time_scale, summary_line,
)
from emulator.targets.builtin.config import PortConfig
from emulator.targets.builtin.dataplane import MAX_LAG_S
from emulator.traffic.agent.pacing import Pacer
from tests.unit.test_builtin_support import ipv4_frame, make_dataplane


# -- the histogram ---------------------------------------------------------------------

def test_buckets_are_exact_then_within_an_eighth():
    assert [bucket_of(us) for us in range(32)] == list(range(32))
    previous = 31
    for us in range(32, 200_000, 7):
        index = bucket_of(us)
        assert index >= previous
        previous = index
        upper = bucket_upper_us(index)
        assert us <= upper and upper - us <= us / 8 + 1
        assert index == 0 or bucket_upper_us(index - 1) < us


def test_percentiles_never_below_the_truth_and_merge():
    h = LatenessHistogram()
    for us in range(1, 1001):
        h.record_s(us * 1e-6)
    h.record_s(-1.0)  # early counts as on time
    assert h.count == 1001 and h.max_us == 1000
    p99 = h.percentile_us(0.99)
    assert 990 <= p99 <= 990 * 1.13
    assert h.percentile_us(1.0) == 1000
    assert h.fraction_over_us(500) == pytest.approx(0.5, abs=0.07)
    again = LatenessHistogram.from_dict(h.to_dict())
    assert again.to_dict() == h.to_dict()
    both = merge_histograms([h.to_dict(), None, again])
    assert both.count == 2002 and both.percentile_us(0.99) == p99
    assert LatenessHistogram().percentile_us(0.99) is None


def test_frame_time_of_the_reference_frame():
    assert REFERENCE_FRAME_BYTES == 1500
    assert frame_time_us(100e6) == pytest.approx(120.0)
    assert frame_time_us(1e9) == pytest.approx(12.0)
    assert math.isinf(frame_time_us(0))


def test_behind_series_bins_late_events_and_lag():
    s = BehindSeries(interval_s=0.01)
    s.event(0.001, 50, 120)
    s.event(0.002, 500, 120)
    s.gave_up(0.015, 0.002)
    d = s.to_dict(unix_offset_s=100.0)
    assert d["bins"] == [[100.0, 2, 1, 500, 0], [100.01, 0, 0, 0, 2000]]


# -- the switch data plane ----------------------------------------------------------------

def test_on_time_departures_are_not_late():
    dp, clock, ports = make_dataplane({1: PortConfig(), 2: PortConfig(rate_bps=10e6)})
    for i in range(20):
        dp.receive(1, ipv4_frame(2, 1000, ident=i))
    while dp.next_deadline() is not None:
        clock.t = dp.next_deadline()
        dp.run_due(clock.t)
    port = dp.fidelity([2])["ports"][0]
    assert port["late"]["count"] == 20 and port["late"]["max_us"] == 0
    assert port["lag_given_up_s"] == 0 and port["frame_us"] == pytest.approx(1200.0)


def test_late_departures_are_measured_and_lag_beyond_max_is_counted():
    dp, clock, ports = make_dataplane({1: PortConfig(), 2: PortConfig(rate_bps=10e6)})
    for i in range(10):
        dp.receive(1, ipv4_frame(2, 1000, ident=i))
    clock.t = 0.003  # the loop comes back 3 ms late: the first frames leave late
    dp.run_due(clock.t)
    late = LatenessHistogram.from_dict(dp.fidelity([2])["ports"][0]["late"])
    assert late.count >= 2 and late.max_us >= 2000
    # 50 ms asleep with frames queued: more than MAX_LAG_S is given up, and counted
    clock.t = 0.053
    dp.run_due(clock.t)
    port = dp.fidelity([2])["ports"][0]
    assert port["lag_given_up_events"] >= 1
    assert port["lag_given_up_s"] == pytest.approx(0.053 - MAX_LAG_S - 0.0048, abs=0.002)
    behind = dp.fidelity()["behind"]["bins"]
    assert any(row[4] > 0 for row in behind) and any(row[2] > 0 for row in behind)
    dp.reset_stats()
    port = dp.fidelity([2])["ports"][0]
    assert port["late"]["count"] == 0 and port["lag_given_up_s"] == 0
    assert dp.fidelity()["behind"]["bins"] == []


def test_cheap_lateness_counting_gives_what_recording_every_departure_gives():
    # Departures on time and late, across behind bins: the data plane's
    # counting (a tally per µs, the behind bin updated in place) must leave
    # the same histogram and series as recording each one
    # (LatenessHistogram.record_s, BehindSeries.event).
    dp, clock, ports = make_dataplane({1: PortConfig(), 2: PortConfig(rate_bps=100e6)})
    late_ref, behind_ref = LatenessHistogram(), BehindSeries()
    frame_us = dp.port(2).frame_us
    for i in range(60):
        dp.receive(1, ipv4_frame(2, 500, ident=i), clock.t)
        while dp.next_deadline() is not None:
            due = dp.next_deadline()
            # every 7th departure 0.3-3 ms late, the rest on time (or < 1 µs late)
            clock.t = due + (0.0003 * (i % 10) if i % 7 == 0 else 4e-7 * (i % 2))
            dp.run_due(clock.t)
        behind_ref.event(clock.t, late_ref.record_s(clock.t - due), frame_us)
        clock.t += 0.0021  # bins of 10 ms: several departures in each
    assert len(late_ref.buckets) > 3 and len(behind_ref.bins) > 3
    assert len(ports[2].sent) == 60
    assert dp.fidelity([2])["ports"][0]["late"] == late_ref.to_dict()
    assert dp.fidelity()["behind"] == behind_ref.to_dict()
    assert dp.port(2).late.count == 60 and not dp.port(2).lateness.counts


def test_rx_link_delays_and_serialises_frames_from_a_nic():
    # port 1 faces a NIC: a frame handed over at t enters ingress after its
    # serialisation at 10 Mb/s plus 100 us of delay; frames read together
    # arrive one serialisation apart, in order
    dp, clock, ports = make_dataplane({1: PortConfig(rate_bps=10e6, delay_us=100, rx_link=True),
                                       2: PortConfig()})
    dp.receive(1, ipv4_frame(2, 1000, ident=1))
    dp.receive(1, ipv4_frame(2, 1000, ident=2))
    dp.run_due(0.0)
    assert ports[2].sent == []
    times = []
    while dp.next_deadline() is not None:
        clock.t = dp.next_deadline()
        dp.run_due(clock.t)
        times += [t for t, _ in ports[2].sent[len(times):]]
    assert times == pytest.approx([0.0008 + 0.0001, 0.0016 + 0.0001])
    assert PortConfig().updated({"rx_link": "true"}).rx_link is True
    assert PortConfig().to_dict()["rx_link"] is False


# -- NIC pacer and loop ---------------------------------------------------------------------

def test_pacer_counts_the_lag_it_gives_up():
    p = Pacer(8e6, max_lag_s=0.001)   # 1 us per byte
    p.consume(1000, 0.0)              # free at 1 ms
    assert p.given_up_s == 0
    p.consume(1000, 0.0105)           # 9.5 ms late, 1 ms may be caught up
    assert p.given_up_events == 1 and p.given_up_s == pytest.approx(0.0085)


# -- judging a run ---------------------------------------------------------------------------

def _hist(values_us):
    h = LatenessHistogram()
    for v in values_us:
        h.record_s(v * 1e-6)
    return h.to_dict()


def _switch(late_us, wait_us=(), given_up=0.0, overruns=0, frame_us=120.0):
    return {"unix_offset_s": 0.0, "ports": [{
        "port": 1, "name": "p1", "rate_bps": 100e6, "frame_us": frame_us,
        "late": _hist(late_us), "rx_wait": _hist(wait_us), "lag_given_up_s": given_up,
        "lag_given_up_events": int(given_up > 0), "rx_overruns": overruns}],
        "behind": {"interval_s": 0.01, "bins": [[10.5, 100, 50, 900, 0]]}}


def _agent(late_us, given_up=0.0, frame_us=120.0):
    return {"fidelity": {"late": _hist(late_us), "frame_us": frame_us,
                         "behind": {"interval_s": 0.01, "bins": []}},
            "lag_given_up": {"eth0": {"s": given_up, "events": int(given_up > 0)}}}


def test_a_run_that_kept_up_is_faithful():
    f = judge({"s1": _switch([5] * 300, [3] * 300)}, {"h1": _agent([10] * 300)},
              {"cpu_busy": 0.4, "cpu_busy_max": 0.6, "cores": 2}, start_unix=10.0,
              end_unix=12.0)
    assert f["faithful"] is True and f["reasons"] == [] and f["suggested_time_scale"] is None
    assert f["switch_late_p99_us"] == 5 and f["agent_late_p99_us"] == 10
    assert f["lag_given_up_s"] == 0 and f["rx_overruns"] == 0 and f["limit_us"] == 120.0
    assert f["measured"] == ["switches", "agents", "cpu"]
    assert "faithful" in summary_line(f) and fix_line(f, 1) is None


def test_each_broken_condition_is_a_reason():
    f = judge({"s1": _switch([5] * 270 + [900] * 30, [3] * 300, given_up=0.01, overruns=3)},
              {"h1": _agent([10] * 300, given_up=0.002)}, None, start_unix=10.0,
              end_unix=12.0, time_scale=4)
    assert f["faithful"] is False
    text = " ".join(f["reasons"])
    assert "s1 port 1: p99 departure lateness" in text and "lag given up: 0.0120 s" in text
    assert "3 frames dropped by the kernel" in text
    assert f["suggested_time_scale"] == 40  # 4 x 10 (the worst excess, capped)
    assert f["behind_spans"] == [[0.5, 0.51]]
    assert "NOT FAITHFUL" in summary_line(f)
    assert "time_scale: 40" in fix_line(f, 4)


def test_one_hiccup_of_lag_is_tolerated_and_more_is_a_reason():
    """Up to 0.5 % of the run given up is faithful (one 8 ms hiccup of a
    2-core machine in a 1.8 s run); more is a reason."""
    ok = judge({}, {"h1": _agent([10] * 300, given_up=0.0078)}, None, start_unix=0.0,
               end_unix=1.8)
    assert ok["faithful"] is True and ok["lag_given_up_s"] == 0.0078
    bad = judge({}, {"h1": _agent([10] * 300, given_up=0.0095)}, None, start_unix=0.0,
                end_unix=1.8)
    assert bad["faithful"] is False and "lag given up: 0.0095 s" in " ".join(bad["reasons"])


def test_few_frames_are_not_judged_and_bmv2_is_judged_on_agents():
    f = judge({"s1": _switch([9000] * 5)}, {}, None, start_unix=0, end_unix=1)
    assert f["faithful"] is True and f["limit_us"] is None
    g = judge({}, {"h1": _agent([10] * 300)}, None, start_unix=0, end_unix=1, target="bmv2")
    assert g["faithful"] is True and g["measured"] == ["agents"] and "bmv2" in g["note"]
    assert g["rx_overruns"] is None


def test_behind_spans_merge_and_clip_to_the_run():
    sw = {"s1": {"unix_offset_s": 100.0, "behind": {"interval_s": 0.01, "bins": [
        [0.0, 10, 5, 1, 0], [0.01, 10, 0, 1, 0], [0.02, 10, 0, 0, 5], [5.0, 10, 10, 9, 0]]}}}
    assert behind_spans(sw, {}, 100.005, 102.0) == [[0.0, 0.025]]


def test_nice_time_scales():
    assert [nice_ceil(v) for v in (0.5, 1, 1.5, 2, 3, 7, 11, 40, 400)] == \
        [1, 1, 2, 2, 3, 8, 15, 40, 400]
    assert suggest_time_scale(1, 1.1) == 2 and suggest_time_scale(10, 100) == 100


def test_cpu_sampler_reads_proc_stat(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 100 800 0 0 0 0 0 0\n")
    assert read_cpu_times(str(stat)) == (200, 1000)
    sampler = CpuSampler(interval_s=0.01, path=str(stat)).start()
    stat.write_text("cpu  200 0 200 900 0 0 0 0 0 0\n")  # 200 busy of 300
    sampler.stop()
    result = sampler.result()
    assert result["cpu_busy"] == pytest.approx(0.667, abs=0.001) and result["cores"] >= 1
    assert CpuSampler(path=str(tmp_path / "none")).start().result()["cpu_busy"] is None


def test_cpu_sampler_keeps_a_short_last_stretch_out_of_its_samples(tmp_path, monkeypatch):
    # stop() just after a sample reads a jiffy or two: 0 % or 100 % busy,
    # noise the live view would publish as the machine's CPU use
    from emulator.fidelity import cpu as cpu_module
    clock = [100.0]
    monkeypatch.setattr(cpu_module.time, "monotonic", lambda: clock[0])
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 100 800 0 0 0 0 0 0\n")
    sampler = CpuSampler(interval_s=0.25, path=str(stat))
    sampler._first = sampler._last = cpu_module.read_cpu_counters(str(stat))
    sampler._last_at = clock[0]
    stat.write_text("cpu  150 0 100 850 0 0 0 0 0 0\n")  # 50 busy of 100
    clock[0] += 0.25
    sampler._sample()
    stat.write_text("cpu  150 0 100 851 0 0 0 0 0 0\n")  # 1 idle jiffy, 2 ms later
    clock[0] += 0.002
    sampler._sample(final=True)
    result = sampler.result()
    assert [b for _, b in result["samples"]] == [0.5] and result["cpu_busy_max"] == 0.5
    assert result["cpu_busy"] == pytest.approx(50 / 101, abs=0.001)  # the mean keeps it
    # a final stretch of half an interval or more is a sample of its own
    stat.write_text("cpu  170 0 100 871 0 0 0 0 0 0\n")
    clock[0] += 0.2
    sampler._sample(final=True)
    assert [b for _, b in sampler.result()["samples"]] == [0.5, 0.5]


def test_events_carried_out_late_are_a_reason():
    events = [{"kind": "stop_flow", "at_ns": 1_000_000_000, "applied_at_s": 1.03},
              {"kind": "pfc_storm_start", "at_ns": 300_000_000, "applied_at_s": 0.3,
               "scheduled_at_s": -0.5}]
    f = judge({}, {}, None, start_unix=0, end_unix=1, events=events)
    assert f["faithful"] is True
    events.append({"kind": "pfc_storm_stop", "at_ns": 300_000_000, "scheduled_at_s": 3.6})
    f = judge({}, {}, None, start_unix=0, end_unix=1, events=events)
    assert f["faithful"] is False and "1 events carried out late" in f["reasons"][0]


def test_realtime_guard_drops_and_retakes_the_priority(monkeypatch):
    import os

    from emulator.fidelity import process

    calls = []
    monkeypatch.setattr(os, "sched_setscheduler", lambda pid, policy, param: calls.append(policy))
    monkeypatch.setattr(process, "_set_threads", lambda policy, prio: calls.append(("all", policy)))
    cpu = [0.0]
    monkeypatch.setattr(process.time, "process_time", lambda: cpu[0])
    guard = process.RealtimeGuard(10, window_s=1.0)
    assert guard.start(0.0) and guard.active
    cpu[0] = 0.8          # 80 % of a core over the first second: drop it
    guard.check(1.0)
    assert not guard.active and guard.demotions == 1
    cpu[0] = 1.2          # 40 %: not yet light enough to take it back
    guard.check(2.0)
    assert not guard.active
    cpu[0] = 1.3          # 10 %: take it back
    guard.check(3.0)
    assert guard.active and guard.to_dict()["demotions"] == 1
    guard.reset()
    assert guard.to_dict() == {"priority": 10, "active": True, "demotions": 0, "max_share": 0.0}
    assert not process.RealtimeGuard(0).start(0.0)


def test_the_fix_names_a_time_scale_and_what_auto_chose():
    f = {"faithful": False, "suggested_time_scale": 8, "cpu_busy": 0.5}
    assert "time_scale: 8 in the scenario" in fix_line(f, 4)
    assert "auto chose 4" in fix_line(f, 4, auto=True) and "--time-scale 8" in fix_line(f, 4, True)


def test_steal_is_measured_apart_and_the_fix_names_the_host(tmp_path):
    from emulator.fidelity.verdict import fix_line
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal
    stat.write_text("cpu 100 0 50 800 10 0 0 40 0 0\n")
    sampler = CpuSampler(interval_s=10.0, path=str(stat)).start()
    stat.write_text("cpu 200 0 100 1500 20 0 0 180 0 0\n")
    sampler.stop()
    got = sampler.result()
    # 1000 jiffies passed, 140 of them stolen; steal counts as busy
    assert got["cpu_steal"] == pytest.approx(0.14) and got["cpu_steal_max"] == pytest.approx(0.14)
    assert got["cpu_busy"] == pytest.approx((1000 - 710) / 1000)
    unfaithful = {"faithful": False, "cpu_busy": 0.3, "cpu_steal": 0.028, "cpu_steal_max": 0.2,
                  "suggested_time_scale": 20}
    line = fix_line(unfaithful, 10, auto=True)
    assert "hypervisor took 2.8 %" in line and "no time scale" in line
    assert "hypervisor" in fix_line({**unfaithful, "cpu_steal": 0.001}, 10, auto=True)  # 20 % once
    quiet = {**unfaithful, "cpu_steal": 0.001, "cpu_steal_max": 0.01}
    assert "--time-scale 20" in fix_line(quiet, 10, auto=True)


def test_the_fix_does_not_ask_for_a_slower_run_when_a_core_was_free_all_along():
    from emulator.fidelity.verdict import fix_line, machine_idle
    # 4 % busy on two cores, 20 % at most: a tenth of a core at the busiest
    idle = {"faithful": False, "suggested_time_scale": 800000, "cpu_busy": 0.04,
            "cpu_busy_max": 0.2, "cores": 2}
    assert machine_idle(idle)
    line = fix_line(idle, 80000, auto=True)
    assert "not the limit" in line and "800000" not in line and "report it" in line
    # one core flat out in some interval (half of two): the machine may be the limit
    busy = {**idle, "cpu_busy_max": 0.5}
    assert not machine_idle(busy) and "--time-scale 800000" in fix_line(busy, 80000, auto=True)
    assert not machine_idle({**idle, "cpu_busy_max": None})  # not sampled: no claim


def test_receive_ring_holes_are_reported_per_port_and_in_the_verdict():
    from types import SimpleNamespace
    dp, clock, ports = make_dataplane({1: PortConfig(rate_bps=100e6), 2: PortConfig(rate_bps=100e6)})
    ports[1].rx_ring = SimpleNamespace(holes=3)  # what RxRing counts (see test_builtin_rings)
    rows = {p["port"]: p for p in dp.fidelity()["ports"]}
    assert rows[1]["rx_ring_holes"] == 3 and rows[2]["rx_ring_holes"] == 0
    dp.reset_stats()
    assert ports[1].rx_ring.holes == 0 and dp.fidelity([1])["ports"][0]["rx_ring_holes"] == 0
    answer = _switch([5] * 300, [3] * 300)
    answer["ports"][0]["rx_ring_holes"] = 2
    f = judge({"s1": answer}, {}, None, start_unix=10.0, end_unix=12.0)
    assert f["rx_ring_holes"] == 2 and f["faithful"] is True  # reported, not judged
    assert judge({}, {"h1": _agent([10] * 300)}, None, start_unix=0, end_unix=1,
                 target="bmv2")["rx_ring_holes"] is None


def test_a_lossless_frame_dropped_past_its_headroom_makes_a_live_run_unfaithful():
    # A peer that ignores XOFF (as a NIC agent or switch that stalled for
    # ms would): after XOFF (4 KB) the headroom (3 KB) takes three more 1 KB
    # frames, the other four are dropped past it.
    lossless = PortConfig(rate_bps=1e6, lossless_priorities=frozenset({3}), xoff_bytes=4_000,
                          xon_bytes=2_000, headroom_bytes=3_000)
    dp, clock, ports = make_dataplane({1: lossless, 2: PortConfig(rate_bps=1e6)})
    for i in range(12):
        dp.receive(1, ipv4_frame(2, 1000, priority=3, ident=i))
    rows = {p["port"]: p for p in dp.fidelity()["ports"]}
    assert rows[1]["headroom_overflows"] == 4 and rows[2]["headroom_overflows"] == 0
    answer = _switch([5] * 300, [3] * 300)
    answer["ports"][0]["headroom_overflows"] = 4
    f = judge({"s1": answer}, {}, None, start_unix=10.0, end_unix=12.0)
    assert f["faithful"] is False and f["headroom_overflows"] == 4
    assert len(f["reasons"]) == 1 and "4 lossless frames dropped past their headroom at s1 port" \
        in f["reasons"][0]
    assert "headroom" in f["rule"]
    dp.reset_stats()
    assert dp.fidelity([1])["ports"][0]["headroom_overflows"] == 0
    clean = judge({"s1": _switch([5] * 300, [3] * 300)}, {}, None, start_unix=10.0, end_unix=12.0)
    assert clean["faithful"] is True and clean["headroom_overflows"] == 0
