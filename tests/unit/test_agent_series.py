"""The agent's binned time series (payload sent, resent and accepted, CE
marks, CNPs per time bin) and a NIC's PFC pause intervals, on a virtual
clock, checked against the frames on the wire."""

from __future__ import annotations

import copy
import math

import pytest
from scapy.compat import raw

from emulator.traffic.agent.config import ConfigError, NicConfig, parse_config
from emulator.traffic.agent.nic import Nic
from emulator.traffic.agent.pfc import PauseState
from emulator.traffic.agent.sim import mark_ce
from emulator.traffic.agent.stats import (
    SERIES_KEYS,
    TX_BYTES,
    InvariantError,
    QpSeries,
    SeriesClock,
    check_invariants,
)
from emulator.traffic.layers.pfc import pfc_frame
from emulator.traffic.roce import parse
from tests.unit.test_agent_support import MAC, QPN, data_frames, host_config, pair

A, B = QPN["a"], QPN["b"]
DELAY_S = 50e-6
CNP = 0x81


def binned(times_amounts, bin_s: float) -> list[int]:
    """The oracle: amounts summed per bin of ``bin_s`` from t = 0."""
    out: list[int] = []
    for t, amount in times_amounts:
        i = int(t / bin_s)
        out.extend([0] * (i + 1 - len(out)))
        out[i] += amount
    return out


def run_bin(ms: float) -> dict:
    return {"run": {"series_bin_ms": ms}}


def snapshots(net) -> dict[str, dict]:
    return {name: agent.snapshot(net.clock.now) for name, agent in net.agents.items()}


def test_sent_and_accepted_bytes_per_bin_match_the_wire():
    net = pair(a={"messages": [{"qp": A, "size_bytes": 60_000}], **run_bin(5)},
               b=run_bin(5), delay_s=DELAY_S)
    net.run(0.2)
    snap = snapshots(net)
    sa = snap["a"]["qps"][0]["series"]
    sb = snap["b"]["qps"][0]["series"]
    assert sa["bin_s"] == sb["bin_s"] == pytest.approx(0.005)
    assert sa["start_unix"] == sb["start_unix"] == 0.0      # wall offset 0, now 0
    wire = [(t, v.payload_len) for t, v in data_frames(net)]
    assert sa["tx_bytes"] == binned(wire, 0.005)
    assert sb["rx_bytes"] == binned([(t + DELAY_S, n) for t, n in wire], 0.005)
    assert sum(sa["tx_bytes"]) == sum(sb["rx_bytes"]) == 60_000
    # 10 Mb/s line: a full 5 ms bin carries at most 6250 B on the wire, so
    # less payload, and the middle bins are nearly full
    full = sa["tx_bytes"][1:-1]
    assert full and all(5000 < n <= 6250 for n in full)
    # a sender receives no data, a receiver sends none, nobody marked CE
    assert sa["rx_bytes"] == sb["tx_bytes"] == sa["retx_bytes"] == sa["ce_packets_rx"] == []
    for s in snap.values():
        check_invariants(s)


def test_ce_marks_and_cnps_per_bin():
    def ce_on_data(frame, src, _dst):
        return mark_ce(frame) if src.startswith("a/") and parse(frame).opcode <= 0x10 else frame

    net = pair(a={"messages": [{"qp": A, "size_bytes": 40 * 1024}], **run_bin(2)},
               b=run_bin(2), hook=ce_on_data, delay_s=DELAY_S)
    net.run(0.2)
    snap = snapshots(net)
    sa, sb = snap["a"]["qps"][0]["series"], snap["b"]["qps"][0]["series"]
    arrivals = [(t + DELAY_S, 1) for t, _ in data_frames(net)]
    assert sb["ce_packets_rx"] == binned(arrivals, 0.002)
    cnps = [(t, 1) for t, f in net.fakes[("b", "eth0")].sent if parse(f).opcode == CNP]
    assert len(cnps) >= 3
    assert sa["cnps_rx"] == binned([(t + DELAY_S, 1) for t, _ in cnps], 0.002)
    # a CNP is counted when the QP asks for it; the line may hold it for an ACK
    # in front (one frame time), so it can land one bin later on the wire
    assert sum(sb["cnps_sent"]) == len(cnps) == snap["b"]["qps"][0]["counters"]["cnps_sent"]
    asked = [i for i, n in enumerate(sb["cnps_sent"]) for _ in range(n)]
    sent = [int(t / 0.002) for t, _ in cnps]
    assert all(0 <= s - a <= 1 for a, s in zip(asked, sent))
    for s in snap.values():
        check_invariants(s)


