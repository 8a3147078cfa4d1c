"""Queue pairs on a virtual clock: segmentation, PSNs, ACK/NAK, go-back-N,
timeouts, and the counters' sums."""

from __future__ import annotations

import random

import pytest

from emulator.traffic.agent.stats import check_invariants
from emulator.traffic.layers import opcodes as op
from emulator.traffic.layers.aeth import KIND_ACK, KIND_NAK, syndrome_kind
from emulator.traffic.roce import parse
from tests.unit.test_agent_support import QPN, data_frames, pair, write_frame

A, B = QPN["a"], QPN["b"]


def msg(size: int, **kw) -> dict:
    return {"qp": A, "size_bytes": size, **kw}


def acks(net, host: str = "b") -> list:
    return [(t, v) for t, v in ((t, parse(f)) for t, f in net.fakes[(host, "eth0")].sent)
            if v.opcode == op.RC_ACKNOWLEDGE]


def counters(net, host: str) -> dict:
    return net.agents[host].qps[QPN[host]].counters.to_dict()


def check_all(net) -> None:
    for agent in net.agents.values():
        check_invariants(agent.snapshot(net.clock.now))


def drop_data(predicate):
    """A wire hook dropping a→b data packets for which predicate(view, n) is
    true (n counts a's data packets from 0)."""
    state = {"n": 0}

    def hook(frame, src, _dst):
        view = parse(frame)
        if src.startswith("a/") and view.opcode <= 0x10:
            n = state["n"]
            state["n"] += 1
            if predicate(view, n):
                return None
        return frame
    return hook


# -- segmentation -------------------------------------------------------------------

def test_write_is_cut_into_first_middle_last_with_reth_on_first():
    net = pair(a={"messages": [msg(2500)]})
    net.run(0.05)
    frames = [v for _, v in data_frames(net)]
    assert [v.opcode for v in frames] == [op.RC_RDMA_WRITE_FIRST, op.RC_RDMA_WRITE_MIDDLE,
                                          op.RC_RDMA_WRITE_LAST]
    assert [v.payload_len for v in frames] == [1024, 1024, 452]
    assert [v.psn for v in frames] == [0, 1, 2]
    assert frames[0].reth.dma_len == 2500 and frames[1].reth is None
    assert [v.ack_req for v in frames] == [False, False, True]
    assert all(v.dest_qp == B and v.icrc_ok for v in frames)
    rx = net.agents["b"].log.received
    assert [(r["op"], r["size"]) for r in rx] == [("write", 2500)]
    assert net.agents["a"].log.sent[0]["status"] == "ok"


def test_send_is_cut_without_reth_and_small_messages_are_one_packet():
    net = pair(a={"messages": [msg(3000, op="send"), msg(10, op="send"), msg(0), msg(1024),
                               msg(2048)]})
    net.run(0.1)
    got = [(v.opcode, v.payload_len) for _, v in data_frames(net)]
    assert got == [(op.RC_SEND_FIRST, 1024), (op.RC_SEND_MIDDLE, 1024), (op.RC_SEND_LAST, 952),
                   (op.RC_SEND_ONLY, 10),
                   (op.RC_RDMA_WRITE_ONLY, 0),
                   (op.RC_RDMA_WRITE_ONLY, 1024),
                   (op.RC_RDMA_WRITE_FIRST, 1024), (op.RC_RDMA_WRITE_LAST, 1024)]
    assert all(v.reth is None for _, v in data_frames(net)[:4])
    assert [r["size"] for r in net.agents["b"].log.received] == [3000, 10, 0, 1024, 2048]
    assert counters(net, "a")["messages_completed"] == 5
    check_all(net)


def test_path_mtu_is_configurable():
    net = pair(a={"messages": [msg(1000)], "qp": {"transport": {"path_mtu_bytes": 256}}})
    net.run(0.05)
    assert [v.payload_len for _, v in data_frames(net)] == [256, 256, 256, 232]


def test_psns_wrap_at_24_bits():
    start = 0xFFFFF0
    net = pair(a={"messages": [msg(40 * 1024)], "qp": {"start_psn": start}},
               b={"qp": {"remote_start_psn": start}})
    net.run(0.1)
    psns = [v.psn for _, v in data_frames(net)]
    assert psns == [(start + i) & 0xFFFFFF for i in range(40)]
    assert psns[15] == 0xFFFFFF and psns[16] == 0
    a, b = counters(net, "a"), counters(net, "b")
    assert a["messages_completed"] == 1 and a["retransmit_packets"] == 0
    assert b["accepted_packets"] == 40 and b["naks_sent"] == 0
    assert net.agents["b"].qps[B].epsn == (start + 40) & 0xFFFFFF


