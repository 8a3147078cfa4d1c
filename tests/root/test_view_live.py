"""The web view of a live run (root, built-in target) in Debian's chromium:
``aifabric run SCENARIO --view 0`` on an ephemeral loopback port. The page
shows every switch and host, fills its charts on the emulated clock (named
on their axis), follows the run to its end and shows its summary; the
switches' CE marks per queue reach the page and ``/metrics`` (scraped while
the run goes on, parsed by prometheus_client's own parser). A run stopped
while its page is open (Ctrl-C) says that it ended and leaves nothing behind.

The scenario is short: two flows into one GPU on quickstart's fabric, so its
leaf port queues and marks (one of them crosses the spine)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from emulator.scenario import load_scenario

pytestmark = [pytest.mark.root, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
PANEL = "window.aifabricView.panels[0]"
SCENARIO = f"""\
name: view-live
description: two flows into one GPU, watched in the browser
topology: {ROOT / 'topologies' / 'quickstart.yaml'}
duration: 2s
time_scale: auto
seed: 1
switches:
  buffer: 512KB
  ecn: {{enabled: true, kmin: 5pkts, kmax: 40pkts, pmax: 0.2}}
workload:
  flows:
    - {{id: f-a, src: srv0/gpu0, dst: srv1/gpu0, size: 1MB, start: 0s}}
    - {{id: f-b, src: srv0/gpu1, dst: srv1/gpu0, size: 1MB, start: 0s}}
"""


def _netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.startswith("afx-")}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page(viewport={"width": 1280, "height": 1500})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    page.close()
    assert not errors, errors


def _start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    scenario = tmp_path / "view-live.yaml"
    scenario.write_text(SCENARIO)
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulator.cli.main", "run", str(scenario), "--out",
         str(tmp_path / "out"), "--no-progress", "--view", "0", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        found = re.search(r"view: (http://127\.0\.0\.1:\d+/)", line)
        if found:
            return proc, found.group(1)
    proc.kill()
    raise AssertionError("the run never said where its view is: " + proc.stdout.read()[-2000:])


def _metrics(url: str) -> dict[str, list]:
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(httpx.get(url + "metrics", timeout=10).text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def _wait(page: Any, condition: str, timeout_s: float) -> None:
    page.wait_for_function(condition, timeout=timeout_s * 1000)


def test_live_run_in_the_browser(page: Any, tmp_path: Path) -> None:
    netns_before = _netns()
    proc, url = _start(tmp_path, "--view-linger", "20")
    try:
        page.goto(url)
        _wait(page, f"{PANEL} && {PANEL}.cy && {PANEL}.state === 'running'", 120)
        topology = load_scenario(tmp_path / "view-live.yaml").topology
        ids = set(page.evaluate(f"{PANEL}.cy.nodes().map(n => n.id())"))
        assert ids == ({s.name for s in topology.switches} | {s.name for s in topology.servers}
                       | {g.name for g in topology.gpus})
        # traffic flows: a busy link on the page, and /metrics while the run goes on
        _wait(page, f"{PANEL}.frames.some(f => Object.keys(f.util || {{}}).length)", 120)
        during = _metrics(url)
        assert during["aifabric_run_ended"][0].value == 0
        assert during["aifabric_run_info"][0].labels["clock"] == "emulated"
        assert sum(s.value for s in during["aifabric_port_received_bytes_total"]) > 0
        _wait(page, f"{PANEL}.state === 'ended'", 240)
        # the charts filled, on the emulated clock named on their x axis
        points = page.evaluate(
            f"Object.fromEntries(Object.entries({PANEL}.charts).map(([k, c]) => [k, c.points]))")
        for chart in ("queues", "rate", "goodput", "ecnq"):
            assert points[chart] > 0, chart
        axis = page.evaluate(f"{PANEL}.info.clock_text")
        assert axis.startswith("emulated seconds")
        labels = page.evaluate(f"Object.values({PANEL}.charts).filter(c => c.plot)"
                               ".map(c => c.plot.axes[0].label)")
        assert labels and set(labels) == {axis}
        # followed to the end: the slider at the last frame, the summary shown
        assert page.evaluate("document.getElementById('follow').checked") is True
        last_t = page.evaluate(f"{PANEL}.frames[{PANEL}.frames.length - 1].t")
        assert page.evaluate("window.aifabricView.sliderTime()") == last_t
        assert page.locator(".summary").inner_text().startswith("The run ended.")
        # the switch marked CE on the shared queue, per queue, as the results say
        after = _metrics(url)
        assert after["aifabric_run_ended"][0].value == 1
        # the live run's fidelity: the machine's CPU use, its switches' lateness
        assert 0 < after["aifabric_fidelity_cpu_busy_ratio"][0].value <= 1
        assert after["aifabric_fidelity_lateness_p99_seconds"][0].value >= 0
        marks = {(s.labels["switch"], s.labels["port"], s.labels["priority"]): s.value
                 for s in after["aifabric_queue_ecn_marked_packets_total"] if s.value}
        assert marks, "no CE marks per queue on /metrics"
        proc.send_signal(signal.SIGINT)  # the linger: done looking
        proc.wait(60)
        import json
        results = json.loads((tmp_path / "out" / "results.json").read_text())
        per_queue = {(sw, port, prio): q["ecn_marked"]
                     for sw, ports in results["switches"].items()
                     for port, prios in ports.items() if port.isdigit()
                     for prio, q in prios.items() if q.get("ecn_marked")}
        assert marks == per_queue
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
    assert not (_netns() - netns_before), "namespaces left behind"


def test_live_run_stopped_while_watched(page: Any, tmp_path: Path) -> None:
    netns_before = _netns()
    proc, url = _start(tmp_path, "--view-linger", "0")
    try:
        page.goto(url)
        _wait(page, f"{PANEL} && {PANEL}.frames.length > 3", 120)
        proc.send_signal(signal.SIGINT)
        _wait(page, f"{PANEL}.state === 'ended'", 120)
        summary = page.locator(".summary").inner_text()
        assert summary.startswith("The run ended (partial results).")
        assert "interrupted (Ctrl-C)" in summary
        proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert not (_netns() - netns_before), "namespaces left behind"
