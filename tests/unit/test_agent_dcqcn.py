"""DCQCN: the reaction point's rate cut, α, fast recovery, additive and
hyper increase; the receiver's CNP gate; both ends together on a wire that
marks CE."""

from __future__ import annotations

import math

import pytest

from emulator.traffic.agent.dcqcn import CnpGate, DcqcnParams, ReactionPoint
from emulator.traffic.agent.sim import mark_ce
from emulator.traffic.agent.stats import check_invariants
from emulator.traffic.roce import CNP_DSCP, ECN_CE, ECN_ECT0, ECN_NOT_ECT, parse
from tests.unit.test_agent_support import QPN, data_frames, pair, write_frame

LINE = 10e6
G = 1 / 256


def unscaled(**kw) -> DcqcnParams:
    """Parameters taken as given: time_scale 1, reference rate = the line."""
    return DcqcnParams(time_scale=1.0, reference_rate_bps=LINE, **kw)


def rp(now: float = 0.0, **kw) -> ReactionPoint:
    base = dict(alpha_timer_us=100, rate_timer_us=1000, byte_counter_bytes=1e12,
                rate_ai_bps=100e3, rate_hai_bps=1e6, min_rate_bps=10e3)
    base.update(kw)
    return ReactionPoint(unscaled(**base).scaled(LINE), now)


def test_scaling_of_the_defaults():
    s = DcqcnParams().scaled(10e6)
    assert s.alpha_timer_s == pytest.approx(5.5e-3) and s.rate_timer_s == pytest.approx(5.5e-3)
    assert s.cnp_interval_s == pytest.approx(5e-3)
    assert s.byte_counter_bytes == pytest.approx(250e3)
    assert s.rate_ai_bps == pytest.approx(10e3) and s.rate_hai_bps == pytest.approx(100e3)
    assert s.min_rate_bps == pytest.approx(100e3)
    assert s.g == G and s.fast_recovery_stages == 5 and s.alpha_init == 1.0
    raw = unscaled(cnp_interval_us=50).scaled(LINE)
    assert raw.cnp_interval_s == pytest.approx(50e-6) and raw.rate_ai_bps == 40e6
    assert raw.min_rate_bps == LINE                 # 400 Mb/s clamped to the line
    with pytest.raises(ValueError):
        DcqcnParams(g=0)
    with pytest.raises(ValueError):
        DcqcnParams(time_scale=-1)


def test_cnp_cuts_the_rate_by_alpha_over_two_and_raises_alpha():
    r = rp(clamp_target_rate=True)  # the paper: Rt = Rc at every cut
    assert r.rc_bps == LINE and r.alpha == 1.0 and r.next_event() == math.inf
    assert r.on_cnp(0.0)
    assert r.rt_bps == LINE and r.rc_bps == pytest.approx(LINE / 2)
    assert r.alpha == pytest.approx((1 - G) * 1.0 + G) == 1.0
    r.alpha = 0.5
    r.on_cnp(10e-6)
    assert r.rt_bps == pytest.approx(LINE / 2)
    assert r.rc_bps == pytest.approx(LINE / 2 * (1 - 0.25))
    assert r.alpha == pytest.approx((1 - G) * 0.5 + G)
    assert r.cuts == 2 and [s[1] for s in r.samples] == [LINE, LINE / 2, LINE * 0.375]


def test_without_clamp_cuts_faster_than_the_timer_keep_the_target():
    """ConnectX's default (clamp_tgt_rate off): Rt follows Rc only when a
    rate-increase timer stage passed since the previous cut."""
    r = rp()
    r.on_cnp(0.0)
    r.on_cnp(10e-6)                                 # no timer stage in between
    assert r.rt_bps == LINE and r.rc_bps == pytest.approx(LINE / 4)
    r.on_cnp(1.5e-3)                                # one 1 ms timer stage since: clamp
    assert r.t_cnt == 0 and r.rt_bps < LINE
    assert r.rt_bps == pytest.approx(r.samples[-2][1])  # the Rc the cut started from


