"""The web view in a real browser: Debian's chromium driven by playwright
(marked ``browser``; skipped with one line where chromium is absent).

A short sim run played at 1 simulated second per wall second: the page
shows every switch and host, colours the saturated link as saturated,
fills its charts, comes back after its stream is cut and follows the run
to its end; a run that fails or whose process dies says the run ended;
finished runs replay side by side; a thousand GPUs load as blocks. With
``AIFABRIC_UPDATE_SCREENSHOT=1`` the page of a congested run (an incast
with ECN and PFC: a saturated link, paused NICs, CE marks) is saved as
``docs/view.png`` (the README's)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from emulator.scenario import load_scenario
from emulator.run.sim import run_sim
from emulator.view.feed import RunState, ViewFeed
from emulator.view.picture import build_picture
from emulator.view.replay import load_replays
from emulator.view.server import ViewServer
from tests.unit.view_run import FedSimRun

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"
CHROMIUM = "/usr/bin/chromium"
PANEL = "window.aifabricView.panels[0]"


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


def _wait(page: Any, condition: str, timeout_s: float = 30.0) -> None:
    page.wait_for_function(condition, timeout=timeout_s * 1000)


def _show(page: Any, t: float) -> None:
    """Move the slider to the first frame time at or after ``t``."""
    page.evaluate("""t => { const v = window.aifabricView;
        const i = v.grid.findIndex(x => x >= t - 1e-9);
        const s = document.getElementById('slider'); s.value = i;
        s.dispatchEvent(new Event('input')); }""", t)


def test_page_follows_a_sim_run(page: Any, tmp_path: Path) -> None:
    run = FedSimRun(tmp_path, "quickstart", speed=1.0)
    scenario, state, feed = run.scenario, run.state, run.feed
    picture = build_picture(scenario.topology)
    with ViewServer([state]) as server:
        run.start()
        page.goto(server.url)
        _wait(page, f"{PANEL} && {PANEL}.cy && {PANEL}.frames.length > 10")
        assert page.evaluate(f"{PANEL}.state") == "running"
        # every switch, server and GPU NIC, every link direction
        ids = set(page.evaluate(f"{PANEL}.cy.nodes().map(n => n.id())"))
        topo = scenario.topology
        assert ids == ({s.name for s in topo.switches} | {s.name for s in topo.servers}
                       | {g.name for g in topo.gpus})
        assert page.evaluate(f"{PANEL}.cy.edges().length") == 2 * len(topo.links)
        # the stream is cut mid-run: the page reconnects and carries on
        before = page.evaluate(f"{PANEL}.frames.length")
        server.close_streams()
        _wait(page, "window.aifabricView.reconnects > 0", 10)
        _wait(page, f"{PANEL}.frames.length > {before} && {PANEL}.state !== 'reconnecting'", 10)
        assert state.info["state"] == "running"  # it came back before the end
        _wait(page, f"{PANEL}.state === 'ended'", 30)
        run.join()
        # every frame once, in order, across the reconnect
        seqs = page.evaluate(f"{PANEL}.frames.map(f => f.seq)")
        assert seqs == list(range(state.next_seq))
        points = page.evaluate(
            f"Object.fromEntries(Object.entries({PANEL}.charts).map(([k, c]) => [k, c.points]))")
        for chart in ("queues", "ecn", "rate", "goodput"):
            assert points[chart] >= len(seqs), chart
        assert page.locator(".summary").inner_text().startswith("The run ended.")
        # f-rail0 at 95 % of line: its first link drawn saturated, the idle NIC idle
        _show(page, 0.05)
        busy, idle = picture.nic_edge["srv0/gpu0"], picture.nic_edge["srv0/gpu1"]
        edge = page.evaluate("""id => { const e = window.aifabricView.panels[0].cy.$id(id);
            return {util: e.data('util'), saturated: e.hasClass('saturated'),
                    colour: e.style('line-color')}; }""", busy)
        assert edge["util"] >= 0.9 and edge["saturated"]
        assert edge["colour"] == page.evaluate(f"utilColour({edge['util']})")
        assert page.evaluate(f"{PANEL}.cy.$id('{idle}').hasClass('busy')") is False
        # f-cross over the spine; a click on its spine link shows that link's series
        _show(page, 0.65)
        spine_edge = next(e for (a, _pa, b, _pb), (e, _d) in picture.link_edges.items()
                          if a == "leaf-r0-0" and b == "spine0")
        page.evaluate(f"{PANEL}.select({{edge: '{spine_edge}'}})")
        assert "utilisation of each direction" in page.locator(".detail").inner_text()
    feed.close()


CONGESTED = """\
name: incast-ecn-pfc
description: "3-to-1 incast with ECN/DCQCN and PFC on: the leaf marks CE, the senders cut their rates and are paused"
topology:
  name: incast-4
  kind: rail-optimized
  servers: 4
  gpus_per_server: 1
  servers_per_leaf: 4
  spines: 1
  host_link:   {rate: 100Mbps, delay: 5us}
  fabric_link: {rate: 100Mbps, delay: 5us}
