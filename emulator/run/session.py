"""A running, programmed fabric: the Mininet network brought up and every
switch programmed by the controller. Used by ``aifabric up`` and by the
scenario runner; teardown always happens on leaving the ``with`` block.

    with FabricSession(topology, target="builtin") as fabric:
        fabric.controller.read_counters("leaf-r0-0")
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from emulator.control.bmv2_pfc import PfcEmulator, start_emulators, stop_emulators
from emulator.control.controller import FabricController, QueueSetter
from emulator.control.compile import compile_fabric
from emulator.control.fabric_plan import LIVE_RESPONSE_NS, FabricSettings
from emulator.network.fabric_net import FabricNetwork, NetworkOptions
from emulator.topology import Topology


def queue_setter(addresses: dict[str, str]) -> QueueSetter:
    """The built-in target's QueueControl service, one client per switch."""
    from emulator.targets.builtin.queue_control import QueueControlClient

    clients: dict[str, QueueControlClient] = {}

    def client(switch: str) -> QueueControlClient:
        if switch not in clients:
            clients[switch] = QueueControlClient(addresses[switch])
        return clients[switch]

    def set_port(switch: str, port: int, rate_bps: int, delay_us: float, buffer_bytes: int | None) -> None:
        settings: dict[str, object] = {"rate_bps": rate_bps, "delay_us": delay_us}
        if buffer_bytes is not None:
            settings["buffer_bytes"] = buffer_bytes
        client(switch).set_port_config(port, **settings)

    def set_pfc(switch: str, port: int, priority: int, enabled: bool) -> None:
        client(switch).set_pfc(port, priority, enabled)

    def set_port_settings(switch: str, port: int, settings: dict) -> None:
        client(switch).set_port_config(port, **settings)

    def set_buffer(switch: str, settings: dict) -> None:
        client(switch).set_buffer(**settings)

    return QueueSetter(set_port, set_pfc, set_port_settings, set_buffer)


@dataclass
class FabricSession:
    topology: Topology
    target: str = "builtin"
    settings: FabricSettings = field(default_factory=FabricSettings)
    workdir: Path | None = None
    buffer_bytes: int | None = None
    options: NetworkOptions = field(default_factory=NetworkOptions)

    def __post_init__(self) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.network: FabricNetwork | None = None
        self.controller: FabricController | None = None
        self.timings: dict[str, float] = {}
        # BMv2 only: the controller-side PFC approximation, one per switch.
        self.pfc_emulators: dict[str, PfcEmulator] = {}

    def __enter__(self) -> "FabricSession":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self.workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="aifabric-")
            self.workdir = Path(self._tmp.name)
        clock = time.perf_counter()

        def lap(name: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            self.timings[name] = round(now - clock, 3)
            clock = now
        compiled = compile_fabric(self.target, self.workdir / "build")
        lap("compile_s")
        options = self.options
        if self.target == "bmv2" and self.buffer_bytes is not None:
            # BMv2's only buffer is each queue's depth (emulator.network.bmv2):
            # the run's buffer, not the network's default of about 64 frames.
            options = replace(options, buffer_bytes=self.buffer_bytes)
        self.network = FabricNetwork(self.topology, self.target, self.workdir / "net",
                                     device_config=None, p4info=compiled.p4info_path,
                                     options=options)
        self.network.start()
        lap("network_s")
        addresses = self.network.switch_addresses()
        # BMv2 has no buffer of its own: fabric.p4 generates PFC there. Live
        # hosts and switches act on a pause late: their headroom allows for it.
        settings = replace(self.settings, pfc_in_p4=self.target == "bmv2",
                           response_ns=self.settings.response_ns or LIVE_RESPONSE_NS)
        self.controller = FabricController(self.topology, addresses, self.network.device_ids(),
                                           compiled.p4info, compiled.device_config, settings)
        self.controller.connect()
        self.controller.push_pipeline()
        lap("pipeline_push_s")
        self.controller.install()
        lap("entries_s")
        if self.target == "builtin":
            self.controller.configure_queues(queue_setter(addresses), self.buffer_bytes)
        elif self.target == "bmv2":
            switches = {name: self.network.switch(name).launch_spec for name in addresses}
            self.pfc_emulators = start_emulators(
                self.controller, {n: s.thrift_port for n, s in switches.items()},
                {n: s.priority_queues for n, s in switches.items()},
                frame_bytes=self.options.queue_frame_bytes)
        lap("queues_s")
        self.timings["total_s"] = round(sum(self.timings.values()), 3)

    def stop(self) -> None:
        stop_emulators(self.pfc_emulators)
        if self.controller is not None:
            self.controller.close()
            self.controller = None
        if self.network is not None:
            self.network.stop()
            self.network = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    # ---- reachability -------------------------------------------------------------
    def ping_all(self, count: int = 1, timeout_s: float = 2.0) -> dict[str, object]:
        """Ping every ordered pair of GPUs on different servers from the
        source GPU's own address; switch hops from the reply TTL (64 − TTL,
        as the destination answers with TTL 64 and each switch decrements)."""
        assert self.network is not None
        pairs = [(s, d) for s in self.topology.gpus for d in self.topology.gpus if s.server != d.server]

        def ping(pair) -> tuple[bool, int | None]:  # type: ignore[no-untyped-def]
            src, dst = pair
            ns = self.network.netns_name(src.server)  # type: ignore[union-attr]
            cmd = ["ip", "netns", "exec", ns, "ping", "-n", "-c", str(count),
                   "-W", str(timeout_s), "-I", src.ip, dst.ip]
            out = subprocess.run(cmd, capture_output=True, text=True).stdout
            for line in out.splitlines():
                if "ttl=" in line:
                    ttl = int(line.split("ttl=")[1].split()[0])
                    return True, 64 - ttl
            return False, None

        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(ping, pairs))
        reachable = sum(ok for ok, _ in results)
        hops: dict[str, int] = {}
        for ok, h in results:
            if ok and h is not None:
                hops[str(h)] = hops.get(str(h), 0) + 1
        unreachable = [f"{s.name}->{d.name}" for (s, d), (ok, _) in zip(pairs, results) if not ok]
        return {"pairs": len(pairs), "reachable": reachable,
                "loss_pct": round(100.0 * (len(pairs) - reachable) / max(len(pairs), 1), 2),
                "switch_hops": dict(sorted(hops.items(), key=lambda kv: int(kv[0]))),
                "unreachable": unreachable[:20]}