def test_alpha_decays_every_k_without_cnp():
    r = rp(alpha_timer_us=100, alpha_init=0.8)
    r.advance(5.0)                                  # no CNP yet: α₀ holds
    assert r.alpha == 0.8
    r.on_cnp(0.0 + 5.0)
    r = rp(alpha_timer_us=100)
    r.on_cnp(0.0)
    a0 = r.alpha
    r.advance(99e-6)
    assert r.alpha == a0
    r.advance(100e-6)
    assert r.alpha == pytest.approx(a0 * (1 - G))
    r.advance(1.0)                                  # 10 000 periods, in closed form
    assert r.alpha == pytest.approx(a0 * (1 - G) ** 10_000)
    r.on_cnp(1.00005)                               # a CNP restarts the α timer
    a1 = r.alpha
    r.advance(1.00014)
    assert r.alpha == a1
    r.advance(1.00015)
    assert r.alpha == pytest.approx(a1 * (1 - G))


def test_fast_recovery_halves_the_gap_to_the_target_f_times():
    r = rp(rate_timer_us=1000)
    r.on_cnp(0.0)                                   # Rc 5 M, Rt 10 M
    rates = []
    for i in range(1, 6):
        r.advance(i * 1e-3)
        rates.append(r.rc_bps)
    assert r.increases["fast_recovery"] == 4        # events 1..4: max(T, B) < F
    assert rates[:4] == pytest.approx([LINE - LINE / 2 ** (k + 1) for k in range(1, 5)])
    # event 5 is additive (T_cnt = F), Rt is already the line rate: clamped
    assert r.increases["additive"] == 1 and r.rt_bps == LINE


def test_additive_then_hyper_increase():
    r = rp(rate_timer_us=1000, byte_counter_bytes=1000, rate_ai_bps=100e3,
           rate_hai_bps=1e6, fast_recovery_stages=2)
    r.rc_bps = r.rt_bps = 2e6                      # well below the line, after cuts
    r.on_cnp(0.0)                                  # Rt 2 M, Rc 1 M
    assert (r.rt_bps, r.rc_bps) == (2e6, 1e6)
    r.advance(1e-3)                                 # T 1, B 0: fast recovery
    assert (r.rt_bps, r.rc_bps) == (2e6, 1.5e6)
    r.advance(2e-3)                                 # T 2 = F: additive
    assert r.rt_bps == pytest.approx(2.1e6) and r.rc_bps == pytest.approx(1.8e6)
    r.advance(3e-3)                                 # T 3 > F, B 0: still additive
    assert r.rt_bps == pytest.approx(2.2e6)
    for k in range(3):                              # byte stages 1..3
        r.on_sent(1000, 3.1e-3)
    # B 1 -> additive (2.3), B 2 -> additive (2.4), B 3 > F and T 3 > F -> hyper, i = 1
    assert r.increases["additive"] == 4 and r.increases["hyper"] == 1
    assert r.rt_bps == pytest.approx(2.4e6 + 1e6)
    r.advance(4e-3)                                 # T 4, B 3: hyper, i = min(4, 3) - 2 = 1
    assert r.rt_bps == pytest.approx(3.4e6 + 1e6)
    r.on_sent(1000, 4.1e-3)                         # B 4: i = 2
    assert r.rt_bps == pytest.approx(4.4e6 + 2e6)


def test_rates_stay_between_the_minimum_and_the_line():
    r = rp(rate_hai_bps=50e6, byte_counter_bytes=10, fast_recovery_stages=1)
    for i in range(40):
        r.on_cnp(i * 1e-6)
    assert r.rc_bps == pytest.approx(10e3)          # the minimum rate
    r.advance(0.1)
    for _ in range(50):
        r.on_sent(1000, 0.1)
    assert r.rc_bps <= LINE and r.rt_bps <= LINE
    r.advance(1.0)
    assert r.rc_bps == LINE and r.next_event() == math.inf   # recovered: timer stops
    assert all(10e3 <= s[1] <= LINE for s in r.samples)


def test_rate_reduce_period_ignores_cnps_in_between():
    r = rp(rate_reduce_period_us=50)
    assert r.on_cnp(0.0)
    assert not r.on_cnp(30e-6)
    assert r.on_cnp(60e-6)
    assert r.cuts == 2 and r.cnps == 3 and r.cnps_ignored == 1


