"""The built-in switch's buffer (emulator/targets/builtin/mmu.py) on a
virtual clock: lossless groups pause their peer and are never dropped at
egress, headroom overflows are counted as such, lossy queues stop at their
dynamic threshold, and whatever counted a frame in counts it out on every
way it leaves (the invariant checked after every step)."""

from __future__ import annotations

import random

import pytest

from emulator.targets.builtin.config import PortConfig
from emulator.targets.builtin.errors import PortConfigError
from emulator.targets.builtin.mmu import headroom_bytes
from emulator.targets.builtin.pfc import parse_pfc
from tests.unit.test_builtin_support import (
    ScriptedPipeline, VClock, advance, check_buffer, check_idle_buffer, check_sums, ipv4_frame,
    make_dataplane, pfc_frame,
)

FAST = PortConfig()


def _pauses(port) -> list[tuple[float, int]]:  # type: ignore[no-untyped-def]
    """(time, quanta of priority 3) of the pause frames a FakePort sent."""
    out = []
    for t, frame in port.sent:
        parsed = parse_pfc(frame)
        if parsed is not None:
            out.append((t, parsed[1][3]))
    return out


def test_lossless_group_pauses_its_peer_and_is_never_tail_dropped():
    # Ingress port 1 is lossless on priority 3 (XOFF 10 KB, XON 5 KB) and
    # feeds a 1 Mb/s port whose lossy cap (2 KB) would hold two frames: the
    # lossless frames ignore the cap, XOFF goes out of port 1 when the group
    # passes 10 KB, XON when it drains to 5 KB.
    lossless = PortConfig(lossless_priorities=frozenset({3}), xoff_bytes=10_000,
                          xon_bytes=5_000, headroom_bytes=50_000, mac="02:00:00:00:00:01")
    dp, clock, ports = make_dataplane({1: lossless, 2: PortConfig(rate_bps=1e6,
                                                                  buffer_bytes=2000)})
    for i in range(20):
        dp.receive(1, ipv4_frame(2, 1000, priority=3, ident=i))
        check_buffer(dp)
    q = dp.stats([2])["ports"][0]["queues"][3]
    assert q["tail_dropped"] == 0 and q["depth_packets"] == 19  # one on the wire
    pg = dp.stats([1])["ports"][0]["queues"][3]
    # the group passed XOFF at its 10th frame (10,000 B): shared holds 10 KB,
    # the 10 frames after it went into headroom
    assert pg["xoff_on"] and pg["xoff_sent"] == 1
    assert pg["headroom_used_bytes"] == 9_000 and pg["pg_bytes"] == 19_000
    assert _pauses(ports[1]) == [(0.0, 0xFFFF)]
    assert ports[1].sent[0][1][6:12] == bytes.fromhex("020000000001")  # the port's MAC
    advance(dp, clock, 0.2)
    # 1000 B at 1 Mb/s = 8 ms a frame, released when it leaves its queue (as
    # it starts on the wire): XON when frame 14 leaves, 5 left (5,000 B);
    # until then XOFF is refreshed every half pause (port 1 is unlimited:
    # quanta timed at 100 Gb/s, 0.34 ms a pause)
    pauses = _pauses(ports[1])
    xons = [t for t, q in pauses if not q]
    assert xons == [pytest.approx(0.008 * 14)] and pauses[-1][1] == 0
    xoffs = [t for t, q in pauses if q]
    assert max(xoffs) < xons[0]
    assert len(xoffs) == pytest.approx(0.112 / (0xFFFF * 512 / 100e9 / 2), abs=2)
    check_sums(dp.stats())
    check_idle_buffer(dp)


