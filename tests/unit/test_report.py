"""``aifabric report`` on synthetic run directories: the comparison table,
collectives, data-centre units, plots side by side, HTML that needs nothing
outside itself, markdown with relative paths, and one-line errors that leave
nothing written."""

from __future__ import annotations

import base64
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imsave

from emulator.cli.main import main
from emulator.measure.report import (
    ReportError,
    comparison_rows,
    dc_key,
    fmt_bytes,
    fmt_rate,
    fmt_seconds,
    load_runs,
    write_report,
)


def totals(**kw):
    base = {"flows": 3, "flows_completed": 3, "flows_incomplete": 0, "drops": 0,
            "ecn_marked": 1766, "cnp_sent": 66, "pfc_tx": 0, "paused_s": 0.0,
            "retransmits": 0, "spine_bytes": 2_655_952, "max_fct_s": 0.9888,
            "ecmp_imbalance": 1.0, "max_link_util": 0.084726, "max_spine_link_util": 0.04246}
    return {**base, **kw}


def make_run(parent: Path, name: str, *, plots=("utilisation", "queue_depth", "flow_rates"),
             results=None, scenario=None, **total_kw) -> Path:
    d = parent / name
    d.mkdir(parents=True)
    r = {"scenario": "quickstart", "target": "builtin", "duration_s": 3.0, "partial": False,
         "topology": {"gpus": 4, "leaves": 2, "spines": 1},
         "flows": [{"id": "a", "goodput_bps": 40e6}, {"id": "b", "goodput_bps": 12.5e6}],
         "totals": totals(**total_kw),
         "checks": [{"metric": "totals.drops", "op": "==", "value": 0, "passed": True,
                     "found": 0}]}
    r.update(results or {})
    (d / "results.json").write_text(json.dumps(r))
    s = {"name": "quickstart", "description": "two WRITEs", "expect": "all complete",
         "topology": {"name": "quickstart"}, "time_scale": 1}
    s.update(scenario or {})
    (d / "scenario.json").write_text(json.dumps(s))
    for i, kind in enumerate(plots):
        imsave(d / f"{kind}.png", np.full((4, 6), i, dtype=float))
    return d


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs, self.links, self.h3 = [], [], []
        self._in_h3 = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a["src"])
        if tag in ("link", "script") or (tag == "a" and "href" in a):
            self.links.append((tag, a))
        self._in_h3 = tag == "h3"

    def handle_data(self, data):
        if self._in_h3:
            self.h3.append(data)
            self._in_h3 = False


def test_comparison_rows(tmp_path):
    a = make_run(tmp_path, "run-a")
    b = make_run(tmp_path, "run-b", flows_completed=2, flows_incomplete=1, drops=2104,
                 max_fct_s=None, ecmp_imbalance=None,
                 results={"partial": True, "checks": [
                     {"metric": "totals.drops", "op": "==", "value": 0, "passed": False,
                      "found": 2104},
                     {"metric": "totals.flows", "op": ">", "value": 1, "passed": True,
                      "found": 3}]})
    rows = dict(comparison_rows(load_runs([a, b])))
    assert rows["scenario"] == ["quickstart", "quickstart"]
    assert rows["description"] == ["two WRITEs"] * 2 and rows["expect"] == ["all complete"] * 2
    assert rows["topology"][0] == "quickstart (4 GPUs, 2 leaves, 1 spine)"
    assert rows["duration"] == ["3 s", "3 s"] and rows["partial"] == ["no", "yes"]
    assert rows["flows completed"] == ["3 / 3", "2 / 3"]
    assert rows["max FCT"] == ["988.8 ms", "—"]
    assert rows["total goodput (Σ flows)"] == ["52.5 Mb/s"] * 2
    assert rows["drops"] == ["0", "2,104"] and rows["ECN marked"][0] == "1,766"
    assert rows["spine bytes"][0] == "2.66 MB"
    assert rows["ECMP imbalance (max/mean)"] == ["1.00", "—"]
    assert rows["busiest link"][0] == "8.5 %" and rows["busiest fabric link"][0] == "4.2 %"
    assert rows["checks"] == ["1 passed, 0 failed",
                              "1 passed, 1 failed\nFAIL totals.drops == 0 (found 2104)"]
    assert "time scale" not in rows


def test_formatters():
    assert fmt_seconds(2.5) == "2.5 s" and fmt_seconds(0.0004) == "400 µs"
    assert fmt_seconds(0) == "0 s" and fmt_seconds(None) == "—"
    assert fmt_rate(25e9) == "25 Gb/s" and fmt_rate(12_345_678) == "12.3 Mb/s"
    assert fmt_bytes(512) == "512 B" and fmt_bytes(19_042_272) == "19 MB"
    assert dc_key("time_s") == "time_dc_s" and dc_key("algbw_bps") == "algbw_dc_bps"
    assert dc_key("time_dc_s") is None and dc_key("ranks") is None


