"""The Mininet CLI of ``aifabric up``, with fabric commands added:
``counters SWITCH``, ``queues SWITCH``, ``pfc SWITCH``, ``capture
SWITCH:PORT`` and ``paths A B``."""

from __future__ import annotations

import subprocess

from mininet.cli import CLI
from scapy.utils import rdpcap

from emulator.topology import paths


class FabricCLI(CLI):
    prompt = "aifabric> "

    def __init__(self, fabric, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self.fabric = fabric
        super().__init__(fabric.network.net, **kwargs)

    def _switch(self, line: str) -> str | None:
        name = line.strip()
        names = [s.name for s in self.fabric.topology.switches]
        if name not in names:
            self.stdout.write(f"usage: SWITCH, one of {', '.join(names)}\n")
            return None
        return name

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

    def _stats(self, name: str) -> dict:
        from emulator.targets.builtin.queue_control import QueueControlClient

        with QueueControlClient(self.fabric.network.switch_addresses()[name]) as client:
            return client.get_port_stats()

    def do_queues(self, line: str) -> None:
        """queues SWITCH: queue depths (now, max) and drops per port and priority."""
        name = self._switch(line)
        if name is None:
            return
        for port in self._stats(name)["ports"]:
            for q in port["queues"]:
                if q["tx_packets"] or q["max_depth_packets"] or q["tail_dropped"]:
                    self.stdout.write(
                        f"port {port['port']} prio {q['priority']}: depth {q['depth_packets']} pkts "
                        f"(max {q['max_depth_packets']}), tx {q['tx_packets']}, dropped {q['tail_dropped']}\n")

    def do_pfc(self, line: str) -> None:
        """pfc SWITCH: pause frames received/sent and paused time per port and priority."""
        name = self._switch(line)
        if name is None:
            return
        for port in self._stats(name)["ports"]:
            for q in port["queues"]:
                if q["pfc_rx"] or q["pfc_tx"] or q["paused_s"]:
                    self.stdout.write(f"port {port['port']} prio {q['priority']}: pfc_rx {q['pfc_rx']} "
                                      f"pfc_tx {q['pfc_tx']} paused {q['paused_s']:.3f}s"
                                      f"{' (paused now)' if q['paused'] else ''}\n")

    def do_capture(self, line: str) -> None:
        """capture SWITCH:PORT [COUNT] [FILE.pcap]: capture COUNT frames (default
        100, at most 10 s) on a switch port, both directions, into a pcap
        (default SWITCH-pPORT.pcap); read it with 'aifabric inspect FILE'."""
        parts = line.split()
        usage = "usage: capture leaf-r0-0:1 [COUNT] [FILE.pcap]\n"
        if not parts or ":" not in parts[0]:
            self.stdout.write(usage)
            return
        switch, _, port_text = parts[0].partition(":")
        ports = self.fabric.network.switch_interfaces().get(switch)
        if ports is None or not port_text.isdigit() or int(port_text) not in ports:
            known = ", ".join(f"{s}:{p}" for s, ps in self.fabric.network.switch_interfaces().items()
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
        return len(rdpcap(path))
    except (OSError, ValueError):
        return 0
