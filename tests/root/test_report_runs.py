"""Two shipped scenarios run end to end (quickstart and pfc-incast, built-in
target), then ``aifabric report`` puts them side by side: every run has
links, ECMP and utilisation figures that agree with its counters, links.csv
and utilisation.png; the HTML report inlines both runs' plots and the
markdown one points at them."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.measure.results import check_invariants

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
RUNS = ("quickstart", "pfc-incast")


def _aifabric(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emulator.cli.main", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for name in RUNS:
        proc = _aifabric("run", f"scenarios/{name}.yaml", "--out", str(root / name),
                         "--no-progress")
        assert (root / name / "results.json").exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return root


def test_links_agree_with_the_counters(runs):
    for name in RUNS:
        d = runs / name
        r = json.loads((d / "results.json").read_text())
        check_invariants(r)
        links = r["links"]
        assert len(links) == r["topology"]["host_links"] + r["topology"]["fabric_links"]
        for link in links:
            assert 0 <= link["util_ab"] < 1.1 and 0 <= link["util_ba"] < 1.1, link
        # the leaf counts, at ingress, the bytes each sending NIC put on the wire
        for link in (lk for lk in links if lk["kind"] == "host"):
            server, gpu = link["a"].split("/")
            nic = r["hosts"].get(server, {}).get("nics", {}).get(
                f"{server}-eth{gpu.removeprefix('gpu')}")
            if nic and nic["tx_bytes"]:
                assert link["bytes_ab"] == pytest.approx(nic["tx_bytes"], rel=0.01), link
        # every completed flow's payload crossed its source GPU's link (plus headers)
        for flow in r["flows"]:
            up = next(lk for lk in links if lk["a"] == flow["src"])
            assert up["bytes_ab"] >= flow["bytes"]
        t = r["totals"]
        assert t["max_link_util"] == max(max(lk["util_ab"], lk["util_ba"]) for lk in links)
        assert set(r["ecmp"]) == {lk["a"] for lk in links if lk["kind"] == "fabric"}
        with open(d / "links.csv", newline="") as f:
            assert len(list(csv.DictReader(f))) == len(links)
        assert (d / "utilisation.png").stat().st_size > 10_000
    qs = json.loads((runs / "quickstart" / "results.json").read_text())
    # quickstart: one spine, so every leaf that sent up did so over its only uplink
    assert qs["totals"]["ecmp_imbalance"] == 1.0
    assert qs["totals"]["max_spine_link_util"] > 0
    incast = json.loads((runs / "pfc-incast" / "results.json").read_text())
    # pfc-incast stays on one leaf: nothing crosses the spine, the receiver's link is busiest
    assert incast["totals"]["ecmp_imbalance"] is None
    busiest = max(incast["links"], key=lambda lk: max(lk["util_ab"], lk["util_ba"]))
    assert busiest["a"] == "srv3/gpu0" and busiest["util_ba"] > 0.1


def test_report_puts_the_runs_side_by_side(runs, tmp_path):
    dirs = [str(runs / name) for name in RUNS]
    proc = _aifabric("report", *dirs, "-o", str(tmp_path / "cmp.html"))
    assert proc.returncode == 0, proc.stderr
    assert str(tmp_path / "cmp.html") in proc.stdout
    text = (tmp_path / "cmp.html").read_text()
    assert "<td>quickstart</td>" in text and ">pfc-incast</td>" in text
    assert "http" not in text
    images = re.findall(r'<img src="data:image/png;base64,', text)
    pngs = sum(len(list((runs / name).glob("*.png"))) for name in RUNS)
    assert len(images) == pngs >= 6
    assert text.index("<h3>utilisation</h3>") < text.index("<h3>queue_depth</h3>")
    proc = _aifabric("report", *dirs, "-o", str(tmp_path / "cmp.md"))
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "cmp.md").read_text()
    for link in re.findall(r"!\[[^\]]*\]\(<?([^)>]+)>?\)", md):
        assert (tmp_path / link).resolve().is_file(), link
    # a directory that is not a run: one line, exit 2, nothing written
    proc = _aifabric("report", dirs[0], str(tmp_path), "-o", str(tmp_path / "bad.html"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert not (tmp_path / "bad.html").exists()
