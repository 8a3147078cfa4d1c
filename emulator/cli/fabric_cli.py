"""Mininet CLIs with aifabric's commands added.

:class:`NetworkCLI` has what every network's switches answer (the built-in
target's QueueControl service and tcpdump on a port): ``queues SWITCH``,
``pfc SWITCH`` and ``capture SWITCH:PORT``. :class:`FabricCLI` (``aifabric
up``) adds fabric.p4's ``counters SWITCH`` and ``paths A B``; the exercise
CLI (:mod:`.exercise_cli`) adds the counters of any program."""

from __future__ import annotations

import signal
import subprocess
from typing import Any, Sequence

from mininet.cli import CLI
from scapy.utils import RawPcapReader

from emulator.network.errors import FabricInterrupted
from emulator.topology import paths


class NetworkCLI(CLI):
    """Mininet's CLI over ``network`` (a started
    :class:`~emulator.network.lifecycle.NetworkRun`) with switch commands.

    Ctrl-C interrupts the running command and the CLI goes on, as Mininet's
    does; SIGTERM and SIGHUP end the CLI and are raised again after it, so
    the caller's ``with`` block tears the network down."""

    prompt = "aifabric> "

    def __init__(self, network: Any, switch_names: Sequence[str], **kwargs: Any) -> None:
        self.network = network
        self.switch_names = list(switch_names)
        self._stopped_by: FabricInterrupted | None = None
        super().__init__(network.net, **kwargs)  # runs the command loop
        if self._stopped_by is not None:
            raise self._stopped_by

    def cmdloop(self, intro: Any = None) -> None:
        try:
            super().cmdloop(intro)
        except FabricInterrupted as exc:
            if exc.signum == signal.SIGINT:
                raise  # Mininet's CLI.run says "Interrupt" and goes on
            self._stopped_by = exc  # returning ends CLI.run's loop

    def _switch(self, line: str) -> str | None:
        name = line.strip()
        if name not in self.switch_names:
            self.stdout.write(f"usage: SWITCH, one of {', '.join(self.switch_names)}\n")
            return None
        return name

    def _stats(self, name: str) -> dict:
        from emulator.targets.builtin.queue_control import QueueControlClient

        with QueueControlClient(self.network.switch_addresses()[name]) as client:
            return client.get_port_stats()

    def do_queues(self, line: str) -> None:
        """queues SWITCH: the shared buffer, then queue depths (now, max), drops and
        the ingress priority group's bytes and headroom per port and priority."""
        name = self._switch(line)
        if name is None:
            return
        stats = self._stats(name)
        buf = stats.get("buffer")
        if buf:
            self.stdout.write(
                f"buffer: pool {buf['pool_bytes']} B (shared {buf['shared_bytes']}, headroom "
                f"{buf['headroom_bytes']}); in use shared {buf['shared_used_bytes']} (max "
                f"{buf['shared_max_bytes']}), headroom {buf['headroom_used_bytes']} (max "
                f"{buf['headroom_max_bytes']})\n")
        for port in stats["ports"]:
            for q in port["queues"]:
                if q["tx_packets"] or q["max_depth_packets"] or q["tail_dropped"] \
                        or q.get("pg_max_bytes") or q.get("headroom_overflow"):
                    self.stdout.write(
                        f"port {port['port']} prio {q['priority']}: depth {q['depth_packets']} pkts "
                        f"(max {q['max_depth_packets']}), tx {q['tx_packets']}, dropped {q['tail_dropped']}"
                        f"; ingress group {q.get('pg_bytes', 0)} B (max {q.get('pg_max_bytes', 0)}), "
                        f"headroom {q.get('headroom_used_bytes', 0)}/{q.get('headroom_bytes', 0)} B "
                        f"(max {q.get('headroom_max_bytes', 0)}), headroom_overflow "
                        f"{q.get('headroom_overflow', 0)}\n")

    def do_pfc(self, line: str) -> None:
        """pfc SWITCH: pause frames received/sent and paused time per port and priority."""
        name = self._switch(line)
        if name is None:
            return
        for port in self._stats(name)["ports"]:
            for q in port["queues"]:
                if q["pfc_rx"] or q["pfc_tx"] or q["paused_s"]:
                    self.stdout.write(f"port {port['port']} prio {q['priority']}: pfc_rx {q['pfc_rx']} "
                                      f"pfc_tx {q['pfc_tx']} (xoff {q.get('xoff_sent', 0)}, "
                                      f"xon {q.get('xon_sent', 0)}) paused {q['paused_s']:.3f}s"
                                      f"{' (paused now)' if q['paused'] else ''}"
                                      f"{' (pausing its peer)' if q.get('xoff_on') else ''}\n")

    def do_capture(self, line: str) -> None:
        """capture SWITCH:PORT [COUNT] [FILE.pcap]: capture COUNT frames (default
        100, at most 10 s) on a switch port, both directions, into a pcap
        (default SWITCH-pPORT.pcap); read it with 'aifabric inspect FILE'."""
        parts = line.split()
        example = self.switch_names[0] if self.switch_names else "SWITCH"
        usage = f"usage: capture {example}:1 [COUNT] [FILE.pcap]\n"
        if not parts or ":" not in parts[0]:
            self.stdout.write(usage)
            return
        switch, _, port_text = parts[0].partition(":")
        ports = self.network.switch_interfaces().get(switch)
        if ports is None or not port_text.isdigit() or int(port_text) not in ports:
            known = ", ".join(f"{s}:{p}" for s, ps in self.network.switch_interfaces().items()
                              for p in sorted(ps))
            self.stdout.write(f"unknown port {parts[0]}; ports: {known}\n")
            return
        try:
            count = int(parts[1]) if len(parts) > 1 else 100
        except ValueError:
            self.stdout.write(usage)
            return
        path = parts[2] if len(parts) > 2 else f"{switch}-p{port_text}.pcap"
        written = capture_port(ports[int(port_text)], count, path)
        self.stdout.write(f"captured {written} frames on {switch}:{port_text} into {path}\n")


