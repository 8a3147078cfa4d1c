"""PFC on BMv2 end to end (the approximation of emulator/control/bmv2_pfc.py):
the quickstart fabric on BMv2 running fabric.p4, a PFC frame sent by a
GPU's NIC to its leaf, the leaf's queue towards that GPU slowed and then
given its rate back. BMv2 has no command to read a queue rate back, so the
effect is seen in RTTs of lossless-class pings through the paused queue,
and the frame in the leaf's ``pfc_rx`` counter. Needs root and BMv2 (the
Vagrant VM); skipped elsewhere."""

from __future__ import annotations

import re
import subprocess
import time

import pytest
from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.layers.l2 import Ether

from emulator.network.netlink import packet_socket
from emulator.run.session import FabricSession
from emulator.topology import load_topology
from tests.root.test_network_support import TOPOLOGIES

pytestmark = [pytest.mark.root, pytest.mark.bmv2]

ROCE_TOS = 26 << 2  # DSCP 26: priority 3, the lossless class


def _netns(fabric: FabricSession, server: str) -> list[str]:
    ns = fabric.network.netns_name(server)  # type: ignore[union-attr]
    return ["ip", "netns", "exec", ns] if ns else []


def _rtts_ms(fabric: FabricSession, src, dst, count: int, interval_s: float) -> list[float]:
    cmd = _netns(fabric, src.server) + ["ping", "-n", "-c", str(count), "-i", str(interval_s),
                                        "-W", "5", "-Q", str(ROCE_TOS), "-I", src.ip, dst.ip]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    return [float(m) for m in re.findall(r"time=([\d.]+) ms", out)]


def test_a_pause_frame_slows_the_leaf_queue_then_it_recovers():
    topology = load_topology(TOPOLOGIES / "quickstart.yaml")
    with FabricSession(topology, target="bmv2") as fabric:
        paused = next(g for g in topology.gpus if g.server == "srv0" and g.index == 0)
        peer = next(g for g in topology.gpus if g.server == "srv1" and g.index == 0)
        assert peer.switch == paused.switch
        leaf, port = paused.switch, paused.switch_port
        emulator = fabric.pfc_emulators[leaf]
        assert fabric.network is not None and fabric.controller is not None
        nic = next(n for n in fabric.network.host_plan(paused.server).nics if n.gpu == paused.name)

        baseline = _rtts_ms(fabric, peer, paused, count=10, interval_s=0.05)
        assert len(baseline) == 10 and max(baseline) < 100

        # Sent from this process: a helper process would still be exiting
        # (scapy's import alone takes a second) when the 0.34 s pause ended.
        pfc = bytes(Ether(dst="01:80:c2:00:00:01", src=nic.mac, type=0x8808)
                    / MACControlClassBasedFlowControl(c3_enabled=1, c3_pause_time=0xFFFF))
        with packet_socket(fabric.network.netns_name(paused.server) or "", nic.ifname) as sock:
            sock.send(pfc)
        deadline = time.monotonic() + 2
        while emulator.stats()["queues"].get(f"{port}/3", {}).get("pauses", 0) < 1:
            assert time.monotonic() < deadline, emulator.stats()
            time.sleep(0.005)
        # 0xFFFF quanta at 100 Mb/s: a 0.34 s pause at ~3 packets/s. Echo
        # requests enqueued during it leave about one pause time apart.
        during = _rtts_ms(fabric, peer, paused, count=4, interval_s=0.02)
        assert max(during) > 200, during

        counters = fabric.controller.read_counters(leaf)
        assert counters[port][0]["pfc_rx_packets"] == 1

        time.sleep(3)   # the pause has run out and what it held has left
        q = emulator.stats()["queues"][f"{port}/3"]
        assert q["paused"] is False and q["resumes"] == 1 and q["rate_pps"] == q["link_pps"]
        assert q["paused_s"] == pytest.approx(0xFFFF * 512 / 100e6, abs=0.01)
        after = _rtts_ms(fabric, peer, paused, count=10, interval_s=0.05)
        assert len(after) == 10 and max(after) < 100
        assert emulator.stats()["cli_errors"] == 0
