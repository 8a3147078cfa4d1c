"""p4src/fabric.p4 packet by packet through the executor: routing and ECMP,
TTL and checksum, the ECN marking curve, PFC frame format and XOFF/XON
hysteresis, counters."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from emulator.p4.exec.pipeline import CloneSession, QueueInfo, V1ModelPipeline
from emulator.p4.frontend import compile_file

FABRIC = Path(__file__).resolve().parents[3] / "p4src" / "fabric.p4"
PORT_MAC = {1: 0x020100000001, 2: 0x020100000002, 3: 0x020100000003}
ROCE_DSCP = 26
XOFF, XON, QUANTA = 3000, 1500, 0xFFFF


@pytest.fixture(scope="module")
def program():
    return compile_file(FABRIC)


class StepClock:
    """1 µs per reading: timing in these tests does not depend on the machine."""

    def __init__(self):
        self.now_us = 0.0

    def __call__(self):
        self.now_us += 1.0
        return self.now_us


def _pipeline(program, seed=1):
    return _pipeline_tables(V1ModelPipeline(program, seed=seed, clock_us=StepClock()))


def _pipeline_tables(pipe):
    """``pipe`` with this file's tables, clone session and thresholds."""
    classify = pipe.table("FabricIngress.classify")
    full3, full8 = 0x3F, 0xFF
    classify.insert(classify.make_entry(
        "FabricIngress.set_priority", [3],
        classify.canonical_key([(ROCE_DSCP, full3), (0, 0), (0, 0), (0, 0), (0, 0)]), priority=10))
    classify.insert(classify.make_entry(
        "FabricIngress.set_priority", [6],
        classify.canonical_key([(0, 0), (0, 0), (0, 0), (1, 1), (0x81, full8)]), priority=20))
    routes = pipe.table("FabricIngress.routes")
    profile = routes.profile
    for member, port in ((1, 1), (2, 2), (3, 3)):
        profile.add_member(member, routes.make_member(
            "FabricIngress.set_nexthop", [port, PORT_MAC[port], 0x0200000000A0 + port]))
    profile.set_group(10, [2, 3])
    routes.insert(routes.make_indirect_entry(routes.canonical_key([(0x0A000100, 24)]), group=10))
    routes.insert(routes.make_indirect_entry(routes.canonical_key([(0x0A000002, 32)]), member=1))
    port_mac = pipe.table("FabricEgress.port_mac")
    for port, mac in PORT_MAC.items():
        port_mac.insert(port_mac.make_entry("FabricEgress.set_port_mac", [mac],
                                            port_mac.canonical_key([port])))
    ecn = pipe.table("FabricEgress.ecn_config")
    ecn.insert(ecn.make_entry("FabricEgress.set_ecn", [5, 25, int(0.5 * 65536 / 20)],
                              ecn.canonical_key([2, 3])))
    pfc_in = pipe.table("FabricIngress.pfc_ingress")
    pfc_in.insert(pfc_in.make_entry("FabricIngress.set_lossless", [XOFF, QUANTA, 1000],
                                    pfc_in.canonical_key([1, 3])))
    pfc_out = pipe.table("FabricEgress.pfc_egress")
    pfc_out.insert(pfc_out.make_entry("FabricEgress.set_resume", [XON, 1000],
                                      pfc_out.canonical_key([1, 3])))
    pipe.set_clone_session(1000 + 1, CloneSession([(1, 0)]))
    return pipe


def roce(dst="10.0.1.7", sport=0xC000, ecn=2, dscp=ROCE_DSCP, size=500, ttl=64):
    return bytes(Ether(src="02:00:0a:00:00:02", dst="02:01:00:00:00:01")
                 / IP(src="10.0.0.2", dst=dst, tos=(dscp << 2) | ecn, ttl=ttl)
                 / UDP(sport=sport, dport=4791) / (b"\x0a" + b"\x00" * 11 + b"r" * size))


