"""PFC below P4 in the built-in switch (802.1Qbb): pause, resume, restart,
paused time, counters; frame parsing."""

from __future__ import annotations

import random

import pytest

from emulator.targets.builtin.config import PortConfig
from emulator.targets.builtin.pfc import PauseTimers, parse_pfc, pause_seconds
from emulator.traffic.layers.pfc import pfc_frame as scapy_pfc_frame
from tests.unit.test_builtin_support import (
    ScriptedPipeline, check_sums, ip_ident, ipv4_frame, make_dataplane, pfc_frame, advance,
)

FAST = PortConfig()
TEN_M = PortConfig(rate_bps=10e6)
QUANTUM_S = 512 / 10e6  # one quantum at 10 Mb/s


def test_parse_matches_the_traffic_layer_frames():
    frame = bytes(scapy_pfc_frame("02:00:00:00:00:01", {0: 65535, 3: 0, 7: 12}))
    assert parse_pfc(frame) == (0b10001001, (65535, 0, 0, 0, 0, 0, 0, 12))
    assert parse_pfc(pfc_frame({2: 5})) == (0b100, (0, 0, 5, 0, 0, 0, 0, 0))


def test_parse_rejects_other_frames_and_never_raises():
    assert parse_pfc(ipv4_frame(2)) is None
    pause_8023x = b"\x01\x80\xc2\x00\x00\x01" + bytes(6) + b"\x88\x08\x00\x01" + bytes(46)
    assert parse_pfc(pause_8023x) is None
    rng = random.Random(3)
    for n in range(64):
        data = b"\x00" * 12 + b"\x88\x08" + bytes(rng.getrandbits(8) for _ in range(n))
        parse_pfc(data)
    assert parse_pfc(b"") is None


def test_pause_seconds():
    assert pause_seconds(65535, 10e6) == pytest.approx(3.355392)
    assert pause_seconds(0, 10e6) == 0


def test_pfc_frame_pauses_that_priority_for_its_quanta():
    dp, clock, ports = make_dataplane({1: FAST, 2: TEN_M})
    dp.receive(2, pfc_frame({0: 1000}))                       # pause priority 0 on port 2
    for i in range(3):
        dp.receive(1, ipv4_frame(2, 1000, priority=0, ident=i))
    dp.receive(1, ipv4_frame(2, 1000, priority=1, ident=9))  # not paused
    advance(dp, clock, 1.0)
    sent = [(t, ip_ident(f)) for t, f in ports[2].sent]
    resume = 1000 * QUANTUM_S
    assert sent[0] == (pytest.approx(0.0008), 9)
    assert [i for _, i in sent[1:]] == [0, 1, 2]
    assert sent[1][0] == pytest.approx(resume + 0.0008)
    stats = dp.stats([2])["ports"][0]
    q0 = stats["queues"][0]
    assert q0["pfc_rx"] == 1 and stats["pfc_rx_frames"] == 1
    assert q0["paused_s"] == pytest.approx(resume)
    assert not q0["paused"]
    assert stats["rx_packets"] == 1
    # consumed by the MAC: P4 never saw it (no pipeline drop, nothing forwarded)
    assert stats["drops"]["pipeline"] == 0 and ports[1].sent == []
    check_sums(dp.stats())


def test_zero_quanta_resume_at_once():
    dp, clock, ports = make_dataplane({1: FAST, 2: TEN_M})
    dp.receive(2, pfc_frame({0: 65535}))
    dp.receive(1, ipv4_frame(2, 1000))
    advance(dp, clock, 0.25)
    assert ports[2].sent == []
    assert dp.stats([2])["ports"][0]["queues"][0]["paused"]
    dp.receive(2, pfc_frame({0: 0}))
    advance(dp, clock, 1.0)
    assert [t for t, _ in ports[2].sent] == pytest.approx([0.2508])
    q0 = dp.stats([2])["ports"][0]["queues"][0]
    assert q0["paused_s"] == pytest.approx(0.25) and q0["pfc_rx"] == 2


def test_new_frame_restarts_the_timer():
    dp, clock, ports = make_dataplane({1: FAST, 2: TEN_M})
    dp.receive(2, pfc_frame({0: 1000}))            # would end at 51.2 ms
    dp.receive(1, ipv4_frame(2, 1000))
    advance(dp, clock, 0.03)
    dp.receive(2, pfc_frame({0: 1000}))            # now ends at 30 + 51.2 ms
    advance(dp, clock, 1.0)
    assert [t for t, _ in ports[2].sent] == pytest.approx([0.03 + 1000 * QUANTUM_S + 0.0008])
    assert dp.stats([2])["ports"][0]["queues"][0]["paused_s"] == pytest.approx(
        0.03 + 1000 * QUANTUM_S)


