"""PFC honouring at a host NIC: pause for quanta × 512 / rate, XON, timer
restart, per-priority scope, paused-time counters."""

from __future__ import annotations

import pytest
from scapy.compat import raw

from emulator.traffic.agent.pfc import PauseState
from emulator.traffic.agent.sim import mark_ce
from emulator.traffic.layers.pfc import pfc_frame
from emulator.traffic.roce import parse
from tests.unit.test_agent_support import MAC, QPN, data_frames, pair, write_frame

A = QPN["a"]
RATE = 10e6
QUANTUM_S = 512 / RATE                     # 51.2 µs at 10 Mb/s


def pfc(quanta: dict[int, int]) -> bytes:
    return raw(pfc_frame(MAC["b"], quanta))


def long_write(**extra) -> dict:
    return {"messages": [{"qp": A, "size_bytes": 400 * 1024}], **extra}


def gap_around(times: list[float], t: float) -> tuple[float, float]:
    """(last send at or before t, first send after t)."""
    before = max(x for x in times if x <= t)
    after = min(x for x in times if x > t)
    return before, after



def test_the_next_expiry_is_the_earliest_pause_still_on():
    p = PauseState(RATE, honoured=(1, 3, 6))
    assert p.next_expiry() == float("inf")
    p.on_frame({1: 300, 3: 100, 6: 200}, now=1.0)
    assert p.next_expiry() == pytest.approx(1.0 + 100 * QUANTUM_S)  # priority 3's
    p.expire(1.0 + 100 * QUANTUM_S)
    assert p.next_expiry() == pytest.approx(1.0 + 200 * QUANTUM_S)  # then 6's
    p.on_frame({6: 0}, now=1.0 + 150 * QUANTUM_S)                  # XON ends 6's
    assert p.next_expiry() == pytest.approx(1.0 + 300 * QUANTUM_S)
    p.expire(2.0)
    assert p.next_expiry() == float("inf")

def test_pause_state_timers_and_counters():
    p = PauseState(RATE, honoured=(3, 6))
    p.on_frame({3: 100, 5: 100}, now=1.0)          # 5 is not honoured
    assert p.paused(3) and not p.paused(5)
    assert p.next_expiry() == pytest.approx(1.0 + 100 * QUANTUM_S)
    p.on_frame({3: 10}, now=1.001)                 # restarts, does not add
    assert p.until[3] == pytest.approx(1.001 + 10 * QUANTUM_S)
    p.expire(1.001 + 10 * QUANTUM_S)
    assert not p.mask
    assert p.total_paused_s(2.0)[3] == pytest.approx(0.001 + 10 * QUANTUM_S)
    p.on_frame({6: 1000}, now=3.0)
    assert p.total_paused_s(3.01)[6] == pytest.approx(0.01)  # the running part counts
    p.on_frame({6: 0}, now=3.02)                   # XON
    assert not p.paused(6) and p.total_paused_s(5.0)[6] == pytest.approx(0.02)
    assert p.pauses[3] == 2 and p.resumes[6] == 1 and p.frames == 4
    with pytest.raises(ValueError):
        PauseState(RATE, honoured=(8,))


def test_a_pause_frame_stops_the_priority_for_its_quanta():
    quanta = 2000                                  # 102.4 ms at 10 Mb/s
    net = pair(a=long_write())
    net.inject("a", "eth0", pfc({3: quanta}), at=0.05)
    net.run(0.3)
    times = [t for t, _ in data_frames(net)]
    before, after = gap_around(times, 0.05)
    assert after == pytest.approx(0.05 + quanta * QUANTUM_S)
    assert not any(0.05 < t < after for t in times)
    nic = net.agents["a"].nics[0]
    assert nic.counters.pfc_rx == 1
    assert nic.pause.total_paused_s(net.clock.now)[3] == pytest.approx(quanta * QUANTUM_S)
    snap = nic.snapshot(net.clock.now)
    assert snap["paused_s"][3] == pytest.approx(0.1024) and snap["pfc_pauses"][3] == 1


def test_the_line_resumes_paced_after_a_pause():
    """A paused line banks no credit: after the pause the frames leave one
    frame time apart, not as a burst catching up the paused time."""
    quanta = 200                                   # 10.24 ms at 10 Mb/s
    net = pair(a=long_write())
    net.inject("a", "eth0", pfc({3: quanta}), at=0.05)
    net.run(0.3)
    sent = [(t, view) for t, view in data_frames(net)]
    after = [t for t, _ in sent if t > 0.05]
    frame_s = (1024 + 58) * 8 / RATE
    first = after[0]
    assert first == pytest.approx(0.05 + quanta * QUANTUM_S)
    gaps = [b - a for a, b in zip(after, after[1:10])]
    assert min(gaps) >= frame_s * 0.99             # paced from the resume on


def test_zero_quanta_resume_at_once():
    net = pair(a=long_write())
    net.inject("a", "eth0", pfc({3: 65535}), at=0.05)
    net.inject("a", "eth0", pfc({3: 0}), at=0.08)
    net.run(0.2)
    times = [t for t, _ in data_frames(net)]
    _, after = gap_around(times, 0.05)
    assert after == pytest.approx(0.08)
    paused = net.agents["a"].nics[0].pause.total_paused_s(net.clock.now)[3]
    assert paused == pytest.approx(0.03)


