"""What one frame costs this machine: the per-packet figures ``time_scale:
auto`` budgets with, measured once and cached.

Three short measurements, CPU time in this process (what a frame costs,
not how busy the machine happens to be):

- ``switch_us``: a frame through a built-in switch: fabric.p4 on the
  executor and the data plane around it (traffic manager, timers,
  counters, the host port's receive side of the link), on a programmed
  leaf of the virtual-time fabric, plus ``io_us``;
- ``agent_us``: a frame through a NIC agent (half of what a RoCE WRITE's
  data packet costs its sender and receiver together, their ACKs
  included, on the agents' virtual-time harness), plus ``io_us``;
- ``io_us``: one frame sent and received on an ``AF_PACKET`` socket pair
  over a veth in a scratch network namespace (root), or on a Unix datagram
  socket pair otherwise (``io_method`` says which).

:func:`calibration` returns the cached figures when the cache (JSON,
``$AIFABRIC_CACHE`` or ``~/.cache/aifabric``, ``calibration.json``) was
made on this machine (host name, cores), by this Python, from the same
source of the executor, data plane and agent (their files' hash), less
than :data:`MAX_AGE_S` ago; otherwise it measures (about a second) and
writes the cache. ``aifabric run`` records the figures it used in
results.json (``time_scale_choice.budget``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import subprocess
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from emulator import cache_dir
from emulator.network.naming import scratch_dir

REPO = Path(__file__).resolve().parents[2]
MAX_AGE_S = 7 * 24 * 3600
VERSION = 1
# Source whose speed the figures describe: a change re-measures.
SOURCES = ("emulator/p4/exec", "emulator/targets/builtin/dataplane.py",
           "emulator/targets/builtin/tm.py", "emulator/targets/builtin/ports.py",
           "emulator/targets/builtin/ring.py", "emulator/targets/builtin/tally.py",
           "emulator/targets/builtin/switch.py",
           "emulator/traffic/agent", "emulator/traffic/roce.py", "emulator/traffic/layers")
FRAME_BYTES = 1082  # a 1 KiB RoCEv2 WRITE payload with its headers
REPEATS = 3


@dataclass(frozen=True)
class Calibration:
    """Per-frame CPU costs on this machine (µs) and where they came from."""

    switch_us: float
    agent_us: float
    io_us: float
    io_method: str
    key: str
    measured_unix: float
    cores: int

    def to_dict(self) -> dict[str, Any]:
        return {k: (round(v, 2) if isinstance(v, float) and k != "measured_unix" else v)
                for k, v in asdict(self).items()}


def cache_path() -> Path:
    return cache_dir() / "calibration.json"


def machine_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def source_key() -> str:
    """What the cached figures are valid for (see the module docstring)."""
    digest = hashlib.sha256(f"{VERSION}/{platform.node()}/{machine_cores()}/"
                            f"{platform.python_version()}".encode())
    for rel in SOURCES:
        path = REPO / rel
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            try:
                digest.update(f.read_bytes())
            except OSError:
                continue
    return digest.hexdigest()[:16]


def calibration(*, force: bool = False, path: Path | None = None) -> Calibration:
    """The cached figures when valid, else fresh ones (and the cache rewritten)."""
    path = path or cache_path()
    key = source_key()
    if not force:
        try:
            data = json.loads(path.read_text())
            if data.get("key") == key and time.time() - data["measured_unix"] < MAX_AGE_S:
                return Calibration(**{k: data[k] for k in Calibration.__dataclass_fields__})
        except (OSError, ValueError, KeyError, TypeError):
            pass
    cal = measure(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(cal), indent=1))
        tmp.replace(path)
    except OSError:
        pass  # an unwritable cache only costs a second next time
    return cal


def measure(key: str = "") -> Calibration:
    io_us, method = measure_io_us()
    return Calibration(switch_us=measure_switch_us() + io_us,
                       agent_us=measure_agent_us() + io_us, io_us=io_us, io_method=method,
                       key=key or source_key(), measured_unix=time.time(),
                       cores=machine_cores())


@dataclass
class Leaf:
    """The leaf the switch figure is measured on: fabric.p4 on the
    srv0/gpu0 ↔ srv1/gpu0 leaf of a two-server virtual-time fabric,
    programmed by the controller; ``frame`` a RoCEv2 WRITE from srv0/gpu0
    entering ``port`` (its receive side as a live host port's); the far
    port sends into ``sink``, which counts and keeps nothing (the sim's
    link would keep every frame in an engine heap that never runs here)."""

    dataplane: Any
    port: int
    frame: bytes
    sink: "Discard"

    @property
    def pipeline(self) -> Any:
        return self.dataplane.pipeline


@contextmanager
def calibration_leaf(payload_bytes: int = 1024) -> Iterator[Leaf]:
    from emulator.sim.engine import Engine
    from emulator.sim.fabric import SimFabric
    from emulator.topology import build_topology, spec_from_dict
    from emulator.traffic.layers.opcodes import RC_RDMA_WRITE_MIDDLE
    from emulator.traffic.roce import RoceFlow

    topo = build_topology(spec_from_dict({
        "name": "calibration", "kind": "rail-optimized", "servers": 2, "gpus_per_server": 1,
        "servers_per_leaf": 2, "spines": 1, "host_link": {"rate": "100Gbps", "delay": "1us"},
        "fabric_link": {"rate": "100Gbps", "delay": "1us"}}, "<calibration>"))
    with scratch_dir("cal") as tmp:
        fabric = SimFabric(topo, Engine(), workdir=Path(tmp))
        fabric.start()
        try:
            a, b = topo.gpu("srv0/gpu0"), topo.gpu("srv1/gpu0")
            flow = RoceFlow(a.mac, a.gateway_mac, a.ip, b.ip, 0xC001)
            frame = flow.packet(RC_RDMA_WRITE_MIDDLE, 0x100, 1, b"\x00" * payload_bytes)
            dp = fabric.switches[a.switch].dataplane
            dp.set_port_config(a.switch_port, {"rx_link": True})  # as a live host port receives
            out = dp.port(b.switch_port)
            out.backend = sink = Discard(out.backend.name)
            yield Leaf(dp, a.switch_port, frame, sink)
        finally:
            fabric.stop()


def measure_switch_us(frames: int = 3000) -> float:
    """CPU µs per frame through a programmed fabric.p4 leaf's data plane."""
    with calibration_leaf() as leaf:
        dp, port, frame = leaf.dataplane, leaf.port, leaf.frame
        gap = 1e-6  # 100 Gb/s: each frame leaves before the next one comes
        now = 1.0
        for _ in range(200):  # warm up (memoised lookups, caches)
            now += gap
            dp.receive(port, frame, now)
            dp.run_due(now)
        best = float("inf")
        for _ in range(REPEATS):  # the least of a few: other work only adds to it
            start = time.process_time()
            for _ in range(frames):
                now += gap
                dp.receive(port, frame, now)
                dp.run_due(now)
            best = min(best, time.process_time() - start)
    return best / frames * 1e6


class Discard:
    """A port back end that takes every frame and keeps none (``sent``
    counts them)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sent = 0

    def fileno(self) -> None:
        return None

    def recv(self) -> None:
        return None

    def send(self, frame: bytes) -> bool:
        self.sent += 1
        return True

    def close(self) -> None:
        pass


def measure_agent_us(size_bytes: int = 2 << 20) -> float:
    """CPU µs per frame of a NIC agent (the least of :data:`REPEATS` runs)."""
    return min(_agent_us_once(size_bytes) for _ in range(REPEATS))


def _agent_us_once(size_bytes: int) -> float:
    """CPU µs per frame of a NIC agent: half of what one data packet of a
    WRITE costs sender and receiver together (ACKs included)."""
    from emulator.traffic.agent.config import parse_config
    from emulator.traffic.agent.sim import SimNetwork

    def host(name: str, ip: str, peer_ip: str, mac: str, messages: list) -> dict:
        return {"name": name,
                "nics": [{"name": "eth0", "ip": ip, "mac": mac,
                          "gateway_mac": "02:00:00:00:ff:01", "line_rate_bps": 100e9}],
                "qps": [{"qpn": 17, "nic": "eth0", "remote_ip": peer_ip, "remote_qpn": 17,
                         "dcqcn": {"enabled": True}}],
                "defaults": {"transport": {"path_mtu_bytes": 1024}},
                "workload": {"messages": messages}}

    net = SimNetwork()
    net.add_agent(parse_config(host("a", "10.0.0.1", "10.0.0.2", "02:00:00:00:00:01",
                                    [{"qp": 17, "size_bytes": size_bytes, "op": "write"}])))
    net.add_agent(parse_config(host("b", "10.0.0.2", "10.0.0.1", "02:00:00:00:00:02", [])))
    net.connect(("a", "eth0"), ("b", "eth0"), delay_s=1e-6)
    sender = net.agents["a"].qps[17]
    start = time.process_time()
    net.run(1.0, stop_when=lambda: sender.counters.messages_completed >= 1)
    elapsed = time.process_time() - start
    packets = max(1, sender.counters.packets_sent)
    return elapsed / packets / 2 * 1e6


def measure_io_us(frames: int = 5000) -> tuple[float, str]:
    """CPU µs to send and receive one frame, and how it was measured."""
    if os.geteuid() == 0:
        try:
            return _veth_io_us(frames), "af_packet veth"
        except (OSError, subprocess.SubprocessError):
            pass
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with a, b:
        frame = bytes(FRAME_BYTES)
        start = time.process_time()
        for _ in range(frames):
            a.send(frame)
            b.recvmsg(65535, 64)
        return (time.process_time() - start) / frames * 1e6, "unix socketpair"


def _veth_io_us(frames: int) -> float:
    from emulator.network.netlink import packet_socket

    ns = f"afxcal-{os.getpid()}"
    run = lambda *args: subprocess.run(args, check=True, capture_output=True, timeout=10)  # noqa: E731
    run("ip", "netns", "add", ns)
    try:
        run("ip", "netns", "exec", ns, "ip", "link", "add", "cal0", "type", "veth", "peer",
            "name", "cal1")
        for ifname in ("cal0", "cal1"):
            run("ip", "netns", "exec", ns, "ip", "link", "set", ifname, "up")
        tx, rx = packet_socket(ns, "cal0"), packet_socket(ns, "cal1")
        with tx, rx:
            rx.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS, as the switch's ports
            rx.setblocking(False)
            frame = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + bytes(
                FRAME_BYTES - 14)
            start = time.process_time()
            for _ in range(frames):
                tx.send(frame)
                try:
                    rx.recvmsg(65535, 256)
                except BlockingIOError:
                    pass
            return (time.process_time() - start) / frames * 1e6
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)