def test_routes_spread_flows_over_all_ecmp_members(program):
    pipe = _pipeline(program)
    ports = {}
    for sport in range(0xC000, 0xC000 + 64):
        out = pipe.process(1, roce(sport=sport)).outputs
        assert len(out) == 1
        ports[out[0].port] = ports.get(out[0].port, 0) + 1
        pkt = Ether(out[0].data)
        assert pkt.src == "02:01:00:00:00:%02x" % out[0].port
        assert pkt[IP].ttl == 63
        fresh = pkt[IP].copy()
        del fresh.chksum
        assert IP(bytes(fresh)).chksum == pkt[IP].chksum
    assert set(ports) == {2, 3} and min(ports.values()) >= 16
    # The same flow always takes the same member.
    again = {pipe.process(1, roce(sport=0xC005)).outputs[0].port for _ in range(5)}
    assert len(again) == 1


def test_ttl_expiry_and_unknown_routes_are_dropped_and_counted(program):
    pipe = _pipeline(program)
    assert pipe.process(1, roce(ttl=1)).dropped == 1
    assert pipe.process(1, roce(dst="192.168.0.1")).dropped == 1
    drops = pipe.counters["FabricIngress.drop_counter"]
    assert drops.packets[1 * 8 + 3] == 2


def _egress_with_depth(pipe, frame, depth):
    queued = pipe.ingress(1, frame).queued
    assert len(queued) == 1
    return pipe.egress(queued[0], QueueInfo(enq_qdepth=depth)).outputs


@pytest.mark.parametrize("depth,expected", [(0, 0.0), (5, 0.0), (15, 0.25), (25, 1.0), (60, 1.0)])
def test_ecn_marking_curve(program, depth, expected):
    pipe = _pipeline(program, seed=7)
    marked = 0
    n = 400
    for i in range(n):
        out = _egress_with_depth(pipe, roce(dst="10.0.1.9", sport=0xC001), depth)
        port = out[0].port
        marked += Ether(out[0].data)[IP].tos & 3 == 3
    assert abs(marked / n - expected) <= 0.07, (depth, marked)
    assert pipe.counters["FabricEgress.ecn_counter"].packets[port * 8 + 3] == marked


def test_ecn_leaves_non_ect_packets_alone(program):
    pipe = _pipeline(program)
    out = _egress_with_depth(pipe, roce(ecn=0), 100)
    assert Ether(out[0].data)[IP].tos & 3 == 0


def _pfc_times(frame: bytes) -> tuple[int, list[int]]:
    pkt = Ether(frame)
    assert pkt.dst == "01:80:c2:00:00:01" and pkt.type == 0x8808
    assert len(frame) == 60
    pfc = pkt[MACControlClassBasedFlowControl]
    enabled = sum(getattr(pfc, f"c{i}_enabled") << i for i in range(8))
    return enabled, [getattr(pfc, f"c{i}_pause_time") for i in range(8)]


def test_pfc_xoff_once_then_xon_after_drain(program):
    pipe = _pipeline(program)
    frame = roce(dst="10.0.0.2", size=900)   # to port 1's member; ingress port 1 is lossless
    held = []
    pauses = []
    for _ in range(6):
        queued = pipe.ingress(1, frame).queued
        held.extend(q for q in queued if q.pkt.sm.instance_type == 0)
        pauses.extend(q for q in queued if q.pkt.sm.instance_type == 1)
    # ~970 bytes each: the third packet crosses 3000 bytes; XOFF goes out once.
    assert len(pauses) == 1
    out = pipe.egress(pauses[0]).outputs
    assert [o.port for o in out] == [1]
    enabled, times = _pfc_times(out[0].data)
    assert enabled == 1 << 3 and times[3] == QUANTA and times.count(0) == 7
    assert Ether(out[0].data).src == "02:01:00:00:00:01"
    # Drain: the XON (zero quanta) comes when at most XON bytes are left.
    resumes = []
    for i, item in enumerate(held):
        res = pipe.egress(item)
        for clone in res.queued:
            resumes.append((i, pipe.egress(clone).outputs))
    assert len(resumes) == 1
    index, outputs = resumes[0]
    assert index == len(held) - 2   # 970 bytes (<= 1500) remain after the 5th packet leaves
    enabled, times = _pfc_times(outputs[0].data)
    assert enabled == 1 << 3 and times[3] == 0
    assert pipe.counters["FabricEgress.pfc_tx_counter"].packets[1 * 8 + 3] == 2