def test_retransmitted_bytes_fall_in_the_bin_they_were_sent_again():
    state = {"n": 0}

    def drop_tenth(frame, src, _dst):
        if src.startswith("a/") and parse(frame).opcode <= 0x10:
            state["n"] += 1
            if state["n"] == 10:
                return None
        return frame

    net = pair(a={"messages": [{"qp": A, "size_bytes": 40 * 1024}], **run_bin(1)},
               b=run_bin(1), hook=drop_tenth)
    net.run(0.5)
    snap = snapshots(net)
    sa = snap["a"]["qps"][0]["series"]
    frames = data_frames(net)
    seen: set[int] = set()
    first, again = [], []
    for t, v in frames:
        (again if v.psn in seen else first).append((t, v.payload_len))
        seen.add(v.psn)
    assert again and sa["retx_bytes"] == binned(again, 0.001)
    assert sa["tx_bytes"] == binned(first, 0.001)
    c = snap["a"]["qps"][0]["counters"]
    assert sum(sa["retx_bytes"]) == c["payload_bytes_sent"] - c["payload_bytes_first_tx"] > 0
    assert sum(snap["b"]["qps"][0]["series"]["rx_bytes"]) == 40 * 1024
    check_invariants(snap["a"])


def test_past_the_bin_cap_the_series_coarsen_and_keep_their_sums():
    clock = SeriesClock(t0=10.0, bin_s=0.01, max_bins=4)
    a, b = QpSeries(clock), QpSeries(clock)
    for i in range(4):
        a.add(TX_BYTES, 10.0 + 0.01 * i + 0.001, i + 1)      # bins 0..3: 1 2 3 4
    b.add(TX_BYTES, 10.015, 7)                               # bin 1
    a.add(TX_BYTES, 10.095, 100)                             # bin 9: past the cap, twice
    assert clock.bin_s == pytest.approx(0.04) and clock.coarsenings == 2
    assert a.bins[TX_BYTES] == [1 + 2 + 3 + 4, 0, 100]       # [0, 40) [40, 80) [80, 120) ms
    assert b.bins[TX_BYTES] == [7]                           # every series on the clock
    a.add(TX_BYTES, 10.079, 5)
    assert a.bins[TX_BYTES] == [10, 5, 100]
    d = a.to_dict(wall_offset=1000.0)
    assert d["start_unix"] == 1010.0 and d["bin_s"] == pytest.approx(0.04)
    assert set(SERIES_KEYS) <= set(d) and d["coarsenings"] == 2
    with pytest.raises(ValueError):
        SeriesClock(0.0, 0.0)


def test_a_run_longer_than_the_cap_coarsens_in_the_agent():
    # 4096 bins of 0.1 ms = 0.41 s; a 600 KB write at 10 Mb/s lasts ~0.52 s
    net = pair(a={"messages": [{"qp": A, "size_bytes": 600_000}], **run_bin(0.1)},
               b=run_bin(0.1))
    net.run(1.0)
    snap = snapshots(net)
    sa = snap["a"]["qps"][0]["series"]
    assert sa["bin_s"] == pytest.approx(0.0002) and sa["coarsenings"] == 1
    assert len(sa["tx_bytes"]) <= 4096
    assert sa["tx_bytes"] == binned([(t, v.payload_len) for t, v in data_frames(net)], 0.0002)
    for s in snap.values():
        check_invariants(s)


def test_bin_zero_starts_on_a_whole_bin_of_unix_time():
    config = NicConfig("eth0", "10.0.0.1", MAC["a"], MAC["b"], 10e6)
    wall = 1_700_000_000.1234
    nic = Nic(config, None, 5.0, series_bin_s=0.01, wall_offset=wall)
    start_unix = nic.series_clock.t0 + wall
    assert 5.0 + wall - 0.01 < start_unix <= 5.0 + wall
    assert start_unix / 0.01 == pytest.approx(round(start_unix / 0.01), abs=1e-4)