class FabricCLI(NetworkCLI):
    """The CLI of ``aifabric up``: a fabric session's network, with
    fabric.p4's counters and the topology's paths."""

    def __init__(self, fabric: Any, **kwargs: Any) -> None:
        self.fabric = fabric
        super().__init__(fabric.network, [s.name for s in fabric.topology.switches], **kwargs)

    def do_counters(self, line: str) -> None:
        """counters SWITCH: fabric.p4 counters per port and priority."""
        name = self._switch(line)
        if name is None:
            return
        table = self.fabric.controller.read_counters(name)
        for port in sorted(table):
            for prio in sorted(table[port]):
                values = " ".join(f"{k}={v}" for k, v in sorted(table[port][prio].items()))
                self.stdout.write(f"port {port} prio {prio}: {values}\n")

    def do_paths(self, line: str) -> None:
        """paths SRC DST: equal-cost paths between two GPUs (srvS/gpuR)."""
        parts = line.split()
        if len(parts) != 2:
            self.stdout.write("usage: paths srv0/gpu0 srv1/gpu1\n")
            return
        try:
            for path in paths(self.fabric.topology, parts[0], parts[1]):
                self.stdout.write(" -> ".join(path) + "\n")
        except ValueError as exc:
            self.stdout.write(f"{exc}\n")


def capture_port(ifname: str, count: int, path: str, timeout_s: float = 10.0) -> int:
    """Capture up to ``count`` frames on a root-namespace interface with
    tcpdump (bounded by ``timeout_s``); returns how many were written."""
    cmd = ["timeout", str(timeout_s), "tcpdump", "-i", ifname, "-U", "-w", path,
           "-c", str(max(count, 1)), "-s", "0"]
    subprocess.run(cmd, capture_output=True)
    try:
        with RawPcapReader(path) as reader:
            return sum(1 for _ in reader)
    except (OSError, ValueError, EOFError):
        return 0
