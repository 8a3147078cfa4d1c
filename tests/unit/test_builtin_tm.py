"""Traffic manager of the built-in switch on a virtual clock: serialisation,
delay, strict priority, tail drop, queue depths, counters and their sums."""

from __future__ import annotations

import random

import pytest

from emulator.targets.builtin.config import PortConfig
from emulator.targets.builtin.dataplane import MAX_LAG_S
from tests.unit.test_builtin_support import (
    ScriptedPipeline, VClock, advance, check_sums, ip_ident, ipv4_frame, make_dataplane,
)

FAST = PortConfig()


def test_serialisation_spaces_departures_at_the_port_rate():
    dp, clock, ports = make_dataplane({1: FAST, 2: PortConfig(rate_bps=10e6)})
    for i in range(10):
        dp.receive(1, ipv4_frame(2, 1000, ident=i))
    advance(dp, clock, 1.0)
    sent = ports[2].sent
    assert [ip_ident(f) for _, f in sent] == list(range(10))
    # first bit at t=0, frame leaves when its last bit is out: 1000 B at 10 Mb/s = 0.8 ms
    assert [t for t, _ in sent] == pytest.approx([0.0008 * (i + 1) for i in range(10)], abs=1e-12)
    check_sums(dp.stats())


def test_overhead_bytes_and_delay_add_to_departure_times():
    cfg = PortConfig(rate_bps=1e6, overhead_bytes=24, delay_us=500)
    dp, clock, ports = make_dataplane({1: FAST, 2: cfg})
    dp.receive(1, ipv4_frame(2, 1000))
    dp.receive(1, ipv4_frame(2, 1000))
    advance(dp, clock, 1.0)
    per_frame = 1024 * 8 / 1e6
    assert [t for t, _ in ports[2].sent] == pytest.approx([per_frame + 0.0005,
                                                           2 * per_frame + 0.0005])


def test_unlimited_port_sends_at_once():
    dp, clock, ports = make_dataplane({1: FAST, 2: FAST})
    clock.t = 3.0
    dp.receive(1, ipv4_frame(2))
    assert [t for t, _ in ports[2].sent] == [3.0]
    assert dp.next_deadline() is None


def test_idle_gap_restarts_the_virtual_clock():
    dp, clock, ports = make_dataplane({1: FAST, 2: PortConfig(rate_bps=8e6)})
    dp.receive(1, ipv4_frame(2, 1000))      # 1 ms on the wire
    advance(dp, clock, 0.5)
    dp.receive(1, ipv4_frame(2, 1000))
    advance(dp, clock, 1.0)
    assert [t for t, _ in ports[2].sent] == pytest.approx([0.001, 0.501])


def test_late_loop_gives_up_lag_beyond_max_lag():
    # The loop wakes up long after departures were due: the port catches up
    # at most MAX_LAG_S of frames at once instead of bursting its backlog.
    dp, clock, ports = make_dataplane({1: FAST, 2: PortConfig(rate_bps=8e6)})
    for i in range(20):
        dp.receive(1, ipv4_frame(2, 1000, ident=i))
    clock.t = 1.0
    dp.run_due(1.0)
    burst = len(ports[2].sent)
    assert 1 + MAX_LAG_S / 0.001 - 1 <= burst <= 1 + MAX_LAG_S / 0.001
    advance(dp, clock, 2.0)
    times = [t for t, _ in ports[2].sent[burst:]]
    assert [b - a for a, b in zip(times, times[1:])] == pytest.approx([0.001] * (len(times) - 1))
    assert [ip_ident(f) for _, f in ports[2].sent] == list(range(20))


def test_late_loop_keeps_frames_in_order_on_a_long_link():
    # 5 ms of delay holds five 1 ms frames on the link; a loop waking up
    # 7 ms late must still deliver them before the frames serialised since.
    dp, clock, ports = make_dataplane({1: FAST, 2: PortConfig(rate_bps=8e6, delay_us=5000)})
    for i in range(10):
        dp.receive(1, ipv4_frame(2, 1000, ident=i))
    clock.t = 0.0045
    dp.run_due(clock.t)
    clock.t = 0.0115
    dp.run_due(clock.t)
    advance(dp, clock, 1.0)
    assert [ip_ident(f) for _, f in ports[2].sent] == list(range(10))


def test_strict_priority_serves_the_highest_priority_first():
    dp, clock, ports = make_dataplane({1: FAST, 2: PortConfig(rate_bps=1e6)})
    for i in range(3):
        dp.receive(1, ipv4_frame(2, 500, priority=0, ident=i))
    for i in range(3):
        dp.receive(1, ipv4_frame(2, 500, priority=5, ident=10 + i))
    dp.receive(1, ipv4_frame(2, 500, priority=7, ident=20))
    advance(dp, clock, 1.0)
    # frame 0 was already on the wire when the others arrived
    assert [ip_ident(f) for _, f in ports[2].sent] == [0, 20, 10, 11, 12, 1, 2]
    stats = dp.stats([2])["ports"][0]
    assert [q["tx_packets"] for q in stats["queues"]] == [3, 0, 0, 0, 0, 3, 0, 1]
    check_sums(dp.stats())