# -- acknowledgements ---------------------------------------------------------------

def test_ack_requested_every_n_packets_and_on_each_last():
    net = pair(a={"messages": [msg(100 * 1024), msg(3 * 1024)],
                  "qp": {"transport": {"ack_req_every": 16}}})
    net.run(0.2)
    frames = [v for _, v in data_frames(net)]
    asked = [v.psn for v in frames if v.ack_req]
    assert asked == [15, 31, 47, 63, 79, 95, 99, 102]
    assert [v.psn for _, v in acks(net)] == asked
    assert [v.aeth.msn for _, v in acks(net)] == [0, 0, 0, 0, 0, 0, 1, 2]
    assert counters(net, "a")["acks_rx"] == 8


def test_responder_can_ack_every_n_packets_by_itself():
    net = pair(a={"messages": [msg(30 * 1024)], "qp": {"transport": {"ack_req_every": 1000}}},
               b={"qp": {"transport": {"ack_every": 10}}})
    net.run(0.1)
    assert [v.psn for _, v in acks(net)] == [9, 19, 29]


def test_completion_times_give_the_flow_completion_time():
    net = pair(a={"messages": [msg(10 * 1024, at_s=0.01), msg(1024, at_s=0.01)]},
               delay_s=1e-3)
    net.run(0.2)
    first, second = net.agents["a"].log.sent
    assert first["posted_at"] == pytest.approx(0.01) and first["first_tx_at"] == pytest.approx(0.01)
    # the last of 10 frames of 1082 B (+16 B RETH on the first) leaves after
    # 9 frame times at 10 Mb/s, then 1 ms there and 1 ms back
    last_leaves = 0.01 + (9 * (1024 + 58) + 16) * 8 / 10e6
    assert first["acked_at"] == pytest.approx(last_leaves + 2e-3, abs=1e-9)
    assert first["fct_s"] == pytest.approx(first["acked_at"] - first["first_tx_at"])
    assert second["first_tx_at"] > first["first_tx_at"] and second["acked_at"] > first["acked_at"]


# -- loss and recovery ----------------------------------------------------------------

def test_a_lost_packet_makes_one_nak_and_go_back_n():
    net = pair(a={"messages": [msg(40 * 1024)]}, hook=drop_data(lambda v, n: n == 9),
               delay_s=1e-3)
    net.run(0.5)
    b_sent = [v for _, v in acks(net)]
    naks = [v for v in b_sent if syndrome_kind(v.aeth.syndrome) == KIND_NAK]
    assert len(naks) == 1 and naks[0].psn == 9
    psns = [v.psn for _, v in data_frames(net)]
    restart = psns.index(9, 10)             # the second 9: go back to the NAK's PSN
    assert psns[restart:] == list(range(9, 40))
    a, b = counters(net, "a"), counters(net, "b")
    assert a["naks_seq_rx"] == 1 and a["go_back_n"] == 1 and a["timeouts"] == 0
    assert a["retransmit_packets"] == restart - 9
    assert a["packets_sent"] == a["first_tx_packets"] + a["retransmit_packets"] == len(psns)
    assert b["out_of_order_packets"] == restart - 10 and b["naks_sent"] == 1
    assert b["accepted_packets"] == 40 and b["messages_rx"] == 1
    assert net.agents["b"].log.received[0]["size"] == 40 * 1024
    assert net.agents["a"].log.sent[0]["status"] == "ok"
    check_all(net)


def test_a_lost_last_packet_is_sent_again_after_the_timeout():
    net = pair(a={"messages": [msg(1024)], "qp": {"transport": {"timeout_ms": 50}}},
               hook=drop_data(lambda v, n: n == 0))
    net.run(0.5)
    times = [t for t, _ in data_frames(net)]
    assert times == [0.0, pytest.approx(0.05)]
    a = counters(net, "a")
    assert a["timeouts"] == 1 and a["retransmit_packets"] == 1 and a["messages_completed"] == 1
    check_all(net)