def test_samples_are_kept_on_change_and_capped():
    r = rp(rate_timer_us=1000)
    r.max_samples = 4
    r.advance(0.5)                                  # at the line: nothing changes
    assert len(r.samples) == 1
    for i in range(5):
        r.on_cnp(i * 1e-6)
    assert len(r.samples) == 4 and r.samples_dropped == 2


def test_cnp_gate_allows_one_per_interval():
    gate = CnpGate(50e-6)
    got = [gate.allow(t * 1e-6) for t in (0, 10, 49, 50, 60, 99, 100, 1000)]
    assert got == [True, False, False, True, False, False, True, True]


# -- both ends --------------------------------------------------------------------

def ce_on_data(frame, src, _dst):
    """Mark every a→b data packet CE (a switch queue above Kmax with Pmax 1)."""
    if src.startswith("a/") and parse(frame).opcode <= 0x10:
        return mark_ce(frame)
    return frame


def test_data_is_ect0_with_dcqcn_and_not_ect_without():
    net = pair(a={"messages": [{"qp": QPN["a"], "size_bytes": 2048}]})
    net.run(0.05)
    assert {v.ecn for _, v in data_frames(net)} == {ECN_ECT0}
    acks = [parse(f) for _, f in net.fakes[("b", "eth0")].sent]
    assert {v.ecn for v in acks} == {ECN_NOT_ECT}
    net = pair(a={"messages": [{"qp": QPN["a"], "size_bytes": 2048}],
                  "qp": {"dcqcn": {"enabled": False}}})
    net.run(0.05)
    assert {v.ecn for _, v in data_frames(net)} == {ECN_NOT_ECT}
    assert net.agents["a"].qps[QPN["a"]].rp is None


def test_ce_marks_make_at_most_one_cnp_per_interval_and_cut_the_rate():
    # 1 ms CNP interval, unscaled; a 10 Mb/s packet lasts 0.87 ms
    params = {"time_scale": 1, "reference_rate_bps": LINE, "cnp_interval_us": 1000,
              "alpha_timer_us": 5000, "rate_timer_us": 5000, "byte_counter_bytes": 1e9,
              "rate_ai_bps": 100e3, "rate_hai_bps": 1e6, "min_rate_bps": 100e3}
    net = pair(a={"messages": [{"qp": QPN["a"], "size_bytes": 100 * 1024}],
                  "qp": {"dcqcn": params}},
               b={"qp": {"dcqcn": params}}, hook=ce_on_data)
    net.run(0.02)
    sent_b = [(t, parse(f)) for t, f in net.fakes[("b", "eth0")].sent]
    cnps = [(t, v) for t, v in sent_b if v.opcode == 0x81]
    times = [t for t, _ in cnps]
    assert all(b - a >= 1e-3 for a, b in zip(times, times[1:]))
    v = cnps[0][1]
    assert v.becn and v.dest_qp == QPN["a"] and v.dscp == CNP_DSCP and v.ecn == ECN_NOT_ECT
    b = net.agents["b"].qps[QPN["b"]].counters
    assert b.ce_packets_rx == b.cnps_sent - b.cnps_deferred + b.cnps_suppressed
    assert b.cnps_suppressed > 0
    qp = net.agents["a"].qps[QPN["a"]]
    assert qp.counters.cnps_rx == len(cnps) == qp.rp.cuts
    # first cut: α = 1, Rc = line / 2
    assert qp.rp.samples[1][1] == pytest.approx(LINE / 2)
    assert qp.rp.rc_bps < LINE / 4
    check_invariants(net.agents["a"].snapshot(net.clock.now))
    check_invariants(net.agents["b"].snapshot(net.clock.now))


