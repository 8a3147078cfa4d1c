"""Namespaces, veths, a switch process and frame helpers for
``test_switch_p4runtime.py``.

Layout (names unique per test process, removed even on failure)::

    [h1] eth0 ──veth── <p>s1 ┐                        ┌ <p>s2 ──veth── eth0 [h2]
                              └─ aifabric-switch (root) ─┘
                                 port 1          port 2

The switch runs in the root namespace so its gRPC server is reachable on
127.0.0.1; its veth ends there have IPv6 off and no addresses, so the kernel
sends nothing on them. Hosts send with scapy inside their namespace
(``switch_p4rt_ns.py`` under ``ip netns exec``); the test receives with an
``AF_PACKET`` socket it opens inside h2.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from emulator.network.netlink import packet_socket

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENV_BIN = Path(sys.executable).parent
NS_SCRIPT = HERE / "switch_p4rt_ns.py"
ETH_P_ALL = 0x0003
H_MAC = {1: "08:00:00:00:01:11", 2: "08:00:00:00:02:22"}
H_IP = {1: "10.0.1.1", 2: "10.0.2.2"}


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=15)


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Net:
    prefix: str                       # e.g. afp1234
    hosts: dict[int, str]             # port -> namespace
    sw_ifaces: dict[int, str]         # port -> root-ns veth end
    created_ns: list[str] = field(default_factory=list)
    created_links: list[str] = field(default_factory=list)

    def ns_python(self, port: int, *args: str, timeout: float = 30,
                  background: bool = False) -> subprocess.CompletedProcess | subprocess.Popen:
        """Run ``switch_p4rt_ns.py ARGS`` with the venv's Python inside host ``port``."""
        cmd = ["ip", "netns", "exec", self.hosts[port], sys.executable, str(NS_SCRIPT), *args]
        if background:
            return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)

    def send(self, port: int, *frames: bytes) -> None:
        """scapy ``sendp`` of ``frames`` on eth0 of host ``port``."""
        self.ns_python(port, "send", "eth0", *(f.hex() for f in frames))


def make_net() -> Net:
    prefix = f"afp{os.getpid() % 10000}"
    net = Net(prefix, {n: f"{prefix}h{n}" for n in (1, 2)}, {n: f"{prefix}s{n}" for n in (1, 2)})
    try:
        for n in (1, 2):
            ns = net.hosts[n]
            sh("ip", "netns", "add", ns)
            net.created_ns.append(ns)
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
               "net.ipv6.conf.default.disable_ipv6=1")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            a, b = net.sw_ifaces[n], f"{prefix}t{n}"
            sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
            net.created_links.append(a)
            sh("sysctl", "-qw", f"net.ipv6.conf.{a}.disable_ipv6=1")
            sh("ip", "link", "set", b, "netns", ns, "name", "eth0")
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=1")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "address", H_MAC[n])
            sh("ip", "netns", "exec", ns, "ethtool", "-K", "eth0", "tso", "off", "gso", "off",
               check=False)
            sh("ip", "link", "set", a, "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
    except BaseException:
        destroy_net(net)
        raise
    return net


def destroy_net(net: Net) -> None:
    for link in net.created_links:
        sh("ip", "link", "del", link, check=False)
    for ns in net.created_ns:
        sh("ip", "netns", "del", ns, check=False)


# ---- the switch process -------------------------------------------------------------------------
@dataclass
class SwitchProc:
    proc: subprocess.Popen
    address: str
    log: Path
    marker: str    # a string only this process's command line holds

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 5.0) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode


def start_switch(net: Net, log: Path, extra: tuple[str, ...] = ()) -> SwitchProc:
    log.unlink(missing_ok=True)  # "ready" must come from this process
    port = free_tcp_port()
    address = f"127.0.0.1:{port}"
    cmd = [str(VENV_BIN / "aifabric-switch"), "--no-p4", "--log-file", str(log),
           "--grpc-server-addr", address, "--device-id", "0",
           *(f"-i{n}@{iface}" for n, iface in net.sw_ifaces.items()), *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            cwd=str(REPO))
    sw = SwitchProc(proc, address, log, net.sw_ifaces[1])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"switch exited with {proc.returncode}:\n{sw.log_text()}")
        if "ready" in sw.log_text():
            return sw
        time.sleep(0.05)
    sw.stop()
    raise RuntimeError(f"switch not ready in 20 s:\n{sw.log_text()}")


def pids_with(marker: str) -> list[int]:
    """Processes whose command line holds ``marker``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and int(entry) != os.getpid():
            out.append(int(entry))
    return out


# ---- receiving ----------------------------------------------------------------------------------
class Sniffer:
    """IPv4 frames arriving on eth0 of a host namespace (incoming only)."""

    PACKET_OUTGOING = 4

    def __init__(self, ns: str) -> None:
        self.sock = packet_socket(ns, "eth0", rcvbuf_bytes=4 << 20)
        self.sock.setblocking(False)

    def drain(self) -> None:
        while self._recv() is not None:
            pass

    def _recv(self) -> bytes | None:
        while True:
            try:
                data, addr = self.sock.recvfrom(65535)
            except BlockingIOError:
                return None
            if addr[2] == self.PACKET_OUTGOING:
                continue
            return data

    def collect(self, timeout: float, want: int | None = None) -> list[bytes]:
        """IPv4 frames received within ``timeout`` s (early return at ``want``)."""
        frames: list[bytes] = []
        deadline = time.monotonic() + timeout
        while want is None or len(frames) < want:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            select.select([self.sock], [], [], left)
            while (data := self._recv()) is not None:
                if data[12:14] == b"\x08\x00":
                    frames.append(data)
        return frames

    def close(self) -> None:
        self.sock.close()


# ---- frames -------------------------------------------------------------------------------------
def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def ipv4_checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_frame(dst_ip: str, *, ttl: int = 64, ident: int = 1, payload_len: int = 58,
              dst_mac: str = "00:00:00:00:01:01", src_mac: str = H_MAC[1],
              src_ip: str = H_IP[1], tos: int = 0) -> bytes:
    """Ethernet/IPv4/UDP with a correct IPv4 checksum (UDP checksum 0)."""
    payload = bytes((ident + i) & 0xFF for i in range(payload_len))
    udp = struct.pack("!HHHH", 1234, 5678, 8 + len(payload), 0) + payload
    header = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(udp), ident, 0, ttl, 17, 0,
                         socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    header = header[:10] + struct.pack("!H", ipv4_checksum(header)) + header[12:]
    return mac_bytes(dst_mac) + mac_bytes(src_mac) + b"\x08\x00" + header + udp


def forwarded(sent: bytes, *, dst_mac: str, src_mac: str, tos: int | None = None) -> bytes:
    """What ``sent`` looks like after the tutorials' ipv4_forward: new MACs,
    TTL - 1, checksum recomputed (and diffserv ``tos`` if given)."""
    ip = bytearray(sent[14:34])
    ip[8] -= 1
    if tos is not None:
        ip[1] = tos
    ip[10:12] = b"\x00\x00"
    ip[10:12] = struct.pack("!H", ipv4_checksum(bytes(ip)))
    return mac_bytes(dst_mac) + mac_bytes(src_mac) + sent[12:14] + bytes(ip) + sent[34:]
