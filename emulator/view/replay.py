"""A finished run as the view shows it: frames rebuilt from its CSVs.

``aifabric view RESULTS_DIR`` reads what ``aifabric run`` wrote and makes
the same frames a live feed makes (:mod:`.frames`), one per time bin of the
run, for the page's time slider:

- ``util`` of every link direction, switch queues' ``pfc`` (frames per
  second, share of the bin paused) and ``paused``, and ``ecnq`` (CE marks
  per queue): from the switches' cumulative counters (``port_bytes.csv``,
  ``pfc_frames.csv``, ``ecn_marks.csv``), exactly as the live feed computed
  them (:mod:`.replay_counters`). Runs from before those files: a host
  link's directions from ``series.csv`` (payload only), a fabric link's
  from ``links.csv``, the run's average (``info["fabric_util"]`` says so
  and the page labels it), pauses from ``pauses.csv``;
- ``q`` and ``paused``: ``queues.csv`` (the switches' sampled depths);
- ``pfc`` of a host's NIC (``server:nic:prio``): the share of each bin it
  held that priority, from its exact pause intervals in ``pauses.csv``
  (frames per second: not recorded over time, ``None``);
- ``fl``: DCQCN rate per flow from ``rates.csv`` (the rate in force at the
  bin's end, QPs of a flow summed), goodput per flow from ``series.csv``;
- ``ecn``, ``cnp``: CE-marked packets received and CNPs sent per second,
  ``series.csv``.

Totals (``/metrics``) are the run's final counters from ``results.json``.
A folder that is not a run is a :class:`~.errors.ViewError`.
"""

from __future__ import annotations

import bisect
import csv
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from emulator.view.errors import ViewError
from emulator.view.feed import MAX_FRAMES, RunState, run_summary
from emulator.view.frames import Totals
from emulator.view.picture import Picture, build_picture
from emulator.view.replay_counters import apply_counters, has_counters, sample_interval_s

DEFAULT_BIN_S = 0.01


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def load_replay(directory: str | Path, label: str | None = None) -> RunState:
    """The run in ``directory`` (written by ``aifabric run``), ended, with its frames."""
    from emulator.measure.errors import MeasureError
    from emulator.measure.report import load_run
    from emulator.measure.utilisation_plot import run_topology
    from emulator.topology.errors import TopologyError

    d = Path(directory)
    try:
        run = load_run(d, label)
    except MeasureError as exc:
        raise ViewError(str(exc)) from None
    if not (d / "scenario.json").is_file():
        raise ViewError(f"{d}: no scenario.json, so no topology to draw (give a directory "
                        "written by aifabric run)")
    try:
        topology = run_topology(d)
    except (TopologyError, KeyError, TypeError, ValueError) as exc:
        raise ViewError(f"{d / 'scenario.json'}: no usable topology: {exc}") from None
    results, scenario = run.results, run.scenario
    picture = build_picture(topology)
    target = results.get("target", "")
    live = target != "sim"
    scale = float(results.get("time_scale") or 1)
    duration = float(results.get("duration_s") or 0.0)
    state = RunState(run.label)
    state.start(picture, {
        "name": results.get("scenario") or scenario.get("name", d.name),
        "description": scenario.get("description", ""), "target": target,
        "duration_s": duration, "time_scale": scale, "replay": str(d),
        "clock": "emulated" if live else "simulated",
        "clock_text": ((f"emulated seconds (data-centre time = emulated / {scale:g})"
                        if scale != 1 else "emulated seconds") if live
                       else "simulated seconds"),
        **({} if has_counters(d) else {"fabric_util": "run average"})})
    frames = _frames(d, picture, results, duration)
    for frame in frames:
        state.append(frame)
    state.totals = _totals(results)
    for row in _rows(d / "pauses.csv"):  # the pauses hosts' NICs honoured, exact
        if row["kind"] == "host":
            slot = state.totals.nics.setdefault(
                (row["node"], row["port"], int(row["priority"])),
                {"paused_s": 0.0, "frames": None, "paused": False})
            slot["paused_s"] += float(row["end_s"]) - float(row["start_s"])
    for flow, (rate_bps, _goodput) in frames[-1]["fl"].items():
        state.totals.flows.setdefault(flow, {})["rate_bps"] = rate_bps  # the rate at the end
    state.finish(run_summary(results))
    return state


