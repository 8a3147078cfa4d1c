"""fabric.p4 through our executor (``aifabric-switch``) and through BMv2
(``simple_switch_grpc``): the same entries, the same packets, the outputs
compared byte for byte, then the counters.

The entries are what the controller writes to leaf-r0-0 of the 4x4 rail
fabric with PFC generated in P4 (routes to its four GPUs, an ECMP group over
two spines, classification, ECN and PFC tables, clone sessions), written over
P4Runtime by :class:`FabricController` to each switch in turn. Each switch runs
with the command line the network layer gives it, on six veth pairs; one
frame at a time goes in, and everything that comes out on any port within
:data:`QUIET_S` of the last frame is its output. The queues stay empty, so
no ECN mark or pause is generated: what is compared is parsing, matching,
ECMP selection (the hash and the member order), rewrites, checksums,
deparsing, drops and counters. ``aifabric-switch`` runs with
``--pfc-to-pipeline``: BMv2 has no MAC control, so a received PFC frame
goes to the program (which counts and drops it); the built-in switch's MAC
otherwise acts on it first. Needs root and BMv2.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import time
from pathlib import Path

import pytest
from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether

from emulator.control.compile import compile_fabric
from emulator.control.controller import FabricController
from emulator.control.fabric_plan import FabricSettings, plan_fabric
from emulator.network import bmv2
from emulator.network.command import SwitchLaunch, switch_args
from emulator.network.plan import PortPlan
from emulator.network.process import port_open
from emulator.network.switches import builtin_binary
from emulator.topology import load_topology

pytestmark = [pytest.mark.root, pytest.mark.bmv2]

REPO = Path(__file__).resolve().parents[2]
LEAF = "leaf-r0-0"
PORTS = range(1, 7)  # 1-4: GPUs 10.0.0.1-4; 5, 6: spines (ECMP group for 10.1-3.0.0/24)
QUIET_S = 0.25
LAST_QUIET_S = 1.0  # after the last frame: a late output still finds its frame
PACKET_OUTGOING = 4
GPU_MAC = "02:00:0a:00:00:09"


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=30)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def roce(src: str, dst: str, *, sport: int = 0xC000, dscp: int = 26, ecn: int = 2,
         ttl: int = 64, opcode: int = 0x0A, size: int = 200) -> bytes:
    return bytes(Ether(src=GPU_MAC, dst="02:01:00:00:00:01")
                 / IP(src=src, dst=dst, tos=(dscp << 2) | ecn, ttl=ttl, id=sport & 0xFFFF)
                 / UDP(sport=sport, dport=4791) / (bytes([opcode]) + b"\x00" * 11 + b"p" * size))


def frames() -> list[tuple[int, bytes]]:
    """(ingress port, frame): every path of the leaf's tables."""
    out: list[tuple[int, bytes]] = []
    for gpu in range(1, 5):          # down to each GPU, from a spine
        out.append((5, roce("10.1.0.1", f"10.0.0.{gpu}", sport=0xC100 + gpu)))
    for sport in range(0xC000, 0xC000 + 24):   # up through the ECMP group
        out.append((1, roce("10.0.0.1", f"10.{1 + sport % 3}.0.{1 + sport % 4}", sport=sport)))
    out += [
        (2, roce("10.0.0.2", "10.0.0.3", dscp=0, ecn=0)),            # best effort, not ECT
        (2, roce("10.0.0.2", "10.0.0.3", ecn=3)),                    # CE already
        (3, roce("10.0.0.3", "10.0.0.1", opcode=0x81, dscp=48)),     # CNP: priority 6
        (3, roce("10.0.0.3", "10.2.0.2", opcode=0x81)),              # CNP by opcode only
        (1, roce("10.0.0.1", "10.0.0.2", ttl=2)),                    # last hop's TTL
        (1, roce("10.0.0.1", "10.0.0.2", ttl=1)),                    # TTL expires: dropped
        (1, roce("10.0.0.1", "10.0.0.2", ttl=0)),
        (1, roce("10.0.0.1", "192.168.7.1")),                        # no route: dropped
        (1, bytes(Ether(src=GPU_MAC, dst="02:01:00:00:00:01")
                  / IP(src="10.0.0.1", dst="10.0.0.4", options=b"\x01\x01\x01\x00")
                  / UDP(sport=7, dport=4791) / (b"\x0a" + b"\x00" * 11))),  # IP options
        (1, bytes(Ether(src=GPU_MAC, dst="02:01:00:00:00:01")
                  / IP(src="10.0.0.1", dst="10.0.0.4") / TCP(sport=5, dport=80) / b"tcp")),
        (4, bytes(Ether(src=GPU_MAC, dst="02:01:00:00:00:04")
                  / IP(src="10.0.0.4", dst="10.3.0.4", tos=0xC0) / ICMP())),
        (4, bytes(Ether(src=GPU_MAC, dst="02:01:00:00:00:04")
                  / IP(src="10.0.0.4", dst="10.0.0.1", chksum=0x1234) / UDP(dport=9))),  # bad csum
        (2, bytes(Ether(src=GPU_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(pdst="10.0.0.1"))),
        (2, bytes(Ether(src=GPU_MAC, dst="01:80:c2:00:00:01", type=0x8808)
                  / MACControlClassBasedFlowControl(c3_enabled=1, c3_pause_time=100))),
        (5, roce("10.3.0.4", "10.0.0.4", size=1400)),
        (6, roce("10.2.0.1", "10.0.0.2", size=0)),
    ]
    return [(port, numbered(i, frame)) for i, (port, frame) in enumerate(out)]


def numbered(index: int, frame: bytes) -> bytes:
    """An IPv4 frame with IP id ``index`` (its checksum kept right, or kept
    wrong), so that an output is told apart by the frame it came from
    however late the switch sends it."""
    if frame[12:14] != b"\x08\x00":
        return frame
    pkt = Ether(frame)
    probe = pkt[IP].copy()
    del probe.chksum
    valid = IP(bytes(probe)).chksum == pkt[IP].chksum
    pkt[IP].id = index
    if valid:
        del pkt[IP].chksum
    return bytes(pkt)


def source_index(data: bytes, current: int, count: int) -> int:
    """The frame an output came from: its IP id, else the frame just sent."""
    if data[12:14] == b"\x08\x00" and len(data) >= 20:
        index = int.from_bytes(data[18:20], "big")
        if index < count:
            return index
    return current


@pytest.fixture
def veths():
    """Six veth pairs in the root namespace: switch end ``..s<port>``, tester
    end ``..t<port>``, no IPv6 (nothing but the test's frames on them)."""
    tag = f"afd{os.getpid() % 100000}"
    made = []
    try:
        for port in PORTS:
            sw, tester = f"{tag}s{port}", f"{tag}t{port}"
            sh("ip", "link", "add", sw, "type", "veth", "peer", "name", tester)
            made.append(sw)
            for end in (sw, tester):
                sh("sysctl", "-qw", f"net.ipv6.conf.{end}.disable_ipv6=1")
                sh("ip", "link", "set", end, "mtu", "9500", "up")
        yield {port: (f"{tag}s{port}", f"{tag}t{port}") for port in PORTS}
    finally:
        for sw in made:
            subprocess.run(["ip", "link", "del", sw], capture_output=True, timeout=30)


def launch(target: str, ifnames: dict[int, str], workdir: Path, device_config: str | None = None
           ) -> tuple[subprocess.Popen, str, int]:
    ports = tuple(PortPlan(LEAF, p, ifname, "", "", "", 0, "host", 0, 0.0, 0)
                  for p, ifname in ifnames.items())
    spec = SwitchLaunch(name=LEAF, device_id=0, ports=ports, grpc_port=free_port(),
                        thrift_port=free_port(), log_file=str(workdir / f"{target}.log"),
                        output_file=str(workdir / f"{target}.out"))
    if target == "bmv2":
        args = switch_args([bmv2.require_tool(bmv2.SWITCH_BINARY)], spec)
    else:
        # BMv2 has no MAC control: a PFC frame reaches the program, which
        # counts it. aifabric-switch's MAC acts on it instead unless told.
        args = switch_args(builtin_binary(), spec, ["--seed", "1", "--pfc-to-pipeline"])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(spec.output_file, "wb") as out:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + 30
    while not port_open("127.0.0.1", spec.grpc_port):
        assert proc.poll() is None, Path(spec.output_file).read_text()[-2000:]
        assert time.monotonic() < deadline, f"{target}: gRPC not up in 30 s"
        time.sleep(0.05)
    return proc, spec.grpc_addr, spec.thrift_port


def run_frames(testers: dict[int, str], sent: list[tuple[int, bytes]]
               ) -> list[list[tuple[int, bytes]]]:
    socks = {}
    for port, ifname in testers.items():
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
        s.bind((ifname, 3))
        socks[s.fileno()] = (port, s)
    socks_by_port = {p: s for p, s in socks.values()}
    results: list[list[tuple[int, bytes]]] = [[] for _ in sent]
    try:
        for i, (in_port, frame) in enumerate(sent):
            socks_by_port[in_port].send(frame)
            quiet = LAST_QUIET_S if i == len(sent) - 1 else QUIET_S
            last = time.monotonic()
            while time.monotonic() - last < quiet:
                ready, _, _ = select.select(list(socks), [], [], quiet)
                for fd in ready:
                    port, s = socks[fd]
                    data, addr = s.recvfrom(65535)
                    if addr[2] != PACKET_OUTGOING:
                        results[source_index(data, i, len(sent))].append((port, data))
                        last = time.monotonic()
        return [sorted(got) for got in results]
    finally:
        for _, s in socks.values():
            s.close()


def through(target: str, veths, tmp_path: Path) -> tuple[list, dict]:
    topology = load_topology(REPO / "topologies" / "rail-4x4.yaml")
    settings = FabricSettings(pfc_in_p4=True)
    plan = plan_fabric(topology, settings)[LEAF]
    workdir = tmp_path / target
    compiled = compile_fabric(target, workdir)
    proc, addr, _ = launch(target, {p: sw for p, (sw, _) in veths.items()}, workdir)
    try:
        with FabricController(topology, {LEAF: addr}, {LEAF: 0}, compiled.p4info,
                              compiled.device_config, settings) as ctl:
            ctl.connect()
            ctl.push_pipeline()
            written = ctl.install({LEAF: plan})
            assert written[LEAF] > 0
            outputs = run_frames({p: t for p, (_, t) in veths.items()}, frames())
            counters = ctl.read_counters(LEAF)
        assert proc.poll() is None, f"{target} exited during the run"
        return outputs, counters
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def counter_cells(counters: dict) -> set[tuple[int, int, str, int]]:
    """(port, priority, counter, value) of every non-zero cell: a failed
    comparison names the cells that differ."""
    return {(port, prio, key, value) for port, prios in counters.items()
            for prio, cells in prios.items() for key, value in cells.items()}


def test_fabric_p4_forwards_byte_for_byte_as_bmv2_does(veths, tmp_path):
    ours, our_counters = through("builtin", veths, tmp_path)
    theirs, their_counters = through("bmv2", veths, tmp_path)
    sent = frames()
    assert len(ours) == len(theirs) == len(sent)
    differ = [(i, sent[i][0], Ether(sent[i][1]).summary(), ours[i], theirs[i])
              for i in range(len(sent)) if ours[i] != theirs[i]]
    assert differ == [], "\n".join(map(str, differ))
    # The run is not vacuous: BMv2 forwarded most frames, dropped the
    # expired/unroutable ones, and spread the ECMP flows over both spines.
    forwarded = sum(1 for out in theirs if out)
    assert len(sent) - 6 <= forwarded < len(sent)
    spines = {out[0][0] for out in theirs[4:28]}
    assert spines == {5, 6}
    assert counter_cells(our_counters) == counter_cells(their_counters)
    assert sum(c.get("rx_packets", 0) for prios in their_counters.values()
               for c in prios.values()) >= forwarded