def test_a_lost_ack_is_answered_by_a_duplicate_and_a_new_ack():
    state = {"dropped": 0}

    def drop_first_ack(frame, src, _dst):
        if src.startswith("b/") and not state["dropped"]:
            state["dropped"] = 1
            return None
        return frame

    net = pair(a={"messages": [msg(2048)], "qp": {"transport": {"timeout_ms": 50}}},
               hook=drop_first_ack)
    net.run(0.5)
    a, b = counters(net, "a"), counters(net, "b")
    assert a["timeouts"] == 1 and a["retransmit_packets"] == 2
    assert b["duplicate_packets"] == 2 and b["accepted_packets"] == 2 and b["messages_rx"] == 1
    assert b["acks_sent"] == 2 and a["messages_completed"] == 1
    assert [r["size"] for r in net.agents["b"].log.received] == [2048]


def test_timeouts_back_off_and_the_qp_fails_after_its_retries():
    net = pair(a={"messages": [msg(1024), msg(5)],
                  "qp": {"transport": {"timeout_ms": 10, "retry_count": 3}}},
               hook=drop_data(lambda v, n: True))
    net.run(1.0)
    firsts = [t for t, v in data_frames(net) if v.psn == 0]
    assert firsts == [0.0, pytest.approx(0.01), pytest.approx(0.03), pytest.approx(0.07)]
    a = counters(net, "a")
    assert a["timeouts"] == 3 and a["retry_exceeded"] == 1
    assert a["messages_failed"] == 2 and a["messages_completed"] == 0
    qp = net.agents["a"].qps[A]
    assert qp.error and not qp.has_tx()
    assert [r["status"] for r in net.agents["a"].log.sent] == ["error", "error"]
    assert net.agents["a"].log.sent[0]["acked_at"] is None
    check_all(net)


def test_rtt_samples_set_the_timeout():
    net = pair(a={"messages": [msg(20 * 1024)],
                  "qp": {"transport": {"timeout_ms": 500, "min_timeout_ms": 1,
                                       "rtt_timeout_factor": 4, "ack_req_every": 4}}},
               delay_s=2e-3)
    net.run(0.5)
    qp = net.agents["a"].qps[A]
    # one sample at a time: AckReq packets 3, 11 and 19 (7 left while 3 was out)
    assert qp.counters.rtt_samples == 3
    assert qp.srtt == pytest.approx(4e-3, rel=0.01)
    assert qp.rto_s == pytest.approx(4 * qp.srtt)


# -- the responder, packet by packet --------------------------------------------------

def test_responder_naks_once_per_gap_and_accepts_the_missing_packet():
    net = pair()
    for psn in (0, 2, 3, 4, 1, 2, 4, 3):
        net.inject("b", "eth0", write_frame(psn, ack_req=True))
    net.run(0.01)
    sent = [v for _, v in acks(net)]
    kinds = [(syndrome_kind(v.aeth.syndrome), v.psn) for v in sent]
    assert kinds == [(KIND_ACK, 0), (KIND_NAK, 1), (KIND_ACK, 1), (KIND_ACK, 2), (KIND_NAK, 3),
                     (KIND_ACK, 3)]
    b = counters(net, "b")
    assert b["accepted_packets"] == 4 and b["out_of_order_packets"] == 4
    assert b["naks_sent"] == 2 and b["messages_rx"] == 4


def test_duplicates_asking_for_an_ack_get_the_latest_one():
    net = pair()
    for psn in (0, 1, 0, 1):
        net.inject("b", "eth0", write_frame(psn, ack_req=True))
    net.run(0.01)
    assert [v.psn for _, v in acks(net)] == [0, 1, 1, 1]
    assert counters(net, "b")["duplicate_packets"] == 2


def test_a_middle_without_a_first_is_an_opcode_error():
    net = pair()
    net.inject("b", "eth0", write_frame(0, opcode=op.RC_RDMA_WRITE_MIDDLE))
    net.inject("b", "eth0", write_frame(0, opcode=op.RC_RDMA_WRITE_FIRST))
    net.inject("b", "eth0", write_frame(1, opcode=op.RC_SEND_LAST))
    net.inject("b", "eth0", write_frame(1, opcode=op.RC_RDMA_WRITE_LAST, ack_req=True))
    net.run(0.01)
    b = counters(net, "b")
    assert b["opcode_errors"] == 2 and b["accepted_packets"] == 2 and b["messages_rx"] == 1
    check_all(net)


