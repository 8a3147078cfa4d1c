"""Stats: the documented sums are checked, records are capped, the file is
written whole."""

from __future__ import annotations

import copy
import json

import pytest

from emulator.traffic.agent.stats import InvariantError, MessageLog, check_invariants, write_stats
from tests.unit.test_agent_support import QPN, pair


@pytest.fixture(scope="module")
def snapshot():
    net = pair(a={"messages": [{"qp": QPN["a"], "size_bytes": 20_000}]})
    net.run(0.5)
    return net.agents["a"].snapshot(net.clock.now)


def test_a_clean_run_satisfies_every_sum(snapshot):
    check_invariants(snapshot)
    c = snapshot["qps"][0]["counters"]
    assert c["bytes_acked"] == c["payload_bytes_first_tx"] == c["bytes_posted"] == 20_000
    assert snapshot["nics"][0]["counters"]["tx_packets"] == c["packets_sent"]
    json.dumps(snapshot, allow_nan=False)


@pytest.mark.parametrize("path, delta, what", [
    (("qps", 0, "counters", "retransmit_packets"), 1, "packets_sent = first_tx + retransmits"),
    (("qps", 0, "counters", "bytes_acked"), 1, "bytes_acked <= first tx"),
    (("qps", 0, "counters", "messages_failed"), 1, "posted = completed + failed"),
    (("qps", 0, "counters", "duplicate_packets"), 1, "data rx sum"),
    (("qps", 0, "counters", "ce_packets_rx"), 1, "CE = CNPs"),
    (("nics", 0, "counters", "tx_errors"), 1, "tx attempts"),
    (("nics", 0, "counters", "pfc_rx"), 1, "rx sum"),
])
def test_a_broken_sum_is_named(snapshot, path, delta, what):
    broken = copy.deepcopy(snapshot)
    node = broken
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] += delta
    with pytest.raises(InvariantError, match=what.replace("(", r"\(").replace("+", r"\+")):
        check_invariants(broken)


def test_message_log_caps_records_and_tells_listeners():
    log = MessageLog(max_records=2)
    heard = []
    log.listeners.append(lambda kind, rec: heard.append((kind, rec["n"])))
    for n in range(3):
        log.add_sent({"n": n})
    log.add_received({"n": 9})
    assert [r["n"] for r in log.sent] == [0, 1] and log.dropped == 1
    assert heard == [("completion", 0), ("completion", 1), ("completion", 2), ("receive", 9)]


def test_write_stats_replaces_the_file_whole(tmp_path, snapshot):
    path = tmp_path / "stats.json"
    path.write_text("old")
    write_stats(path, snapshot)
    assert json.loads(path.read_text())["agent"] == "a"
    assert [p.name for p in tmp_path.iterdir()] == ["stats.json"]
    with pytest.raises(ValueError):
        write_stats(path, {"x": float("inf")})
    assert json.loads(path.read_text())["agent"] == "a"
    assert [p.name for p in tmp_path.iterdir()] == ["stats.json"]