def _bin_s(results: dict[str, Any], series: list[dict[str, str]],
           queues: list[dict[str, str]], duration: float, interval_s: float | None) -> float:
    bin_s = (results.get("sim") or {}).get("series_bin_s")
    if not bin_s:
        times = sorted({float(r["t_s"]) for r in series} | {float(r["t_s"]) for r in queues})
        gaps = [b - a for a, b in zip(times, times[1:]) if b - a > 1e-9]
        bin_s = min(gaps) if gaps else DEFAULT_BIN_S
        if interval_s:  # no bin shorter than the switches sample (a live run)
            bin_s = max(bin_s, round(interval_s, 4))
    # never more frames than a live feed keeps
    return max(float(bin_s), duration / MAX_FRAMES if duration else 0.0)


def _frames(d: Path, pic: Picture, results: dict[str, Any], duration: float
            ) -> list[dict[str, Any]]:
    series, queues = _rows(d / "series.csv"), _rows(d / "queues.csv")
    rates, pauses = _rows(d / "rates.csv"), _rows(d / "pauses.csv")
    exact = has_counters(d)
    interval_s = sample_interval_s(d) if exact else None
    bin_s = _bin_s(results, series, queues, duration, interval_s)
    count = max(1, math.ceil(duration / bin_s - 1e-9)) if duration else 1
    frames: list[dict[str, Any]] = [
        {"t": round((k + 1) * bin_s, 9), "dt": bin_s, "util": {}, "paused": [], "q": {},
         "pfc": {}, "fl": {}, "ecn": 0.0, "cnp": 0.0} for k in range(count)]

    def index(t: float) -> int:
        return min(max(int(math.floor(t / bin_s + 1e-6)), 0), count - 1)

    flows = {f["id"]: f for f in results.get("flows", [])}
    rate_of = {e["data"]["id"]: float(e["data"]["rate_bps"])
               for e in pic.elements["edges"]}
    # fabric links: the run's average, in every frame
    fabric: dict[str, float] = {}
    for row in results.get("links", []):
        edges = pic.link_edges.get((row["a"], row["a_port"], row["b"], row["b_port"]))
        if edges and row.get("kind") == "fabric":
            for edge, key in zip(edges, ("util_ab", "util_ba")):
                if row.get(key):
                    fabric[edge] = round(float(row[key]), 4)
    acked = [0.0] * count
    for row in series:
        k = index(float(row["t_s"]))
        frame = frames[k]
        flow = flows.get(row["flow"], {})
        sent = float(row["tx_bps"]) + float(row["retx_bps"])
        rx = float(row["rx_bps"])
        for gpu, value, edges in ((flow.get("src"), sent, pic.nic_edge),
                                  (flow.get("dst"), rx, pic.nic_rx_edge)):
            edge = edges.get(gpu or "")
            if edge and value:
                frame["util"][edge] = frame["util"].get(edge, 0.0) + value / rate_of[edge]
        slot = frame["fl"].setdefault(row["flow"], [0.0, 0.0])
        slot[1] += rx
        frame["ecn"] += float(row["ce_packets"]) / bin_s
        frame["cnp"] += float(row["cnps_sent"]) / bin_s
        acked[k] += rx * bin_s / 8
    for row in queues:
        t = float(row["t_s"])
        k = min(max(int(round(t / bin_s)) - 1, 0), count - 1)
        label = f"{row['switch']}:{row['port']}:{row['priority']}"
        frames[k]["q"][label] = int(row["depth_bytes"])
        if row["paused"] in ("1", "True", "true"):
            edge = pic.egress_edge.get((row["switch"], int(row["port"])))
            if edge:
                frames[k]["paused"].append(edge)
    _pauses([r for r in pauses if not exact or r["kind"] != "switch"], pic, frames, bin_s, index)
    _rates(rates, frames)
    if exact:
        apply_counters(d, pic, frames, bin_s, interval_s or bin_s)
        fabric = {}
    total = sum(int(f.get("size_bytes") or 0) for f in flows.values())
    done = 0.0
    for k, frame in enumerate(frames):
        for edge, value in fabric.items():
            frame["util"].setdefault(edge, value)
        frame["util"] = {e: round(v, 4) for e, v in frame["util"].items()}
        frame["paused"] = sorted(set(frame["paused"]))
        frame["ecn"], frame["cnp"] = round(frame["ecn"], 3), round(frame["cnp"], 3)
        done += acked[k]
        frame["prog"] = {"t": frame["t"], "of": duration, "acked": int(done), "total": total}
        pic.fold(frame)
    return frames


