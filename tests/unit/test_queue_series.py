"""The built-in switch's queue-depth time series (:class:`~.tm.QueueSeries`)
on a virtual clock, and ``GetQueueSeries`` / ``SetSampleInterval`` over
QueueControl."""

from __future__ import annotations

import pytest

from emulator.targets.builtin.config import PortConfig
from emulator.targets.builtin.queue_control import QueueControlError
from emulator.targets.builtin.tm import QueueSeries
from tests.unit.test_builtin_support import advance, ipv4_frame, make_dataplane, pfc_frame
from tests.unit.test_builtin_switch import control, switch, wait_for  # noqa: F401 (fixtures)

FAST = PortConfig()
TEN_M = PortConfig(rate_bps=10e6)   # 1000 B = 0.8 ms


def run_sampled(dp, clock, until):
    """Advance to ``until``, sampling whenever the series is due (as the loop does)."""
    while clock.t < until:
        step = min(dp.series.next_t, until)
        advance(dp, clock, max(step, clock.t))
        if dp.series.due(clock.t):
            dp.sample_queues(clock.t)
        elif clock.t >= until:
            break


def samples(dp, port, prio=0, since=None):
    for q in dp.queue_series([port], since)["queues"]:
        if q["priority"] == prio:
            return q["samples"]
    return []


def test_idle_queues_record_nothing():
    dp, clock, _ = make_dataplane({1: FAST, 2: TEN_M})
    run_sampled(dp, clock, 0.1)
    assert dp.queue_series()["queues"] == []
    assert dp.queue_series()["interval_s"] == 0.01


def test_backlog_is_sampled_until_it_drains_then_one_empty_sample():
    dp, clock, _ = make_dataplane({1: FAST, 2: TEN_M})
    dp.sample_queues(0.0)
    for i in range(30):                        # 30 x 0.8 ms = 24 ms of backlog
        dp.receive(1, ipv4_frame(2, 1000, ident=i))
    run_sampled(dp, clock, 0.1)
    rows = samples(dp, 2)
    times = [r[0] for r in rows]
    assert times == pytest.approx([0.01, 0.02, 0.03])   # then idle: nothing more
    depths = [r[1] for r in rows]
    assert depths[0] == pytest.approx(30 - 1 - 12, abs=1)   # 12.5 frames sent by 10 ms
    assert depths[1] < depths[0] and depths[2] == 0
    assert all(r[2] == r[1] * 1000 for r in rows)
    assert not any(r[3] for r in rows)
    assert samples(dp, 1) == []                 # ingress port queues nothing
    assert [r[0] for r in samples(dp, 2, since=0.015)] == pytest.approx([0.02, 0.03])


def test_a_short_pause_between_samples_is_reported():
    dp, clock, _ = make_dataplane({1: FAST, 2: TEN_M})
    dp.sample_queues(0.0)
    clock.t = 0.002
    dp.receive(2, pfc_frame({3: 100}))          # 100 quanta at 10 Mb/s = 5.12 ms
    run_sampled(dp, clock, 0.05)
    rows = samples(dp, 2, prio=3)
    assert rows == [[pytest.approx(0.01), 0, 0, True]]


def test_paused_queue_is_sampled_while_paused():
    dp, clock, ports = make_dataplane({1: FAST, 2: TEN_M})
    dp.sample_queues(0.0)
    dp.receive(2, pfc_frame({0: 65535}))        # ~3.4 s
    for i in range(5):
        dp.receive(1, ipv4_frame(2, 1000, ident=i))
    run_sampled(dp, clock, 0.05)
    rows = samples(dp, 2)
    assert len(rows) == 5 and all(r[1:] == [5, 5000, True] for r in rows)
    assert ports[2].sent == []


def test_ring_keeps_only_the_window_and_interval_is_settable():
    series = QueueSeries(interval_s=0.01, window_s=0.1)
    dp, clock, _ = make_dataplane({1: FAST, 2: TEN_M})
    dp.series = series
    dp.receive(2, pfc_frame({0: 65535}))
    dp.receive(1, ipv4_frame(2, 1000))
    run_sampled(dp, clock, 1.0)
    rows = samples(dp, 2)
    assert rows[-1][0] == pytest.approx(1.0, abs=0.011)
    assert rows[0][0] >= rows[-1][0] - 0.1 - 1e-9 and len(rows) <= 11
    series.set_interval(0.05)
    n = len(samples(dp, 2))
    run_sampled(dp, clock, 1.2)
    assert len(samples(dp, 2)) <= n  # fewer samples per window now
    with pytest.raises(ValueError):
        series.set_interval(0)