def test_xoff_is_refreshed_while_the_group_stays_above_it():
    quanta = 100  # 100 x 512 bits at 1 Mb/s = 51.2 ms; refresh every 25.6 ms
    lossless = PortConfig(rate_bps=1e6, lossless_priorities=frozenset({3}), xoff_bytes=3_000,
                          xon_bytes=1_000, headroom_bytes=50_000, pfc_quanta=quanta)
    dp, clock, ports = make_dataplane({1: lossless, 2: FAST, 3: PortConfig(rate_bps=1e6)})
    # port 3's queue is paused by its peer: port 1's bytes cannot leave
    dp.receive(3, pfc_frame({3: 0xFFFF}))
    for i in range(6):
        dp.receive(1, ipv4_frame(3, 1000, priority=3, ident=i))
    advance(dp, clock, 0.1)
    times = [t for t, q in _pauses(ports[1]) if q]
    # first XOFF at t=0 (on the wire 0.48 ms), refreshes every 25.6 ms from when each went
    assert len(times) == 4
    assert times[1] - times[0] == pytest.approx(0.0256, abs=1e-3)
    dp.receive(3, pfc_frame({3: 0}))
    advance(dp, clock, 0.2)
    assert _pauses(ports[1])[-1][1] == 0
    check_idle_buffer(dp)


def test_headroom_overflow_is_the_only_lossless_drop():
    # A peer that ignores XOFF: after XOFF (4 KB) the headroom (3 KB) takes
    # three more 1 KB frames, the rest are dropped as headroom_overflow on the
    # ingress port, never as tail drops of the egress queue.
    lossless = PortConfig(lossless_priorities=frozenset({3}), xoff_bytes=4_000, xon_bytes=2_000,
                          headroom_bytes=3_000)
    dp, clock, ports = make_dataplane({1: lossless, 2: PortConfig(rate_bps=1e6,
                                                                  buffer_bytes=1000)})
    for i in range(12):
        dp.receive(1, ipv4_frame(2, 1000, priority=3, ident=i))
    stats = dp.stats()
    p1 = next(p for p in stats["ports"] if p["port"] == 1)
    p2 = next(p for p in stats["ports"] if p["port"] == 2)
    # 4 in the shared pool (the first is on the wire already, so 5 fit), 3 in headroom
    assert p1["drops"]["headroom_overflow"] == 12 - 8
    assert p1["queues"][3]["headroom_overflow"] == 4
    assert p2["drops"]["tail"] == 0
    check_buffer(dp)
    advance(dp, clock, 1.0)
    check_sums(dp.stats())
    check_idle_buffer(dp)


def test_lossy_queue_settles_at_alpha_over_one_plus_alpha_of_the_pool():
    """Dynamic threshold, alpha = 1/8: a queue may grow while its bytes stay
    within alpha x free shared bytes, so one congested queue alone holds at
    most alpha / (1 + alpha) = 1/9 of the shared pool: 100,000 B of 900,000."""
    dp, clock, ports = make_dataplane({1: FAST, 2: PortConfig(rate_bps=1e6)})
    dp.set_buffer({"pool_bytes": 900_000, "alpha": {0: 0.125}})
    assert dp.buffer.shared_bytes == 900_000
    for i in range(400):
        dp.receive(1, ipv4_frame(2, 1000, priority=0, ident=i))
        check_buffer(dp)
    q = dp.stats([2])["ports"][0]["queues"][0]
    expected = 900_000 * 0.125 / 1.125
    assert expected - 1000 <= q["max_depth_bytes"] <= expected
    assert q["tail_dropped"] == 400 - q["enqueued"] > 250
    # alpha 8 (the default) lets the same queue take 8/9 of the pool
    dp.set_buffer({"alpha": 8})
    for i in range(400):
        dp.receive(1, ipv4_frame(2, 1000, priority=0, ident=i))
    assert dp.stats([2])["ports"][0]["queues"][0]["depth_bytes"] > 300_000