def test_the_cut_rate_paces_the_sender_and_it_recovers_without_marks():
    params = {"time_scale": 1, "reference_rate_bps": LINE, "cnp_interval_us": 50,
              "alpha_timer_us": 1000, "rate_timer_us": 20_000, "byte_counter_bytes": 1e9,
              "min_rate_bps": 100e3}
    state = {"marks": 0}

    def mark_three(frame, src, _dst):
        if src.startswith("a/") and parse(frame).opcode <= 0x10 and state["marks"] < 3:
            state["marks"] += 1
            return mark_ce(frame)
        return frame

    net = pair(a={"messages": [{"qp": QPN["a"], "size_bytes": 400 * 1024}],
                  "qp": {"dcqcn": params}}, b={"qp": {"dcqcn": params}}, hook=mark_three)
    net.run(0.015)
    qp = net.agents["a"].qps[QPN["a"]]
    assert qp.rp.cuts == 3
    cut_bps = qp.rp.rc_bps
    # α = 1 at each cut (α decays only 1/256 per ms): Rc = line / 8
    assert cut_bps == pytest.approx(LINE / 8, rel=0.02)
    frames = [(t, f) for t, f in net.fakes[("a", "eth0")].sent
              if 0.005 < t < 0.015 and parse(f).opcode <= 0x10]
    gaps = [b[0] - a[0] for a, b in zip(frames, frames[1:])]
    assert gaps and all(g == pytest.approx(len(f) * 8 / cut_bps, rel=1e-6)
                        for g, (_, f) in zip(gaps, frames))
    net.run(0.5)
    assert qp.rp.rc_bps == LINE
    assert qp.rp.increases["fast_recovery"] == 4
    assert net.agents["a"].log.sent[0]["status"] == "ok"


def test_cnp_for_a_qp_without_dcqcn_is_counted_only():
    net = pair(a={"qp": {"dcqcn": {"enabled": False}}})
    net.inject("a", "eth0", net.agents["b"].qps[QPN["b"]].cnp_flow.cnp(QPN["a"]))
    net.inject("b", "eth0", mark_ce(write_frame(0, ecn=ECN_CE)))
    net.run(0.01)
    assert net.agents["a"].qps[QPN["a"]].counters.cnps_rx == 2


def test_cnp_gate_owes_one_cnp_for_marks_inside_the_interval():
    gate = CnpGate(1e-3)
    assert gate.due == math.inf
    assert gate.allow(0.0) and gate.due == math.inf
    assert not gate.allow(0.0001) and not gate.allow(0.0002)
    assert gate.due == pytest.approx(1e-3)
    assert not gate.fire(0.0005)          # too early
    assert gate.fire(1e-3) and gate.due == math.inf
    assert not gate.fire(5e-3)            # nothing owed: no marks since
    assert gate.allow(5e-3)


def test_marks_read_in_bursts_still_get_a_cnp_every_interval():
    # A receiver that reads its socket in bursts (it was not scheduled for a
    # while) sees many CE marks within microseconds, every 3 ms. With a 1 ms
    # interval it owes a CNP at the burst and one when the interval ends.
    params = {"time_scale": 1, "reference_rate_bps": LINE, "cnp_interval_us": 1000}
    net = pair(b={"qp": {"dcqcn": params}})
    psn = 0
    for burst in range(4):
        for i in range(20):
            net.inject("b", "eth0", write_frame(psn, ecn=ECN_CE), at=burst * 3e-3 + i * 1e-6)
            psn += 1
    net.run(0.02)
    times = [t for t, f in net.fakes[("b", "eth0")].sent if parse(f).opcode == 0x81]
    assert all(b - a >= 1e-3 - 1e-9 for a, b in zip(times, times[1:]))
    assert times == pytest.approx([0.0, 1e-3, 3e-3, 4e-3, 6e-3, 7e-3, 9e-3, 10e-3], abs=2e-5)
    c = net.agents["b"].qps[QPN["b"]].counters
    assert c.ce_packets_rx == 80 and c.cnps_sent == 8 and c.cnps_deferred == 4
    check_invariants(net.agents["b"].snapshot(net.clock.now))


def test_steady_marks_get_one_cnp_per_interval():
    params = {"time_scale": 1, "reference_rate_bps": LINE, "cnp_interval_us": 1000}
    net = pair(b={"qp": {"dcqcn": params}})
    for psn in range(100):  # a CE mark every 0.3 ms for 30 ms
        net.inject("b", "eth0", write_frame(psn, ecn=ECN_CE), at=psn * 3e-4)
    net.run(0.05)
    times = [t for t, f in net.fakes[("b", "eth0")].sent if parse(f).opcode == 0x81]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert gaps and all(1e-3 - 1e-9 <= g <= 1e-3 + 1e-9 for g in gaps)
    assert times[-1] >= 29.7e-3 - 1e-9 - 1e-3
