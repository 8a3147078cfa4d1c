"""The NIC's PACKET_MMAP transmit ring on a veth (root): frames leave on a
flush, whole and in order, even when the receiver reads them long after
the ring has wrapped; a frame longer than a slot goes by plain send() in
its place; a flush that fails gives the ring up and the frames still in it
go by send(), in order, or are counted; and two agents complete a WRITE
with the ring on."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from emulator.network.netlink import in_netns, packet_socket
from emulator.traffic.agent.backends import RawNic

pytestmark = pytest.mark.root

ETH = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x88\xb5"


@pytest.fixture
def veth():
    ns = f"afxtxring{os.getpid()}"
    run = lambda *a: subprocess.run(a, check=True, capture_output=True, timeout=10)  # noqa: E731
    run("ip", "netns", "add", ns)
    try:
        run("ip", "netns", "exec", ns, "ip", "link", "add", "tx0", "type", "veth", "peer",
            "name", "tx1")
        for ifname in ("tx0", "tx1"):
            run("ip", "netns", "exec", ns, "ip", "link", "set", ifname, "mtu", "9000", "up")
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def numbered(i: int, size: int) -> bytes:
    return ETH + i.to_bytes(4, "big") * ((size - len(ETH)) // 4)


def received(sock: socket.socket) -> list[bytes]:
    out = []
    sock.settimeout(0.3)
    try:
        while True:
            data = sock.recv(65535)
            if data[12:14] == b"\x88\xb5":
                out.append(data)
    except socket.timeout:
        return out


def test_frames_leave_on_flush_whole_and_in_order(veth):
    rx = packet_socket(veth, "tx1", rcvbuf_bytes=64 << 20)
    nic = in_netns(f"/run/netns/{veth}", lambda: RawNic("tx0", swallow_udp=False,
                                                         max_frame_bytes=1600, tx_ring=True,
                                                         tx_ring_frames=64))
    try:
        assert nic.tx_stats()["mode"] == "ring"
        nic.send(numbered(0, 200))
        assert received(rx) == []          # queued in the ring, not sent
        nic.flush()
        frames = [numbered(0, 200)]
        sizes = (60, 1086, 1600, 4000)     # 4000: longer than a 2 KB slot
        for i in range(1, 3000):
            frame = numbered(i, sizes[i % len(sizes)])
            assert nic.send(frame)
            frames.append(frame)
            if i % 37 == 0:
                nic.flush()
        nic.flush()
        assert received(rx) == frames      # the ring wrapped 40 times before the read
        stats = nic.tx_stats()
        assert stats["queued"] + stats["fallback_frames"] == 3000
        assert stats["fallback_frames"] == 750 and stats["refused"] == 0
        assert stats["errors"] == 0 and stats["dropped_bytes"] == 0
    finally:
        nic.close()
        rx.close()


def test_a_failed_flush_gives_the_ring_up_without_losing_count(veth):
    nic = in_netns(f"/run/netns/{veth}", lambda: RawNic("tx0", swallow_udp=False,
                                                         max_frame_bytes=1600, tx_ring=True))
    try:
        for i in range(10):
            assert nic.send(numbered(i, 100))
        subprocess.run(["ip", "netns", "exec", veth, "ip", "link", "set", "tx0", "down"],
                       check=True, timeout=10)
        nic.flush()                        # ENETDOWN
        stats = nic.tx_stats()
        assert stats["abandoned"] and stats["errors"] == 1 and stats["mode"] == "send"
        # the ten waiting frames went to send(), which failed too: each one counted
        assert stats["fallback_frames"] == 10 and stats["refused"] + nic.errors >= 10
        assert not nic.send(numbered(99, 100))   # plain send() now, refused and counted
    finally:
        nic.close()


def test_two_agents_complete_a_write_with_the_ring(tmp_path):
    from tests.root.test_agent_veth import AgentProc  # noqa: PLC0415
    from tests.unit.test_agent_support import MAC, QPN, host_config

    names = {"a": f"afxtxa-{os.getpid()}", "b": f"afxtxb-{os.getpid()}"}
    created = []
    run = lambda *a: subprocess.run(a, check=True, capture_output=True, timeout=10)  # noqa: E731
    try:
        for ns in names.values():
            run("ip", "netns", "add", ns)
            created.append(ns)
        tag = f"afxt{os.getpid() % 100000}"
        run("ip", "link", "add", f"{tag}a", "type", "veth", "peer", "name", f"{tag}b")
        for host, ns in names.items():
            run("ip", "link", "set", f"{tag}{host}", "netns", ns, "name", "eth0")
            run("ip", "-n", ns, "link", "set", "eth0", "address", MAC[host], "up")
        procs = {}
        for host in ("b", "a"):
            messages = [{"qp": QPN["a"], "size_bytes": 2_000_000}] if host == "a" else []
            config = host_config(host, rate_bps=1e9, messages=messages,
                                 run={"tx_ring": True})
            procs[host] = AgentProc(names[host], config, tmp_path)
        procs["a"].wait_completed(QPN["a"], timeout_s=30)
        stats = {h: p.terminate() for h, p in procs.items()}
        for h in ("a", "b"):
            batching = stats[h]["nics"][0]["tx_batching"]
            assert batching["mode"] == "ring" and batching["refused"] == 0, batching
        a = stats["a"]["qps"][0]["counters"]
        assert a["messages_completed"] == 1 and a["retransmit_packets"] == 0
        assert stats["a"]["nics"][0]["tx_batching"]["queued"] == a["packets_sent"]
        assert stats["b"]["qps"][0]["counters"]["payload_bytes_rx"] == 2_000_000
    finally:
        for ns in created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)