def test_pfc_refresh_before_the_pause_runs_out(program):
    pipe = _pipeline(program)
    frame = roce(dst="10.0.0.2", size=900)
    held = [q for _ in range(6) for q in pipe.ingress(1, frame).queued if q.pkt.sm.instance_type == 0]
    pipe._clock_us.now_us += 5000   # later than the 1000 us refresh period
    clones = pipe.egress(held[0]).queued
    assert len(clones) == 1
    _enabled, times = _pfc_times(pipe.egress(clones[0]).outputs[0].data)
    assert times[3] == QUANTA


def test_pfc_refresh_on_arrival_while_nothing_leaves(program):
    # The bytes wait in a queue that is itself paused (a PFC storm further
    # down): nothing leaves, so egress never refreshes. A packet that still
    # arrives above XOFF a refresh period (1000 us) after the XOFF means the
    # upstream's pause ran out: ingress sends the XOFF again, once per period.
    pipe = _pipeline(program)
    frame = roce(dst="10.0.0.2", size=900)

    def pauses() -> list:
        return [q for q in pipe.ingress(1, frame).queued if q.pkt.sm.instance_type == 1]

    assert len([p for _ in range(6) for p in pauses()]) == 1
    pipe._clock_us.now_us += 500     # still in flight when the XOFF went: no new one
    assert not pauses()
    pipe._clock_us.now_us += 600
    again = pauses()
    assert len(again) == 1 and not pauses()
    _enabled, times = _pfc_times(pipe.egress(again[0]).outputs[0].data)
    assert times[3] == QUANTA


def test_cnps_take_the_higher_priority(program):
    pipe = _pipeline(program)
    cnp = bytes(Ether() / IP(src="10.0.0.2", dst="10.0.1.3", tos=(48 << 2))
                / UDP(sport=0xC000, dport=4791) / (b"\x81" + b"\x00" * 11 + b"\x00" * 16))
    queued = pipe.ingress(1, cnp).queued
    assert queued[0].priority == 6
    assert pipe.ingress(1, roce()).queued[0].priority == 3


def test_counters_count_every_packet(program):
    pipe = _pipeline(program)
    for sport in range(20):
        pipe.process(1, roce(sport=0xC000 + sport, dst="10.0.1.4"))
    rx = pipe.counters["FabricIngress.rx_counter"]
    tx = pipe.counters["FabricEgress.tx_counter"]
    assert rx.packets[1 * 8 + 3] == 20
    assert tx.packets[2 * 8 + 3] + tx.packets[3 * 8 + 3] == 20
    assert rx.bytes[1 * 8 + 3] == 20 * len(roce())


def test_pipelines_sharing_generated_code_keep_their_own_state(program):
    """Two switches of one program given one ``types_cache`` share the
    generated classes and code, not their tables, counters or registers: each
    forwards and counts as a pipeline of its own does."""
    cache: dict = {}
    a = V1ModelPipeline(program, seed=1, clock_us=StepClock(), types_cache=cache)
    b = V1ModelPipeline(program, seed=1, clock_us=StepClock(), types_cache=cache)
    alone = _pipeline(program)
    assert a._Frame is b._Frame and a._f_ingress.__code__ is b._f_ingress.__code__
    assert a._f_ingress.__globals__ is not b._f_ingress.__globals__
    a_full = _pipeline_tables(a)
    frame = roce(sport=0xC005)
    assert b.process(1, frame).dropped == 1  # b has no routes
    got, want = a_full.process(1, frame).outputs, alone.process(1, frame).outputs
    assert [(o.port, o.data) for o in got] == [(o.port, o.data) for o in want]
    rx = lambda p: p.counters["FabricIngress.rx_counter"].packets[1 * 8 + 3]  # noqa: E731
    assert (rx(a_full), rx(alone)) == (1, 1)
    # b has no classify entries either: priority 0
    assert b.counters["FabricIngress.drop_counter"].packets[1 * 8 + 0] == 1
    assert a_full.counters["FabricIngress.drop_counter"].packets[1 * 8 + 3] == 0
