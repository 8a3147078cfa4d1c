"""``aifabric up --check`` end to end: Mininet, built-in switches running
fabric.p4, programmed over P4Runtime, every GPU pair pinged."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from emulator.cli.main import main

REPO = Path(__file__).resolve().parents[2]


def _leftovers() -> list[str]:
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    ours = [line.split()[0] for line in netns.splitlines() if line.startswith("afx-")]
    # Switch processes of a FabricNetwork name their ports afx<run>s<i>p<n>.
    procs = subprocess.run(["pgrep", "-f", "aifabric-switch.*@afx"], capture_output=True,
                           text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    veths = [line.split(":")[1].strip() for line in links.splitlines()
             if line.split(":")[1].strip().startswith("afx")]
    return ours + procs.split() + veths


@pytest.mark.root
@pytest.mark.parametrize("name,pairs,hops", [
    ("quickstart", 8, {"1": 4, "3": 4}),
    ("rail-4x4", 192, {"1": 48, "3": 144}),
])
def test_up_check_reaches_every_pair(name, pairs, hops, capsys):
    assert _leftovers() == []
    code = main(["up", str(REPO / "topologies" / f"{name}.yaml"), "--check", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0
    assert summary["pairs"] == pairs and summary["reachable"] == pairs
    assert summary["loss_pct"] == 0.0
    assert summary["switch_hops"] == hops
    assert _leftovers() == []