def test_tail_drop_at_queue_capacity_is_counted_per_port_and_priority():
    cfg = PortConfig(rate_bps=1e6, buffer_bytes=5000)
    dp, clock, ports = make_dataplane({1: FAST, 2: cfg})
    for i in range(10):
        dp.receive(1, ipv4_frame(2, 1000, priority=3, ident=i))
    stats = dp.stats([2])["ports"][0]
    q = stats["queues"][3]
    # one frame left the queue at once (port idle), five fill 5000 bytes, four drop
    assert (q["received"], q["enqueued"], q["tail_dropped"]) == (10, 6, 4)
    assert (q["depth_packets"], q["depth_bytes"]) == (5, 5000)
    assert (q["max_depth_packets"], q["max_depth_bytes"]) == (5, 5000)
    assert stats["drops"]["tail"] == 4
    check_sums(dp.stats())
    advance(dp, clock, 1.0)
    assert [ip_ident(f) for _, f in ports[2].sent] == [0, 1, 2, 3, 4, 5]
    check_sums(dp.stats())


def test_buffer_is_per_queue_not_shared():
    cfg = PortConfig(rate_bps=1e6, buffer_bytes=2000)
    dp, clock, ports = make_dataplane({1: FAST, 2: cfg})
    for prio in (0, 0, 0, 1, 1):
        dp.receive(1, ipv4_frame(2, 1000, priority=prio))
    queues = dp.stats([2])["ports"][0]["queues"]
    assert (queues[0]["depth_packets"], queues[1]["depth_packets"]) == (2, 2)
    assert queues[0]["tail_dropped"] == queues[1]["tail_dropped"] == 0


def test_queue_depths_given_to_egress_follow_bmv2():
    clock = VClock()
    pipe = ScriptedPipeline(route=lambda p, d, t: [(2, 0)], clock=clock)
    dp, clock2, ports = make_dataplane({1: FAST, 2: PortConfig(rate_bps=1e6)}, pipe)
    pipe.clock = clock2
    for _ in range(4):
        dp.receive(1, bytes(100))
    advance(dp, clock2, 1.0)
    # enq_qdepth: packets already queued on arrival; deq_qdepth: left behind
    assert [(i.enq_qdepth, i.deq_qdepth) for i in pipe.infos] == [(0, 0), (0, 2), (1, 1), (2, 0)]
    # enqueue timestamps on the pipeline's clock (all arrived at t=0); the
    # first went straight through: None, i.e. "now" for egress
    assert [i.enq_timestamp_us for i in pipe.infos] == [None, 0.0, 0.0, 0.0]


def test_priority_beyond_queue_count_is_dropped():
    pipe = ScriptedPipeline(route=lambda p, d, t: [(2, 5)])
    dp, clock, ports = make_dataplane({1: FAST, 2: FAST}, pipe, priority_queues=4)
    dp.receive(1, bytes(60))
    assert dp.stats([2])["ports"][0]["drops"]["bad_priority"] == 1
    assert ports[2].sent == []


def test_unknown_egress_port_and_no_program_drops():
    pipe = ScriptedPipeline(route=lambda p, d, t: [(9, 0)])
    dp, clock, ports = make_dataplane({1: FAST}, pipe)
    dp.receive(1, bytes(60))
    assert dp.stats()["switch_drops"]["no_port"] == 1
    dp.set_pipeline(None)
    dp.receive(1, bytes(60))
    assert dp.stats([1])["ports"][0]["drops"]["no_program"] == 1


def test_p4_drops_at_ingress_and_egress_are_counted_where_they_happen():
    pipe = ScriptedPipeline(route=lambda p, d, t: [] if d[0] == 1 else [(2, 0)],
                            act=lambda item, info: "drop")
    dp, clock, ports = make_dataplane({1: FAST, 2: FAST}, pipe)
    dp.receive(1, b"\x01" + bytes(59))
    dp.receive(1, bytes(60))
    stats = {p["port"]: p for p in dp.stats()["ports"]}
    assert stats[1]["drops"]["pipeline"] == 1
    assert stats[2]["drops"]["pipeline"] == 1
    assert stats[2]["queues"][0]["egress_dropped"] == 1
    check_sums(dp.stats())


def test_clones_and_recirculation_follow_the_pipeline_results():
    def act(item, info):
        if item.port == 2 and item.pkt[0] == 0:
            return ("clone", 3, 1)
        if item.port == 2:
            return "recirc"
        return "out"

    def route(port, data, instance_type):
        return [(3, 0)] if instance_type == 4 else [(2, 0)]

    pipe = ScriptedPipeline(route=route, act=act)
    dp, clock, ports = make_dataplane({1: FAST, 2: FAST, 3: FAST}, pipe)
    dp.receive(1, bytes(60))                 # out on 2, clone on 3 (priority 1)
    dp.receive(1, b"\x01" + bytes(59))       # recirculated, then out on 3
    advance(dp, clock, 0.1)
    assert len(ports[2].sent) == 1
    assert len(ports[3].sent) == 2
    stats = {p["port"]: p for p in dp.stats()["ports"]}
    assert stats[2]["queues"][0]["recirculated"] == 1
    assert stats[3]["queues"][1]["tx_packets"] == 1
    check_sums(dp.stats())


