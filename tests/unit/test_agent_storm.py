"""A PFC storm sent by a NIC (the ``pfc_storm`` control op): the frames are
valid 802.1Qbb, come every interval (half the pause time by default), stop
the peer's data for as long as the storm lasts, end with one XON, and count
in the NIC's counters without breaking the documented sums."""

from __future__ import annotations

import json

import pytest
from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.layers.l2 import Ether

from emulator.measure.inspect import decode_frame
from emulator.traffic.agent.control import ControlServer
from emulator.traffic.agent.loop import EventLoop
from emulator.traffic.agent.stats import check_invariants
from emulator.traffic.agent.storm import PauseStorm, default_interval_s, storm_request
from emulator.traffic.layers.pfc import PFC_DST_MAC, PFC_FRAME_BYTES, pfc_pause_quanta
from tests.unit.test_agent_support import MAC, QPN, data_frames, pair

RATE = 10e6
QUANTUM_S = 512 / RATE          # 51.2 µs at 10 Mb/s
A = QPN["a"]


def pfc_sent(net, host: str) -> list[tuple[float, bytes]]:
    return [(t, f) for t, f in net.fakes[(host, "eth0")].sent if f[12:14] == b"\x88\x08"]


def long_write() -> dict:
    return {"messages": [{"qp": A, "size_bytes": 600 * 1024}]}


def test_storm_schedule_keeps_time_and_never_bursts():
    storm = PauseStorm(MAC["b"], [3], 2000, 0.1, now=1.0)
    assert storm.next_time() == 1.0
    assert storm.take(0.99) is None
    assert storm.take(1.0) == storm.xoff and storm.next_time() == pytest.approx(1.1)
    assert storm.take(1.1005) == storm.xoff and storm.next_time() == pytest.approx(1.2)
    # woken up 0.35 s late: one frame, then the next a whole interval later
    assert storm.take(1.55) == storm.xoff and storm.next_time() == pytest.approx(1.65)
    assert storm.take(1.56) is None
    storm.stop(1.6)
    assert storm.next_time() == -float("inf")
    assert storm.take(1.6) == storm.xon
    assert storm.take(5.0) is None and storm.next_time() == float("inf")
    assert storm.frames == 3 and storm.stopped_at == 1.6
    quiet = PauseStorm(MAC["b"], [3], 2000, 0.1, now=0.0)
    quiet.stop(0.0, xon=False)
    assert quiet.take(0.0) is None
    with pytest.raises(ValueError):
        PauseStorm(MAC["b"], [3], 0, 0.1, now=0.0)
    with pytest.raises(ValueError):
        PauseStorm(MAC["b"], [], 10, 0.1, now=0.0)
    with pytest.raises(ValueError):
        PauseStorm(MAC["b"], [8], 10, 0.1, now=0.0)


def test_storm_frames_are_8021qbb():
    storm = PauseStorm(MAC["b"], [4, 3], 65535, 0.1, now=0.0)
    for frame, quanta in ((storm.xoff, 65535), (storm.xon, 0)):
        assert len(frame) == PFC_FRAME_BYTES
        pkt = Ether(frame)
        assert pkt.dst == PFC_DST_MAC and pkt.src == MAC["b"] and pkt.type == 0x8808
        layer = pkt[MACControlClassBasedFlowControl]
        assert layer._op_code == 0x0101
        assert (layer.c3_enabled, layer.c4_enabled, layer.c0_enabled) == (1, 1, 0)
        assert (layer.c3_pause_time, layer.c4_pause_time) == (quanta, quanta)
        assert pfc_pause_quanta(frame) == {3: quanta, 4: quanta}
        decoded = decode_frame(frame)
        assert decoded.kind == "pfc" and decoded.fields["quanta"] == {"3": quanta, "4": quanta}


