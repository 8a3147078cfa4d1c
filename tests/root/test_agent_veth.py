"""Two agent processes in two namespaces joined by a veth pair: a 1 MB WRITE
at a 10 Mb/s line rate, PFC pause timing, CE marks turned into CNPs and a
rate cut, and packets per second.

Layout (namespaces ``afa-<pid>-a`` / ``-b``, removed even on failure)::

    [a] eth0 10.0.0.1 ──veth── eth0 10.0.0.2 [b]
        aifabric agent (QP 0x11)      aifabric agent (QP 0x22)

Each agent runs as ``python -m emulator.traffic.agent`` under ``ip netns
exec``, is driven over its control socket, and is stopped with SIGTERM,
after which its stats file must be there and add up. The test process
injects frames (PFC, CE-marked packets) and timestamps arrivals with raw
sockets it opens inside the namespaces.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from emulator.fidelity import LatenessHistogram
from scapy.compat import raw

from emulator.traffic.agent.control import AgentClient
from emulator.traffic.agent.stats import check_invariants
from emulator.traffic.layers.pfc import pfc_frame
from emulator.traffic.roce import ECN_CE, RoceFlow
from emulator.network.netlink import packet_socket
from tests.unit.test_agent_support import IP, MAC, QPN, host_config

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
SO_TIMESTAMPNS = 35
RATE_BPS = 10e6
PREFIX = f"afa-{os.getpid()}"


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=10)


class Arrivals(threading.Thread):
    """Kernel receive times (SO_TIMESTAMPNS, wall clock) of RoCE data frames
    from a on a socket in b's namespace."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(daemon=True)
        self.sock = sock
        self.times: list[float] = []
        self.running = True
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.settimeout(0.1)

    def run(self) -> None:
        anc_size = socket.CMSG_SPACE(16)
        src = socket.inet_aton(IP["a"])
        while self.running:
            try:
                data, anc, _flags, _addr = self.sock.recvmsg(2048, anc_size)
            except socket.timeout:
                continue
            except OSError:
                return
            # IPv4 from a, UDP 4791, a data opcode (not ACK/CNP)
            if data[26:30] != src or data[23] != 17 or data[42] > 0x10:
                continue
            for level, kind, cdata in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", cdata[:16])
                    self.times.append(sec + nsec * 1e-9)

    def stop(self) -> None:
        self.running = False
        self.join(2)


@pytest.fixture(scope="module")
def veth():
    names = {"a": f"{PREFIX}-a", "b": f"{PREFIX}-b"}
    created: list[str] = []
    try:
        for host, ns in names.items():
            sh("ip", "netns", "add", ns)
            created.append(ns)
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
               "net.ipv6.conf.default.disable_ipv6=1")
        tag = f"afa{os.getpid() % 100000}"
        sh("ip", "link", "add", f"{tag}a", "type", "veth", "peer", "name", f"{tag}b")
        for host, ns in names.items():
            sh("ip", "link", "set", f"{tag}{host}", "netns", ns, "name", "eth0")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "address", MAC[host])
            # addresses as Mininet gives them: the agent must keep the kernel quiet
            sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{IP[host]}/24", "dev", "eth0")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
            subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", "eth0", "tso", "off",
                            "gso", "off", "gro", "off"], capture_output=True, timeout=10)
        yield names
    finally:
        for ns in created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


class AgentProc:
    """One agent process in a namespace, with its control client."""

    def __init__(self, ns: str, config: dict, workdir: Path) -> None:
        name = config["name"]
        self.config_path = workdir / f"{name}.json"
        self.stats_path = workdir / f"{name}-stats.json"
        self.control = str(workdir / f"{name}.sock")
        self.config_path.write_text(json.dumps(config))
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-m", "emulator.traffic.agent",
             "--config", str(self.config_path), "--stats", str(self.stats_path),
             "--control", self.control],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            self.client = AgentClient.wait(self.control, timeout_s=20)
        except Exception:
            self.kill()
            raise AssertionError(f"agent {name} did not start: "
                                 f"{self.proc.communicate(timeout=5)[1].decode()}")
        ready = json.loads(self.proc.stdout.readline())
        assert ready["event"] == "ready" and ready["agent"] == name

    def wait_completed(self, qpn: int, count: int = 1, timeout_s: float = 20) -> None:
        deadline = time.monotonic() + timeout_s
        while self.client.status()["qps"][str(qpn)]["completed"] < count:
            assert time.monotonic() < deadline, "message did not complete"
            time.sleep(0.05)

    def terminate(self) -> dict:
        """SIGTERM, then the stats it wrote."""
        self.client.close()
        self.proc.send_signal(signal.SIGTERM)
        _out, err = self.proc.communicate(timeout=10)
        assert self.proc.returncode == 0, err.decode()
        stats = json.loads(self.stats_path.read_text())
        check_invariants(stats)
        return stats

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def agents(veth, tmp_path):
    started: list[AgentProc] = []

    def start(host: str, **kw) -> AgentProc:
        agent = AgentProc(veth[host], host_config(host, **kw), tmp_path)
        started.append(agent)
        return agent
    yield start
    for agent in started:
        agent.kill()