def test_executor_errors_and_send_failures_are_drops_not_crashes():
    pipe = ScriptedPipeline(route=lambda p, d, t: [(2, 0)] if d[0] else [(3, 0)],
                            act=lambda item, info: "raise" if item.port == 3 else "out")
    dp, clock, ports = make_dataplane({1: FAST, 2: FAST, 3: FAST}, pipe)
    ports[2].fail_sends = True
    dp.receive(1, b"\x01" + bytes(59))
    dp.receive(1, bytes(60))
    stats = {p["port"]: p for p in dp.stats()["ports"]}
    assert stats[2]["drops"]["tx_error"] == 1 and stats[2]["queues"][0]["tx_errors"] == 1
    assert stats[3]["drops"]["pipeline_error"] == 1
    assert dp.stats()["executor_errors"] == 1
    check_sums(dp.stats())


def test_random_and_truncated_frames_do_not_crash_the_real_pipeline():
    dp, clock, ports = make_dataplane({1: FAST, 2: PortConfig(rate_bps=1e7), 3: FAST})
    rng = random.Random(7)
    good = ipv4_frame(2, 200)
    frames = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 80))) for _ in range(300)]
    frames += [good[:n] for n in range(len(good))]
    frames += [b"\x01\x80\xc2\x00\x00\x01" + bytes(6) + b"\x88\x08" + bytes(n) for n in range(30)]
    for i, frame in enumerate(frames):
        dp.receive(1 + i % 3, frame)
        clock.t += 1e-5
        dp.run_due(clock.t)
    advance(dp, clock, 1.0)
    stats = dp.stats()
    check_sums(stats)
    assert sum(p["rx_packets"] for p in stats["ports"]) == len(frames)


def test_reset_stats_keeps_the_sums_with_packets_queued_and_in_flight():
    cfg = PortConfig(rate_bps=1e6, delay_us=10_000)
    dp, clock, ports = make_dataplane({1: FAST, 2: cfg})
    for _ in range(5):
        dp.receive(1, ipv4_frame(2, 1000))
    advance(dp, clock, 0.0085)  # frame 0 propagating, frame 1 on the wire
    dp.reset_stats()
    q = dp.stats([2])["ports"][0]["queues"][0]
    assert q["in_flight"] == 2 and q["depth_packets"] == 3
    check_sums(dp.stats())
    advance(dp, clock, 1.0)
    q = dp.stats([2])["ports"][0]["queues"][0]
    assert q["tx_packets"] == 5 and q["in_flight"] == 0
    check_sums(dp.stats())


def test_rate_change_applies_to_the_next_frame():
    dp, clock, ports = make_dataplane({1: FAST, 2: PortConfig(rate_bps=8e6)})
    for _ in range(3):
        dp.receive(1, ipv4_frame(2, 1000))
    dp.set_port_config(2, {"rate_bps": 4e6})
    advance(dp, clock, 1.0)
    # the first frame was timed at 8 Mb/s when it started; the others at 4 Mb/s
    assert [t for t, _ in ports[2].sent] == pytest.approx([0.001, 0.003, 0.005])


def test_counter_sums_hold_under_random_traffic():
    rng = random.Random(1)
    configs = {1: PortConfig(rate_bps=2e6, buffer_bytes=4000, delay_us=300),
               2: PortConfig(rate_bps=5e6, buffer_bytes=3000),
               3: PortConfig(rate_bps=1e6, buffer_bytes=2500, delay_us=50)}
    dp, clock, ports = make_dataplane(configs)
    from tests.unit.test_builtin_support import pfc_frame
    for step in range(2000):
        clock.t += rng.expovariate(2000.0)
        dp.run_due(clock.t)
        if rng.random() < 0.02:
            dp.receive(rng.choice([1, 2, 3]), pfc_frame({rng.randrange(8): rng.choice([0, 200, 2000])}))
        else:
            dp.receive(rng.choice([1, 2, 3]),
                       ipv4_frame(rng.choice([1, 2, 3]), rng.randrange(60, 1500),
                                  priority=rng.randrange(8)))
        if step % 97 == 0:
            check_sums(dp.stats())
        if step == 1000:
            dp.reset_stats()
            check_sums(dp.stats())
    advance(dp, clock, clock.t + 5.0)
    stats = dp.stats()
    check_sums(stats)
    for port in stats["ports"]:
        for q in port["queues"]:
            assert q["depth_packets"] == 0 and q["in_flight"] == 0
