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
