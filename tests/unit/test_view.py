"""The web view without a browser: the picture, frames of a sim run fed
live and rebuilt from its CSVs, /metrics (parsed by prometheus_client's own
parser, names against a golden list), the event stream against a real
server on an ephemeral loopback port, and the CLI's one-line errors."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from emulator.scenario import load_scenario
from emulator.run.sim import run_sim
from emulator.topology import load_topology
from emulator.topology.layout import layout_topology
from emulator.view.errors import ViewError
from emulator.view.feed import RunState, ViewFeed
from emulator.view.metrics import METRIC_NAMES
from emulator.view.picture import PX_PER_IN, build_picture
from emulator.view.replay import load_replay, load_replays
from emulator.view.server import ViewServer, parse_address
from emulator.view.sources import sim_sampler
from tests.unit.view_run import FedSimRun

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"

GOLDEN_METRICS = (
    "aifabric_fidelity_cpu_busy_ratio",
    "aifabric_fidelity_faithful",
    "aifabric_fidelity_lateness_p99_seconds",
    "aifabric_flow_cnps_sent_total",
    "aifabric_flow_dcqcn_rate_bytes_per_second",
    "aifabric_flow_delivered_bytes_total",
    "aifabric_flow_ecn_marked_packets_total",
    "aifabric_flow_goodput_bytes_per_second",
    "aifabric_nic_paused",
    "aifabric_nic_pfc_paused_seconds_total",
    "aifabric_nic_pfc_received_frames_total",
    "aifabric_pfc_paused_seconds_total",
    "aifabric_pfc_received_frames_total",
    "aifabric_pfc_transmitted_frames_total",
    "aifabric_port_dropped_packets_total",
    "aifabric_port_info",
    "aifabric_port_received_bytes_total",
    "aifabric_port_received_packets_total",
    "aifabric_port_speed_bytes",
    "aifabric_port_transmitted_bytes_total",
    "aifabric_port_transmitted_packets_total",
    "aifabric_queue_depth_bytes",
    "aifabric_queue_depth_packets",
    "aifabric_queue_ecn_marked_packets_total",
    "aifabric_queue_max_depth_bytes",
    "aifabric_queue_paused",
    "aifabric_queue_tail_dropped_packets_total",
    "aifabric_run_duration_seconds",
    "aifabric_run_ended",
    "aifabric_run_info",
    "aifabric_run_progress_ratio",
    "aifabric_run_time_scale",
    "aifabric_run_time_seconds",
    "aifabric_view_dropped_samples_total",
)


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict], dict]:
    """quickstart on the sim with a feed: the run's folder, the frames fed live, results."""
    out = tmp_path_factory.mktemp("qs-view")
    state = RunState("qs")
    feed = ViewFeed(state, max_pending=100_000, min_wall_s=0.0)  # every bin
    scenario = load_scenario(QUICKSTART, target_override="sim")
    results = run_sim(scenario, out, progress=False, observer=feed)
    feed.on_end(results)
    feed.close()
    assert state.ended is not None and feed.dropped == 0
    return out, state.frames, results


def _edge(picture, gpu: str, up: bool) -> str:
    return (picture.nic_edge if up else picture.nic_rx_edge)[gpu]


def test_picture_places_everything_where_topo_draw_does() -> None:
    topo = load_topology(ROOT / "topologies" / "rail-4x4.yaml")
    pic = build_picture(topo)
    place = layout_topology(topo)
    nodes = {n["data"]["id"]: n for n in pic.elements["nodes"]}
    assert set(nodes) == ({s.name for s in topo.switches} | {s.name for s in topo.servers}
                          | {g.name for g in topo.gpus})
    for name, box in place.switches.items():
        assert nodes[name]["position"]["x"] == pytest.approx(box.x * PX_PER_IN, abs=0.1)
        assert nodes[name]["position"]["y"] == pytest.approx(
            (place.height_in - box.y) * PX_PER_IN, abs=0.1)
    edges = [e["data"] for e in pic.elements["edges"]]
    assert len(edges) == 2 * len(topo.links)
    # every direction of every link is counted at exactly one switch port
    assert set(pic.edge_counter) == {e["id"] for e in edges}
    # a leaf's host port sends on the link's down direction
    gpu = topo.gpus[0]
    assert pic.egress_edge[(gpu.switch, gpu.switch_port)] == pic.nic_rx_edge[gpu.name]


