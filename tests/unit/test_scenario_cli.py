"""``aifabric scenario check``: the summary and the normalised JSON."""

from __future__ import annotations

import json
from pathlib import Path

from emulator.cli.main import main

DATA = Path(__file__).resolve().parent / "data" / "scenarios"


def test_check_prints_a_summary(capsys):
    assert main(["scenario", "check", str(DATA / "full.yaml")]) == 0
    out = capsys.readouterr().out
    for text in (
        "scenario incast-ecn", ": ok", "target builtin, duration 10s, seed 1",
        "topology rail-4x4 (rail-optimized", "4 servers, 16 GPUs, 6 switches, 16 host links, "
        "8 fabric links",
        "buffer 256KB per port and priority", "kmin 20KB (19 pkts), kmax 80KB (74 pkts)",
        "PFC on priorities [3]: xoff 40KB, xon 20KB", "override leaf-r0-0:3: buffer 64KB",
        "MTU 1024B (frames of 1082B), DCQCN on",
        "flows: 16 (2 written, 14 from 4 generators), 16,584,576 bytes in total (16.6 MB) "
        "+ 1 unlimited flow",
        "incast incast: 3 flows from 1s", "pairs g3: 1 flow from 4s",
        "events: 3", "2s link_down leaf-r0-0 - spine0", "5s stop_flow bg",
        "capture: 6 points, at most 10000 packets each: leaf-r0-0:1, spine0:1",
        "2 checks", "totals.pfc_tx > 0",
    ):
        assert text in out, text


def test_check_json_is_the_normalised_scenario_with_every_flow(capsys):
    assert main(["scenario", "check", str(DATA / "inline-fat-tree.yaml"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "inline-fat-tree" and data["target"] == "bmv2"
    assert data["topology"]["file"] is None and data["topology"]["k"] == 4
    assert data["duration_ns"] == 500_000_000
    assert len(data["flows"]) == 12 + 16
    assert data["flows"][0]["id"] == "a2a-0" and data["flows"][-1]["id"] == "perm-15"
    assert data["switches"]["pfc"]["xoff"] == {"pkts": 12}
    assert data["capture"]["points"][0] == "srv0/gpu0"


def test_check_target_override(capsys):
    assert main(["scenario", "check", str(DATA / "inline-fat-tree.yaml"), "--json",
                 "--target", "builtin"]) == 0
    assert json.loads(capsys.readouterr().out)["target"] == "builtin"


def test_check_minimal(capsys):
    assert main(["scenario", "check", str(DATA / "minimal.yaml")]) == 0
    out = capsys.readouterr().out
    assert "capture: nothing" in out and "expect: (not stated); 0 checks" in out
