"""One job, two placements (root, built-in target): the rail-aligned ring
all-reduce moves nothing over the spines, the rail-unaware one moves the
whole collective over them, and ``aifabric report`` puts their completion
times and bus bandwidths side by side."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from emulator.measure.report import fmt_rate, fmt_seconds
from emulator.scenario import load_scenario
from emulator.run import run_scenario

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]


def test_rail_aligned_keeps_off_the_spines_and_the_report_compares(tmp_path):
    runs = {}
    for name in ("allreduce-rail-aligned", "allreduce-cross-rail"):
        results = run_scenario(load_scenario(REPO / "scenarios" / f"{name}.yaml"),
                               tmp_path / name, progress=False)
        assert results["errors"] == [] and results["collectives"][0]["completed"]
        runs[name] = results
    aligned, cross = runs["allreduce-rail-aligned"], runs["allreduce-cross-rail"]
    assert aligned["totals"]["spine_bytes"] == 0
    # every one of the 48 ops (6 MB) crosses a spine, headers and ACKs on top
    assert cross["totals"]["spine_bytes"] > cross["collectives"][0]["fabric_bytes"] == 6_000_000
    assert aligned["totals"]["max_spine_link_util"] == 0

    report = tmp_path / "report.md"
    proc = subprocess.run([sys.executable, "-m", "emulator.cli.main", "report",
                           str(tmp_path / "allreduce-rail-aligned"),
                           str(tmp_path / "allreduce-cross-rail"), "-o", str(report)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = report.read_text()
    section = text[text.index("## Collectives"):]
    for label, results in (("allreduce-rail-aligned", aligned), ("allreduce-cross-rail", cross)):
        c = results["collectives"][0]
        row = next(line for line in section.splitlines() if line.startswith(f"| {label} |"))
        assert fmt_seconds(c["time_s"]) in row and fmt_rate(c["busbw_bps"]) in row
    assert "utilisation of allreduce-cross-rail" in text