def test_sim_feed_frames_show_the_flows(sim_run) -> None:
    out, frames, results = sim_run
    pic = build_picture(load_topology(ROOT / "topologies" / "quickstart.yaml"))
    bin_s = results["sim"]["series_bin_s"]
    # one frame per series bin, from 0 to the duration
    assert len(frames) == round(results["duration_s"] / bin_s) + 1
    assert [f["seq"] for f in frames] == list(range(len(frames)))
    assert frames[-1]["prog"]["t"] == pytest.approx(results["duration_s"])
    # f-rail0 (srv0/gpu0 -> srv1/gpu0, 0..0.127 s) fills its links at about 95 % of line
    mid = [f for f in frames if 0.02 <= f["t"] <= 0.1]
    for f in mid:
        assert f["util"][_edge(pic, "srv0/gpu0", True)] == pytest.approx(0.97, abs=0.04)
        assert f["util"][_edge(pic, "srv1/gpu0", False)] == pytest.approx(0.97, abs=0.04)
        assert f["fl"]["f-rail0"][1] == pytest.approx(94.5e6, rel=0.03)  # goodput
        assert f["fl"]["f-rail0"][0] == 100e6                              # DCQCN rate
        assert "f-cross" not in f["fl"] or f["fl"]["f-cross"][1] == 0
    # nothing moves between the flows
    idle = [f for f in frames if 0.2 <= f["t"] <= 0.55]
    assert idle and all(not f["util"] for f in idle)
    # what the frames delivered adds up to what the run says it delivered
    # (the first frame is each flow's baseline: no goodput, and no time)
    assert frames[0]["dt"] == 0 and all(g is None for _r, g in frames[0]["fl"].values())
    delivered = sum((f["fl"].get("f-rail0", [0, 0])[1] or 0) * f["dt"] / 8 for f in frames)
    assert delivered == pytest.approx(1_500_000, rel=1e-6)
    assert frames[-1]["prog"]["acked"] == results["totals"]["bytes"]


def test_view_does_not_change_a_sim_run(sim_run, tmp_path: Path) -> None:
    out, _frames, with_view = sim_run
    without = run_sim(load_scenario(QUICKSTART, target_override="sim"), tmp_path,
                      progress=False)
    varying = {"timings", "sim"}
    assert {k: v for k, v in with_view.items() if k not in varying} == \
        {k: v for k, v in without.items() if k not in varying}
    assert with_view["sim"]["hops"] == without["sim"]["hops"]
    for name in ("queues.csv", "series.csv", "rates.csv", "pauses.csv", "ports.csv"):
        assert (out / name).read_text() == (tmp_path / name).read_text(), name


def test_replay_rebuilds_the_run_from_its_csvs(sim_run, tmp_path: Path) -> None:
    out, live, results = sim_run
    state = load_replay(out)
    frames = state.frames
    assert state.ended is not None and state.info["state"] == "ended"
    assert len(frames) == round(results["duration_s"] / results["sim"]["series_bin_s"])
    pic = state.picture
    by_t = {round(f["t"], 6): f for f in frames}
    # host links and goodput agree with the live feed (see test_view_replay: exactly)
    for f in live:
        if 0.02 <= f["t"] <= 0.1:
            r = by_t[round(f["t"], 6)]
            assert r["fl"]["f-rail0"][1] == pytest.approx(f["fl"]["f-rail0"][1], rel=0.02)
            edge = _edge(pic, "srv0/gpu0", True)
            assert r["util"][edge] == pytest.approx(f["util"][edge], rel=0.08)
    assert frames[-1]["prog"]["acked"] == pytest.approx(results["totals"]["bytes"], rel=1e-6)
    # a run from before the counter CSVs: fabric links carry the run's average (links.csv)
    old = tmp_path / "old-run"
    shutil.copytree(out, old)
    for name in ("port_bytes.csv", "pfc_frames.csv", "ecn_marks.csv"):
        (old / name).unlink()
    state = load_replay(old)
    assert state.info["fabric_util"] == "run average"
    spine = next(row for row in results["links"] if row["kind"] == "fabric" and row["util_ab"])
    up, _down = pic.link_edges[(spine["a"], spine["a_port"], spine["b"], spine["b_port"])]
    assert state.frames[0]["util"][up] == pytest.approx(spine["util_ab"], abs=1e-4)


