"""Forwarded packets per second of one switch on veth ports (live clock).

``--program fabric`` (the default): the switch a scenario runs, fabric.p4
programmed by the controller over P4Runtime, in a two-server fabric brought
up by the same code as ``aifabric run`` (:class:`FabricSession`, 100 Gb/s
links so the port never shapes); a raw-socket blaster in srv0's namespace
offers RoCEv2 WRITE frames of ``--frame-bytes`` (default: 1 KB and 4 KB, one
run each) to srv1/gpu0 through their common leaf, and this process counts
what reaches srv1's NIC. ``--program basic``: basic IPv4 forwarding (a few
LPM entries) between two veths, as earlier figures were taken (built-in:
the test launcher's IR program; BMv2: ``--p4``, by default the unit tests'
``basic_forwarding.p4``). Prints figures, passes or fails nothing. Needs
root. Run from the repository root::

    .venv/bin/python benchmarks/switch_pps.py --target builtin --seconds 5 [--json]

``pps`` is what the receiver got per second over the measuring window;
``us_per_packet`` the switch process's CPU time per forwarded packet;
``cpu_percent`` its CPU use over the window (100 = one core), from /proc;
``load_average`` the machine's 1-minute load when the run started (other
work shares the cores); for the built-in switch on fabric.p4,
``rx_overruns`` (frames the kernel dropped for the switch's full receive
ring: the blaster offers more than it forwards) and ``rx_ring_holes``
(ring slots the switch skipped, each after waiting 1 ms), over the window.
``--receiver drain`` (the default) has the counting reader take what
arrived every millisecond without waiting on its socket; ``--receiver
block`` has it sleep in recv(), so that every frame the switch
sends has to wake it, and the switch pays for the wake-up (see
:func:`count_frames`): compare figures taken the same way. ``--target
bmv2`` needs ``p4c-bm2-ss`` and ``simple_switch_grpc`` (the Vagrant VM);
without them it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from emulator.network.netlink import packet_socket

REPO = Path(__file__).resolve().parents[1]
BASIC_P4 = REPO / "tests" / "unit" / "p4" / "programs" / "basic_forwarding.p4"
SWITCH_MAC = {1: 0x020000000101, 2: 0x020000000202, 3: 0x020000000303}
BMV2_TOOLS = ("p4c-bm2-ss", "simple_switch_grpc", "simple_switch_CLI")

# The blaster, run as `python -c BLASTER IFACE FRAME_HEX RATE_PPS SECONDS` in h1:
# sends the frame (its IP id counting up) at RATE_PPS (0: as fast as it can).
BLASTER = r"""
import socket, sys, time
iface, frame, rate, seconds = sys.argv[1], bytes.fromhex(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
s.bind((iface, 3))
frames = [frame[:18] + (i).to_bytes(2, "big") + frame[20:] for i in range(256)]
send = s.send
start = time.monotonic()
n = 0
while True:
    now = time.monotonic()
    if now - start >= seconds:
        break
    due = int((now - start) * rate) + 1 if rate else n + 256
    while n < due:
        try:
            send(frames[n & 255])
        except OSError:
            pass
        n += 1
    if rate:
        time.sleep(0.0002)
print(n, time.monotonic() - start)
"""


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=20)


def ipv4_frame(dst_port: int, length: int) -> bytes:
    payload = length - 14 - 20 - 8
    eth = struct.pack("!6s6sH", b"\x02\x00\x00\x00\x00\xaa", b"\x02\x00\x00\x00\x00\xbb", 0x0800)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28 + payload, 0, 0, 64, 17, 0,
                     bytes([10, 0, 1, 1]), bytes([10, 0, dst_port, 2]))
    return eth + ip + struct.pack("!HHHH", 1000, 2000, 8 + payload, 0) + bytes(payload)


class Network:
    """Namespaces sw, h1, h2 (loopbacks up) and veths h1:eth0—sw:sw-eth1,
    sw:sw-eth2—h2:eth0 (MTU 9000)."""

    def __init__(self) -> None:
        prefix = f"afxb-{os.getpid()}"
        self.ns = {k: f"{prefix}-{k}" for k in ("sw", "h1", "h2")}
        self.created: list[str] = []

    def __enter__(self) -> "Network":
        try:
            for ns in self.ns.values():
                sh("ip", "netns", "add", ns)
                self.created.append(ns)
                sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                   "net.ipv6.conf.default.disable_ipv6=1")
                # BMv2's Thrift server is reached on 127.0.0.1 inside "sw".
                sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            for n in (1, 2):
                a, b = f"afxb{os.getpid() % 100000}s{n}", f"afxb{os.getpid() % 100000}h{n}"
                sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
                sh("ip", "link", "set", a, "netns", self.ns["sw"], "name", f"sw-eth{n}")
                sh("ip", "link", "set", b, "netns", self.ns[f"h{n}"], "name", "eth0")
                # MTU 9000 as in the fabric runs, so that 4 KB frames pass.
                sh("ip", "netns", "exec", self.ns["sw"], "ip", "link", "set", f"sw-eth{n}",
                   "mtu", "9000", "up")
                sh("ip", "netns", "exec", self.ns[f"h{n}"], "ip", "link", "set", "eth0",
                   "mtu", "9000", "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for ns in self.created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def start_builtin(net: Network, tmp: str, log_level: str) -> tuple[subprocess.Popen, callable]:
    from emulator.targets.builtin.queue_control import QueueControlClient

    ctl = f"unix:{tmp}/ctl.sock"
    cmd = ["ip", "netns", "exec", net.ns["sw"], sys.executable, "-m",
           "tests.root.test_builtin_switch_launcher", "-i", "1@sw-eth1", "-i", "2@sw-eth2",
           "--grpc-server-addr", ctl, "--log-level", log_level, "--log-file", f"{tmp}/switch.log"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client = QueueControlClient(ctl)
    client.wait_ready(30)
    return proc, client


def start_bmv2(net: Network, tmp: str, p4: str) -> tuple[subprocess.Popen, None]:
    sh("p4c-bm2-ss", "--p4v", "16", "-o", f"{tmp}/prog.json", p4)
    cmd = ["ip", "netns", "exec", net.ns["sw"], "simple_switch_grpc", "-i", "1@sw-eth1",
           "-i", "2@sw-eth2", "--thrift-port", "9090", "--log-level", "off", f"{tmp}/prog.json",
           "--", "--grpc-server-addr", "127.0.0.1:9559"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    entries = "".join(
        f"table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.{p}.0/24 => "
        f"{SWITCH_MAC[p]:#014x} {p}\n" for p in (1, 2, 3))
    # simple_switch_CLI exits 1 until the switch's Thrift server answers, and
    # 0 after a command that failed (it prints the error): check both.
    deadline = time.monotonic() + 30
    while True:
        done = subprocess.run(["ip", "netns", "exec", net.ns["sw"], "simple_switch_CLI",
                               "--thrift-port", "9090"], input=entries, text=True,
                              capture_output=True, timeout=20, check=False)
        if done.returncode == 0 or proc.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    failed = [line for line in done.stdout.splitlines() if line.startswith(("Error", "Invalid"))]
    if done.returncode != 0 or failed:
        proc.kill()
        raise SystemExit(f"switch_pps: simple_switch_CLI could not add the entries: "
                         f"{(failed or done.stdout.splitlines() or ['no output'])[-1]}")
    return proc, None


def fabric_topology():  # type: ignore[no-untyped-def]
    from emulator.topology import build_topology, spec_from_dict

    return build_topology(spec_from_dict({
        "name": "bench", "kind": "rail-optimized", "servers": 2, "gpus_per_server": 1,
        "servers_per_leaf": 2, "spines": 1, "host_link": {"rate": "100Gbps", "delay": "1us"},
        "fabric_link": {"rate": "100Gbps", "delay": "1us"}}, "<bench>"))


def roce_frame(topology, frame_bytes: int) -> bytes:  # type: ignore[no-untyped-def]
    """A RoCEv2 WRITE (middle) frame of ``frame_bytes`` from srv0/gpu0 to srv1/gpu0."""
    from emulator.traffic.layers.opcodes import RC_RDMA_WRITE_MIDDLE
    from emulator.traffic.roce import RoceFlow

    a, b = topology.gpu("srv0/gpu0"), topology.gpu("srv1/gpu0")
    flow = RoceFlow(a.mac, a.gateway_mac, a.ip, b.ip, 0xC001)
    return flow.packet(RC_RDMA_WRITE_MIDDLE, 0x100, 1, b"\x00" * (frame_bytes - 58))


def run_fabric(target: str, seconds: float, offered_pps: float, frame_bytes: int,
               log_level: str, profile: str | None, receiver: str) -> dict:
    """fabric.p4 on a programmed leaf of a real (two-server) fabric."""
    from emulator.network.fabric_net import NetworkOptions
    from emulator.run.session import FabricSession

    topology = fabric_topology()
    frame = roce_frame(topology, frame_bytes)
    a, b = topology.gpu("srv0/gpu0"), topology.gpu("srv1/gpu0")
    with tempfile.TemporaryDirectory(prefix="afxb-") as tmp, FabricSession(
            topology, target=target, workdir=Path(tmp),
            options=NetworkOptions(mtu=9000, log_level=log_level)) as session:
        net = session.network
        assert net is not None
        proc = net.switch(a.switch).proc
        assert proc is not None
        rx = packet_socket(net.netns_name(b.server) or "", b.intf, rcvbuf_bytes=32 << 20)
        rx.settimeout(0.2)
        switch = None
        if target == "builtin":
            from emulator.targets.builtin.queue_control import QueueControlClient
            switch = QueueControlClient(net.switch_addresses()[a.switch])
        try:
            result = _measure(net.netns_name(a.server) or "", a.intf, rx, frame, proc.pid,
                              seconds, offered_pps, profile,
                              lambda data: data[12:14] == b"\x08\x00"
                              and data[23] == 17, receiver, switch)
            return result | {"program": "fabric.p4", "target": target, "frame_bytes": frame_bytes}
        finally:
            rx.close()
            if switch is not None:
                switch.close()


DRAIN_EVERY_S = 0.001
RECEIVERS = ("drain", "block")


def count_frames(rx: socket.socket, until: float, counts, receiver: str) -> int:  # type: ignore[no-untyped-def]
    """Frames ``counts`` accepts among those ``rx`` receives until ``until``
    (monotonic). ``drain``: read in batches every :data:`DRAIN_EVERY_S`,
    never waiting on the socket, so the switch's send finds no sleeper to
    wake. ``block``: recv() one frame at a time, sleeping on the socket when
    it is empty (as earlier figures were taken). A sender that wakes a
    sleeping reader pays for the wake-up in its own system time (a
    cross-processor interrupt; in this VM about 11 us a frame, a third of the
    switch's cost), so ``block`` measures the reader as much as the switch."""
    arrivals = 0
    recv = rx.recv
    if receiver == "block":
        rx.settimeout(0.2)
        while time.monotonic() < until:
            try:
                if counts(recv(65535)):
                    arrivals += 1
            except socket.timeout:
                pass
        return arrivals
    rx.setblocking(False)  # with a timeout, recv() would first wait in poll()
    while True:
        if time.monotonic() >= until:
            return arrivals
        try:
            while True:
                if counts(recv(65535)):
                    arrivals += 1
        except BlockingIOError:
            pass
        time.sleep(DRAIN_EVERY_S)


def _measure(blast_ns: str, blast_iface: str, rx: socket.socket, frame: bytes, pid: int,
             seconds: float, offered_pps: float, profile: str | None, counts,
             receiver: str, switch=None) -> dict:  # type: ignore[no-untyped-def]
    """The figures of one measuring window; ``switch`` (a built-in switch's
    QueueControlClient, or None) adds what its ports lost over the window:
    frames the kernel dropped for a full receive ring (``rx_overruns``, the
    blaster offering more than the switch forwards) and ring slots it
    skipped (``rx_ring_holes``, each after waiting 1 ms)."""
    warmup = 1.0
    blaster = subprocess.Popen(
        ["ip", "netns", "exec", blast_ns, sys.executable, "-c", BLASTER, blast_iface,
         frame.hex(), str(offered_pps), str(seconds + warmup + 0.5)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t_start = time.monotonic()
    while time.monotonic() - t_start < warmup:
        try:
            rx.recv(65535)
        except socket.timeout:
            pass
    spy = None
    if profile:
        spy = subprocess.Popen(["py-spy", "record", "-p", str(pid), "-o", profile,
                                "-d", str(int(seconds)), "-f", "raw", "--threads", "--gil"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if switch is not None:
        switch.reset_stats()
    cpu0, w0 = cpu_seconds(pid), time.monotonic()
    arrivals = count_frames(rx, w0 + seconds, counts, receiver)
    cpu1, w1 = cpu_seconds(pid), time.monotonic()
    lost = {}
    if switch is not None:
        ports = switch.get_port_stats()["ports"]
        lost = {"rx_overruns": sum(p["drops"].get("rx_overrun", 0) for p in ports),
                "rx_ring_holes": sum(p.get("rx_ring_holes", 0)
                                     for p in switch.get_fidelity()["ports"])}
    out, err = blaster.communicate(timeout=30)
    if blaster.returncode:
        raise RuntimeError(f"blaster failed: {err.strip()}")
    sent, blast_s = out.split()
    if spy is not None:
        spy.wait(seconds + 30)
    wall = w1 - w0
    user, system = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
    cpu = user + system
    return {"pps": round(arrivals / wall), "offered_pps": round(int(sent) / float(blast_s)),
            "us_per_packet": round(cpu / arrivals * 1e6, 2) if arrivals else None,
            "cpu_percent": round(100 * cpu / wall, 1),
            "system_cpu_percent": round(100 * system / wall, 1),
            "mbps": round(arrivals / wall * len(frame) * 8 / 1e6, 1),
            "seconds": round(wall, 2)} | lost


def run(target: str, seconds: float, offered_pps: float, frame_bytes: int, p4: str,
        log_level: str, profile: str | None, receiver: str) -> dict:
    with Network() as net, tempfile.TemporaryDirectory(prefix="afxb-") as tmp:
        if target == "builtin":
            proc, client = start_builtin(net, tmp, log_level)
        else:
            proc, client = start_bmv2(net, tmp, p4)
        spy = None
        try:
            rx = packet_socket(net.ns["h2"], "eth0", rcvbuf_bytes=32 << 20)
            rx.settimeout(0.2)
            frame = ipv4_frame(2, frame_bytes)
            warmup = 1.0
            blaster = subprocess.Popen(
                ["ip", "netns", "exec", net.ns["h1"], sys.executable, "-c", BLASTER, "eth0",
                 frame.hex(), str(offered_pps), str(seconds + warmup + 0.5)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            t_start = time.monotonic()
            while time.monotonic() - t_start < warmup:
                try:
                    rx.recv(65535)
                except socket.timeout:
                    pass
            if profile:
                spy = subprocess.Popen(["py-spy", "record", "-p", str(proc.pid), "-o", profile,
                                        "-d", str(int(seconds)), "-f", "raw", "--threads", "--gil"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            cpu0, w0 = cpu_seconds(proc.pid), time.monotonic()
            arrivals = count_frames(rx, w0 + seconds, lambda data: data[12:14] == b"\x08\x00",
                                    receiver)
            cpu1, w1 = cpu_seconds(proc.pid), time.monotonic()
            out, err = blaster.communicate(timeout=30)
            if blaster.returncode:
                raise RuntimeError(f"blaster failed: {err.strip()}")
            sent, blast_s = out.split()
            if spy is not None:
                spy.wait(seconds + 30)
        finally:
            if client is not None:
                client.close()
            proc.terminate()
            proc.wait(10)
        wall = w1 - w0
        pps = arrivals / wall
        user, system = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
        cpu = user + system
        return {"target": target, "pps": round(pps), "offered_pps": round(int(sent) / float(blast_s)),
                "us_per_packet": round(cpu / arrivals * 1e6, 2) if arrivals else None,
                "cpu_percent": round(100 * cpu / wall, 1),
                "system_cpu_percent": round(100 * system / wall, 1), "frame_bytes": frame_bytes,
                "seconds": round(wall, 2), "program": "basic IPv4"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=("builtin", "bmv2"), default="builtin")
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring window")
    parser.add_argument("--offered-pps", type=float, default=100_000,
                        help="blaster rate (0: as fast as it can)")
    parser.add_argument("--program", choices=("fabric", "basic"), default="fabric",
                        help="fabric: fabric.p4 on a programmed leaf (default); basic: IPv4 "
                             "forwarding between two veths")
    parser.add_argument("--frame-bytes", type=int, action="append",
                        help="frame size (repeatable; default 1024 and 4096 for fabric, 100 "
                             "for basic)")
    parser.add_argument("--p4", default=str(BASIC_P4), help="bmv2 with --program basic: P4 source")
    parser.add_argument("--log-level", default="warn", help="builtin: switch log level")
    parser.add_argument("--profile", metavar="FILE",
                        help="py-spy record (raw, GIL-holding samples) of the switch into FILE")
    parser.add_argument("--receiver", choices=RECEIVERS, default="drain",
                        help="how the counting reader reads: drain (default; batches every "
                             "ms, never waits on the socket) or block (recv() per frame, as "
                             "figures before 2026-12-04 were taken)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("switch_pps: needs root (network namespaces, veth)", file=sys.stderr)
        return 1
    if args.profile and shutil.which("py-spy") is None:
        print("switch_pps: --profile needs py-spy on PATH (pip install py-spy)", file=sys.stderr)
        return 1
    if args.target == "bmv2":
        missing = [t for t in BMV2_TOOLS if shutil.which(t) is None]
        if missing:
            print(f"switch_pps: bmv2 not measured: {', '.join(missing)} not installed "
                  "(simple_switch_grpc/p4c come with the Vagrant VM)")
            return 0
    sizes = args.frame_bytes or ([1024, 4096] if args.program == "fabric" else [100])
    results = []
    for size in sizes:
        load = os.getloadavg()[0]
        if args.program == "fabric":
            result = run_fabric(args.target, args.seconds, args.offered_pps, size,
                                args.log_level, args.profile, args.receiver)
        else:
            result = run(args.target, args.seconds, args.offered_pps, size, args.p4,
                         args.log_level, args.profile, args.receiver)
        result.update(clock="live", receiver=args.receiver, load_average=round(load, 2))
        results.append(result)
        if not args.json:
            for key, value in result.items():
                print(f"{key:>18}: {value}")
            print()
    if args.json:
        print(json.dumps(results if len(results) > 1 else results[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
