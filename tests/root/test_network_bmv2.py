"""The quickstart fabric on BMv2 (``simple_switch_grpc --no-p4``): the same
node class shape, gRPC ports open, queues set over Thrift, clean teardown.
Needs root and BMv2 (the Vagrant VM); skipped elsewhere."""

from __future__ import annotations

import pytest

from emulator.network import FabricNetwork
from emulator.network.process import pid_alive, port_open, proc_cmdline
from emulator.topology import load_topology
from tests.root.test_network_support import TOPOLOGIES, leftovers

pytestmark = [pytest.mark.root, pytest.mark.bmv2]


def test_quickstart_on_bmv2():
    topology = load_topology(TOPOLOGIES / "quickstart.yaml")
    with FabricNetwork(topology, target="bmv2") as net:
        run_id, record = net.run_id, str(net.record_path)
        pids = list(net.pids.values())
        for switch in topology.switches:
            pid = net.pids[switch.name]
            assert pid_alive(pid)
            argv = proc_cmdline(pid)
            assert argv[0].endswith("simple_switch_grpc") and "--no-p4" in argv
            host, port = net.switch_addresses()[switch.name].rsplit(":", 1)
            assert port_open(host, int(port))
    assert leftovers(run_id, pids, record) == []
