"""A scenario run on the virtual clock (``--target sim``): the whole fabric
in this process, no root, no namespaces, no sockets.

The same pieces as a live run (:mod:`.live`), with one seam, the clock
and the wire (:mod:`emulator.sim`):

1. the workload is expanded and the queue pairs planned as for a live run;
2. :class:`~emulator.sim.fabric.SimFabric` builds every switch (fabric.p4
   on the executor, the built-in target's data plane) and link, and the
   controller programs them over in-process P4Runtime; per-port buffer
   overrides follow (:mod:`.events`);
3. one NIC agent per server that sends or receives, built from the same
   agent config a live run writes (:func:`~.agent_config.build_agent_configs`),
   on the fabric's NIC link ends; ``start_at_unix`` is simulated time 0;
4. scenario events are engine calls at their exact times (``stop_flow``,
   ``link_down``/``link_up`` take the link down in both directions and
   lose what is on it), PFC storms are handed to the storming agent as a
   live run does; fed flows are fed every half chunk of simulated time;
5. the engine runs to the scenario's duration (Ctrl-C: partial results);
   the agents' snapshots, the switches' P4 counters (read over P4Runtime),
   queue statistics and series are collected and the same
   :func:`~.record.finish_run` writes results.json, the CSVs and the plots.

Results carry ``"target": "sim"`` and a ``sim`` block: events run, frames
delivered (link hops), simulated and wall seconds, events and hops per wall
second (and per second of this process's CPU time, which a busy machine
stretches far less). Everything but those figures (``sim.wall_s``,
``sim.cpu_s``, ``sim.events_per_wall_s``, ``sim.hops_per_wall_s``,
``sim.hops_per_cpu_s``, ``timings``) is the same to the byte on every run of
the same file and seed.

Time bins: the queue series and the agents' binned counts use one bin,
:func:`series_bin_s`: 10 ms as on a live run, finer for short runs (a
millisecond-long data-centre run gets microsecond bins).
"""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from emulator.run.agent_config import build_agent_configs
from emulator.run.captures import collect_captures, gpu_capture_result, start_sim_captures
from emulator.run.events import (
    STORM_EVENTS, apply_buffer_overrides, apply_event, storm_record, storm_request,
)
from emulator.run.feeder import FEED_CHUNK_S, Feeder
from emulator.run.qps import plan_qps
from emulator.run.record import RunRecord, finish_run
from emulator.scenario.errors import ScenarioError
from emulator.scenario.fabric import to_fabric_settings
from emulator.scenario.scale import native
from emulator.scenario.spec import EventSpec, Scenario
from emulator.scenario.workload import collective_plans, expand_workload

MAX_BIN_S = 0.010
BINS_PER_RUN = 200
PROGRESS_EVERY_WALL_S = 0.25


def series_bin_s(duration_s: float) -> float:
    """10 ms, or for runs shorter than 2 s about 1/200 of the run, rounded
    down to 1, 2 or 5 times a power of ten (at least 100 ns)."""
    target = duration_s / BINS_PER_RUN
    if target >= MAX_BIN_S:
        return MAX_BIN_S
    exp = math.floor(math.log10(target))
    for mantissa in (5, 2, 1):
        value = mantissa * 10.0 ** exp
        if value <= target * (1 + 1e-9):
            return max(round(value, 12), 1e-7)
    return max(10.0 ** exp, 1e-7)


