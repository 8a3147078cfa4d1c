"""The switch port's PACKET_MMAP receive ring on a veth (root): frames come
out whole and in order, an 802.1Q tag the kernel stripped is put back, each
frame's wait is measured from the kernel's timestamp, the ring's slots fit
jumbo frames when the interface has a jumbo MTU, and a ring that overflows
counts the frames the kernel dropped."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from emulator.network.netlink import in_netns, packet_socket
from emulator.targets.builtin.ports import RawPort

pytestmark = pytest.mark.root

ETH = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01"


@pytest.fixture
def veth():
    ns = f"afxring{os.getpid()}"
    run = lambda *a: subprocess.run(a, check=True, capture_output=True, timeout=10)  # noqa: E731
    run("ip", "netns", "add", ns)
    try:
        # no IPv6 on the veths: a link coming up sends MLD reports, frames
        # the tests would read as their own
        run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1")
        run("ip", "netns", "exec", ns, "ip", "link", "add", "rg0", "type", "veth", "peer",
            "name", "rg1")
        for ifname in ("rg0", "rg1"):
            run("ip", "netns", "exec", ns, "ip", "link", "set", ifname, "mtu", "9000", "up")
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def drain(port):
    out = []
    while (frame := port.recv()) is not None:
        out.append(frame)
    return out


def test_frames_tags_and_waits_through_the_ring(veth):
    tx = packet_socket(veth, "rg0")
    port = in_netns(f"/run/netns/{veth}", lambda: RawPort("rg1", rcvbuf_bytes=2 << 20))
    try:
        assert port.uses_ring
        frames = [ETH + b"\x08\x00" + bytes([i]) * (60 + 40 * i) for i in range(100)]
        frames.append(ETH + b"\x08\x00" + bytes(8000))          # jumbo
        tagged = ETH + b"\x81\x00\x60\x05\x08\x00" + bytes(60)   # PCP 3, VLAN 5
        for frame in frames + [tagged]:
            tx.send(frame)
        time.sleep(0.02)
        got = drain(port)
        assert got == frames + [tagged]
        assert port.rx_wait.count == len(got) and port.rx_wait.max_us >= 15_000
        # more than the ring holds: the rest is the kernel's drop, counted
        for _ in range(port._ring.frames + 200):
            tx.send(frames[0])
        assert len(drain(port)) == port._ring.frames
        assert port.poll_overruns() >= 200
    finally:
        port.close()
        tx.close()


def test_without_the_ring_the_port_reads_the_same(veth):
    tx = packet_socket(veth, "rg0")
    port = in_netns(f"/run/netns/{veth}", lambda: RawPort("rg1", ring=False))
    try:
        assert not port.uses_ring
        tagged = ETH + b"\x81\x00\x60\x05\x08\x00" + bytes(60)
        tx.send(tagged)
        time.sleep(0.01)
        assert drain(port) == [tagged] and port.rx_wait.count == 1
    finally:
        port.close()
        tx.close()