def test_a_storm_stops_the_peer_for_as_long_as_it_lasts():
    quanta = 2000                                    # 102.4 ms at 10 Mb/s
    net = pair(a=long_write(), b={"nic": {"pfc_priorities": [3]}})
    net.run(0.05)
    b = net.agents["b"]
    answer = storm_request(b, {"action": "start", "quanta": quanta}, net.clock.now)
    assert answer["priorities"] == [3]               # the NIC's PFC priorities by default...
    interval = quanta * QUANTUM_S / 2                # ...and half the pause time
    assert answer["interval_us"] == pytest.approx(interval * 1e6)
    net.run(0.3)
    assert storm_request(b, {"action": "stop"}, net.clock.now)["frames"] == 5
    net.run(1.0)
    frames = pfc_sent(net, "b")
    times = [t for t, _ in frames]
    # 0.05, +51.2 ms ... four refreshes up to 0.3, then the XON at the stop
    assert times[:5] == pytest.approx([0.05 + i * interval for i in range(5)], abs=2e-3)
    assert times[5] == pytest.approx(0.3, abs=2e-3) and len(times) == 6
    assert pfc_pause_quanta(frames[0][1]) == {3: quanta}
    assert pfc_pause_quanta(frames[-1][1]) == {3: 0}
    sent = [t for t, _ in data_frames(net)]
    stalled = [t for t in sent if 0.052 < t < 0.299]
    assert not stalled, f"a sent data while paused: {stalled[:3]}"
    assert any(0.3 <= t < 0.31 for t in sent)        # the XON resumes it at once
    a_nic = net.agents["a"].nics[0]
    assert a_nic.pause.total_paused_s(1.0)[3] == pytest.approx(0.25, abs=3e-3)
    assert a_nic.counters.pfc_rx == 6
    c = net.agents["b"].nics[0].counters
    assert (c.pfc_tx, c.pfc_storm_frames) == (6, 5)
    snap = net.agents["b"].snapshot(1.0)
    check_invariants(snap)
    check_invariants(net.agents["a"].snapshot(1.0))
    assert snap["nics"][0]["pfc_storm"]["frames"] == 5
    assert snap["nics"][0]["pfc_storm"]["active"] is False
    # 600 frames of 1 KiB payload (+58 B headers) take 0.52 s; the storm adds 0.25 s
    record = net.agents["a"].log.sent[0]
    assert record["status"] == "ok" and record["fct_s"] == pytest.approx(0.52 + 0.25, abs=0.01)


def test_the_default_storm_never_lets_the_pause_run_out():
    net = pair(a=long_write())
    storm_request(net.agents["b"], {"action": "start"}, 0.0)
    net.run(4.0)
    frames = pfc_sent(net, "b")
    interval = default_interval_s(65535, RATE)       # 1.68 s: half of 3.36 s
    assert [t for t, _ in frames] == pytest.approx([0.0, interval, 2 * interval], abs=1e-3)
    # only the packet a sent at 0, before the first pause reached it
    assert [t for t, _ in data_frames(net)] == [0.0]
    assert net.agents["a"].nics[0].pause.paused(3)


def test_a_storm_can_be_scheduled_on_the_agent_clock():
    net = pair(a=long_write(), b={"nic": {"pfc_priorities": [3]}})
    b = net.agents["b"]
    start = storm_request(b, {"action": "start", "quanta": 2000, "at_unix": 0.1}, 0.0)
    stop = storm_request(b, {"action": "stop", "at_unix": 0.2}, 0.0)
    assert start["at_unix"] == 0.1 and stop == {"nic": "eth0", "frames": None, "at_unix": 0.2}
    assert b.nics[0].storm is None                   # nothing yet
    net.run(0.5)
    times = [t for t, _ in pfc_sent(net, "b")]
    interval = 2000 * QUANTUM_S / 2
    assert times == pytest.approx([0.1, 0.1 + interval, 0.2], abs=1e-6)   # 2 XOFFs, 1 XON
    assert net.agents["a"].nics[0].pause.total_paused_s(0.5)[3] == pytest.approx(0.1, abs=1e-3)


@pytest.mark.parametrize("request_, error", [
    ({"action": "pause"}, "action 'pause' is not start or stop"),
    ({"action": "start", "nic": "eth9"}, "no nic 'eth9'"),
    ({"action": "start", "priorities": [9]}, "priorities must be"),
    ({"action": "start", "priorities": []}, "priorities must be"),
    ({"action": "start", "quanta": 0}, "quanta must be"),
    ({"action": "start", "quanta": 70000}, "quanta must be"),
    ({"action": "start", "interval_us": -1}, "interval_us must be"),
    ({"action": "stop", "xon": "yes"}, "xon must be"),
    ({"action": "start", "at_unix": "soon"}, "at_unix must be"),
])
def test_bad_storm_requests_answer_one_line(tmp_path, request_, error):
    net = pair()
    agent = net.agents["b"]
    loop = EventLoop(agent, [])
    server = ControlServer(agent, loop, str(tmp_path / "ctl.sock"))
    try:
        answer = json.loads(server.handle_line(
            json.dumps({"op": "pfc_storm", "id": 7, **request_}).encode(), 0.0))
        assert answer["ok"] is False and answer["id"] == 7
        assert error in answer["error"] and "\n" not in answer["error"]
        good = json.loads(server.handle_line(
            b'{"op": "pfc_storm", "action": "start", "priorities": [3, 4], "quanta": 100}', 0.0))
        assert good == {"ok": True, "nic": "eth0", "priorities": [3, 4], "quanta": 100,
                        "interval_us": pytest.approx(100 * 512 / RATE / 2 * 1e6)}
        stopped = json.loads(server.handle_line(b'{"op": "pfc_storm", "action": "stop"}', 0.0))
        assert stopped == {"ok": True, "nic": "eth0", "frames": 0}
    finally:
        server.close()
        loop.close()