def test_a_1mb_write_completes_at_the_nic_rate(agents):
    b = agents("b")
    a = agents("a")
    size = 1 << 20
    assert a.client.post(QPN["a"], size) == 0
    a.wait_completed(QPN["a"])
    rec = a.client.completions()[0][0]
    sa, sb = a.terminate(), b.terminate()
    qa = sa["qps"][0]["counters"]
    wire_bps = qa["bytes_sent"] * 8 / rec["fct_s"]
    goodput_bps = size * 8 / rec["fct_s"]
    expected_goodput = RATE_BPS * size / qa["bytes_sent"]     # headers take ~5.4 %
    print(f"\n1 MB WRITE: FCT {rec['fct_s']:.4f} s, wire {wire_bps / 1e6:.3f} Mb/s, "
          f"goodput {goodput_bps / 1e6:.3f} Mb/s (expected {expected_goodput / 1e6:.3f})")
    assert rec["status"] == "ok" and qa["retransmit_packets"] == 0
    # The rate is judged only when the sender kept up (p99 lateness of its
    # turns within one 1500 B frame time at 10 Mb/s): on a busy machine a
    # live rate measures the machine. The same rate in virtual time, always:
    # tests/unit/test_agent_pacing.py::test_a_nic_sends_at_its_line_rate.
    late_p99_us = LatenessHistogram.from_dict(sa["fidelity"]["late"]).percentile_us(0.99)
    if late_p99_us is not None and late_p99_us <= 1500 * 8 / RATE_BPS * 1e6:
        assert wire_bps == pytest.approx(RATE_BPS, rel=0.05)
        assert goodput_bps == pytest.approx(expected_goodput, rel=0.05)
    else:
        print(f"rate not judged: the sender ran {late_p99_us} µs late at p99 (machine busy)")
    assert sb["messages"]["received"][0]["size"] == size
    assert sb["qps"][0]["counters"]["payload_bytes_rx"] == size
    # no ICMP or anything else from the kernels: RoCE and nothing but RoCE
    assert sa["nics"][0]["counters"]["other_rx"] == 0
    assert sb["nics"][0]["counters"]["other_rx"] == 0
    assert sa["stop_reason"] == "SIGTERM"


def test_pfc_stops_the_sender_for_its_quanta_and_xon_restarts_it(agents, veth):
    b = agents("b")
    a = agents("a")
    pause_quanta = 3906                                       # 199.99 ms at 10 Mb/s
    pause_s = pause_quanta * 512 / RATE_BPS
    inject = packet_socket(veth["b"], "eth0", 0x0800)                         # out of b, into a
    arrivals = Arrivals(packet_socket(veth["b"], "eth0", 0x0800))
    arrivals.start()
    marks = {}
    try:
        a.client.post(QPN["a"], 2 << 20)                      # ~1.8 s at 10 Mb/s
        time.sleep(0.3)
        marks["xoff1"] = time.time()
        inject.send(raw(pfc_frame(MAC["b"], {3: pause_quanta})))
        time.sleep(0.5)
        marks["xoff2"] = time.time()
        inject.send(raw(pfc_frame(MAC["b"], {3: 65535})))     # 3.36 s ...
        time.sleep(0.25)
        marks["xon"] = time.time()
        inject.send(raw(pfc_frame(MAC["b"], {3: 0})))         # ... ended early
        time.sleep(0.2)
    finally:
        arrivals.stop()
        inject.close()
    sa, _ = a.terminate(), b.terminate()
    times = arrivals.times

    def largest_gap(start: float, end: float) -> float:
        """The longest silence between arrivals that began in [start, end)."""
        return max(b - a for a, b in zip(times, times[1:]) if start <= a < end)

    frame_s = 1082 * 8 / RATE_BPS
    xon_s = marks["xon"] - marks["xoff2"]
    # the silence begins with the last frame before the PFC frame arrived,
    # up to a frame time before the test took its mark
    first = largest_gap(marks["xoff1"] - 0.005, marks["xoff2"] - 0.005)
    second = largest_gap(marks["xoff2"] - 0.005, marks["xon"] + 0.1)
    print(f"\nPFC: {pause_quanta} quanta ({pause_s * 1e3:.2f} ms) -> gap {first * 1e3:.2f} ms; "
          f"XOFF then XON {xon_s * 1e3:.2f} ms later -> gap {second * 1e3:.2f} ms; "
          f"agent counted {sa['nics'][0]['paused_s'][3] * 1e3:.2f} ms paused")
    # Marks are taken in this process and arrivals stamped by a sniffer: the
    # two clocks are read at slightly different moments (a millisecond of
    # slack on the lower bounds).
    assert pause_s - 0.001 <= first <= pause_s + frame_s + 0.01
    assert xon_s - 0.001 <= second <= xon_s + frame_s + 0.01
    nic = sa["nics"][0]
    assert nic["counters"]["pfc_rx"] == 3
    assert nic["pfc_pauses"][3] == 2 and nic["pfc_resumes"][3] == 1
    assert nic["paused_s"][3] == pytest.approx(pause_s + xon_s, abs=0.005)
    assert sum(nic["paused_s"]) == nic["paused_s"][3]


