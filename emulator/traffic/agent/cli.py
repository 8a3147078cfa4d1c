"""``aifabric-agent`` / ``python -m emulator.traffic.agent``: run one agent.

Start it inside the server's network namespace, as root (raw sockets)::

    ip netns exec h1 python -m emulator.traffic.agent --config agent.json \\
        --stats h1-stats.json --control /tmp/h1.sock [--duration 10]

It opens every NIC of the config, prints one JSON line
``{"event": "ready", ...}`` on stdout, runs the workload and the control
channel (:mod:`.control`) until the duration is up, a ``stop`` request,
SIGTERM or SIGINT, then writes the stats file (atomically) and exits 0.
The stats are written on every exit path but SIGKILL, errors included
(then the exit status is 1). Configuration errors exit 2 before anything
starts. The config format is described in :mod:`.config`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import Any, Callable

from emulator.fidelity.process import tighten_timer_slack
from emulator.traffic.agent.agent import Agent
from emulator.traffic.agent.backends import RawNic
from emulator.traffic.agent.config import AgentConfig, ConfigError, load_config
from emulator.traffic.agent.control import ControlServer
from emulator.traffic.agent.loop import EventLoop
from emulator.traffic.agent.scale_up import ScaleUpSwitch
from emulator.traffic.agent.stats import write_stats


def scale_up_switch(config: AgentConfig, backends: dict[str, Any],
                    clock: Callable[[], float] = time.monotonic) -> ScaleUpSwitch | None:
    """The server's scale-up switch in this process, with a port in ``backends``
    for each NIC that is a GPU's scale-up port (``scale_up_hop_s``); None without."""
    ports = [(i, nic) for i, nic in enumerate(config.nics) if nic.scale_up_hop_s is not None]
    if not ports:
        return None
    first = ports[0][1]
    switch = ScaleUpSwitch(first.line_rate_bps, first.scale_up_hop_s or 0.0, clock,
                           overhead_bytes=first.overhead_bytes)
    for index, nic in ports:
        backends[nic.name] = switch.port(nic.name, nic.ip, index)
    return switch


def run_agent(config: AgentConfig, *, announce: bool = True) -> dict[str, Any]:
    """Run an agent on raw sockets until it stops; returns its final stats
    (also written to ``config.run.stats_path`` when set)."""
    tighten_timer_slack()
    backends: dict[str, Any] = {}
    agent = loop = control = None
    error: BaseException | None = None
    try:
        switch = scale_up_switch(config, backends)
        for nic in config.nics:
            if nic.name not in backends:
                backends[nic.name] = RawNic(nic.name, ip=nic.ip,
                                            swallow_udp=config.run.swallow_udp,
                                            max_frame_bytes=nic.mtu_bytes + 64,
                                            tx_ring=config.run.tx_ring)
        now = time.monotonic()
        wall_offset = time.time() - time.monotonic()
        agent = Agent(config, backends, now, wall_offset=wall_offset)
        if switch is not None:
            switch.attach(agent.timers.schedule, agent.on_frame)
        loop = EventLoop(agent, [backends[n.name] for n in config.nics])
        loop.stop_on_signals()
        if config.run.control_socket:
            control = ControlServer(agent, loop, config.run.control_socket)
        if announce:
            print(json.dumps({"event": "ready", "agent": config.name,
                              "control": config.run.control_socket,
                              "nics": [n.name for n in config.nics]}), flush=True)
        reason = loop.run()
        if not agent.stopped:
            agent.stop(reason, time.monotonic())
    except BaseException as exc:
        error = exc
        raise
    finally:
        snapshot: dict[str, Any] = {}
        if agent is not None:
            now = time.monotonic()
            if not agent.stopped:
                agent.stop(f"error: {error!r}" if error else "stop", now)
            snapshot = agent.snapshot(now)
            if loop is not None:
                snapshot["loop_turns"] = loop.turns
                snapshot["fidelity"] = loop.fidelity(agent.wall)
            if config.run.stats_path:
                write_stats(config.run.stats_path, snapshot)
        if control is not None:
            control.close()
        if loop is not None:
            loop.close()
        for io in backends.values():
            io.close()
    return snapshot


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aifabric-agent",
        description="RoCEv2 host NIC agent: run inside a server's network namespace.")
    parser.add_argument("--config", required=True, help="agent JSON config")
    parser.add_argument("--stats", help="write the stats JSON here on exit (overrides run.stats_path)")
    parser.add_argument("--control", help="unix socket for the control channel "
                                          "(overrides run.control_socket)")
    parser.add_argument("--duration", type=float, help="stop after this many seconds")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"aifabric-agent: {exc}", file=sys.stderr)
        return 2
    run = config.run
    changes: dict[str, Any] = {}
    if args.stats:
        changes["stats_path"] = args.stats
    if args.control:
        changes["control_socket"] = args.control
    if args.duration is not None:
        if args.duration < 0:
            print("aifabric-agent: --duration must not be negative", file=sys.stderr)
            return 2
        changes["duration_s"] = args.duration
    config = dataclasses.replace(config, run=dataclasses.replace(run, **changes))
    try:
        run_agent(config)
    except OSError as exc:
        print(f"aifabric-agent: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # the stats are written; say what went wrong
        print(f"aifabric-agent: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0
