"""The switch port's PACKET_MMAP transmit ring on a veth (root): frames
written into the ring leave whole and in order at the flush and not
before, the ring reuses its slots once the kernel hands them back, a frame
it cannot take (longer than the MTU) is a failed send that does not
overtake the frames before it, a full ring refuses frames instead of
losing them, and the port sends with ``send`` without the ring."""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest

from emulator.network.netlink import in_netns, packet_socket
from emulator.targets.builtin.ports import RawPort
from emulator.targets.builtin.ring import TP_STATUS_AVAILABLE

pytestmark = pytest.mark.root

ETH = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01"


@pytest.fixture
def veth():
    ns = f"afxswtx{os.getpid()}"
    run = lambda *a: subprocess.run(a, check=True, capture_output=True, timeout=10)  # noqa: E731
    run("ip", "netns", "add", ns)
    try:
        # no IPv6 on the veths: a link coming up sends MLD reports, frames
        # the tests would read as their own
        run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1")
        run("ip", "netns", "exec", ns, "ip", "link", "add", "tr0", "type", "veth", "peer",
            "name", "tr1")
        for ifname in ("tr0", "tr1"):
            run("ip", "netns", "exec", ns, "ip", "link", "set", ifname, "mtu", "1500", "up")
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def receiver(ns: str) -> socket.socket:
    rx = packet_socket(ns, "tr1", rcvbuf_bytes=16 << 20)
    rx.setblocking(False)
    return rx


def drain(rx: socket.socket) -> list[bytes]:
    """Our frames received (not the kernel's IPv6 chatter on a link up)."""
    out = []
    while True:
        try:
            frame = rx.recv(65535)
        except BlockingIOError:
            return out
        if frame.startswith(ETH):
            out.append(frame)


def ring_port(ns: str) -> RawPort:
    return in_netns(f"/run/netns/{ns}", lambda: RawPort("tr0", tx_ring=True))


def test_frames_leave_in_order_at_the_flush(veth):
    rx = receiver(veth)
    port = ring_port(veth)
    try:
        ring = port.tx_ring
        assert ring is not None
        frames = [ETH + b"\x08\x00" + bytes([i % 256]) * (46 + 14 * i) for i in range(100)]
        for frame in frames:
            assert port.send(frame)
        assert ring.pending == len(frames)
        time.sleep(0.01)
        assert drain(rx) == [], "nothing leaves before the flush"
        assert port.flush()
        time.sleep(0.01)
        assert drain(rx) == frames
        assert ring.pending == 0 and ring.errors == 0
        # the kernel hands the slots back: several times round the ring
        sent = []
        for i in range(3 * ring.frames):
            frame = ETH + b"\x08\x00" + i.to_bytes(4, "big") + bytes(56)
            assert port.send(frame)
            sent.append(frame)
            if i % 64 == 63:
                port.flush()
                assert drain(rx) == sent, f"after {i + 1} frames"
                sent = []
        port.flush()
        assert drain(rx) == sent
        assert ring.full == 0
        assert all(ring.slot_status(i) == TP_STATUS_AVAILABLE for i in range(ring.frames))
    finally:
        port.close()
        rx.close()


def test_frames_the_receiver_reads_late_arrive_intact(veth):
    # The kernel builds a ring frame's buffer from the ring's pages: a slot
    # handed back and rewritten must not change a frame still queued.
    rx = receiver(veth)
    port = ring_port(veth)
    try:
        ring = port.tx_ring
        frames = [ETH + b"\x08\x00" + i.to_bytes(4, "big") * 200 for i in range(3 * ring.frames)]
        for i, frame in enumerate(frames):
            assert port.send(frame)
            if i % 64 == 63:
                port.flush()
        port.flush()
        time.sleep(0.05)
        assert drain(rx) == frames
    finally:
        port.close()
        rx.close()


def test_a_frame_the_ring_cannot_take_keeps_its_place(veth):
    rx = receiver(veth)
    port = ring_port(veth)
    try:
        small = [ETH + b"\x08\x00" + bytes([i]) * 60 for i in range(3)]
        too_long = ETH + b"\x08\x00" + bytes(3000)   # over the MTU: refused by the kernel
        assert port.send(small[0]) and port.send(small[1])
        assert not port.send(too_long)               # a failed send, counted by the caller
        assert port.send(small[2])
        port.flush()
        time.sleep(0.01)
        assert drain(rx) == small
        assert isinstance(port.last_error, OSError)
    finally:
        port.close()
        rx.close()


def test_a_full_ring_refuses_frames_and_the_rest_still_leave(veth):
    rx = receiver(veth)
    port = ring_port(veth)
    try:
        ring = port.tx_ring
        subprocess.run(["ip", "netns", "exec", veth, "ip", "link", "set", "tr0", "down"],
                       check=True, capture_output=True, timeout=10)
        frames = [ETH + b"\x08\x00" + i.to_bytes(4, "big") + bytes(56)
                  for i in range(ring.frames + 10)]
        taken = [f for f in frames if port.send(f)]
        # the kernel refuses every flush while the link is down: the ring fills
        assert len(taken) == ring.frames and ring.full >= 10
        assert ring.errors > 0 and ring.pending > 0
        assert not port.flush()
        subprocess.run(["ip", "netns", "exec", veth, "ip", "link", "set", "tr0", "up"],
                       check=True, capture_output=True, timeout=10)
        time.sleep(0.2)  # the carrier comes up
        drain(rx)
        for _ in range(50):
            if port.flush() and not ring.pending:
                break
            time.sleep(0.02)
        assert ring.pending == 0
        time.sleep(0.01)
        assert drain(rx) == taken
    finally:
        port.close()
        rx.close()


def test_without_the_ring_the_port_sends_each_frame(veth):
    rx = receiver(veth)
    port = in_netns(f"/run/netns/{veth}", lambda: RawPort("tr0"))
    try:
        assert port.tx_ring is None, "off by default"
        frame = ETH + b"\x08\x00" + bytes(60)
        assert port.send(frame)
        assert port.flush()
        time.sleep(0.01)
        assert drain(rx) == [frame]
    finally:
        port.close()
        rx.close()