def _pauses(rows: list[dict[str, str]], pic: Picture, frames: list[dict[str, Any]],
            bin_s: float, index: Any) -> None:
    for row in rows:
        start, end = float(row["start_s"]), float(row["end_s"])
        label = f"{row['node']}:{row['port']}:{row['priority']}"
        if row["kind"] == "switch":
            edge = pic.egress_edge.get((row["node"], int(row["port"])))
        else:
            edge = pic.nic_edge.get(pic.nic_gpu.get((row["node"], row["port"]), ""))
        for k in range(index(start), index(max(end - 1e-12, start)) + 1):
            lo, hi = k * bin_s, (k + 1) * bin_s
            overlap = min(end, hi) - max(start, lo)
            if overlap <= 0:
                continue
            slot = frames[k]["pfc"].setdefault(label, [None, 0.0])
            slot[1] = round(min(slot[1] + overlap / bin_s, 1.0), 4)
            if edge:
                frames[k]["paused"].append(edge)


def _rates(rows: list[dict[str, str]], frames: list[dict[str, Any]]) -> None:
    """The DCQCN rate in force at each frame's end, per flow (its QPs summed)."""
    samples: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for row in rows:
        samples[(row["flow"], row["qp"])].append((float(row["t_s"]), float(row["rate_bps"])))
    for (flow, _qp), points in samples.items():
        points.sort()
        times = [t for t, _ in points]
        for frame in frames:
            i = bisect.bisect_right(times, frame["t"]) - 1
            if i < 0:
                continue
            slot = frame["fl"].setdefault(flow, [0.0, 0.0])
            slot[0] += points[i][1]
    for frame in frames:
        frame["fl"] = {f: [round(r, 1), round(g, 1)] for f, (r, g) in frame["fl"].items()}


def _totals(results: dict[str, Any]) -> Totals:
    totals = Totals(t_s=float(results.get("duration_s") or 0.0))
    for switch, ports in (results.get("switches") or {}).items():
        for port, prios in ports.items():
            if not isinstance(prios, dict) or not port.isdigit():
                continue
            # the results keep drops per queue and the port's other drops as one sum
            other = int((ports.get("_port_drops") or {}).get(port, 0))
            row = totals.ports.setdefault((switch, int(port)), {
                "rx_bytes": 0, "tx_bytes": 0, "rx_packets": 0, "tx_packets": 0,
                "drops": {"queue": 0, "other": other}, "rate_bps": None})
            for prio, q in prios.items():
                for key in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
                    row[key] += q.get(key, 0) or 0
                row["drops"]["queue"] += q.get("drops", 0) or 0
                depth = q.get("max_qdepth") or {}
                totals.queues[(switch, int(port), int(prio))] = {
                    "depth_bytes": 0, "depth_packets": 0,
                    "max_depth_bytes": depth.get("bytes", 0),
                    "max_depth_packets": depth.get("packets", 0),
                    "ecn_marked": q.get("ecn_marked", 0), "paused": False,
                    "paused_s": q.get("paused_s") or 0.0, "pfc_tx": q.get("pfc_tx", 0),
                    "pfc_rx": q.get("pfc_rx", 0), "tail_dropped": q.get("drops", 0)}
    for link in results.get("links", []):
        for node, port in ((link["a"], link["a_port"]), (link["b"], link["b_port"])):
            if (node, port) in totals.ports:
                totals.ports[(node, port)]["rate_bps"] = link.get("rate_bps")
    for flow in results.get("flows", []):
        totals.flows[flow["id"]] = {
            "rate_bps": 0.0,
            "goodput_bps": flow.get("goodput_bps") or 0.0,
            "acked_bytes": flow.get("bytes") or 0, "delivered_bytes": flow.get("bytes") or 0,
            "ce_packets": flow.get("ce_received", 0), "cnps_sent": flow.get("cnp_sent", 0),
            "cnps_rx": flow.get("cnp_received", 0)}
    fid = results.get("fidelity") or {}
    if fid.get("clock") != "virtual" and fid.get("faithful") is not None:
        totals.fidelity["faithful"] = bool(fid["faithful"])
    totals.progress = {"t": totals.t_s, "of": totals.t_s}
    return totals


def load_replays(directories: Sequence[str | Path]) -> list[RunState]:
    """Every run, labelled by its folder's name (its path where names repeat)."""
    names = [Path(d).name for d in directories]
    return [load_replay(d, Path(d).name if names.count(Path(d).name) == 1 else str(d))
            for d in directories]
