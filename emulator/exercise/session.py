"""One run of a tutorials exercise, as ``make run`` does it (the tutorials'
``run_exercise.py``): compile, bring the network up, run each host's
commands, program each switch from its runtime JSON; then the Mininet CLI
or a ping check; teardown always, on leaving the ``with`` block.

    with ExerciseSession(read_exercise("exercises/basic")) as run:
        run.ping_all()      # {"pairs": 12, "pairs_ok": 12, ...}

Files land where the tutorials put them: ``build/`` (compiled programs),
``logs/`` (switch logs, P4Runtime requests), ``pcaps/`` (captures).
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from emulator.exercise.build import Build, build_exercise
from emulator.exercise.errors import ExerciseError
from emulator.exercise.program import Programmed, program_switch
from emulator.exercise.spec import Exercise, Topology, load_topology
from emulator.network.exercise_net import (
    ExerciseHost, ExerciseLayout, ExerciseNetwork, ExercisePort, ExerciseSwitch,
)
from emulator.network.lifecycle import NetworkOptions

PING_COUNT = 3
PING_WAIT_S = 2


@dataclass
class ExerciseSession:
    exercise: Exercise
    say: Callable[[str], None] = print
    options: NetworkOptions = field(default_factory=NetworkOptions)
    pcaps: bool = True

    def __post_init__(self) -> None:
        self.topology: Topology = load_topology(self.exercise.topology_path)
        self.build: Build | None = None
        self.network: ExerciseNetwork | None = None
        self.programmed: list[Programmed] = []
        self.layout: ExerciseLayout | None = None

    @property
    def directory(self) -> Path:
        return self.exercise.directory

    def __enter__(self) -> "ExerciseSession":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._check_switch_files()
        self.build = build_exercise(self.exercise)
        for compiled in self.build.programs:
            self.say(f"compiled {compiled.source}: {compiled.tables} tables, {compiled.actions} "
                     f"actions -> {compiled.device_config.relative_to(self.directory)}")
        self.layout = self._layout(self.build)
        self.network = ExerciseNetwork(self.layout, self.directory / "logs",
                                       self.directory / "pcaps" if self.pcaps else None,
                                       self.options)
        self.network.start()
        self._run_host_commands()
        self._program_switches()

    def stop(self) -> None:
        if self.network is not None:
            network, self.network = self.network, None
            network.stop()

    # Building the layout from topology.json.

    def _check_switch_files(self) -> None:
        where = self.topology.path
        for switch in self.topology.switches:
            if switch.cli_input is not None:
                raise ExerciseError(
                    f"{where}: switches.{switch.name}.cli_input: simple_switch_CLI commands need "
                    "BMv2's Thrift server, which aifabric-switch has not; use runtime_json")
            if switch.runtime_json is not None and not (self.directory / switch.runtime_json).is_file():
                raise ExerciseError(f"{where}: switches.{switch.name}.runtime_json: "
                                    f"{switch.runtime_json}: no such file")

    def _layout(self, build: Build) -> ExerciseLayout:
        ports: dict[str, list[ExercisePort]] = {s.name: [] for s in self.topology.switches}
        hosts = {h.name: h for h in self.topology.hosts}
        nics = []
        for link in self.topology.links:
            if link.host is not None:
                host = hosts[link.host]
                nics.append(ExerciseHost(host.name, host.mac, host.ip, host.prefix_len,
                                         link.switch_b, link.port_b, link.rate_bps))
                ports[link.switch_b].append(ExercisePort(link.port_b, host.name, 0,
                                                         link.rate_bps, link.delay_us))
            else:
                assert link.switch_a is not None and link.port_a is not None
                ports[link.switch_a].append(ExercisePort(link.port_a, link.switch_b, link.port_b,
                                                         link.rate_bps, link.delay_us))
                ports[link.switch_b].append(ExercisePort(link.port_b, link.switch_a, link.port_a,
                                                         link.rate_bps, link.delay_us))
        switches = []
        for switch in self.topology.switches:
            config = build.default.device_config
            if switch.program is not None:
                config = self.directory / switch.program
                if not config.is_file():
                    raise ExerciseError(f"{self.topology.path}: switches.{switch.name}.program: "
                                        f"{switch.program}: no such file")
            if switch.cpu_port is not None and switch.cpu_port in {p.port for p in ports[switch.name]}:
                raise ExerciseError(f"{self.topology.path}: switches.{switch.name}.cpu_port: "
                                    f"{switch.cpu_port} is also a linked port")
            switches.append(ExerciseSwitch(switch.name, switch.index, tuple(ports[switch.name]),
                                           str(config.resolve()), switch.cpu_port,
                                           switch.priority_queues))
        order = {h.name: i for i, h in enumerate(self.topology.hosts)}
        nics.sort(key=lambda n: order[n.name])
        return ExerciseLayout(self.directory.resolve().name, tuple(nics), tuple(switches))

    # After bring-up.

    def _run_host_commands(self) -> None:
        assert self.network is not None
        for host in self.topology.hosts:
            node = self.network.host(host.name)
            for command in host.commands:
                output = node.cmd(f"{command}; echo aifabric-status=$?")
                lines = [line for line in output.strip().splitlines() if line.strip()]
                status = lines[-1].rpartition("=")[2] if lines else "?"
                if status != "0":
                    said = lines[0] if len(lines) > 1 else "no output"
                    self.say(f"note: {host.name}: '{command}' exited with {status}: {said}")

    def _program_switches(self) -> None:
        assert self.network is not None
        network = self.network
        addresses = network.switch_addresses()
        jobs = []
        for switch in self.topology.switches:
            if switch.runtime_json is None:
                self.say(f"warning: no control plane file for switch {switch.name} "
                         "(no runtime_json): it runs its program with empty tables")
                continue
            jobs.append((switch.name, addresses[switch.name], switch.index,
                         self.directory / switch.runtime_json,
                         self.directory / "logs" / f"{switch.name}-p4runtime-requests.txt"))
        with ThreadPoolExecutor(max_workers=max(1, min(4, len(jobs)))) as pool:
            futures = [pool.submit(program_switch, name, address, device_id, path,
                                   self.directory, log) for name, address, device_id, path, log in jobs]
            self.programmed = [f.result() for f in futures]
        for done in self.programmed:
            self.say(f"{done.switch}: programmed from "
                     f"{Path(done.runtime_json).relative_to(self.directory)}: {done.entries} "
                     f"table entries, {done.groups} multicast groups, {done.clone_sessions} "
                     "clone sessions")

    def describe(self) -> list[str]:
        """What the tutorials' runner prints before its CLI."""
        assert self.network is not None and self.layout is not None
        lines = []
        for switch in self.layout.switches:
            config = Path(switch.device_config or "--no-p4")
            shown = config.relative_to(self.directory.resolve()) if config.is_absolute() and \
                self.directory.resolve() in config.parents else config
            lines.append(f"{switch.name} -> gRPC port {self.network.grpc_port(switch)}, device id "
                         f"{switch.index}, started with {shown}")
        for nic in self.layout.hosts:
            lines.append(f"{nic.name}: eth0 {nic.ip}/{nic.prefix_len} {nic.mac} "
                         f"(to {nic.switch} port {nic.port})")
        return lines

    def ping_all(self) -> dict:
        """Ping every ordered pair of hosts (``ping -c 3``; a pair answered
        when one reply came back), all pairs at once."""
        assert self.network is not None
        pairs = [(a, b) for a in self.topology.hosts for b in self.topology.hosts if a is not b]
        procs = []
        for src, dst in pairs:
            netns = self.network.netns_name(src.name)
            cmd = ["ip", "netns", "exec", str(netns), "ping", "-n", "-q", "-c", str(PING_COUNT),
                   "-i", "0.2", "-W", str(PING_WAIT_S), dst.ip]
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        failed = []
        for (src, dst), proc in zip(pairs, procs):
            if proc.wait(timeout=PING_COUNT * 0.2 + PING_WAIT_S + 10) != 0:
                failed.append([src.name, dst.name])
        self.network.check()
        return {"exercise": str(self.directory), "run_id": self.network.run_id,
                "topology": str(self.exercise.topology_path),
                "program": str(self.exercise.default_program), "hosts": len(self.topology.hosts),
                "switches": len(self.topology.switches), "pairs": len(pairs),
                "pairs_ok": len(pairs) - len(failed), "failed": failed,
                "bringup_s": round(self.network.timings.get("bringup_s", 0.0), 2)}