def test_shorter_restart_shortens_the_pause():
    dp, clock, ports = make_dataplane({1: FAST, 2: TEN_M})
    dp.receive(2, pfc_frame({0: 10000}))
    dp.receive(1, ipv4_frame(2, 1000))
    advance(dp, clock, 0.01)
    dp.receive(2, pfc_frame({0: 100}))
    advance(dp, clock, 2.0)
    assert [t for t, _ in ports[2].sent] == pytest.approx([0.01 + 100 * QUANTUM_S + 0.0008])


def test_frame_on_the_wire_finishes_when_its_queue_is_paused():
    dp, clock, ports = make_dataplane({1: FAST, 2: PortConfig(rate_bps=1e6)})
    dp.receive(1, ipv4_frame(2, 1500, ident=1))   # 12 ms on the wire
    dp.receive(1, ipv4_frame(2, 1500, ident=2))
    advance(dp, clock, 0.001)
    dp.receive(2, pfc_frame({0: 100}))            # 51.2 ms at 1 Mb/s
    advance(dp, clock, 1.0)
    times = [t for t, _ in ports[2].sent]
    assert times == pytest.approx([0.012, 0.001 + 100 * 512 / 1e6 + 0.012])


def test_pause_is_per_priority_only_where_pfc_is_enabled():
    cfg = PortConfig(rate_bps=10e6, pfc_priorities=frozenset({3}))
    dp, clock, ports = make_dataplane({1: FAST, 2: cfg})
    dp.receive(2, pfc_frame({0: 65535, 3: 65535}))
    dp.receive(1, ipv4_frame(2, 1000, priority=0, ident=0))
    dp.receive(1, ipv4_frame(2, 1000, priority=3, ident=3))
    advance(dp, clock, 1.0)
    assert [ip_ident(f) for _, f in ports[2].sent] == [0]
    queues = dp.stats([2])["ports"][0]["queues"]
    assert queues[0]["pfc_rx"] == 1 and not queues[0]["paused"]
    assert queues[3]["paused"] and queues[3]["paused_s"] == pytest.approx(1.0)
    # disabling PFC on a paused priority resumes it at once
    dp.set_port_config(2, {"pfc_priorities": []})
    advance(dp, clock, 1.1)
    assert [ip_ident(f) for _, f in ports[2].sent] == [0, 3]


def test_pfc_on_unlimited_port_uses_the_nominal_rate():
    dp, clock, ports = make_dataplane({1: FAST, 2: FAST})
    dp.receive(2, pfc_frame({0: 65535}))
    dp.receive(1, ipv4_frame(2))
    advance(dp, clock, 1.0)
    assert [t for t, _ in ports[2].sent] == pytest.approx([pause_seconds(65535, 0)])


def test_pfc_frames_reach_p4_only_when_asked():
    seen = []

    def route(port, data, itype):
        seen.append(data[12:14])
        return []

    pipe = ScriptedPipeline(route=route)
    dp, clock, ports = make_dataplane({1: FAST, 2: FAST}, pipe)
    dp.receive(2, pfc_frame({0: 10}))
    assert seen == []
    dp.pfc_to_pipeline = True
    dp.receive(2, pfc_frame({0: 10}))
    assert seen == [b"\x88\x08"]
    assert dp.stats([2])["ports"][0]["pfc_rx_frames"] == 2


def test_pfc_frames_emitted_by_p4_count_as_pfc_tx():
    pipe = ScriptedPipeline(route=lambda p, d, t: [(2, 7)])
    dp, clock, ports = make_dataplane({1: FAST, 2: FAST}, pipe)
    dp.receive(1, pfc_frame({3: 100, 4: 100}))   # consumed on port 1 ...
    dp.pfc_to_pipeline = True
    dp.receive(1, pfc_frame({3: 100, 4: 100}))   # ... then also sent to port 2
    stats = dp.stats([2])["ports"][0]
    assert stats["pfc_tx_frames"] == 1
    assert [q["pfc_tx"] for q in stats["queues"]] == [0, 0, 0, 1, 1, 0, 0, 0]
    assert stats["queues"][7]["tx_packets"] == 1


def test_pause_timers_account_paused_time():
    timers = PauseTimers()
    assert timers.pause(2, 5.0, 1.0)
    assert not timers.pause(2, 6.0, 2.0)           # restart: same pause goes on
    assert timers.total_paused_s(2, 3.0) == pytest.approx(2.0)
    assert not timers.expired(2, 5.0) and timers.expired(2, 6.0)
    assert timers.resume(2, 6.0)
    assert not timers.resume(2, 7.0)
    assert timers.total_paused_s(2, 9.0) == pytest.approx(5.0)
    timers.reset_stats(9.0)
    assert timers.total_paused_s(2, 9.0) == 0
