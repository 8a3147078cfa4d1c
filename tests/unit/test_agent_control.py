"""The real-time event loop and the control channel, on fake NICs: one agent
whose two NICs are wired to each other, driven by :class:`EventLoop` in a
thread, commanded over the unix socket."""

from __future__ import annotations

import json
import threading
import time

import pytest

from emulator.traffic.agent.agent import Agent
from emulator.traffic.agent.backends import FakeNic
from emulator.traffic.agent.config import parse_config
from emulator.traffic.agent.control import AgentClient, ControlError, ControlServer
from emulator.traffic.agent.loop import EventLoop
from emulator.traffic.agent.stats import check_invariants, write_stats

RATE = 100e6


def looped_config(rate_bps: float = RATE, **top) -> dict:
    nics = [{"name": "eth0", "ip": "10.0.0.1", "mac": "02:00:00:00:00:01",
             "gateway_mac": "02:00:00:00:00:02", "line_rate_bps": rate_bps},
            {"name": "eth1", "ip": "10.0.0.2", "mac": "02:00:00:00:00:02",
             "gateway_mac": "02:00:00:00:00:01", "line_rate_bps": rate_bps}]
    qps = [{"qpn": 1, "nic": "eth0", "remote_ip": "10.0.0.2", "remote_qpn": 2},
           {"qpn": 2, "nic": "eth1", "remote_ip": "10.0.0.1", "remote_qpn": 1}]
    return {"name": "loop", "nics": nics, "qps": qps, **top}


class Running:
    """An agent on two cross-wired fake NICs, its loop in a thread."""

    def __init__(self, raw: dict, sock_path: str) -> None:
        self.config = parse_config(raw)
        self.fakes = {n: FakeNic(n, time.monotonic, keep_sent=False, with_fd=True)
                      for n in ("eth0", "eth1")}
        self.fakes["eth0"].on_send = self.fakes["eth1"].inject
        self.fakes["eth1"].on_send = self.fakes["eth0"].inject
        self.agent = Agent(self.config, self.fakes, time.monotonic(),
                           wall_offset=time.time() - time.monotonic())
        self.loop = EventLoop(self.agent, [self.fakes["eth0"], self.fakes["eth1"]])
        self.server = ControlServer(self.agent, self.loop, sock_path)
        self.reason: str | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.reason = self.loop.run()

    def join(self) -> None:
        self.loop.stop("test")
        self.thread.join(5)
        assert not self.thread.is_alive()
        self.server.close()
        self.loop.close()


@pytest.fixture
def running(tmp_path):
    started: list[Running] = []

    def start(**top) -> Running:
        r = Running(looped_config(**top), str(tmp_path / "ctl.sock"))
        started.append(r)
        return r
    yield start
    for r in started:
        if r.thread.is_alive():
            r.join()


def wait_for(predicate, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_post_status_completions_stats_stop(running, tmp_path):
    r = running()
    with AgentClient.wait(str(tmp_path / "ctl.sock")) as client:
        assert client.ping()["agent"] == "loop"
        ids = [client.post(1, 200_000), client.post(2, 5000, verb="send")]
        assert ids == [0, 0]
        wait_for(lambda: client.status()["qps"]["1"]["completed"] == 1
                 and client.status()["qps"]["2"]["completed"] == 1)
        status = client.status()
        assert status["qps"]["2"]["received"] == 1 and status["qps"]["1"]["outstanding"] == 0
        assert status["qps"]["1"]["bytes_acked"] == 200_000
        records, nxt = client.completions()
        assert nxt == 2 and {(x["qpn"], x["size"], x["status"]) for x in records} == \
            {(1, 200_000, "ok"), (2, 5000, "ok")}
        big = next(x for x in records if x["qpn"] == 1)
        # 196 frames of ≤1098 B at 100 Mb/s: about 17 ms of line time
        assert 0.016 < big["fct_s"] < 1.0
        assert abs(big["first_tx_at"] - time.time()) < 10
        assert client.completions(since=2) == ([], 2)
        stats = client.stats()
        check_invariants(stats)
        assert stats["qps"][0]["counters"]["bytes_acked"] == 200_000
        with pytest.raises(ControlError, match="no queue pair 9"):
            client.post(9, 10)
        with pytest.raises(ControlError, match="unknown op"):
            client.request("fly")
        client.stop()
    r.thread.join(5)
    assert r.reason == "control" and r.agent.stop_reason == "control"
    r.server.close()
    r.loop.close()


def test_deferred_post_and_bad_lines(running, tmp_path):
    running()
    with AgentClient.wait(str(tmp_path / "ctl.sock")) as client:
        at = client.ping()["now_unix"] + 0.2
        assert client.post(1, 1000, at_unix=at) is None
        time.sleep(0.05)
        assert client.status()["qps"]["1"]["completed"] == 0
        wait_for(lambda: client.status()["qps"]["1"]["completed"] == 1)
        records, _ = client.completions()
        assert records[0]["posted_at"] == pytest.approx(at, abs=0.02)
        client._sock.sendall(b"not json\n[1]\n")
        for _ in range(2):
            while b"\n" not in client._buf:
                client._buf += client._sock.recv(4096)
            line, client._buf = client._buf.split(b"\n", 1)
            answer = json.loads(line)
            assert not answer["ok"] and "bad request" in answer["error"]
        assert client.ping()["agent"] == "loop"      # still serving


def test_workload_and_duration_from_the_config(running, tmp_path):
    r = running(workload={"messages": [{"qp": 1, "size_bytes": 3000, "count": 5,
                                        "interval_s": 0.01}]},
                run={"duration_s": 0.3})
    r.thread.join(5)
    assert r.reason == "duration"
    snap = r.agent.snapshot(time.monotonic())
    assert snap["stop_reason"] == "duration"
    sent = snap["messages"]["sent"]
    assert [x["status"] for x in sent] == ["ok"] * 5
    starts = [x["posted_at"] for x in sent]
    assert all(0.009 < b - a < 0.03 for a, b in zip(starts, starts[1:]))
    check_invariants(snap)
    path = tmp_path / "stats.json"
    write_stats(path, snap)
    assert json.loads(path.read_text())["qps"][1]["counters"]["messages_rx"] == 5
    r.server.close()
    r.loop.close()


def test_line_rate_holds_in_real_time(running, tmp_path):
    # 20 Mb/s for 0.24 s of data, paced by the event loop on the real clock.
    # The loop shares this process (and its GIL) with the test, so only
    # "never above the line, not far below" is asserted here; the root test
    # measures the rate of an agent process to 5 %.
    raw_rate = 20e6
    running(rate_bps=raw_rate)
    with AgentClient.wait(str(tmp_path / "ctl.sock")) as client:
        client.post(1, 600_000)
        time.sleep(0.3)
        wait_for(lambda: client.status()["qps"]["1"]["completed"] == 1)
        rec = client.completions()[0][0]
        wire = client.stats()["qps"][0]["counters"]["bytes_sent"]
    rate = wire * 8 / rec["fct_s"]
    # The FCT window starts at the first packet's send, so it misses one
    # packet time, and a descheduled loop catches up by up to max_lag_us:
    # on a loaded machine the figure can read a few per cent high.
    assert 0.8 * raw_rate < rate < 1.05 * raw_rate