def _metrics(text: str) -> dict[str, list]:
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def test_metrics_parse_and_follow_the_conventions(sim_run, tmp_path: Path) -> None:
    out, _frames, results = sim_run
    state = load_replay(out)
    with ViewServer([state]) as server:
        text = httpx.get(server.url + "metrics").text
    samples = _metrics(text)
    # no fidelity on the sim clock, no NIC paused in quickstart (test_view_replay has them)
    assert tuple(sorted(set(samples) | {"aifabric_fidelity_cpu_busy_ratio",
                                          "aifabric_fidelity_faithful",
                                          "aifabric_fidelity_lateness_p99_seconds",
                                          "aifabric_nic_paused",
                                          "aifabric_nic_pfc_paused_seconds_total",
                                          "aifabric_nic_pfc_received_frames_total"})) \
        == GOLDEN_METRICS == METRIC_NAMES
    for name, rows in samples.items():
        assert name.startswith("aifabric_")
        for row in rows:
            assert "run" not in row.labels  # one run: no run label
            assert "network" not in row.labels  # one network: no network label
            if "priority" in row.labels:
                assert {"switch", "port"} <= set(row.labels)
    # counters are the run's: a port's bytes are the sum over its priorities
    tx = {(s.labels["switch"], s.labels["port"]): s.value
          for s in samples["aifabric_port_transmitted_bytes_total"]}
    for switch, ports in results["switches"].items():
        for port, prios in ports.items():
            if port.isdigit():
                assert tx[(switch, port)] == sum(q["tx_bytes"] for q in prios.values())
    delivered = {s.labels["flow"]: s.value for s in samples["aifabric_flow_delivered_bytes_total"]}
    assert delivered == {f["id"]: f["bytes"] for f in results["flows"]}
    assert samples["aifabric_run_progress_ratio"][0].value == 1.0
    # two runs: every sample names its run
    other = tmp_path / "again"
    run_sim(load_scenario(QUICKSTART, target_override="sim"), other, progress=False)
    with ViewServer(load_replays([out, other])) as server:
        samples = _metrics(httpx.get(server.url + "metrics").text)
    assert {s.labels["run"] for rows in samples.values() for s in rows} == {out.name, "again"}


def test_switch_port_metrics_name_their_network_when_there_are_several() -> None:
    """On a cluster with front-end, storage and DCI networks every switch-port
    sample carries ``network`` (the network of the port's link); other samples
    do not."""
    from emulator.view.metrics import make_registry, metrics_text
    topology = load_topology(ROOT / "topologies" / "ai-cluster.yaml")
    state = RunState("cluster")
    state.start(build_picture(topology), {"name": "cluster", "duration_s": 1.0})
    samples = _metrics(metrics_text(make_registry([state])).decode())
    ports = samples["aifabric_port_info"]
    assert ports and all("network" in s.labels and "run" not in s.labels for s in ports)
    expected = {}
    for link in topology.links:
        expected[(link.node_b, str(link.port_b))] = link.network
        if link.gpu is None:
            expected[(link.node_a, str(link.port_a))] = link.network
    found = {(s.labels["switch"], s.labels["port"]): s.labels["network"] for s in ports}
    assert found == {k: v for k, v in expected.items() if k in found}
    assert {"backend", "dci", "front-end", "storage"} <= set(found.values())
    assert all("network" not in s.labels for s in samples["aifabric_run_info"])


def _events(response: httpx.Response):
    """(event, id, data) of a text/event-stream response, as they come."""
    event, ident, data = None, None, []
    for line in response.iter_lines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("id:"):
            ident = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and event:
            yield event, ident, json.loads("\n".join(data))
            event, ident, data = None, None, []


def test_event_stream_resumes_where_it_left_off(tmp_path: Path) -> None:
    run = FedSimRun(tmp_path, "qs", speed=3.0)  # 3 simulated s in about 1 s
    state, feed = run.state, run.feed
    with ViewServer([state]) as server:
        run.start()
        url = f"{server.url}api/runs/0/events"
        seen: list[int] = []
        with httpx.stream("GET", url, timeout=30) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            for event, ident, data in _events(response):
                if event == "info":
                    assert data["state"] in ("waiting", "running")
                if event == "frames":
                    seen += [f["seq"] for f in data]
                    assert int(ident) == seen[-1] + 1
                    if len(seen) >= 20:
                        break  # the page goes away mid-run
        assert state.info["state"] == "running"
        # back, with the last id it saw: the rest, nothing twice, then the end
        end = None
        with httpx.stream("GET", url, timeout=30,
                          headers={"Last-Event-ID": str(seen[-1] + 1)}) as response:
            for event, _ident, data in _events(response):
                if event == "frames":
                    seen += [f["seq"] for f in data]
                elif event == "end":
                    end = data
        run.join()
        assert seen == list(range(state.next_seq))
        assert end is not None and not end["partial"] and end["checks"]
        # a page that comes after the end gets everything, then the end
        with httpx.stream("GET", url, timeout=30) as response:
            kinds = [event for event, _i, _d in _events(response)]
        assert kinds[0] == "info" and kinds[-1] == "end" and "frames" in kinds
    feed.close()