def test_buffer_series_follows_the_pool_and_its_groups():
    # Port 1 is lossless on priority 3 (XOFF 5 KB, XON 2 KB): at 1 ms, 10
    # frames of 1000 B to a 1 Mb/s port (8 ms a frame); the first leaves at
    # once, so the group holds 5 KB shared and 4 KB in headroom, and one
    # more leaves every 8 ms from 9 ms to 73 ms (headroom empties first; XON when the
    # shared part is down to 2 KB, at 57 ms). Samples every 10 ms: the empty
    # one at 0, every busy one, the empty one at 80 ms, then nothing.
    lossless = PortConfig(lossless_priorities=frozenset({3}), xoff_bytes=5_000,
                          xon_bytes=2_000, headroom_bytes=50_000)
    dp, clock, _ = make_dataplane({1: lossless, 2: PortConfig(rate_bps=1e6)})
    dp.sample_queues(0.0)
    clock.t = 0.001
    for i in range(10):
        dp.receive(1, ipv4_frame(2, 1000, priority=3, ident=i))
    run_sampled(dp, clock, 0.2)
    out = dp.queue_series()
    shared, headroom = dp.buffer.shared_bytes, dp.buffer.headroom_bytes
    assert headroom == 50_000 and shared > 0
    times = [0.01 * k for k in range(9)]
    held = [0, 8, 7, 6, 5, 3, 2, 1, 0]              # KB at each sample
    in_headroom = [0, 3, 2, 1, 0, 0, 0, 0, 0]
    pool = out["buffer"]
    assert [s[0] for s in pool] == pytest.approx(times)
    assert [s[1:] for s in pool] == [[1000 * (h - r), 1000 * r, shared, headroom]
                                     for h, r in zip(held, in_headroom)]
    groups = out["groups"]
    assert [(g["port"], g["priority"]) for g in groups] == [(1, 3)]
    rows = groups[0]["samples"]
    assert [r[0] for r in rows] == pytest.approx(times)
    assert [r[1:] for r in rows] == [[1000 * h, 1000 * r, 0.01 <= t < 0.06]
                                     for t, h, r in zip(times, held, in_headroom)]
    assert dp.queue_series(since=0.075)["buffer"] == pool[-1:]
    assert dp.queue_series([2])["groups"] == []     # port 2 received nothing


def test_query_by_port_rejects_unknown_ports():
    dp, _, _ = make_dataplane({1: FAST, 2: TEN_M})
    with pytest.raises(Exception, match="no port 9"):
        dp.queue_series([9])


def test_queue_control_series(control):  # noqa: F811
    sw, ports, client = control
    assert client.set_sample_interval(5) == 5.0
    client.set_port_config(2, rate_bps=1e6, buffer_bytes=100_000)
    for i in range(40):                         # 40 x 8 ms = 320 ms of backlog
        ports[1].inject(ipv4_frame(2, 1000, ident=i))
    assert wait_for(lambda: any(q["port"] == 2 for q in client.get_queue_series()["queues"]))
    assert wait_for(lambda: len(client.get_queue_series([2])["queues"][0]["samples"]) >= 10)
    out = client.get_queue_series([2])
    assert out["interval_s"] == 0.005 and abs(out["unix_offset_s"]) > 0
    q = out["queues"][0]
    assert q["port"] == 2 and q["priority"] == 0
    t, packets, nbytes, paused = q["samples"][0]
    assert packets > 0 and nbytes == 1000 * packets and paused is False
    # the buffer's occupancy from the same samples: the pool, and port 1's
    # ingress group (priority 0) holding what port 2's queue holds
    full = client.get_queue_series()
    assert full["buffer"] and full["groups"]
    group = next(g for g in full["groups"] if g["port"] == 1)
    assert group["priority"] == 0
    queued = {s[0]: s[2] for s in full["queues"][0]["samples"]}
    pool = {s[0]: s[1] + s[2] for s in full["buffer"]}
    for t, held, in_headroom, xoff in group["samples"]:
        assert held == queued.get(t, 0) == pool.get(t, 0) and not in_headroom and not xoff
    later = client.get_queue_series([2], since=q["samples"][-1][0])
    assert all(s[0] > q["samples"][-1][0] for r in later["queues"] for s in r["samples"])
    with pytest.raises(QueueControlError, match="interval_ms"):
        client.set_sample_interval("fast")
    with pytest.raises(QueueControlError, match="sample interval") as info:
        client.set_sample_interval(0)
    assert info.value.code.name == "INVALID_ARGUMENT"
    with pytest.raises(QueueControlError, match="no port 9"):
        client.get_queue_series([9])
