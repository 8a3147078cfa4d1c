"""Frames an interface refuses as longer than its MTU (``EMSGSIZE``) are
counted by the NIC's back end, carried in the agent's stats and named in a
live run's results ``errors``: a flow whose frames are refused stalls (each
retransmission is refused again), and that must not go unexplained."""

from __future__ import annotations

import errno
import socket

from emulator.run.live import refused_frame_errors
from emulator.traffic.agent.backends import (FakeNic, RawNic, Refusals, interface_mtu,
                                              refusal_line)
from tests.unit.test_agent_support import QPN, pair


def run_pair(mtu: int | None, size_bytes: int) -> dict:
    net = pair(a={"messages": [{"qp": QPN["a"], "size_bytes": size_bytes}]})
    net.fakes[("a", "eth0")].mtu = mtu
    net.run(0.5)
    return {"a": net.agents["a"].snapshot(net.clock.now), "b": net.agents["b"].snapshot(
        net.clock.now)}


def test_an_mtu_below_the_roce_frames_is_named_in_one_line():
    stats = run_pair(mtu=600, size_bytes=10_000)   # 1 KB path MTU: frames of ~1.1 KB
    refused = stats["a"]["nics"][0]["refused"]
    assert refused["frames"] > 1 and refused["mtu"] == 600
    assert refused["largest_bytes"] > 600 + 14
    [line] = refused_frame_errors(stats)
    assert "\n" not in line
    assert line.startswith("NIC eth0: the interface refused")
    assert f"{refused['largest_bytes']} B" in line and "MTU 600" in line
    # the message never completed: nothing else would say why
    assert not stats["a"]["messages"]["sent"] or all(
        m.get("acked_at") is None for m in stats["a"]["messages"]["sent"])


def test_frames_within_the_mtu_give_no_error():
    stats = run_pair(mtu=1500, size_bytes=10_000)
    assert stats["a"]["nics"][0]["refused"]["frames"] == 0
    assert refused_frame_errors(stats) == []
    assert refused_frame_errors({"a": None}) == []   # an agent without stats: its own error


def test_a_raw_socket_counts_emsgsize_with_the_interface_mtu():
    def refuse(frame: bytes) -> None:
        raise OSError(errno.EMSGSIZE, "Message too long")

    # no packet socket (that needs root): the send path alone, with a UDP
    # socket to read the loopback's MTU through, as the packet socket would
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        nic = RawNic.__new__(RawNic)
        nic.name, nic.errors, nic.last_error, nic.refused = "lo", 0, None, Refusals()
        nic._sock, nic._send = udp, refuse
        assert nic._plain_send(bytes(70_150)) is False
        assert nic._plain_send(bytes(70_100)) is False
        mtu = interface_mtu(udp, "lo")
    assert mtu is not None and mtu >= 1500
    assert nic.errors == 2
    assert nic.refused.to_dict() == {"frames": 2, "largest_bytes": 70_150, "mtu": mtu}
    line = refusal_line({"name": "lo", "refused": nic.refused.to_dict()})
    assert line is not None and "NIC lo:" in line and "70150 B" in line and f"MTU {mtu}" in line
    assert refusal_line({"name": "x", "refused": {"frames": 1, "largest_bytes": 9000,
                                                  "mtu": None}}).count("unknown MTU") == 1
    assert interface_mtu(udp, "lo") is None      # closed: unreadable, not an exception


def test_other_send_errors_are_not_refusals():
    class Full:
        def send(self, frame: bytes) -> None:
            raise OSError(errno.ENOBUFS, "No buffer space available")

    nic = RawNic.__new__(RawNic)
    nic.name, nic.errors, nic.last_error, nic.refused = "eth0", 0, None, Refusals()
    nic._send = Full().send
    assert nic._plain_send(bytes(100)) is False
    assert nic.errors == 1 and nic.refused.frames == 0
    assert refusal_line({"name": "eth0", "refused": nic.refused.to_dict()}) is None


def test_a_fake_nic_refuses_like_the_kernel():
    fake = FakeNic("eth1", mtu=1000)
    assert fake.send(bytes(1014)) is True      # MTU + the Ethernet header
    assert fake.send(bytes(1015)) is False
    assert fake.refused.to_dict() == {"frames": 1, "largest_bytes": 1015, "mtu": 1000}