def run_sim(scenario: Scenario, out_dir: str | Path, *, progress: bool = True,
            log: Callable[[str], None] | None = None, observer: Any = None) -> dict[str, Any]:
    """Run ``scenario`` on the virtual clock; returns the results (also
    written to ``out_dir``). ``observer`` (:class:`emulator.view.feed.RunObserver`)
    gets a sample every series bin of simulated time."""
    from emulator.sim.engine import Engine
    from emulator.sim.fabric import SimFabric
    from emulator.traffic.agent.agent import Agent
    from emulator.traffic.agent.config import parse_config

    say = log or (lambda _msg: None)
    scenario = native(scenario)
    if scenario.ignored_time_scale is not None:
        say(f"note: time_scale {scenario.ignored_time_scale:g} is not applied on sim: "
            "the scenario runs as written, in simulated time")
    out = Path(out_dir)
    flows = expand_workload(scenario)
    plans = collective_plans(scenario)
    graph = [op for plan in plans for op in plan.ops]
    qps = plan_qps(scenario, flows)
    topo = scenario.topology
    servers = sorted({q.src_server for q in qps} | {q.dst_server for q in qps}
                     | {topo.gpu(e.gpu).server for e in scenario.events if e.gpu})
    out.mkdir(parents=True, exist_ok=True)
    agent_dir = out / "agents"
    agent_dir.mkdir(exist_ok=True)
    (out / "scenario.json").write_text(json.dumps(
        {**scenario.to_dict(), "flows": [f.to_dict() for f in flows]}, indent=1, default=str))
    bin_s = series_bin_s(scenario.duration_s)
    wall = time.perf_counter()
    timings: dict[str, float] = {}
    errors: list[str] = []
    events_done: list[dict[str, Any]] = []
    partial = False
    engine = Engine()
    say(f"building {topo.name} on the virtual clock")
    fabric = SimFabric(topo, engine, settings=to_fabric_settings(scenario), seed=scenario.seed,
                       buffer_bytes=scenario.switches.buffer_bytes, workdir=out / "fabric",
                       sample_interval_s=bin_s)
    agent_stats: dict[str, dict[str, Any] | None] = {s: None for s in servers}
    counters: dict[str, Any] = {}
    queue_stats: dict[str, Any] = {}
    queue_series: dict[str, Any] = {}
    capture_files: dict[str, tuple[Path, list[Path]]] = {}
    captures: dict[str, Any] = {}
    end = 0.0
    try:
        fabric.start()
        actions = SimFabricActions(fabric)
        apply_buffer_overrides(scenario, actions)
        timings["fabric_up_s"] = round(time.perf_counter() - wall, 3)
        configs = build_agent_configs(scenario, flows, 0.0, qps, graph,
                                      dcqcn_time_scale=1.0)
        nodes = {}
        for server in servers:
            cfg = configs[server]
            cfg["run"]["series_bin_ms"] = bin_s * 1e3
            for nic in cfg["nics"]:
                # nothing wakes late on this clock: a pacer behind "now" is
                # idle credit, never lag to catch up
                nic["max_lag_us"] = 0.0
            (agent_dir / f"{server}.config.json").write_text(json.dumps(cfg, indent=1))
            gpus = [_gpu_of_intf(scenario, nic["name"]) for nic in cfg["nics"]]
            agent = Agent(parse_config(cfg), fabric.nic_backends(gpus), 0.0)
            nodes[server] = fabric.attach_agent(server, agent, gpus)
        capture_files = start_sim_captures(scenario, fabric, out)  # NIC taps go on the agents
        _schedule_events(scenario, qps, flows, fabric, actions, nodes, events_done)
        if observer is not None:  # the web view: reads only, so the run is the same
            from emulator.view.sources import sim_sampler
            observer.on_start(scenario, qps, target="sim")
            engine.every(bin_s, sim_sampler(fabric, nodes, observer))
        timings["agents_ready_s"] = round(time.perf_counter() - wall, 3)
        try:
            end = _drive(scenario, engine, progress)
        except KeyboardInterrupt:
            partial = True
            end = engine.clock.now
            errors.append("interrupted (Ctrl-C): results are partial")
        timings["traffic_end_s"] = round(time.perf_counter() - wall, 3)
        for server, node in nodes.items():
            node.agent.stop("duration", end)
            stats = node.agent.snapshot(end)
            agent_stats[server] = stats
            (agent_dir / f"{server}.stats.json").write_text(json.dumps(stats))
        assert fabric.controller is not None
        for sw in topo.switches:
            counters[sw.name] = fabric.controller.read_counters(
                sw.name, [p.number for p in sw.ports])
            switch = fabric.switches[sw.name]
            queue_stats[sw.name] = json.loads(json.dumps(switch.port_stats()))
            queue_series[sw.name] = {**switch.queue_series(), "unix_offset_s": 0.0}
        timings["collected_s"] = round(time.perf_counter() - wall, 3)
    except KeyboardInterrupt:
        partial = True
        errors.append("interrupted (Ctrl-C) before the traffic ran: results are partial")
    finally:
        fabric.stop()  # closes the pcaps too
    if capture_files:
        captures.update(collect_captures(capture_files, scenario.capture.max_packets, errors))
        shutil.rmtree(out / "fabric" / "pcap", ignore_errors=True)
    for point in scenario.capture.points:
        if point.port is None:
            path = out / "pcaps" / f"{point.node.replace('/', '-')}.pcap"
            captures[str(point)] = gpu_capture_result(path, scenario.capture.max_packets)
    wall_s = time.perf_counter() - wall
    timings["total_s"] = round(wall_s, 3)
    run_wall = max(engine.wall_s, 1e-9)
    sim_block = {"events": engine.events, "hops": engine.deliveries,
                 "simulated_s": round(end, 9), "wall_s": round(engine.wall_s, 3),
                 "cpu_s": round(engine.cpu_s, 3),
                 "events_per_wall_s": round(engine.events / run_wall),
                 "hops_per_wall_s": round(engine.deliveries / run_wall),
                 "hops_per_cpu_s": round(engine.deliveries / max(engine.cpu_s, 1e-9)),
                 "series_bin_s": bin_s, "seed": scenario.seed,
                 # time frames waited for a NIC's wire (the NIC paced faster
                 # than its line): 0 unless the agent's pacing is off
                 "nic_wire_wait_s": round(sum(e.queued_s for e in fabric.nic_ends.values()), 9),
                 # frames the switches sent to GPUs that run no agent (nothing to receive them)
                 "frames_to_idle_gpus": fabric.sink.frames,
                 "lost_on_down_links": sum(link.lost_in_flight for link in fabric.links.values())}
    extra: dict[str, Any] = {"events": events_done, "errors": errors, "timings": timings,
                             "sim": sim_block}
    if scenario.ignored_time_scale is not None:
        extra["ignored_time_scale"] = scenario.ignored_time_scale
    if captures:
        extra["captures"] = captures
    return finish_run(RunRecord(scenario, "sim", out, flows, qps, plans, agent_stats, counters,
                                queue_stats, queue_series, 0.0, end, partial, extra), say)


