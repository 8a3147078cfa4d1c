"""The extra commands of the ``aifabric up`` CLI on a live quickstart fabric."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest

from emulator.cli.fabric_cli import FabricCLI
from emulator.run.session import FabricSession
from emulator.topology import load_topology

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.root
def test_counters_queues_pfc_paths(tmp_path):
    topo = load_topology(REPO / "topologies" / "quickstart.yaml")
    with FabricSession(topo) as fabric:
        src, dst = topo.gpu("srv0/gpu0"), topo.gpu("srv1/gpu1")
        ns = fabric.network.netns_name(src.server)
        done = subprocess.run(["ip", "netns", "exec", ns, "ping", "-c", "3", "-i", "0.2", "-W", "2",
                               "-Q", str(26 << 2), "-I", src.ip, dst.ip], capture_output=True)
        assert done.returncode == 0
        script = tmp_path / "cmds"
        script.write_text("counters leaf-r0-0\nqueues leaf-r0-0\npfc leaf-r0-0\n"
                          "paths srv0/gpu0 srv1/gpu1\ncounters nosuch\n"
                          f"capture leaf-r0-0:1 2 {tmp_path / 'cap.pcap'}\ncapture nosuch:9\n")
        pinger = subprocess.Popen(["ip", "netns", "exec", ns, "ping", "-c", "20", "-i", "0.2",
                                   "-I", src.ip, dst.ip], stdout=subprocess.DEVNULL)
        out = io.StringIO()
        with open(script) as stdin:  # Mininet's CLI polls a real file descriptor
            FabricCLI(fabric, script=str(script), stdin=stdin, stdout=out)
        pinger.wait(timeout=10)
        text = out.getvalue()
    assert "prio 3: " in text and "rx_packets=" in text and "tx_packets=" in text
    assert "depth" in text
    assert "leaf-r0-0 -> spine0 -> leaf-r1-0" in text
    assert "usage: SWITCH, one of" in text
    assert "captured 2 frames on leaf-r0-0:1" in text and "unknown port nosuch:9" in text
