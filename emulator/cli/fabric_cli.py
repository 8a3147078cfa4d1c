"""The Mininet CLI of ``aifabric up``, with fabric commands added:
``counters SWITCH``, ``queues SWITCH``, ``pfc SWITCH`` and ``paths A B``."""

from __future__ import annotations

from mininet.cli import CLI

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
