"""Fed flows on the virtual clock: chunks are sized by the fabric, so how
long a run is asked to last does not change what happens in it, and where
one chunk (message) ends and the next begins does not move DCQCN, which
works per queue pair on bytes and time."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from sim_kit import run, scenario, topology


def _longer(duration: str) -> dict:  # type: ignore[type-arg]
    data = scenario("longer", topology(3, 1, rate="10Gbps", delay="1us"), {"flows": [
        {"id": "a", "src": "srv0/gpu0", "dst": "srv2/gpu0", "size": "300KB"},
        {"id": "b", "src": "srv1/gpu0", "dst": "srv2/gpu0", "size": "unlimited"},
        {"id": "c", "src": "srv2/gpu0", "dst": "srv0/gpu0", "size": "unlimited"}]},
        duration=duration, seed=3,
        switches={"buffer": "2MB", "ecn": {"kmin": "10KB", "kmax": "100KB"}})
    data["events"] = [{"at": "800us", "kind": "stop_flow", "flow": "b"}]
    return data


def _early(out: Path, until_s: float) -> dict:  # type: ignore[type-arg]
    """Per host, the message records acknowledged and received before
    ``until_s``; the DCQCN rate samples before it."""
    early: dict = {}  # type: ignore[type-arg]
    for path in sorted((out / "agents").glob("*.stats.json")):
        stats = json.loads(path.read_text())
        early[path.name] = (
            [m for m in stats["messages"]["sent"] if m["acked_at"] is not None
             and m["acked_at"] - stats["workload_start_unix"] < until_s],
            [m for m in stats["messages"]["received"]
             if m["last_at"] - stats["workload_start_unix"] < until_s])
    with open(out / "rates.csv") as fh:
        early["rates"] = [r for r in csv.DictReader(fh) if float(r["t_s"]) < until_s]
    return early


def test_a_longer_run_starts_the_same(tmp_path: Path) -> None:
    """A 3 ms and a 5 ms run of the same file: the same FCT for the sized
    flow, the same message records (every chunk of the fed flows, the one
    stopped at 800 us included) and DCQCN rates up to 2.9 ms. (Chunks were
    duration / 200 of line rate before: 15 us against 25 us here.)"""
    short = run(_longer("3ms"), tmp_path / "3ms")
    long = run(_longer("5ms"), tmp_path / "5ms")
    flows = {f["id"]: f for f in short["flows"]}
    assert flows["a"]["completed"] and flows["a"]["fct_s"] < 3e-3
    assert flows["a"]["fct_s"] == {f["id"]: f for f in long["flows"]}["a"]["fct_s"]
    a, b = _early(tmp_path / "3ms", 2.9e-3), _early(tmp_path / "5ms", 2.9e-3)
    sent = sum(len(v[0]) for k, v in a.items() if k != "rates")
    assert sent > 20 and a["rates"]  # chunks of b and c, DCQCN at work
    assert a == b


LINE_BPS = 10e9
MTU = 1024
DCQCN = {"time_scale": 1, "reference_rate_bps": LINE_BPS, "cnp_interval_us": 50,
         "alpha_timer_us": 55, "rate_timer_us": 55, "byte_counter_bytes": 1e6}


def _fed_qp(chunk_bytes: int, until_s: float) -> tuple[list[float], int, int]:
    """One QP at 10 Gb/s fed chunks of ``chunk_bytes`` (eight posted ahead,
    topped up every 5 us, as the feeder does); the receiver marks CE on
    every 29th data packet by PSN, a marking that knows nothing of
    messages. (Rc sampled every 10 us, payload bytes sent, rate cuts.)"""
    from emulator.traffic.agent.sim import mark_ce
    from emulator.traffic.roce import parse
    from tests.unit.test_agent_support import QPN, pair

    def mark(frame: bytes, src: str, _dst: str) -> bytes:
        if src.startswith("a/"):
            view = parse(frame)
            if view.opcode <= 0x10 and view.psn % 29 == 0:
                return mark_ce(frame)
        return frame

    net = pair(a={"rate_bps": LINE_BPS, "qp": {"dcqcn": DCQCN}},
               b={"rate_bps": LINE_BPS, "qp": {"dcqcn": DCQCN}}, delay_s=2e-6, hook=mark)
    qp = net.agents["a"].qps[QPN["a"]]
    rc, t = [], 0.0
    while t < until_s:
        while len(qp.msgs) < 8:
            qp.post("write", chunk_bytes, t)
        t = round(t + 5e-6, 9)
        net.run(t)
        if round(t * 1e6) % 10 == 0:
            rc.append(qp.rp.rc_bps)
    return rc, qp.counters.payload_bytes_first_tx, qp.rp.cuts


def test_dcqcn_does_not_see_where_messages_end() -> None:
    """DCQCN is per queue pair (rate, target, alpha, timers and byte
    counter know bytes and time, not messages), so the same marks give the
    same rates whatever the chunk: fed 16 KB, 256 KB or 2 MB at a time over
    4 ms, a QP is cut as often (within 2 cuts of 23) and sends the same
    bytes and mean rate within 0.5 % (what differs: a RETH on each
    message's first packet, 16 bytes per chunk)."""
    runs = {chunk: _fed_qp(chunk, 4e-3) for chunk in (16 * MTU, 256 * MTU, 2048 * MTU)}
    rc0, sent0, cuts0 = runs[256 * MTU]
    assert cuts0 > 20 and min(rc0) < LINE_BPS / 2  # DCQCN at work
    for rc, sent, cuts in runs.values():
        assert abs(cuts - cuts0) <= 2
        assert sent == pytest.approx(sent0, rel=5e-3)
        assert sum(rc) / len(rc) == pytest.approx(sum(rc0) / len(rc0), rel=5e-3)
