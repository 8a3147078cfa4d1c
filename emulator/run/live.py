"""A scenario run live (root): build → program → drive → collect → teardown.

:func:`run_live` (the built-in or BMv2 target; :func:`emulator.run.run_scenario`
dispatches here):

1. expands the workload (flows, generators, collectives) and plans the
   queue pairs; a flow inside a scale-up domain of several servers is
   refused in one line (:func:`refuse_scale_up_flows`: the live fabric has
   no scale-up tier; a server's own is timed inside its agent);
2. brings the fabric up and programs it (:class:`FabricSession` with
   :func:`to_fabric_settings`, per-port ECN/PFC overrides included, and the
   scenario's buffer; per-port buffer overrides are applied afterwards over
   QueueControl, built-in target, through :mod:`.events`);
3. reads every switch's P4 counters as a baseline (they cannot be reset over
   P4Runtime) and resets the built-in switches' queue statistics;
4. starts one NIC agent per server that sends or receives, inside its
   namespace, with a common ``start_at_unix`` a little in the future
   (:data:`START_MARGIN_S` + :data:`START_PER_AGENT_S` per agent), and
   waits for every ``ready``;
5. runs until ``start_at_unix + duration``, or, when every flow is sized
   and no event is left, until every byte is acknowledged: every :data:`TICK_S` it applies
   due events (``stop_flow``; ``link_down``/``link_up`` set the switch-side
   interfaces of the link down/up in the root namespace: no failure
   detection or re-routing, so ECMP keeps hashing onto a down link, as a
   fabric does before its routing converges; :mod:`.events`), feeds fed
   flows (:class:`~.feeder.Feeder`) and, every
   :data:`STATS_EVERY_S`, polls the agents' status (bytes acknowledged)
   for the progress bar.
   PFC storm events (``pfc_storm_start``/``pfc_storm_stop``) are handed to
   the storming GPU's agent before the start, with their Unix time: its own
   timer starts and stops the pauses on time (an agent runs for that
   server even when it has no flow);
6. stops the agents (SIGTERM; they write their stats), reads the switches'
   counters, queue stats and fidelity counters, tears the fabric down
   (always), judges whether the run kept up (:mod:`emulator.fidelity.verdict`:
   switch and agent lateness, lag given up, overruns, the machine's CPU use
   sampled during the traffic by :mod:`emulator.fidelity.cpu`; results.json's
   ``fidelity`` block and
   ``behind.csv``, the spans where the host fell behind), and writes
   ``results.json``, ``flows.csv``, ``ports.csv``, ``links.csv`` (per-link
   bytes and utilisation, :mod:`emulator.measure.links`) into ``out_dir`` (the
   agents' configs, stats and stderr under ``out_dir/agents``), the time
   series ``queues.csv`` (built-in switches' queue depths, fetched before
   teardown), ``rates.csv`` (DCQCN rates), ``series.csv`` (per-QP bytes,
   CE marks and CNPs per time bin) and ``pauses.csv`` (switch and host PFC
   pause intervals, :mod:`emulator.measure.run_series`), and their plots
   ``queue_depth.png``, ``flow_rates.png``, ``pauses.png`` and
   ``ecn_cnp.png`` (:mod:`emulator.measure.plots`),
   and ``utilisation.png``, the fabric coloured by link utilisation;
7. with ``capture`` points (switch ports, built-in target), the switches ran
   with ``--pcap``: each point's received and sent frames are merged in time
   order into ``out_dir/pcaps/<switch>-p<port>.pcap`` (the first
   ``max_packets``; results say how many were seen), then the raw per-port
   pcaps are removed (:mod:`.captures`). A GPU point runs tcpdump on the
   GPU's interface in its server's namespace (:mod:`.gpu_capture`) into
   ``out_dir/pcaps/srvS-gpuR.pcap``, any target.

Ctrl-C during the run stops the traffic early: what was measured is kept
and the results say ``partial: true``. Agents run in their own session so a
terminal's Ctrl-C reaches the runner only.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from emulator.control.fabric_plan import LIVE_RESPONSE_NS
from emulator.fidelity.cpu import CpuSampler
from emulator.fidelity.verdict import judge, write_behind_csv
from emulator.measure.results import counter_delta
from emulator.run.agent_config import agent_servers, build_agent_configs
from emulator.run.agent_process import AgentProcess, wait_ready
from emulator.run.captures import collect_captures, live_capture_plan
from emulator.run.events import (
    LINK_EVENTS, STORM_EVENTS, apply_buffer_overrides, apply_event, storm_record, storm_request,
)
from emulator.run.feeder import Feeder
from emulator.run.gpu_capture import GpuCapture
from emulator.run.qps import plan_qps
from emulator.run.record import RunRecord, finish_run
from emulator.scenario.errors import ScenarioError
from emulator.scenario.fabric import to_fabric_settings
from emulator.scenario.scale import emulated, emulation_warnings
from emulator.scenario.spec import RETH_BYTES, FlowSpec, Scenario
from emulator.scenario.workload import collective_plans, expand_workload, job_plans
from emulator.traffic.agent.backends import refusal_line
from emulator.traffic.roce import ETH_HEADER_BYTES

TICK_S = 0.05
STATS_EVERY_S = 0.5
START_MARGIN_S = 1.5
START_PER_AGENT_S = 0.25
READY_TIMEOUT_S = 60.0
SAFETY_S = 30.0
# NIC agents' SCHED_FIFO priority while they stay light (RealtimeGuard).
AGENT_REALTIME_PRIORITY = 10


def link_interfaces(scenario: Scenario, switch_ifaces: dict[str, dict[int, str]],
                    link: tuple[str, str]) -> list[str]:
    """Root-namespace interfaces of the switch ends of ``link``."""
    a, b = link
    out = []
    for lk in scenario.topology.links:
        ends = {lk.node_a, lk.node_b} | ({lk.gpu} if lk.gpu else set())
        if a in ends and b in ends:
            for node, port in ((lk.node_a, lk.port_a), (lk.node_b, lk.port_b)):
                if node in switch_ifaces and port in switch_ifaces[node]:
                    out.append(switch_ifaces[node][port])
            return out
    raise ScenarioError(f"{scenario.source}: no link between {a} and {b}")


class LiveFabricActions:
    """:class:`~.events.FabricActions` of a live fabric: buffers over the
    built-in switches' QueueControl (a BMv2 switch keeps the default), links
    by their switch-side interfaces in the root namespace."""

    def __init__(self, scenario: Scenario, net: Any, qclients: dict[str, Any]) -> None:
        self.scenario = scenario
        self.qclients = qclients
        self.switch_ifaces: dict[str, dict[int, str]] = net.switch_interfaces() if any(
            e.kind in LINK_EVENTS for e in scenario.events) else {}

    def set_port_buffer(self, switch: str, port: int, buffer_bytes: int) -> None:
        if switch in self.qclients:
            self.qclients[switch].set_port_config(port, buffer_bytes=buffer_bytes)

    def set_link_state(self, link: tuple[str, str], up: bool) -> dict[str, Any]:
        ifaces = link_interfaces(self.scenario, self.switch_ifaces, link)
        for iface in ifaces:
            subprocess.run(["ip", "link", "set", "dev", iface, "up" if up else "down"],
                           check=True, capture_output=True, timeout=10)
        return {"interfaces": ifaces}


def refuse_scale_up_flows(scenario: Scenario, flows: Sequence[FlowSpec]) -> None:
    """One line when a flow runs inside a scale-up domain that spans several
    servers: live, a server's scale-up switch is timed inside its agent
    process, which one server's GPUs share and no other server's (README
    "Scale-up")."""
    for flow in flows:
        if scenario.topology.same_domain(flow.src, flow.dst):
            domain = scenario.topology.domain_of(flow.src)
            if domain is None or len(domain.servers) == 1:
                continue
            raise ScenarioError(
                f"{scenario.source}: flow {flow.id} runs inside scale-up domain "
                f"{domain.name} of {len(domain.servers)} servers ({flow.src} -> {flow.dst}); "
                f"live runs time a scale-up switch inside one server's agent process, so a "
                f"domain must be one server (servers_per_domain: 1), or run it with "
                f"--target sim")


def run_live(scenario: Scenario, out_dir: str | Path, target: str, *, progress: bool = True,
             log: Callable[[str], None] | None = None, observer: Any = None
             ) -> dict[str, Any]:
    """Run ``scenario`` live on ``target`` (builtin or bmv2); returns the
    results (also written to ``out_dir``). ``observer``
    (:class:`emulator.view.feed.RunObserver`, the web view) is told the start
    and given a sample at every status poll."""
    out = Path(out_dir)
    say = log or (lambda _msg: None)
    scenario = emulated(scenario)  # a no-op for a loaded scenario: the loader did it
    for note in emulation_warnings(scenario):
        say(f"warning: {note}")
    flows = expand_workload(scenario)
    refuse_scale_up_flows(scenario, flows)
    plans = collective_plans(scenario)
    graph = [op for plan in plans for op in plan.ops]
    jobs = job_plans(scenario)
    switch_points = [p for p in scenario.capture.points if p.port is not None]
    if switch_points and target != "builtin":
        raise ScenarioError(f"{scenario.source}: capturing switch ports needs the builtin "
                            f"target, not {target}; capture GPUs (srvS/gpuR) instead")
    qps = plan_qps(scenario, flows)
    servers = agent_servers(scenario, qps)
    out.mkdir(parents=True, exist_ok=True)
    agent_dir = out / "agents"
    agent_dir.mkdir(exist_ok=True)
    (out / "scenario.json").write_text(json.dumps(
        {**scenario.to_dict(), "flows": [f.to_dict() for f in flows]}, indent=1, default=str))

    from emulator.network.fabric_net import NetworkOptions
    from emulator.run.session import FabricSession

    partial = False
    errors: list[str] = []
    ended: dict[str, Any] = {"reason": "stopped", "at_s": 0.0}  # until the traffic runs
    agent_stats: dict[str, dict[str, Any] | None] = {s: None for s in servers}
    counters: dict[str, Any] = {}
    queue_stats: dict[str, Any] = {}
    queue_series: dict[str, Any] = {}
    switch_fidelity: dict[str, Any] = {}
    feeding: dict[str, int] = {}
    cpu = CpuSampler()
    start_unix = end_unix = time.time()
    timings: dict[str, float] = {}
    events_done: list[dict[str, Any]] = []
    capture_files: dict[str, tuple[Path, list[Path]]] = {}
    captures: dict[str, Any] = {}
    sockdir = Path(tempfile.mkdtemp(prefix="aifabric-run-"))
    clock = time.perf_counter()
    try:
        with ExitStack() as stack:
            say(f"bringing up {scenario.topology.name} ({target})")
            session = stack.enter_context(FabricSession(
                scenario.topology, target=target, settings=to_fabric_settings(scenario),
                workdir=out / "fabric", buffer_bytes=scenario.switches.buffer_bytes,
                options=NetworkOptions(pcap=bool(switch_points), seed=scenario.seed,
                                       queue_frame_bytes=scenario.hosts.frame_bytes,
                                       mtu=interface_mtu(scenario))))
            timings["fabric_up_s"] = round(time.perf_counter() - clock, 3)
            net, ctl = session.network, session.controller
            assert net is not None and ctl is not None
            capture_files.update(live_capture_plan(scenario, net, out))
            for point in scenario.capture.points:
                if point.port is None:
                    gpu = scenario.topology.gpu(point.node)
                    capture = GpuCapture(str(point), net.netns_name(gpu.server) or "", gpu.intf,
                                         out / "pcaps" / f"{point.node.replace('/', '-')}.pcap",
                                         scenario.capture.max_packets)
                    stack.callback(lambda c=capture: captures.update(
                        {c.point: c.result(scenario.capture.max_packets)}))
                    stack.callback(capture.stop)
                    capture.wait_listening()
            addresses = net.switch_addresses()
            qclients: dict[str, Any] = {}
            if target == "builtin":
                from emulator.targets.builtin.queue_control import QueueControlClient
                for name, addr in addresses.items():
                    qclients[name] = stack.enter_context(QueueControlClient(addr))
            actions = LiveFabricActions(scenario, net, qclients)
            apply_buffer_overrides(scenario, actions)
            def read_counters(name: str) -> dict[int, dict[int, dict[str, int]]]:
                return ctl.read_counters(name, [p.number for p in
                                                scenario.topology.switch(name).ports])
            baseline = _read_all(read_counters, addresses)
            for client in qclients.values():
                client.reset_stats()
            timings["baseline_s"] = round(time.perf_counter() - clock, 3)
            # agents
            start_unix = time.time() + START_MARGIN_S + START_PER_AGENT_S * len(servers)
            configs = build_agent_configs(
                scenario, flows, start_unix, qps, graph,
                jobs=[w for job in jobs for w in job.works],
                pfc_response_ns=scenario.switches.pfc.response_ns or LIVE_RESPONSE_NS)
            for config in configs.values():  # live: agents on time on a busy machine
                config["run"]["realtime_priority"] = AGENT_REALTIME_PRIORITY
            safety = start_unix - time.time() + scenario.duration_s + SAFETY_S
            agents: dict[str, AgentProcess] = {}

            def stop_agents() -> None:
                for server, proc in agents.items():
                    stats = proc.stop()
                    if stats is None:
                        errors.append(f"agent {server}: no stats ({proc.stderr_tail()})")
                    agent_stats[server] = stats
                agents.clear()
            stack.callback(stop_agents)
            for server in servers:
                ns = net.netns_name(server)
                if ns is None:
                    raise ScenarioError(f"no namespace for server {server}")
                agents[server] = AgentProcess(server, ns, configs[server], agent_dir, sockdir,
                                              safety)
            say(f"starting {len(agents)} agents")
            wait_ready(list(agents.values()), READY_TIMEOUT_S)
            timings["agents_ready_s"] = round(time.perf_counter() - clock, 3)
            if time.time() > start_unix:
                errors.append(f"agents were ready {time.time() - start_unix:.2f} s after the "
                              "common start: the first flows started late")
            cpu.start()
            if observer is not None:  # the web view polls the switches from its own thread
                from emulator.view.sources import live_poller
                observer.on_start(scenario, qps, target=target,
                                  poll=live_poller(qclients, cpu))
            timings["drive_s"] = round(time.perf_counter() - clock, 3)
            try:
                ended = _drive(scenario, qps, flows, agents, start_unix, actions, events_done,
                               progress, feeding, observer)
            except KeyboardInterrupt:
                partial = True
                ended = _ended("stopped", max(0.0, time.time() - start_unix), scenario)
                errors.append("interrupted (Ctrl-C): results are partial")
            finally:
                cpu.stop()
            end_unix = min(time.time(), start_unix + scenario.duration_s)
            if time.time() < start_unix:
                end_unix = start_unix
            timings["traffic_end_s"] = round(time.perf_counter() - clock, 3)
            stop_agents()
            timings["agents_stopped_s"] = round(time.perf_counter() - clock, 3)
            after = _read_all(read_counters, addresses, errors)
            for name, value in after.items():
                counters[name] = counter_delta(value, baseline[name])
            if len(after) < len(addresses):
                partial = True  # keep what was measured
            queue_stats.update(_read_all(lambda n: qclients[n].get_port_stats(), qclients,
                                         errors))
            for name, emulator in session.pfc_emulators.items():  # BMv2's paused queues
                queue_stats[name] = emulator.port_stats()
            queue_series.update(_read_all(lambda n: qclients[n].get_queue_series(), qclients,
                                          errors))
            switch_fidelity.update(_read_all(lambda n: qclients[n].get_fidelity(), qclients,
                                             errors))
            timings["collected_s"] = round(time.perf_counter() - clock, 3)
    except KeyboardInterrupt:
        partial = True
        errors.append("interrupted (Ctrl-C) before the traffic ran: results are partial")
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)
    if capture_files:  # the switches have stopped: their pcaps are complete
        captures.update(collect_captures(capture_files, scenario.capture.max_packets, errors))
        shutil.rmtree(out / "fabric" / "net" / "pcap", ignore_errors=True)
    timings["total_s"] = round(time.perf_counter() - clock, 3)
    fidelity = judge(switch_fidelity, agent_stats, cpu.result(since_unix=start_unix),
                     start_unix=start_unix, end_unix=end_unix,
                     time_scale=scenario.time_scale, target=target,
                     feeder_starved=feeding.get("starved", 0), events=events_done)
    write_behind_csv(out / "behind.csv", fidelity)
    errors.extend(refused_frame_errors(agent_stats))
    return finish_run(RunRecord(scenario, target, out, flows, qps, plans, agent_stats, counters,
                                queue_stats, queue_series, start_unix, end_unix, partial,
                                {"events": events_done, "errors": errors, "timings": timings,
                                 "ended": ended,
                                 "fidelity": fidelity,
                                 **({"time_scale_choice": scenario.time_scale_choice}
                                    if scenario.time_scale_choice else {}),
                                 **({"captures": captures} if captures else {})}, jobs), say)


def _read_all(read: Callable[[str], Any], switches: Any,
              errors: list[str] | None = None) -> dict[str, Any]:
    """``read(switch)`` for every switch, in parallel (each switch is its own
    process and server); failures go to ``errors`` (raised when None)."""
    names = list(switches)
    with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
        futures = {name: pool.submit(read, name) for name in names}
    out = {}
    for name, future in futures.items():
        try:
            out[name] = future.result()
        except Exception as exc:
            if errors is None:
                raise
            errors.append(f"switch {name}: not read: {exc}")
    return out


def refused_frame_errors(agent_stats: dict[str, dict[str, Any] | None]) -> list[str]:
    """One line per NIC whose interface refused frames as too long (its
    flows stalled: every retransmission is refused again)."""
    lines = []
    for server in sorted(agent_stats):
        for nic in (agent_stats[server] or {}).get("nics", []):
            line = refusal_line(nic)
            if line is not None:
                lines.append(line)
    return lines


def interface_mtu(scenario: Scenario) -> int:
    """The veths' and switch ports' IP MTU: the network's default, or more
    where the RoCE path MTU (``hosts.mtu``) needs it for a first packet's
    frame (IP, UDP, BTH, RETH and ICRC around the payload)."""
    from emulator.network.plan import DEFAULT_MTU

    ip_bytes = scenario.hosts.frame_bytes - ETH_HEADER_BYTES + RETH_BYTES
    return max(DEFAULT_MTU, ip_bytes)


def _ended(reason: str, at_s: float, scenario: Scenario) -> dict[str, Any]:
    """Why and when (seconds since the common start, emulated; ``at_dc_s``:
    in the scenario's own units when a time scale slowed it) the run ended."""
    out: dict[str, Any] = {"reason": reason, "at_s": round(at_s, 4)}
    if scenario.time_scale != 1:
        out["at_dc_s"] = round(at_s / scenario.time_scale, 6)
    return out


def _drive(scenario: Scenario, qps: list, flows: list, agents: dict[str, AgentProcess],
           start_unix: float, actions: LiveFabricActions, events_done: list[dict[str, Any]],
           show_progress: bool, feeding: dict[str, int] | None = None,
           observer: Any = None) -> dict[str, Any]:
    """The run itself: events, feeding, progress, until the duration is up
    or, when every flow is sized (nothing fed, no event left), until every
    byte is acknowledged (the fabric holds none of it then); returns why and
    when it ended (seconds since the common start). ``feeding["starved"]``
    gets the times a fed flow ran dry; ``observer`` gets the agents' status
    of every progress poll."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from emulator.traffic.agent.control import AgentClient

    # Storms first: they are timed by the agents, and a runner slowed by a
    # busy machine must not hand them over after their time.
    clients = {s: AgentClient.wait(a.control, timeout_s=10.0) for s, a in agents.items()}
    pending = list(scenario.events)
    for event in [e for e in pending if e.kind in STORM_EVENTS]:
        pending.remove(event)
        server, request = storm_request(scenario, event, start_unix + event.at_s)
        answer = clients[server].pfc_storm(**request)
        events_done.append(storm_record(event, request, answer,
                                        round(time.time() - start_unix, 4)))
    ops = {f.id: ("write" if f.op == "read" else f.op) for f in flows}
    feeder = Feeder(scenario, qps, ops)
    feeding = {} if feeding is None else feeding
    sized = sum(q.size_bytes or 0 for q in qps)
    # only sized work: the run may end once all of it is acknowledged
    sized_only = (bool(qps) or bool(scenario.jobs)) and not feeder.states \
        and all(q.size_bytes for q in qps)
    end = start_unix + scenario.duration_s
    next_stats = 0.0
    try:
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
                      TextColumn("{task.fields[clock]}"), TimeRemainingColumn(),
                      disable=not show_progress, transient=False) as bar:
            task = bar.add_task(scenario.name, total=sized or None, clock="")
            while True:
                now = time.time()
                if now >= end:
                    return _ended("duration reached", scenario.duration_s, scenario)
                t = now - start_unix
                while pending and pending[0].at_ns / 1e9 <= t:
                    event = pending.pop(0)
                    events_done.append(apply_event(event, feeder, actions, round(t, 4)))
                status = {}
                if feeder.states and t >= 0:
                    status = {s: c.status() for s, c in clients.items()}
                    for server, qpn, size, op in feeder.tick(t, status):
                        clients[server].post(qpn, size, op)
                if now >= next_stats:
                    next_stats = now + STATS_EVERY_S
                    done = 0
                    polled = {}
                    for server, c in clients.items():
                        answer = polled[server] = status.get(server) or c.status()
                        done += sum(q["bytes_acked"] for q in answer["qps"].values())
                    if observer is not None and t >= 0:
                        observer.on_sample(t, {"agents": polled})
                    clock = f"t={max(t, 0):.1f}/{scenario.duration_s:.1f} s" if t >= 0 \
                        else f"start in {-t:.1f} s"
                    bar.update(task, completed=min(done, sized) if sized else done, clock=clock)
                    # ... and every work-graph entry done (a job's last compute too)
                    if sized_only and not pending and t >= 0 and done >= sized and not any(
                            a.get("graph_pending") for a in polled.values()):
                        return _ended("work done", t, scenario)
                time.sleep(min(TICK_S, max(0.0, end - time.time())))
    finally:
        feeding["starved"] = feeder.starved
        for c in clients.values():
            c.close()