duration: 1.2s
seed: 1
switches:
  buffer: 1MB
  ecn: {enabled: true, kmin: 5pkts, kmax: 40pkts, pmax: 0.2}
  pfc: {enabled: true, xoff: 8KB, xon: 4KB, quanta: 2000}
hosts:
  dcqcn: {enabled: true, g: 0.0625, rate_ai: 1Mbps, rate_hai: 10Mbps, min_rate: 1Mbps,
          timer: 10ms, alpha_timer: 5ms, byte_counter: 500KB, cnp_interval: 500us}
workload:
  generators:
    - {kind: incast, id: incast, senders: ["srv[0-2]/gpu0"], receiver: srv3/gpu0, size: 4MB, start: 0s}
"""


def test_screenshot_of_a_congested_run(page: Any, tmp_path: Path) -> None:
    """A 3-to-1 incast on sim with ECN/DCQCN and PFC (CONGESTED): at the
    first moment its receiver's link is saturated while the senders' NICs
    are paused, the page draws both; the charts hold queues, pauses, CE
    marks per queue, DCQCN rates and goodputs. Its picture is the README's
    (``docs/view.png``, written with ``AIFABRIC_UPDATE_SCREENSHOT=1``)."""
    (tmp_path / "congested.yaml").write_text(CONGESTED)
    scenario = load_scenario(tmp_path / "congested.yaml", target_override="sim")
    state = RunState("incast-ecn-pfc")
    feed = ViewFeed(state, max_pending=100_000, min_wall_s=0.0)
    results = run_sim(scenario, tmp_path / "run", progress=False, observer=feed)
    feed.on_end(results)
    feed.close()
    assert results["totals"]["ecn_marked"] and results["totals"]["host_paused_s"]
    picture = build_picture(scenario.topology)
    receiver = picture.nic_rx_edge["srv3/gpu0"]
    senders = [picture.nic_edge[f"srv{i}/gpu0"] for i in range(3)]
    moment = next(f["t"] for f in state.frames if f["util"].get(receiver, 0) >= 0.9
                  and sum(e in f["paused"] for e in senders) >= 2)
    with ViewServer([state]) as server:
        page.goto(server.url)
        _wait(page, f"{PANEL} && {PANEL}.cy && {PANEL}.state === 'ended'")
        _show(page, moment)
        shown = page.evaluate("""ids => ids.map(id => {
            const e = window.aifabricView.panels[0].cy.$id(id);
            return [e.hasClass('saturated'), e.hasClass('paused')]; })""", [receiver, *senders])
        assert shown[0][0], "the receiver's link is not drawn saturated"
        assert sum(paused for _sat, paused in shown[1:]) >= 2, shown
        page.evaluate(f"{PANEL}.select({{edge: '{receiver}'}})")
        for chart in ("queues", "paused", "pfcFrames", "ecnq", "ecn", "rate", "goodput"):
            assert page.evaluate(f"{PANEL}.charts.{chart}.points") > 0, chart
        shot = tmp_path / "view.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 50_000
        if os.environ.get("AIFABRIC_UPDATE_SCREENSHOT") == "1":
            shutil.copy(shot, ROOT / "docs" / "view.png")


def test_page_says_a_failed_run_ended(page: Any) -> None:
    scenario = load_scenario(QUICKSTART, target_override="sim")
    state = RunState("quickstart")
    feed = ViewFeed(state)
    with ViewServer([state]) as server:
        feed.on_start(scenario, [], target="sim")
        feed.on_sample(0.0, {})
        page.goto(server.url)
        _wait(page, f"{PANEL} && {PANEL}.state === 'running'", 10)
        feed.on_end(error="switch leaf-r0-0 stopped")
        _wait(page, f"{PANEL}.state === 'failed'", 10)
        assert "The run ended: switch leaf-r0-0 stopped" in page.locator(".summary").inner_text()
    feed.close()


def test_page_says_the_run_ended_when_its_process_dies(page: Any, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulator.cli.main", "run", str(QUICKSTART), "--target", "sim",
         "--out", str(tmp_path), "--no-progress", "--view", "0", "--view-speed", "0.3"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            found = re.search(r"view: (http://\S+/)", line)
            url = found.group(1) if found else None
        assert url, "the run never said where its view is"
        page.goto(url)
        # The first frames come after the run has built its fabric (and, on a
        # cold cache, compiled its P4 program): minutes on a loaded 2-core
        # machine, where the page's own work takes seconds.
        _wait(page, f"{PANEL} && {PANEL}.frames.length > 3", 180)
        proc.kill()
        proc.wait(10)
        _wait(page, f"{PANEL}.state === 'lost'", 30)
        assert "the run ended" in page.locator(".run .state").inner_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def test_finished_runs_side_by_side(page: Any, tmp_path: Path) -> None:
    dirs = []
    for name, override in (("one-qp", None), ("again", None)):
        run_sim(load_scenario(QUICKSTART, target_override="sim"), tmp_path / name,
                progress=False)
        dirs.append(tmp_path / name)
    with ViewServer(load_replays(dirs)) as server:
        page.goto(server.url)
        _wait(page, "window.aifabricView.panels.length === 2 && "
                    "window.aifabricView.panels.every(p => p.state === 'ended')")
        assert page.locator(".run h2").all_inner_texts()[0].startswith("one-qp")
        _show(page, 0.65)
        shown = page.evaluate("window.aifabricView.panels.map(p => p.frameAt(p.view.sliderTime()).t)")
        assert shown[0] == shown[1] == pytest.approx(0.65, abs=0.011)
        assert page.evaluate("document.getElementById('follow').checked") is False


def test_a_thousand_gpus_load_as_blocks(page: Any) -> None:
    """rail-128x8 (1,024 GPUs, 2,048 links): the page draws the blocks of
    topo draw --aggregate auto, colours a bundle by its busiest link and
    opens a block's detail; loading it takes well under a few seconds."""
    from emulator.topology import load_topology
    from emulator.view.frames import Deriver

    topology = load_topology(ROOT / "topologies" / "rail-128x8.yaml")
    picture = build_picture(topology)
    state = RunState("rail-128x8")
    state.start(picture, {"name": "rail-128x8", "target": "sim", "duration_s": 0.02,
                          "clock": "simulated", "clock_text": "simulated seconds"})
    deriver = Deriver(picture, [], 0.02)
    gpu = topology.gpus[0]
    rate_bps = picture.edge_rate_bps[picture.nic_edge[gpu.name]]
    for k in range(3):
        state.append(deriver.add(k * 0.01, {"switches": {gpu.switch: {
            "time_s": k * 0.01, "ports": [{
                "port": gpu.switch_port, "tx_bytes": 0, "rx_bytes": int(k * rate_bps * 0.01 / 8),
                "rx_packets": 0, "tx_packets": 0,
                "queues": [{"priority": 3, "received": k, "depth_bytes": 5000 * k}]}]}}}))
    state.finish({"partial": False, "checks": [], "flows": [], "totals": {}})
    with ViewServer([state]) as server:
        started = time.monotonic()
        page.goto(server.url)
        _wait(page, f"{PANEL} && {PANEL}.cy && {PANEL}.state === 'ended'", 30)
        load_s = time.monotonic() - started
        assert page.evaluate(f"{PANEL}.cy.nodes().length") == len(picture.elements["nodes"]) < 40
        assert page.evaluate(f"{PANEL}.cy.edges().length") == len(picture.elements["edges"])
        _show(page, 0.02)
        up = picture.edge_bundle[picture.nic_edge[gpu.name]]
        assert page.evaluate(f"{PANEL}.cy.$id('{up}').hasClass('saturated')") is True
        block = next(n["data"]["id"] for n in picture.elements["nodes"]
                     if gpu.switch in n["data"]["members"])
        page.evaluate(f"{PANEL}.select({{block: '{block}'}})")
        detail = page.locator(".detail").inner_text()
        assert gpu.switch in detail and "deepest queues" in detail
        assert "blocks as topo draw --aggregate" in page.locator(".about").inner_text()
        assert load_s < 10, load_s
