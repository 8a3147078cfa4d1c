"""A scenario run on the virtual clock (``--target sim``): the whole fabric
in this process, no root, no namespaces, no sockets.

The same pieces as a live run (:mod:`.live`), with one seam, the clock
and the wire (:mod:`emulator.sim`):

1. the workload is expanded and the queue pairs planned as for a live run;
2. :class:`~emulator.sim.fabric.SimFabric` builds every switch (fabric.p4
   on the executor, the built-in target's data plane) and link, and the
   controller programs them over in-process P4Runtime; per-port buffer
   overrides follow (:mod:`.events`); a topology with ``scale_up`` gets
   its scale-up switches and links too (:func:`with_scale_up_tier`), so
   flows inside a scale-up domain cross them;
3. one NIC agent per server that sends or receives, built from the same
   agent config a live run writes (:func:`~.agent_config.build_agent_configs`),
   on the fabric's NIC link ends; ``start_at_unix`` is simulated time 0;
4. scenario events are engine calls at their exact times (``stop_flow``,
   ``link_down``/``link_up`` take the link down in both directions and
   lose what is on it), PFC storms are handed to the storming agent as a
   live run does; fed flows are fed every half chunk of simulated time,
   a chunk being :func:`sim_feed_chunk_s` of line rate (set by the
   fabric, never by the duration, so a run's first milliseconds are the
   same whatever its length);
5. the engine runs to the scenario's duration (Ctrl-C: partial results);
   the agents' snapshots, the switches' P4 counters (read over P4Runtime),
   queue statistics and series are collected and the same
   :func:`~.record.finish_run` writes results.json, the CSVs and the plots.

Results carry ``"target": "sim"`` and a ``sim`` block: events run, frames
delivered (link hops), simulated and wall seconds, events and hops per wall
second (and per second of this process's CPU time, which a busy machine
stretches far less). Everything but those figures (``sim.wall_s``,
``sim.cpu_s``, ``sim.events_per_wall_s``, ``sim.hops_per_wall_s``,
``sim.hops_per_cpu_s``, ``timings``, and ``sim.p4_executor``: what ran the
switches' P4 code, ``cython`` or ``python``, with ``sim.p4_executor_note``
saying why not Cython where it was not, and ``sim.speedups``: whether the
engine, data plane and agents ran compiled, :mod:`emulator.speedups`) is the same to the byte on every run
of the same file and seed.

Time bins: the queue series and the agents' binned counts use one bin,
:func:`series_bin_s`: 10 ms as on a live run, finer for short runs (a
millisecond-long data-centre run gets microsecond bins).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from emulator.network.naming import scratch_dir
from emulator.p4.exec.pipeline import EXECUTOR_ENV
from emulator.run.agent_config import agent_servers, build_agent_configs, host_rate_bps
from emulator.run.captures import (
    collect_captures, gpu_capture_result, sim_capture_plan, start_sim_captures,
)
from emulator.run.events import (
    LINK_EVENTS, STORM_EVENTS, apply_buffer_overrides, apply_event, storm_record, storm_request,
)
from emulator.run.feeder import Feeder
from emulator.run.qps import QpPlan, plan_qps
from emulator.run.mpi import stop_requested
from emulator.run.record import RunRecord, finish_run
from emulator.run.sim_ranks import RankShare, Ranks, checkpoint, merge, plan_ranks, rank_figures
from emulator.scenario.errors import ScenarioError
from emulator.scenario.fabric import to_fabric_settings
from emulator.scenario.scale import native
from emulator.scenario.spec import EventSpec, Scenario
from emulator.scenario.workload import (
    collective_plans, expand_workload, job_plans, stopped_flows,
)
from emulator.sim.collector import settled_collector
from emulator.sim.parallel import WindowStats, run_windows
from emulator.sim.partition import describe
from emulator.speedups import state as speedups_state
from emulator.topology import scale_up_tier

# Order keys of the runner's calls at one instant (emulator.sim.engine):
# events by their index in the file, then the switches' queue samplers
# (emulator.sim.fabric.SAMPLER_CALL_KEY), then the feeder.
FEEDER_CALL_KEY = 1 << 21
MAX_BIN_S = 0.010
BINS_PER_RUN = 200
# Fed flows' chunks on the virtual clock (sim_feed_chunk_s).
SIM_FEED_CHUNK_S = 20e-6
SIM_FEED_CHUNK_FRAMES = 4
PROGRESS_EVERY_WALL_S = 0.25


def sim_feed_chunk_s(scenario: Scenario, qps: list[QpPlan]) -> float:
    """Seconds of line rate in one chunk of a fed flow on the virtual clock:
    :data:`SIM_FEED_CHUNK_S`, or :data:`SIM_FEED_CHUNK_FRAMES` MTU frames at
    the slowest fed NIC where that is longer. Set by the fabric alone, never
    by ``duration``: a run's first milliseconds do not depend on its length.
    (Where messages begin and end does not move DCQCN, which is per queue
    pair: see tests/unit/sim/test_sim_feed.py.)"""
    rates = [host_rate_bps(scenario.topology, q.src_gpu) for q in qps if q.fed]
    if not rates:
        return SIM_FEED_CHUNK_S
    frame_s = scenario.hosts.mtu_bytes * 8 / min(rates)
    return max(SIM_FEED_CHUNK_S, SIM_FEED_CHUNK_FRAMES * frame_s)


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


EXECUTOR_CHOICES = ("auto", "cython", "python")


def p4_executor(choice: str) -> str:
    """What the sim's pipelines are asked to run their P4 code on for
    ``--executor choice``: ``auto`` is ``$AIFABRIC_P4_EXECUTOR`` or
    ``cython`` (which falls back to Python where it cannot be built)."""
    if choice not in EXECUTOR_CHOICES:
        raise ScenarioError(f"--executor {choice}: one of {', '.join(EXECUTOR_CHOICES)}")
    if choice == "auto":
        return os.environ.get(EXECUTOR_ENV) or "cython"
    return choice


def run_sim(scenario: Scenario, out_dir: str | Path, *, progress: bool = True,
            log: Callable[[str], None] | None = None, observer: Any = None,
            comm: Any = None, partition: str | Path = "auto",
            executor: str = "auto") -> dict[str, Any]:
    """Run ``scenario`` on the virtual clock; returns the results (also
    written to ``out_dir``). ``executor`` runs the switches' P4 code:
    ``cython`` (compiled, :mod:`emulator.p4.exec.compiled`), ``python``, or
    ``auto`` (Cython where it can be built, else Python, saying why). ``observer`` (:class:`emulator.view.feed.RunObserver`)
    gets a sample every series bin of simulated time. With ``comm`` (an MPI
    communicator) this process runs its rank's part of the fabric
    (:mod:`.sim_ranks`, ``partition`` as :mod:`emulator.sim.partition`
    takes it); rank 0 writes the results, every rank returns them."""
    if comm is not None and observer is not None and comm.Get_size() > 1:
        raise ScenarioError("the web view follows a sim run on one rank; run without "
                            "--ranks, or open the results afterwards with aifabric view")
    from emulator.sim.engine import Engine

    started = time.perf_counter()
    say = log or (lambda _msg: None)
    # the virtual clock builds the scale-up tier (switches, links) too
    scenario = with_scale_up_tier(native(scenario))
    engine = Engine()
    flows = expand_workload(scenario)
    ranks = None if comm is None else plan_ranks(comm, scenario, flows, partition, engine.clock)
    lead = ranks is None or ranks.lead
    if not lead:
        say = (lambda _msg: None)
        progress = False
    if scenario.ignored_time_scale is not None:
        say(f"note: time_scale {scenario.ignored_time_scale:g} is not applied on sim: "
            "the scenario runs as written, in simulated time")
    if ranks is not None:
        say(f"partition: {describe(ranks.part)}")
    out = Path(out_dir)
    if lead:
        out.mkdir(parents=True, exist_ok=True)
        (out / "agents").mkdir(exist_ok=True)
        (out / "scenario.json").write_text(json.dumps(
            {**scenario.to_dict(), "flows": [f.to_dict() for f in flows]}, indent=1,
            default=str))
    # rank 0 builds into the run's folder, the others in a scratch folder
    with contextlib.nullcontext(None) if lead else scratch_dir("rank") as scratch:
        base = out if scratch is None else Path(scratch)
        share, plans, qps, timings = _run_share(scenario, flows, engine, ranks, base, progress,
                                                say, observer, p4_executor(executor),
                                                strict=executor == "cython")
    shares = [share] if ranks is None else ranks.comm.gather(share, root=0)
    results: dict[str, Any] | None = None
    if lead:
        assert shares is not None
        results = _finish(scenario, out, flows, plans, qps, shares, ranks, started, timings,
                          say)
    if ranks is not None:
        results = ranks.comm.bcast(results, root=0)
    assert results is not None
    return results


def _run_share(scenario: Scenario, flows: list, engine: Any, ranks: Ranks | None, base: Path,
               progress: bool, say: Callable[[str], None], observer: Any = None,
               executor: str = "cython", strict: bool = False
               ) -> tuple[RankShare, list, list, dict[str, float]]:
    """Build this rank's part (the whole fabric on one engine), run it,
    and collect what it measured."""
    from emulator.sim.fabric import SimFabric
    from emulator.targets.builtin.marks import install_marks
    from emulator.targets.builtin.queue_control import queue_series_with_counts
    from emulator.traffic.agent.agent import Agent
    from emulator.traffic.agent.config import parse_config

    plans = collective_plans(scenario)
    graph = [op for plan in plans for op in plan.ops]
    qps = plan_qps(scenario, flows)
    topo = scenario.topology
    servers = agent_servers(scenario, qps)
    bin_s = series_bin_s(scenario.duration_s)
    wall = time.perf_counter()
    timings: dict[str, float] = {}
    share = RankShare(0 if ranks is None else ranks.rank)
    say(f"building {topo.name} on the virtual clock")
    fabric = SimFabric(topo, engine, settings=to_fabric_settings(scenario), seed=scenario.seed,
                       buffer_bytes=scenario.switches.buffer_bytes, workdir=base / "fabric",
                       sample_interval_s=bin_s, local=None if ranks is None else ranks.local,
                       outboxes=None if ranks is None else ranks.by_name,
                       executor=executor)
    p4_code: dict[str, str] = {}
    mine = [s for s in servers if fabric.is_local(s)]
    nodes: dict[str, Any] = {}
    error: BaseException | None = None
    drive_wall_s = 0.0
    try:
        try:
            fabric.start()
            p4_code = fabric.p4_executor()
            if strict and p4_code["p4_executor"] != "cython":
                raise ScenarioError(f"--executor cython: {p4_code.get('p4_executor_note')}")
            say("P4 code: compiled (Cython)" if p4_code["p4_executor"] == "cython" else
                f"P4 code: Python ({p4_code.get('p4_executor_note') or 'asked for'})")
            for switch in fabric.switches.values():  # CE marks per queue, in the series
                install_marks(switch)
            actions = SimFabricActions(fabric)
            apply_buffer_overrides(scenario, actions)
            timings["fabric_up_s"] = round(time.perf_counter() - wall, 3)
            configs = build_agent_configs(scenario, flows, 0.0, qps, graph,
                                          jobs=[w for job in job_plans(scenario)
                                                for w in job.works],
                                          dcqcn_time_scale=1.0)
            for server in servers:
                cfg = configs[server]
                cfg["run"]["series_bin_ms"] = bin_s * 1e3
                for nic in cfg["nics"]:
                    # nothing wakes late on this clock: a pacer behind "now" is
                    # idle credit, never lag to catch up
                    nic["max_lag_us"] = 0.0
                if ranks is None or ranks.lead:
                    (base / "agents" / f"{server}.config.json").write_text(
                        json.dumps(cfg, indent=1))
                if server not in mine:
                    continue
                intfs = [nic["name"] for nic in cfg["nics"]]
                agent = Agent(parse_config(cfg), fabric.backends(intfs), 0.0)
                nodes[server] = fabric.attach(server, agent)
            start_sim_captures(scenario, fabric, base)
            _schedule_events(scenario, qps, flows, fabric, actions, nodes, share)
            if observer is not None:  # the web view: reads only, so the run is the same
                from emulator.view.sources import sim_sampler
                observer.on_start(scenario, qps, target="sim")
                engine.every(bin_s, sim_sampler(fabric, nodes, observer))
            timings["agents_ready_s"] = round(time.perf_counter() - wall, 3)
        except (Exception, KeyboardInterrupt) as exc:  # told to every rank
            error = exc
        checkpoint(ranks, error, "building the fabric")
        driving = time.perf_counter()
        done = _work_done_check(scenario, qps, nodes, fabric, ranks)
        with settled_collector():
            end, stats = _drive(scenario, engine, fabric, ranks, progress, share, done)
        drive_wall_s = time.perf_counter() - driving
        timings["traffic_end_s"] = round(time.perf_counter() - wall, 3)
        for server, node in nodes.items():
            node.agent.stop("work done" if share.work_done else "duration", end)
            share.agent_stats[server] = node.agent.snapshot(end)
        assert fabric.controller is not None
        for sw in fabric.local_switches:
            share.counters[sw.name] = fabric.controller.read_counters(
                sw.name, [p.number for p in sw.ports])
            switch = fabric.switches[sw.name]
            share.queue_stats[sw.name] = json.loads(json.dumps(switch.port_stats()))
            share.queue_series[sw.name] = {**queue_series_with_counts(switch),
                                           "unix_offset_s": 0.0}
        timings["collected_s"] = round(time.perf_counter() - wall, 3)
        share.end_s = end
    finally:
        fabric.stop()  # closes the pcaps too
    share.nic_wire_wait = {gpu: end_.queued_s for gpu, end_ in fabric.nic_ends.items()
                           if fabric.is_local(topo.gpu(gpu).server)}
    share.frames_to_idle_gpus = fabric.sink.frames
    share.lost_on_down_links = sum(link.lost_in_flight for link in fabric.links.values())
    # wall_s: the run's own wall time on this rank, waits for the others
    # included; cpu_s: this process's CPU time in its engine
    share.engine = {"events": engine.events, "hops": engine.deliveries,
                    "wall_s": round(drive_wall_s if ranks is not None else engine.wall_s, 3),
                    "cpu_s": round(engine.cpu_s, 3), **p4_code,
                    **({} if stats is None else stats.to_dict())}
    if ranks is not None and not ranks.lead:
        share.files = {str(path.relative_to(base)): path.read_bytes()
                       for folder in (base / "pcaps", base / "fabric" / "pcap")
                       if folder.is_dir() for path in sorted(folder.rglob("*.pcap"))}
    return share, plans, qps, timings


def _finish(scenario: Scenario, out: Path, flows: list, plans: list, qps: list,
            shares: list[RankShare], ranks: Ranks | None, started: float,
            timings: dict[str, float], say: Callable[[str], None]) -> dict[str, Any]:
    """Rank 0 (or the one engine): merge the shares, write results.json,
    the CSVs, the plots and the pcaps."""
    merged = merge(shares, scenario)
    for rel, data in merged.files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    errors = list(merged.errors)
    for server, stats in merged.agent_stats.items():
        (out / "agents" / f"{server}.stats.json").write_text(json.dumps(stats))
    servers = agent_servers(scenario, qps)
    agent_stats: dict[str, dict[str, Any] | None] = {
        s: merged.agent_stats.get(s) for s in servers}
    captures: dict[str, Any] = {}
    plan = sim_capture_plan(scenario, out)
    if plan:
        captures.update(collect_captures(plan, scenario.capture.max_packets, errors))
        shutil.rmtree(out / "fabric" / "pcap", ignore_errors=True)
    for point in scenario.capture.points:
        if point.port is None:
            path = out / "pcaps" / f"{point.node.replace('/', '-')}.pcap"
            captures[str(point)] = gpu_capture_result(path, scenario.capture.max_packets)
    end = merged.end_s
    timings["total_s"] = round(time.perf_counter() - started, 3)
    figures = [share.engine for share in shares]
    events = sum(f["events"] for f in figures)
    hops = sum(f["hops"] for f in figures)
    wall_s = max(f["wall_s"] for f in figures)
    cpu_s = sum(f["cpu_s"] for f in figures)
    run_wall = max(wall_s, 1e-9)
    sim_block = {"events": events, "hops": hops,
                 "simulated_s": round(end, 9), "wall_s": round(wall_s, 3),
                 "cpu_s": round(cpu_s, 3),
                 "events_per_wall_s": round(events / run_wall),
                 "hops_per_wall_s": round(hops / run_wall),
                 "hops_per_cpu_s": round(hops / max(cpu_s, 1e-9)),
                 "series_bin_s": series_bin_s(scenario.duration_s), "seed": scenario.seed,
                 # time frames waited for a NIC's wire (the NIC paced faster
                 # than its line): 0 unless the agent's pacing is off
                 "nic_wire_wait_s": round(sum(merged.nic_wire_wait.values()), 9),
                 # frames the switches sent to GPUs that run no agent (nothing to receive them)
                 "frames_to_idle_gpus": merged.frames_to_idle_gpus,
                 "lost_on_down_links": merged.lost_on_down_links,
                 "ranks": 1 if ranks is None else ranks.size,
                 # what ran the P4 code (rank 0's switches) and the engine, data
                 # plane and agents (compiled or Python, emulator.speedups): machine figures
                 **{k: v for k, v in figures[0].items() if k.startswith("p4_executor")},
                 "speedups": speedups_state()}
    if ranks is not None:
        sim_block.update(rank_figures(shares, ranks))
    extra: dict[str, Any] = {"events": [e[3] for e in merged.events], "errors": errors,
                             "timings": timings, "sim": sim_block,
                             # only sized work: the run ends once it is done
                             "ended": {"reason": "stopped" if merged.partial
                                       else "work done" if shares[0].work_done
                                       else "duration reached", "at_s": round(end, 9)}}
    if scenario.ignored_time_scale is not None:
        extra["ignored_time_scale"] = scenario.ignored_time_scale
    if captures:
        extra["captures"] = captures
    return finish_run(RunRecord(scenario, "sim", out, flows, qps, plans, agent_stats,
                                merged.counters, merged.queue_stats, merged.queue_series, 0.0,
                                end, merged.partial, extra, job_plans(scenario)), say)


def with_scale_up_tier(scenario: Scenario) -> Scenario:
    """``scenario`` on its topology with the scale-up switches and links
    built in (:func:`~emulator.topology.scale_up_tier`); itself without a
    ``scale_up`` key, so such runs are what they always were."""
    tiered = scale_up_tier(scenario.topology)
    return scenario if tiered is scenario.topology else replace(scenario, topology=tiered)


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
                     actions: SimFabricActions, nodes: dict[str, Any], share: RankShare) -> None:
    """Every scenario event this engine's part takes as an engine call at
    its time (storms handed to their agent now); the feeder's ticks for the
    fed flows its agents send. Records go to ``share.events``."""
    from emulator.traffic.agent.storm import storm_request as agent_storm_request

    engine = fabric.engine
    ops = {f.id: ("write" if f.op == "read" else f.op) for f in flows}
    chunk_s = sim_feed_chunk_s(scenario, qps)
    feeder = Feeder(scenario, [q for q in qps if q.src_server in nodes], ops, chunk_s=chunk_s)
    for index, event in enumerate(scenario.events):
        if event.kind in STORM_EVENTS:
            server, request = storm_request(scenario, event, event.at_s)
            if server not in nodes:
                continue
            node = nodes[server]
            answer = agent_storm_request(node.agent, request, 0.0)
            engine.schedule(node)
            share.events.append((0, index, 0.0, storm_record(event, request, answer, 0.0)))
            continue
        if event.kind in LINK_EVENTS and frozenset(event.link or ()) not in fabric.links:
            continue  # neither end runs here
        engine.call_at(event.at_s, _event_call(index, event, feeder, actions, share), key=index)
    if not feeder.states:
        return

    # What Feeder.tick reads of an agent's status, for the fed queue pairs only
    # (a tick every 10 us must not build every agent's whole status).
    fed = {}
    for st in feeder.states:
        fed.setdefault(st.qp.src_server, []).append(st.qp.qpn)

    def feed(now: float) -> bool:
        status = {}
        for server, qpns in fed.items():
            agent_qps = nodes[server].agent.qps
            status[server] = {"qps": {str(n): {"outstanding": len(agent_qps[n].msgs),
                                               "error": agent_qps[n].error}
                                      for n in qpns if n in agent_qps}}
        for server, qpn, size, op in feeder.tick(now, status):
            nodes[server].agent.post(qpn, op, size, now)
            engine.schedule(nodes[server])
        return not all(st.stopped for st in feeder.states)
    engine.every(chunk_s / 2, feed, key=FEEDER_CALL_KEY)


def _event_call(index: int, event: EventSpec, feeder: Feeder, actions: SimFabricActions,
                share: RankShare) -> Callable[[float], None]:
    def apply(now: float) -> None:
        share.events.append((1, index, now, apply_event(event, feeder, actions, round(now, 9))))
    return apply


def _work_done_check(scenario: Scenario, qps: list, nodes: dict[str, Any], fabric: Any,
                     ranks: Ranks | None) -> Callable[[float], bool] | None:
    """With only sized work (every flow sized, none stopped by an event):
    a check, the same on every rank, whether at ``t`` all of it is done
    (every byte acknowledged, every work-graph entry posted, every event
    past) and the fabric has drained (no switch holds a frame); None when
    the run must go to its duration. With ranks, each counts its own agents
    and switches and they add up their counts (one allgather)."""
    if (not qps and not scenario.jobs) or not all(q.size_bytes for q in qps) \
            or stopped_flows(scenario):
        return None
    sized = sum(q.size_bytes for q in qps)
    last_event_s = max((e.at_s for e in scenario.events), default=0.0)
    agents = [node.agent for node in nodes.values()]
    dataplanes = [fabric.switches[sw.name].dataplane for sw in fabric.local_switches]

    def done(t: float) -> bool:
        acked = sum(qp.counters.bytes_acked for a in agents for qp in a.qps.values())
        pending = sum(a.graph.pending() for a in agents)
        busy = sum(dp.next_deadline() is not None for dp in dataplanes)
        if ranks is not None:
            counts = ranks.comm.allgather((acked, pending, busy))
            acked, pending, busy = (sum(c[i] for c in counts) for i in range(3))
        return t >= last_event_s and acked >= sized and not pending and not busy
    return done


def _drive(scenario: Scenario, engine: Any, fabric: Any, ranks: Ranks | None,
           show_progress: bool, share: RankShare,
           done: Callable[[float], bool] | None = None) -> tuple[float, WindowStats | None]:
    """Run the engine to the duration (in windows with the other ranks),
    with a progress bar in simulated time: the time every rank has reached.
    With ``done`` (:func:`_work_done_check`) the run goes in steps of one
    series bin and ends at the first step's end where all work is done
    (``share.work_done``). Ctrl-C ends the run early, with what was
    measured (``share.partial``)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    duration = scenario.duration_s
    step_s = duration if done is None else series_bin_s(duration)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                  TextColumn("{task.fields[clock]}"), TimeRemainingColumn(),
                  disable=not show_progress, transient=False) as bar:
        what = f"{scenario.name} (sim)" if ranks is None else \
            f"{scenario.name} (sim, {ranks.size} ranks)"
        task = bar.add_task(what, total=duration, clock="")
        last = [time.perf_counter()]

        def progress(t: float) -> None:
            now = time.perf_counter()
            if now - last[0] >= PROGRESS_EVERY_WALL_S:
                last[0] = now
                bar.update(task, completed=t, clock=_clock_text(t, duration, engine.events))

        stats = None if ranks is None else WindowStats()
        end = 0.0
        try:
            k = 0
            while True:
                k += 1
                until = min(k * step_s, duration)
                if ranks is None:
                    engine.run(until, on_progress=progress, progress_every=2000)
                else:
                    assert stats is not None
                    part = run_windows(engine, ranks.comm, until, ranks.part.lookahead_s,
                                       ranks.outboxes, fabric.ends_by_key, on_window=progress,
                                       stop_requested=stop_requested if ranks.lead else None)
                    stats.windows += part.windows
                    stats.sent_frames += part.sent_frames
                    stats.wait_s += part.wait_s
                    stats.end_s = part.end_s
                    if part.interrupted:
                        raise KeyboardInterrupt
                end = until
                if until >= duration:
                    break
                if done is not None and done(until):
                    share.work_done = True
                    break
        except KeyboardInterrupt:
            share.partial = True
            end = engine.clock.now if stats is None or not stats.end_s else stats.end_s
            share.errors.append("interrupted (Ctrl-C): results are partial")
        bar.update(task, completed=end, clock=_clock_text(end, duration, engine.events))
    return end, stats


def _clock_text(t: float, duration: float, events: int) -> str:
    unit, k = (("s", 1.0) if duration >= 1 else ("ms", 1e3) if duration >= 1e-3
               else ("us", 1e6))
    return f"t={t * k:.3f}/{duration * k:.3f} {unit}, {events:,} events"
