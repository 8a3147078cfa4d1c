"""Pacing: the virtual-clock pacer, a NIC's line rate, a QP's DCQCN rate and
round-robin among the QPs of a NIC."""

from __future__ import annotations

import math

import pytest

from emulator.traffic.agent.config import parse_config
from emulator.traffic.agent.pacing import Pacer
from emulator.traffic.agent.sim import SimNetwork
from emulator.traffic.roce import parse
from tests.unit.test_agent_support import IP, QPN, data_frames, host_config, pair

A = QPN["a"]


def wire_rate_bps(frames: list[tuple[float, bytes]]) -> float:
    """Bits of every frame but the last over the time from the first frame's
    start to the last one's start."""
    bits = sum(len(f) for _, f in frames[:-1]) * 8
    return bits / (frames[-1][0] - frames[0][0])


def test_pacer_spaces_frames_by_their_length_at_the_rate():
    p = Pacer(8e6, start=0.0)              # 1 byte per microsecond
    assert p.ready(0.0)
    assert p.consume(1000, 0.0) == pytest.approx(1e-3)
    assert not p.ready(0.0005)
    assert p.consume(500, 1e-3) == pytest.approx(1.5e-3)


def test_pacer_catches_up_a_late_start_only_up_to_max_lag():
    p = Pacer(8e6, max_lag_s=1e-3, start=0.0)
    p.consume(1000, 0.0)                   # free at 1 ms
    assert p.consume(1000, 1.4e-3) == pytest.approx(2e-3)   # late by 0.4 ms: no time lost
    assert p.consume(1000, 10e-3) == pytest.approx(10e-3)   # late by 8 ms: 1 ms caught up


def test_pacer_overhead_and_rate_changes():
    p = Pacer(8e6, overhead_bytes=24, start=0.0)
    assert p.consume(1000, 0.0) == pytest.approx(1.024e-3)
    p.set_rate(4e6)
    assert p.duration_s(1000) == pytest.approx(2.048e-3)
    p.set_rate(0)
    assert p.rate_bps == math.inf and p.duration_s(10**6) == 0.0
    with pytest.raises(ValueError):
        p.set_rate(-1)


@pytest.mark.parametrize("rate_bps", [10e6, 100e6, 1e9])
def test_a_nic_sends_at_its_line_rate(rate_bps):
    net = pair(a={"rate_bps": rate_bps, "messages": [{"qp": A, "size_bytes": 200 * 1024}]},
               b={"rate_bps": rate_bps})
    net.run(1.0)
    frames = [(t, f) for t, f in net.fakes[("a", "eth0")].sent]
    assert len(frames) == 200
    assert wire_rate_bps(frames) == pytest.approx(rate_bps, rel=1e-9)
    gaps = {round(b[0] - a[0], 12) for a, b in zip(frames[1:], frames[2:])}
    assert len(gaps) == 1                  # evenly spaced, no burst


def test_overhead_bytes_count_against_the_line_rate():
    net = pair(a={"nic": {"overhead_bytes": 20}, "messages": [{"qp": A, "size_bytes": 50_000}]})
    net.run(1.0)
    frames = net.fakes[("a", "eth0")].sent
    t0, f0 = frames[1]
    t1, _ = frames[2]
    assert t1 - t0 == pytest.approx((len(f0) + 20) * 8 / 10e6)


def test_a_qp_is_paced_at_its_dcqcn_rate():
    net = pair(a={"messages": [{"qp": A, "size_bytes": 100 * 1024, "at_s": 0.001}]})
    qp = net.agents["a"].qps[A]
    qp.rp.rc_bps = 2.5e6                   # as a CNP would leave it
    qp.rp.rt_bps = 2.5e6
    qp.rp.rate_next = math.inf             # hold the rate for the test
    qp.pacer.set_rate(2.5e6)
    net.run(2.0)
    frames = [(t, f) for t, f in net.fakes[("a", "eth0")].sent]
    assert len(frames) == 100
    assert wire_rate_bps(frames) == pytest.approx(2.5e6, rel=1e-9)


@pytest.mark.parametrize("dcqcn", [True, False])
def test_a_rate_cap_holds_a_qp_below_line_rate(dcqcn):
    net = pair(a={"messages": [{"qp": A, "size_bytes": 100 * 1024}],
                  "qp": {"max_rate_bps": 2e6, "dcqcn": {"enabled": dcqcn}}})
    net.run(2.0)
    frames = [(t, f) for t, f in net.fakes[("a", "eth0")].sent if parse(f).opcode <= 0x10]
    assert len(frames) == 100
    assert wire_rate_bps(frames) == pytest.approx(2e6, rel=1e-6)


def test_qps_of_a_nic_share_it_round_robin():
    extra = {"qpn": 0x33, "nic": "eth0", "remote_ip": IP["b"], "remote_qpn": 0x44}
    peer = {"qpn": 0x44, "nic": "eth0", "remote_ip": IP["a"], "remote_qpn": 0x33}
    net = SimNetwork()
    net.add_agent(parse_config(host_config(
        "a", extra_qps=[extra], messages=[{"qp": A, "size_bytes": 40 * 1024},
                                          {"qp": 0x33, "size_bytes": 20 * 1024}])))
    net.add_agent(parse_config(host_config("b", extra_qps=[peer])))
    net.connect(("a", "eth0"), ("b", "eth0"))
    net.run(1.0)
    order = [v.dest_qp for _, v in data_frames(net)]
    assert order[:40] == [QPN["b"], 0x44] * 20                  # alternate while both have data
    assert order[40:] == [QPN["b"]] * 20
    assert wire_rate_bps(net.fakes[("a", "eth0")].sent) == pytest.approx(10e6, rel=1e-9)
    assert [r["qpn"] for r in net.agents["b"].log.received] == [0x44, QPN["b"]]


def test_an_idle_nic_banks_no_credit_for_a_burst():
    net = pair(a={"messages": [{"qp": A, "size_bytes": 10 * 1024, "at_s": 0.5}]})
    net.run(1.0)
    times = [t for t, _ in net.fakes[("a", "eth0")].sent]
    assert times[0] == 0.5
    assert times[1] - times[0] == pytest.approx((1024 + 16 + 58) * 8 / 10e6)


def test_acks_go_before_data():
    # b sends data to a while acknowledging a's data: its ACKs jump the queue
    net = pair(a={"messages": [{"qp": A, "size_bytes": 16 * 1024}]},
               b={"messages": [{"qp": QPN["b"], "size_bytes": 64 * 1024}]})
    net.run(1.0)
    sent_b = [parse(f) for _, f in net.fakes[("b", "eth0")].sent]
    ack_index = next(i for i, v in enumerate(sent_b) if v.opcode == 0x11)
    # a's 16th packet (AckReq) arrives while b sends packet ~16: the ACK is next
    assert 14 <= ack_index <= 18
    assert net.agents["a"].log.sent[0]["status"] == "ok"