def test_html_is_self_contained_with_plots_side_by_side(tmp_path):
    a = make_run(tmp_path, "run-a")
    b = make_run(tmp_path, "run-b", plots=("queue_depth", "pauses"), drops=5)
    out, runs = write_report([a, b], tmp_path / "r.html")
    assert out == tmp_path / "r.html" and [r.label for r in runs] == ["run-a", "run-b"]
    text = out.read_text()
    page = _Collect()
    page.feed(text)
    # nothing fetched from anywhere: every image is inline, no stylesheet, script or link
    assert page.links == [] and "http" not in text
    assert all(src.startswith("data:image/png;base64,") for src in page.imgs)
    assert len(page.imgs) == 5  # run-a: 3 plots, run-b: 2
    inlined = base64.b64decode(page.imgs[0].split(",", 1)[1])
    assert inlined == (a / "utilisation.png").read_bytes()
    # kinds in order, known first; a run without a kind says so
    assert page.h3 == ["utilisation", "queue_depth", "flow_rates", "pauses"]
    assert text.count("no utilisation.png") == 1 and text.count("no pauses.png") == 1
    # the drops cell differs from the first run's and is highlighted
    assert re.search(r'<tr><th>drops</th>\s*<td>0</td>\s*<td class="diff">5</td>', text)
    assert "<h2>Collectives</h2>" not in text


def test_collectives_and_data_centre_units(tmp_path):
    coll = [{"id": "ar", "kind": "all-reduce", "ranks": 8, "size_bytes": 4_000_000,
             "time_s": 0.5, "algbw_bps": 64e6, "busbw_bps": 112e6, "time_dc_s": 0.005,
             "algbw_dc_bps": 6.4e9, "busbw_dc_bps": 11.2e9},
            {"id": "a2a", "kind": "all-to-all", "ranks": 4, "size_bytes": 1_000_000,
             "time_s": None, "algbw_bps": None, "busbw_bps": None}]
    a = make_run(tmp_path, "scaled", results={"collectives": coll, "time_scale": 100,
                                              "duration_dc_s": 0.03},
                 max_fct_dc_s=0.009888)
    b = make_run(tmp_path, "plain")
    out, runs = write_report([a, b], tmp_path / "r.md")
    md = out.read_text()
    assert "| scaled | ar | all-reduce | 8 | 4 MB | 500 ms (DC 5 ms) | 64 Mb/s (DC 6.4 Gb/s) " \
           "| 112 Mb/s (DC 11.2 Gb/s) |" in md
    assert "| scaled | a2a | all-to-all | 4 | 1 MB | — | — | — |" in md
    rows = dict(comparison_rows(runs))
    assert rows["time scale"] == ["100", "1"]
    assert rows["max FCT"] == ["988.8 ms (DC 9.888 ms)", "988.8 ms"]
    assert rows["duration"] == ["3 s (DC 30 ms)", "3 s"]


def test_markdown_references_the_pngs_relative_to_the_report(tmp_path):
    runs_dir = tmp_path / "runs"
    a = make_run(runs_dir, "run a")  # a space: the link needs <...>
    b = make_run(runs_dir, "run-b")
    (tmp_path / "reports").mkdir()
    out, _ = write_report([a, b], tmp_path / "reports" / "cmp.md")
    md = out.read_text()
    links = re.findall(r"!\[[^\]]*\]\(<?([^)>]+)>?\)", md)
    assert len(links) == 6 and "<../runs/run a/utilisation.png>" in md
    assert all((out.parent / link).resolve().is_file() for link in links)
    assert "data:image" not in md and "| **drops** | 0 | 0 |" in md


def test_labels_fall_back_to_paths_when_names_repeat(tmp_path):
    a = make_run(tmp_path / "x", "qs")
    b = make_run(tmp_path / "y", "qs")
    assert [r.label for r in load_runs([a, b])] == [str(a), str(b)]


def test_cli_default_output_is_report_html_here(tmp_path, monkeypatch, capsys):
    a = make_run(tmp_path, "run-a")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["report", str(a)]) == 0
    assert (work / "report.html").is_file()
    assert str((work / "report.html").resolve()) in capsys.readouterr().out
    assert main(["report", str(a), "--format", "md"]) == 0
    assert (work / "report.md").is_file()


@pytest.mark.parametrize("case, message", [
    ("no-results", "no results.json, not a run directory"),
    ("bad-json", "results.json: not valid JSON: Expecting value (line 1, column 1)"),
    ("not-results", "results.json: not the results of aifabric run (no 'totals')"),
    ("missing-dir", "no such directory"),
    ("no-out-dir", "does not exist; create it first"),
    ("out-is-dir", "is a directory; give a file name"),
])
def test_errors_are_one_line_and_write_nothing(tmp_path, monkeypatch, capsys, case, message):
    good = make_run(tmp_path, "good")
    out = tmp_path / "out"
    out.mkdir()
    (out / "r.html").write_text("the previous report")
    target, dirs = out / "r.html", [good]
    if case == "no-results":
        (tmp_path / "empty").mkdir()
        dirs = [good, tmp_path / "empty"]
    elif case == "bad-json":
        (good / "results.json").write_text("not json")
    elif case == "not-results":
        (good / "results.json").write_text('{"flows": []}')
    elif case == "missing-dir":
        dirs = [good, tmp_path / "nowhere"]
    elif case == "no-out-dir":
        target = tmp_path / "nope" / "r.html"
    elif case == "out-is-dir":
        target = out
    monkeypatch.chdir(tmp_path)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    code = main(["report", *map(str, dirs), "-o", str(target)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("aifabric: ") and message in err
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before
    assert (out / "r.html").read_text() == "the previous report"
    with pytest.raises(ReportError):
        write_report(dirs, target)


def test_report_file_is_readable_by_others(tmp_path):
    out, _ = write_report([make_run(tmp_path, "a")], tmp_path / "r.html")
    assert os.stat(out).st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