def test_pause_intervals_per_priority():
    quanta = 2000                                   # 102.4 ms at 10 Mb/s
    net = pair(a={"messages": [{"qp": A, "size_bytes": 400 * 1024}]})
    net.inject("a", "eth0", raw(pfc_frame(MAC["b"], {3: quanta})), at=0.05)
    net.inject("a", "eth0", raw(pfc_frame(MAC["b"], {3: quanta, 5: 100})), at=0.3)
    net.inject("a", "eth0", raw(pfc_frame(MAC["b"], {3: 0})), at=0.32)        # XON
    net.inject("a", "eth0", raw(pfc_frame(MAC["b"], {1: 65535})), at=0.4)     # still on
    net.run(0.45)
    nic = net.agents["a"].snapshot(0.45)["nics"][0]
    spans = nic["pause_intervals"]
    assert len(spans) == 8
    assert spans[3] == [[pytest.approx(0.05), pytest.approx(0.05 + quanta * 512 / 10e6)],
                        [pytest.approx(0.3), pytest.approx(0.32)]]
    assert spans[5] == [[pytest.approx(0.3), pytest.approx(0.3 + 100 * 512 / 10e6)]]
    assert spans[1] == [[pytest.approx(0.4), pytest.approx(0.45)]]   # ends at the snapshot
    assert spans[0] == spans[2] == [] and nic["pause_intervals_dropped"] == 0
    for prio in (1, 3, 5):
        assert sum(e - s for s, e in spans[prio]) == pytest.approx(nic["paused_s"][prio])
    # the data of priority 3 did not leave during the first pause
    times = [t for t, _ in data_frames(net)]
    assert not [t for t in times if 0.0505 < t < spans[3][0][1] - 1e-6]
    check_invariants(net.agents["a"].snapshot(0.45))


def test_pause_intervals_are_capped_and_counted():
    p = PauseState(10e6, max_intervals=2)
    for k in range(3):
        p.on_frame({0: 100}, now=float(k))
        p.on_frame({0: 0}, now=k + 0.5)
    assert p.intervals == [(0, 0.0, 0.5), (0, 1.0, 1.5)] and p.intervals_dropped == 1
    assert p.total_paused_s(5.0)[0] == pytest.approx(1.5)   # the dropped one still counts
    assert p.intervals_by_priority(5.0)[0] == [(0.0, 0.5), (1.0, 1.5)]


@pytest.fixture(scope="module")
def paused_snapshot():
    net = pair(a={"messages": [{"qp": A, "size_bytes": 20_000}]})
    net.inject("a", "eth0", raw(pfc_frame(MAC["b"], {3: 500})), at=0.002)
    net.run(0.3)
    return net.agents["a"].snapshot(net.clock.now)


@pytest.mark.parametrize("edit, what", [
    (lambda s: s["qps"][0]["series"]["tx_bytes"].append(1), "series tx_bytes sum"),
    (lambda s: s["qps"][0]["series"]["cnps_rx"].append(1), "series cnps_rx sum"),
    (lambda s: s["nics"][0]["pause_intervals"][3][0].__setitem__(1, 9.0),
     "pause intervals of priority 3 <= paused_s"),
    (lambda s: s["nics"][0]["pause_intervals"][3].clear(),
     "pause intervals of priority 3 = paused_s"),
])
def test_broken_series_sums_are_named(paused_snapshot, edit, what):
    check_invariants(paused_snapshot)
    assert paused_snapshot["nics"][0]["pause_intervals"][3]
    broken = copy.deepcopy(paused_snapshot)
    edit(broken)
    with pytest.raises(InvariantError, match=what):
        check_invariants(broken)


def test_dropped_intervals_relax_the_equality(paused_snapshot):
    lost = copy.deepcopy(paused_snapshot)
    lost["nics"][0]["pause_intervals"][3].clear()
    lost["nics"][0]["pause_intervals_dropped"] = 1
    check_invariants(lost)


def test_series_bin_config():
    assert parse_config(host_config("a")).run.series_bin_ms == 10.0
    assert parse_config(host_config("a", **run_bin(2.5))).run.series_bin_ms == 2.5
    assert parse_config(host_config("a", **run_bin(0.001))).run.series_bin_ms == 0.001
    for bad in (0, -1, 0.00005, 70_000, "10", True):
        with pytest.raises(ConfigError, match=r"run\.series_bin_ms"):
            parse_config(host_config("a", **run_bin(bad)))
    assert math.isclose(parse_config(host_config("a", **run_bin(60_000))).run.series_bin_ms,
                        60_000)


def test_bins_line_up_on_the_runs_common_start():
    config = NicConfig("eth0", "10.0.0.1", MAC["a"], MAC["b"], 10e6)
    wall = 1_700_000_000.1234
    origin = wall + 5.0237                         # the run starts 23.7 ms after the NIC
    nic = Nic(config, None, 5.0, series_bin_s=0.01, wall_offset=wall,
              series_origin_unix=origin)
    assert nic.series_clock.t0 + wall == pytest.approx(origin - 0.03, abs=1e-6)