def test_ce_marked_packets_bring_cnps_and_a_rate_cut(agents, veth):
    b = agents("b")
    a = agents("a")
    inject = packet_socket(veth["a"], "eth0", 0x0800)                         # out of a, into b
    # CE-marked WRITEs of a's QP with PSNs just behind b's expected PSN: b
    # takes them for duplicates but answers the marks with CNPs
    flow = RoceFlow(MAC["a"], MAC["b"], IP["a"], IP["b"], 0xC000 | QPN["a"], ecn=ECN_CE)
    try:
        a.client.post(QPN["a"], 1 << 20)
        time.sleep(0.2)
        for i in range(3):
            inject.send(flow.packet(0x0A, QPN["b"], 0xFFFFFF - i, bytes(64),
                                    reth=(0, 0, 64)))
            # 3 × N (5 ms at 10 Mb/s): each mark a CNP unless b is stalled for
            # 10 ms; two fast-recovery steps (T = 5.5 ms) between the cuts
            time.sleep(0.015)
        status = a.client.status()["qps"][str(QPN["a"])]
    finally:
        inject.close()
    time.sleep(0.1)
    sa, sb = a.terminate(), b.terminate()
    qb, qa = sb["qps"][0]["counters"], sa["qps"][0]
    assert qb["ce_packets_rx"] == 3 and qb["duplicate_packets"] == 3
    assert qb["cnps_sent"] + qb["cnps_suppressed"] == 3 and qb["cnps_sent"] >= 2
    assert qa["counters"]["cnps_rx"] == qa["dcqcn"]["cuts"] == qb["cnps_sent"]
    rates = [s[1] for s in qa["rate_samples"]]
    print(f"\nDCQCN: Rc samples (Mb/s) {[round(r / 1e6, 3) for r in rates[:12]]}; "
          f"rate when polled {status['rate_bps'] / 1e6:.3f} Mb/s")
    assert rates[0] == RATE_BPS and rates[1] == pytest.approx(RATE_BPS / 2)   # α = 1
    assert min(rates) < RATE_BPS / 2
    assert status["rate_bps"] < RATE_BPS


def test_packets_per_second_of_one_agent(agents):
    fast = {"rate_bps": 10e9, "qp": {"dcqcn": {"enabled": False}}}
    b = agents("b", **fast)
    a = agents("a", **fast)
    size = 16 << 20
    a.client.post(QPN["a"], size)
    a.wait_completed(QPN["a"], timeout_s=60)
    rec = a.client.completions()[0][0]
    sa, sb = a.terminate(), b.terminate()
    ca, cb = sa["qps"][0]["counters"], sb["qps"][0]["counters"]
    got = sb["messages"]["received"][0]
    tx_pps = ca["packets_sent"] / rec["fct_s"]
    rx_pps = cb["data_packets_rx"] / (got["last_at"] - got["first_at"])
    print(f"\npps: a sent {ca['packets_sent']} packets ({ca['retransmit_packets']} again) "
          f"in {rec['fct_s']:.3f} s = {tx_pps:,.0f}/s, {ca['bytes_sent'] * 8 / rec['fct_s'] / 1e6:.0f}"
          f" Mb/s; b received {cb['data_packets_rx']} at {rx_pps:,.0f}/s; "
          f"tx errors {sa['nics'][0]['counters']['tx_errors']}")
    # A figure of this machine, printed, not asserted (a busy machine lowers
    # it; benchmarks/agent_pps.py measures it): what must hold is the whole
    # 16 MB delivered as one message.
    assert rec["status"] == "ok" and got["size"] == size


REFUSAL_PROBE = """
import json
from emulator.traffic.agent.backends import RawNic
nic = RawNic("eth0", swallow_udp=False)
fits = nic.send(bytes(14) + bytes(1000))   # the MTU's worth behind an Ethernet header
refused = nic.send(bytes(14) + bytes(1500))
print(json.dumps({"fits": fits, "refused": refused, "errors": nic.errors,
                  "counted": nic.refused.to_dict()}))
"""


def test_a_frame_longer_than_the_interface_mtu_is_counted_with_the_mtu():
    """A veth of MTU 1000 refuses a 1,514 B frame (EMSGSIZE): the raw back end
    counts it with the interface's MTU, which a live run names in ``errors``."""
    ns = f"{PREFIX}-mtu"
    tag = f"afm{os.getpid() % 100000}"
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "netns", "exec", ns, "ip", "link", "add", "eth0", "mtu", "1000", "type",
           "veth", "peer", "name", f"{tag}p", "mtu", "1000")
        for dev in ("eth0", f"{tag}p"):
            sh("ip", "netns", "exec", ns, "ip", "link", "set", dev, "up")
        out = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", REFUSAL_PROBE],
                             cwd=REPO, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        found = json.loads(out.stdout)
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)
    assert found["fits"] is True and found["refused"] is False and found["errors"] == 1
    assert found["counted"] == {"frames": 1, "largest_bytes": 1514, "mtu": 1000}