class _PacedObserver:
    """What :func:`sim_sampler` calls, with a frame dearer than any CPU budget
    allows: ``held`` None plays flat out (no speed), else ``pace`` says the
    run was held back by its speed (it records each call; no real sleep, so
    a busy machine changes nothing)."""

    min_wall_s = 1e-9  # > 0: the CPU budget on
    duration_s = 0.2
    frame_cost_s = 1.0

    def __init__(self, held: bool | None) -> None:
        self.held = held
        self.paced: list[float] = []
        self.sampled: list[float] = []

    def pace(self, t_s: float) -> bool:
        if self.held is None:
            return False
        self.paced.append(t_s)
        return self.held

    def on_sample(self, t_s: float, snapshot: dict) -> None:
        self.sampled.append(t_s)


def test_a_sim_run_played_at_a_speed_is_held_and_seen_at_every_period() -> None:
    """--view-speed: every sample period is held to the speed, and a run the
    speed holds back publishes every period whatever a frame costs. (It was
    held only when it published, and the CPU budget skipped most periods of
    a fast sim: the run raced to its end with three frames.) A run behind
    its speed, or flat out, is thinned by the CPU budget to the first and
    last period."""
    bins = [i * 0.01 for i in range(21)]
    fabric = SimpleNamespace(switches={})
    for held, paced, sampled in ((True, bins, bins), (False, bins, [0.0, bins[-1]]),
                                 (None, [], [0.0, bins[-1]])):
        observer = _PacedObserver(held)
        sample = sim_sampler(fabric, {}, observer)
        for now in bins:
            sample(now)
        assert observer.paced == paced and observer.sampled == sampled, held


def test_parse_address() -> None:
    assert parse_address("8080") == ("127.0.0.1", 8080)
    assert parse_address("0.0.0.0:9000") == ("0.0.0.0", 9000)
    assert parse_address("[::1]:0") == ("::1", 0)
    for bad in ("http", "70000", "host:"):
        with pytest.raises(ViewError, match="PORT or HOST:PORT"):
            parse_address(bad)


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emulator.cli.main", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_cli_bad_input_is_one_line(sim_run, tmp_path: Path) -> None:
    out, _frames, _results = sim_run
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        for args in (("view", str(out), "--port", str(port), "--for", "0"),
                     ("run", str(QUICKSTART), "--target", "sim", "--out", str(tmp_path / "x"),
                      "--view", str(port))):
            done = _cli(*args)
            assert done.returncode == 2
            assert done.stderr.strip() == (f"aifabric: view: port {port} on 127.0.0.1 is in "
                                           "use; give another (or 0 for any free port)")
        assert not (tmp_path / "x").exists()  # nothing ran
    done = _cli("view", str(tmp_path))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "no results.json, not a run directory" in done.stderr
    done = _cli("view", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "no such directory" in done.stderr
    done = _cli("view", str(out), "--port", "0", "--for", "0.2")
    assert done.returncode == 0 and "view of 1 run at http://127.0.0.1:" in done.stdout


def test_grafana_dashboard_queries_only_exported_metrics() -> None:
    """docs/grafana-dashboard.json: every metric a panel queries is one /metrics has."""
    import re

    dashboard = json.loads((ROOT / "docs" / "grafana-dashboard.json").read_text())
    queried = {name for panel in dashboard["panels"] for target in panel.get("targets", [])
               for name in re.findall(r"aifabric_[a-z0-9_]+", target["expr"])}
    assert queried and queried <= set(METRIC_NAMES), queried - set(METRIC_NAMES)
    assert {"aifabric_queue_ecn_marked_packets_total",
            "aifabric_nic_pfc_paused_seconds_total"} <= queried
    # a $network variable from the ports' network label filters every switch-port query
    (variable,) = [v for v in dashboard["templating"]["list"] if v["name"] == "network"]
    assert "label_values(aifabric_port_info, network)" in variable["definition"]
    assert variable["includeAll"] and variable["allValue"] == ".*"
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            for name, selector in re.findall(r"(aifabric_[a-z0-9_]+)(\{[^}]*\})?",
                                             target["expr"]):
                port_metric = name.startswith(("aifabric_port_", "aifabric_queue_",
                                               "aifabric_pfc_"))
                assert (selector == '{network=~"$network"}') == port_metric, target["expr"]