def test_a_new_frame_restarts_the_timer():
    net = pair(a=long_write())
    net.inject("a", "eth0", pfc({3: 1000}), at=0.05)    # would end at 0.1012
    net.inject("a", "eth0", pfc({3: 1000}), at=0.09)    # now ends at 0.1412
    net.run(0.3)
    times = [t for t, _ in data_frames(net)]
    _, after = gap_around(times, 0.05)
    assert after == pytest.approx(0.09 + 1000 * QUANTUM_S)


def test_other_priorities_and_unhonoured_ones_do_not_stop_data():
    net = pair(a=long_write(nic={"pfc_priorities": [0, 1, 2, 4, 5, 6, 7]}))
    net.inject("a", "eth0", pfc({3: 5000}), at=0.05)     # priority 3 not honoured here
    net.inject("a", "eth0", pfc({0: 5000, 6: 5000}), at=0.06)
    net.run(0.2)
    times = [t for t, _ in data_frames(net)]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) < 0.001
    assert net.agents["a"].nics[0].pause.total_paused_s(0.2)[3] == 0


def test_a_qp_on_another_priority_pauses_with_its_own_class():
    net = pair(a=long_write(qp={"priority": 5}))
    net.inject("a", "eth0", pfc({3: 5000}), at=0.05)
    net.inject("a", "eth0", pfc({5: 1000}), at=0.1)
    net.run(0.3)
    times = [t for t, _ in data_frames(net)]
    _, after = gap_around(times, 0.1)
    assert after == pytest.approx(0.1 + 1000 * QUANTUM_S)
    assert gap_around(times, 0.05)[1] < 0.052            # priority 3 did not stop it


def test_acks_wait_on_their_priority_but_cnps_do_not():
    # b receives a's data (CE-marked by the wire) while b's priority 3 is paused:
    # its ACKs wait, its CNPs (priority 6) go.
    def mark(frame, src, _dst):
        return mark_ce(frame) if src.startswith("a/") and frame[23] == 17 else frame

    # AckReq on every packet: b owes an ACK from the first one on (the CNPs,
    # one per interval while marks come, slow a down a lot)
    net = pair(a={"messages": [{"qp": A, "size_bytes": 20 * 1024}],
                  "qp": {"transport": {"ack_req_every": 1}}}, hook=mark)
    net.inject("b", "eth0", pfc({3: 65535}), at=0.0)
    net.inject("b", "eth0", pfc({3: 0}), at=0.1)
    net.run(0.3)
    sent_b = [(t, parse(f)) for t, f in net.fakes[("b", "eth0")].sent]
    acks = [t for t, v in sent_b if v.opcode == 0x11]
    cnps = [t for t, v in sent_b if v.opcode == 0x81]
    assert cnps and min(cnps) < 0.01
    assert acks and min(acks) == pytest.approx(0.1)
    assert net.agents["a"].log.sent[0]["status"] == "ok"


def test_pfc_and_other_frames_are_counted_not_passed_on():
    net = pair()
    net.inject("a", "eth0", pfc({3: 10}))
    net.inject("a", "eth0", bytes.fromhex("0180c2000001") + bytes.fromhex(MAC["b"].replace(":", ""))
               + b"\x88\x08\x00\x01" + bytes(46))       # 802.3x PAUSE: not PFC
    net.inject("a", "eth0", b"\xff" * 12 + b"\x08\x06" + bytes(46))   # ARP
    net.inject("a", "eth0", write_frame(0))                          # for b's address
    net.run(0.01)
    c = net.agents["a"].nics[0].counters
    assert (c.pfc_rx, c.mac_control_other_rx, c.other_rx, c.roce_rx, c.not_for_us_rx) == \
        (1, 1, 2, 1, 1)
    assert c.rx_packets == c.roce_rx + c.pfc_rx + c.other_rx


def test_a_rate_capped_qp_resumes_at_its_own_rate_after_a_pause():
    """The queue pair's pacer is held by the pause as the line is: after it,
    frames leave at the QP's rate, not in a burst at line rate."""
    quanta = 400                                   # 20.48 ms at 10 Mb/s
    net = pair(a=long_write(qp={"max_rate_bps": RATE / 4}))
    net.inject("a", "eth0", pfc({3: quanta}), at=0.05)
    net.run(0.3)
    after = [t for t, _ in data_frames(net) if t > 0.05]
    qp_frame_s = (1024 + 58) * 8 / (RATE / 4)
    assert after[0] == pytest.approx(0.05 + quanta * QUANTUM_S, abs=qp_frame_s)
    gaps = [b - a for a, b in zip(after, after[1:10])]
    assert min(gaps) >= qp_frame_s * 0.99
    nic = net.agents["a"].nics[0]
    assert nic.pacer.given_up_s == 0               # waiting for the QP was no lag


def test_a_line_waiting_for_a_slower_qp_gives_up_no_lag():
    """Virtual time is never late: a line held by a QP four times slower,
    with a lag allowance shorter than the wait, counts nothing given up."""
    net = pair(a=long_write(qp={"max_rate_bps": RATE / 4}, nic={"max_lag_us": 100}))
    net.run(0.2)
    times = [t for t, _ in data_frames(net)]
    assert len(times) > 20
    nic = net.agents["a"].nics[0]
    assert nic.pacer.given_up_s == 0 and nic.pacer.given_up_events == 0