def test_stale_and_foreign_acks_change_nothing():
    net = pair(a={"messages": [msg(4 * 1024)]}, delay_s=5e-3)
    flow = net.agents["b"].qps[B].ack_flow
    net.inject("a", "eth0", flow.ack(A, 1000, 0))         # ahead of anything sent
    net.inject("a", "eth0", flow.ack(A + 1, 0, 0))        # no such QP
    net.run(0.1)
    a = counters(net, "a")
    assert a["stale_acks_rx"] == 1 and a["messages_completed"] == 1
    assert net.agents["a"].nics[0].counters.unknown_qp_rx == 1


def test_window_limits_packets_in_flight():
    net = pair(a={"messages": [msg(20 * 1024)],
                  "qp": {"transport": {"max_outstanding_packets": 4, "ack_req_every": 2}}},
               delay_s=5e-3)
    net.run(0.003)
    assert len(data_frames(net)) == 4
    net.run(1.0)
    assert counters(net, "a")["messages_completed"] == 1


def test_many_random_losses_still_deliver_every_byte_once():
    rng = random.Random(7)
    net = pair(a={"messages": [msg(64 * 1024), msg(7777, op="send"), msg(30_000)],
                  "qp": {"transport": {"timeout_ms": 20, "min_timeout_ms": 5}}},
               hook=drop_data(lambda v, n: rng.random() < 0.05), delay_s=1e-3)
    net.run(5.0)
    a, b = counters(net, "a"), counters(net, "b")
    assert a["messages_completed"] == 3 and a["retransmit_packets"] > 0
    assert [r["size"] for r in net.agents["b"].log.received] == [64 * 1024, 7777, 30_000]
    assert b["payload_bytes_rx"] == a["bytes_acked"] == a["bytes_posted"]
    check_all(net)


# -- timeouts: PFC pauses and queueing delay --------------------------------------------

def test_the_timeout_does_not_run_while_the_nic_is_paused():
    from scapy.compat import raw

    from emulator.traffic.layers.pfc import pfc_frame
    from tests.unit.test_agent_support import MAC, RATE_BPS

    # 10 ms timeout, data dropped; a's priority 3 is paused for 30 ms from 1 ms on
    quanta = round(0.03 * RATE_BPS / 512)
    net = pair(a={"messages": [msg(1024)],
                  "qp": {"transport": {"timeout_ms": 10, "retry_count": 3}}},
               hook=drop_data(lambda v, n: True))
    net.inject("a", "eth0", raw(pfc_frame(MAC["b"], {3: quanta})), at=1e-3)
    net.run(0.2)
    firsts = [t for t, v in data_frames(net) if v.psn == 0]
    paused = quanta * 512 / RATE_BPS
    assert firsts[:2] == [0.0, pytest.approx(0.01 + paused, abs=1e-6)]
    assert counters(net, "a")["timeouts"] >= 1


def test_a_pause_refreshed_past_the_timeout_holds_it_off():
    from scapy.compat import raw

    from emulator.traffic.layers.pfc import pfc_frame
    from tests.unit.test_agent_support import MAC, RATE_BPS

    quanta = round(0.005 * RATE_BPS / 512)   # 5 ms pauses, refreshed every 4 ms for 60 ms
    net = pair(a={"messages": [msg(1024)],
                  "qp": {"transport": {"timeout_ms": 10, "retry_count": 1}}},
               hook=drop_data(lambda v, n: True))
    for k in range(15):
        net.inject("a", "eth0", raw(pfc_frame(MAC["b"], {3: quanta})), at=1e-3 + k * 4e-3)
    net.run(0.05)
    assert counters(net, "a")["timeouts"] == 0
    net.run(0.5)
    assert counters(net, "a")["timeouts"] == 1 and counters(net, "a")["retry_exceeded"] == 1


def test_rtt_estimate_follows_queueing_delay_rfc6298():
    net = pair(a={"qp": {"transport": {"min_timeout_ms": 1, "rtt_timeout_factor": 2}}})
    qp = net.agents["a"].qps[A]
    qp._rtt_sample(2e-3)
    assert (qp.srtt, qp.rttvar) == (pytest.approx(2e-3), pytest.approx(1e-3))
    assert qp._base_rto() == pytest.approx(2e-3 + 4e-3)     # SRTT + 4 RTTVAR > 2 × SRTT
    for _ in range(40):   # the queue grows: RTT now 30 ms, steadily
        qp._rtt_sample(30e-3)
    assert qp.srtt == pytest.approx(30e-3, rel=0.01)
    assert qp._base_rto() == pytest.approx(60e-3, rel=0.02)  # factor × SRTT once it is steady
    qp._rtt_sample(90e-3)                                      # a jump: the variance widens it
    assert qp._base_rto() > 90e-3