def _gpu_of_intf(scenario: Scenario, intf: str) -> str:
    for gpu in scenario.topology.gpus:
        if gpu.intf == intf:
            return gpu.name
    raise ScenarioError(f"{scenario.source}: no GPU has interface {intf}")


class SimFabricActions:
    """:class:`~.events.FabricActions` of the virtual-time fabric: a port's
    buffer set on its switch's data plane, a link cut both ways (what is on
    it is lost) or mended."""

    def __init__(self, fabric: Any) -> None:
        self.fabric = fabric

    def set_port_buffer(self, switch: str, port: int, buffer_bytes: int) -> None:
        self.fabric.switches[switch].set_port_config(port, buffer_bytes=buffer_bytes)

    def set_link_state(self, link: tuple[str, str], up: bool) -> dict[str, Any]:
        self.fabric.link(*link).set_up(up)
        return {"link_state": "up" if up else "down"}


def _schedule_events(scenario: Scenario, qps: list, flows: list, fabric: Any,
                     actions: SimFabricActions, nodes: dict[str, Any],
                     events_done: list[dict[str, Any]]) -> None:
    """Every scenario event as an engine call at its time; the feeder's ticks."""
    from emulator.traffic.agent.storm import storm_request as agent_storm_request

    engine = fabric.engine
    ops = {f.id: ("write" if f.op == "read" else f.op) for f in flows}
    chunk_s = min(FEED_CHUNK_S, max(scenario.duration_s / BINS_PER_RUN, 1e-6))
    feeder = Feeder(scenario, qps, ops, chunk_s=chunk_s)
    for event in scenario.events:
        if event.kind in STORM_EVENTS:
            server, request = storm_request(scenario, event, event.at_s)
            node = nodes[server]
            answer = agent_storm_request(node.agent, request, 0.0)
            engine.schedule(node)
            events_done.append(storm_record(event, request, answer, 0.0))
            continue
        engine.call_at(event.at_s, _event_call(event, feeder, actions, events_done))
    if not feeder.states:
        return

    def feed(now: float) -> bool:
        status = {server: node.agent.status(now) for server, node in nodes.items()}
        for server, qpn, size, op in feeder.tick(now, status):
            nodes[server].agent.post(qpn, op, size, now)
            engine.schedule(nodes[server])
        return not all(st.stopped for st in feeder.states)
    engine.every(chunk_s / 2, feed)


def _event_call(event: EventSpec, feeder: Feeder, actions: SimFabricActions,
                events_done: list[dict[str, Any]]) -> Callable[[float], None]:
    def apply(now: float) -> None:
        events_done.append(apply_event(event, feeder, actions, round(now, 9)))
    return apply


def _drive(scenario: Scenario, engine: Any, show_progress: bool) -> float:
    """Run the engine to the duration, with a progress bar in simulated time."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    duration = scenario.duration_s
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                  TextColumn("{task.fields[clock]}"), TimeRemainingColumn(),
                  disable=not show_progress, transient=False) as bar:
        task = bar.add_task(f"{scenario.name} (sim)", total=duration, clock="")
        last = [time.perf_counter()]

        def progress(t: float) -> None:
            now = time.perf_counter()
            if now - last[0] >= PROGRESS_EVERY_WALL_S:
                last[0] = now
                bar.update(task, completed=t, clock=_clock_text(t, duration, engine.events))

        end = engine.run(duration, on_progress=progress, progress_every=2000)
        bar.update(task, completed=end, clock=_clock_text(end, duration, engine.events))
    return end


def _clock_text(t: float, duration: float, events: int) -> str:
    unit, k = (("s", 1.0) if duration >= 1 else ("ms", 1e3) if duration >= 1e-3
               else ("us", 1e6))
    return f"t={t * k:.3f}/{duration * k:.3f} {unit}, {events:,} events"
