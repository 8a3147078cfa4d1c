"""The agent's work graph on a virtual clock: messages wait for the data
they depend on, keep FIFO order per QP, and record when they were ready."""

from __future__ import annotations

import pytest

from emulator.traffic.agent.config import ConfigError, parse_config
from tests.unit.test_agent_support import QPN, RATE_BPS, host_config, pair

A, B = QPN["a"], QPN["b"]
SIZE = 10_000
WIRE_S = 50e-6


def ping_pong(rounds: int, delay_s: float = 0.0):
    """a sends, b answers once it has a's message, a answers that, ..."""
    a_msgs, b_msgs = [], []
    for n in range(rounds):
        a_msgs.append({"qp": A, "size_bytes": SIZE, "tag": f"a{n}",
                       **({"after_rx": [[A, n]]} if n else {})})
        b_msgs.append({"qp": B, "size_bytes": SIZE, "tag": f"b{n}", "after_rx": [[B, n + 1]],
                       "delay_s": delay_s})
    return pair(a={"messages": a_msgs}, b={"messages": b_msgs}, delay_s=WIRE_S)


def test_each_message_waits_for_the_one_it_depends_on():
    net = ping_pong(3)
    net.run(1.0)
    a, b = net.agents["a"], net.agents["b"]
    received = {name: [r["last_at"] for r in agent.log.received]
                for name, agent in (("a", a), ("b", b))}
    assert len(received["a"]) == 3 and len(received["b"]) == 3
    ra, rb = a.graph.records(), b.graph.records()
    # b's n-th reply is ready exactly when a's n-th message has fully arrived
    for n in range(3):
        assert rb[n]["ready_at"] == pytest.approx(received["b"][n])
        assert rb[n]["posted_at"] >= rb[n]["ready_at"]
    for n in range(1, 3):
        assert ra[n]["ready_at"] == pytest.approx(received["a"][n - 1])
    # strictly alternating: nothing of round n+1 leaves before round n arrived
    one_message_s = SIZE * 8 / RATE_BPS
    assert received["a"][2] > 5 * one_message_s
    assert a.graph.pending() == b.graph.pending() == 0


def test_delay_is_compute_time_after_ready():
    net = ping_pong(1, delay_s=0.02)
    net.run(1.0)
    rec = net.agents["b"].graph.records()[0]
    assert rec["posted_at"] - rec["ready_at"] == pytest.approx(0.02)


def test_a_qp_posts_its_graph_messages_in_order():
    # the second message has no dependency but must not overtake the first,
    # which waits for data that comes at 0.1 s
    net = pair(a={"messages": [{"qp": A, "size_bytes": 100, "tag": "late", "at_s": 0.1},
                               {"qp": A, "size_bytes": 100, "tag": "free"}]})
    net.run(0.5)
    late, free = net.agents["a"].graph.records()
    assert free["ready_at"] == pytest.approx(0.0)
    assert free["posted_at"] == pytest.approx(late["posted_at"]) == pytest.approx(0.1)
    assert late["id"] < free["id"]


def test_unmet_dependencies_leave_messages_pending():
    net = pair(a={"messages": [{"qp": A, "size_bytes": 100, "after_rx": [[A, 1]]}]})
    net.run(0.2)
    graph = net.agents["a"].graph
    assert graph.pending() == 1 and graph.records()[0]["posted_at"] is None
    assert net.agents["a"].status(0.2)["graph_pending"] == 1


@pytest.mark.parametrize("message, error", [
    ({"after_rx": [[999, 1]]}, "no queue pair 999"),
    ({"after_rx": [[A]]}, "must be [qpn, count]"),
    ({"after_rx": [[A, 0]]}, "after_rx[0][1]"),
    ({"tag": "x", "count": 3}, "posted once"),
])
def test_bad_graph_messages_are_refused(message, error):
    with pytest.raises(ConfigError) as exc:
        parse_config(host_config("a", messages=[{"qp": A, "size_bytes": 1, **message}]))
    assert error in str(exc.value)


def test_compute_entries_chain_and_gate_what_waits_for_them():
    # b: compute 5 ms once a's message is in, then 3 ms more (after the first), then
    # answer; a plain message listed before them is not in the graph
    net = pair(a={"messages": [{"qp": A, "size_bytes": SIZE, "tag": "x"}]},
               b={"messages": [{"qp": B, "size_bytes": 100, "at_s": 0.5},
                               {"op": "compute", "tag": "c0", "after_rx": [[B, 1]],
                                "delay_s": 0.005},
                               {"op": "compute", "tag": "c1", "after": [1], "delay_s": 0.003},
                               {"qp": B, "size_bytes": SIZE, "tag": "y", "after": [2]}]})
    net.run(1.0)
    arrived = net.agents["b"].log.received[0]["last_at"]
    c0, c1, y = net.agents["b"].graph.records()
    assert c0["ready_at"] == pytest.approx(arrived)
    assert c0["posted_at"] == pytest.approx(arrived + 0.005)
    assert c1["ready_at"] == pytest.approx(c0["posted_at"])
    assert c1["posted_at"] == pytest.approx(arrived + 0.008)
    assert y["ready_at"] == pytest.approx(c1["posted_at"]) and y["id"] is not None
    assert c0["id"] is None and net.agents["b"].graph.pending() == 0


def test_a_message_waits_for_the_last_of_its_local_and_remote_dependencies():
    # compute of 1 ms from the start, and a's message (arrives after ~50 us + wire):
    # the answer leaves at the later of the two
    net = pair(a={"messages": [{"qp": A, "size_bytes": SIZE, "tag": "x", "at_s": 0.01}]},
               b={"messages": [{"op": "compute", "tag": "c", "delay_s": 0.001},
                               {"qp": B, "size_bytes": 100, "tag": "y", "after": [0],
                                "after_rx": [[B, 1]]}]})
    net.run(0.5)
    arrived = net.agents["b"].log.received[0]["last_at"]
    assert arrived > 0.01
    assert net.agents["b"].graph.records()[1]["ready_at"] == pytest.approx(arrived)


@pytest.mark.parametrize("messages, error", [
    ([{"op": "compute", "qp": A, "delay_s": 1}], "no qp and no size_bytes"),
    ([{"op": "compute", "delay_s": 1, "after": [0]}], "waits for no earlier one"),
    ([{"qp": A, "size_bytes": 1}, {"op": "compute", "after": [0]}], "not in the work graph"),
    ([{"op": "compute", "delay_s": 1}, {"op": "compute", "after": [1]}], "after[0]"),
])
def test_bad_compute_entries_are_refused(messages, error):
    with pytest.raises(ConfigError) as exc:
        parse_config(host_config("a", messages=messages))
    assert error in str(exc.value)