def test_every_way_out_releases_the_bytes():
    """Frames leave by being sent, dropped by the buffer, dropped in egress,
    recirculated, cloned, replicated and raising in egress: after each step
    the groups hold exactly the bytes of their frames still queued, and an
    idle switch holds nothing and pauses nobody."""
    rng = random.Random(5)
    acts = ["out"] * 6 + ["drop", "recirc", ("clone", 3, 3), ("clone", 2, 0), "raise"]
    state = {"recirc": 0}

    def route(port: int, data: bytes, instance_type: int) -> list[tuple[int, int]]:
        if instance_type == 4:  # a recirculated pass leaves for good
            return [(2, 3)]
        if data[-1] == 1:       # replicated to two ports
            return [(2, 3), (3, 3)]
        return [(rng.choice([2, 3]), rng.choice([0, 3, 3]))]

    def act(item, info):  # type: ignore[no-untyped-def]
        choice = rng.choice(acts)
        if choice == "recirc":
            state["recirc"] += 1
        return choice

    clock = VClock()
    pipe = ScriptedPipeline(route, act, clock=clock)
    lossless = dict(lossless_priorities=frozenset({3}), xoff_bytes=6_000, xon_bytes=3_000,
                    headroom_bytes=6_000)
    configs = {1: PortConfig(rate_bps=4e6, **lossless),  # type: ignore[arg-type]
               2: PortConfig(rate_bps=2e6, buffer_bytes=5_000, **lossless),  # type: ignore[arg-type]
               3: PortConfig(rate_bps=1e6, buffer_bytes=3_000, **lossless)}  # type: ignore[arg-type]
    dp, clock2, ports = make_dataplane(configs, pipeline=pipe)
    dp.clock = clock
    for step in range(1500):
        clock.t += rng.expovariate(800.0)
        dp.run_due(clock.t)
        src = rng.choice([1, 1, 2, 3])
        frame = bytearray(ipv4_frame(2, rng.randrange(100, 1500)))
        frame[-1] = 1 if rng.random() < 0.1 else 0
        if rng.random() < 0.02:
            dp.receive(rng.choice([2, 3]), pfc_frame({3: rng.choice([0, 500])}))
        dp.receive(src, bytes(frame))
        check_buffer(dp)
        if step % 50 == 0:
            check_sums(dp.stats())
    while dp.next_deadline() is not None:
        clock.t = max(clock.t, dp.next_deadline())  # type: ignore[type-var]
        dp.run_due(clock.t)
        check_buffer(dp)
    stats = dp.stats()
    check_sums(stats)
    check_idle_buffer(dp)
    assert state["recirc"] > 10
    drops = {k: sum(p["drops"][k] for p in stats["ports"]) for k in ("tail", "pipeline")}
    assert drops["tail"] > 0 and drops["pipeline"] > 0
    xoffs = sum(q["xoff_sent"] for p in stats["ports"] for q in p["queues"])
    assert xoffs > 0
    # every XOFF the buffer sent was answered by an XON before the end
    for p in stats["ports"]:
        q = p["queues"][3]
        assert q["xon_sent"] >= 1 if q["xoff_sent"] else q["xon_sent"] == 0


def test_dynamic_xoff_follows_the_free_pool():
    # xoff_alpha 1/8 of a 100 KB shared pool: XOFF at 1/9 of it (11.1 KB)
    lossless = PortConfig(lossless_priorities=frozenset({3}), xoff_alpha=0.125,
                          xoff_bytes=2_000, xon_bytes=0, headroom_bytes=40_000)
    dp, clock, ports = make_dataplane({1: lossless, 2: PortConfig(rate_bps=1e6)})
    dp.set_buffer({"pool_bytes": 100_000 + 40_000 * 1})
    assert dp.buffer.shared_bytes == 100_000
    for i in range(20):
        dp.receive(1, ipv4_frame(2, 1000, priority=3, ident=i))
        check_buffer(dp)
    acc = dp.ports[1].pg
    assert acc.xoff_on and 10_000 <= acc.shared[3] <= 100_000 / 9 + 1
    assert acc.headroom_used[3] == 19_000 - acc.shared[3]


def test_pool_must_hold_the_headroom():
    lossless = PortConfig(lossless_priorities=frozenset({3}), headroom_bytes=60_000)
    dp, clock, ports = make_dataplane({1: lossless, 2: lossless})
    with pytest.raises(PortConfigError, match="headroom"):
        dp.set_buffer({"pool_bytes": 100_000})
    assert dp.buffer.pool_bytes == 0  # unchanged
    with pytest.raises(PortConfigError, match="alpha"):
        dp.set_buffer({"alpha": -1})


def test_headroom_formula():
    # 100 Gb/s, 1 us: 25,000 B on the cable both ways, three 4,154 B frames, a pause frame
    assert headroom_bytes(100e9, 1e-6, 4154) == 25_000 + 3 * 4154 + 64
    assert headroom_bytes(100e9, 1e-6, 4154, response_s=1e-6) == 25_000 + 3 * 4154 + 64 + 12_500
