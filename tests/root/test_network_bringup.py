"""Bring-up of the quickstart fabric with the built-in switch started
without a program (``--no-p4``): every host configured as planned, every
switch running and serving gRPC, every resource recorded; teardown leaves
nothing."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from pyroute2 import IPRoute
from pyroute2.ethtool import Ethtool

from emulator.network import FabricNetwork
from emulator.network.netlink import in_netns, is_offload_feature, read_host_config
from emulator.network.plan import host_plan
from emulator.network.process import pid_alive, port_open, proc_cmdline
from emulator.targets.builtin.queue_control import QueueControlClient
from emulator.topology import load_topology
from tests.root.test_network_support import TOPOLOGIES, leftovers

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def topology():
    return load_topology(TOPOLOGIES / "quickstart.yaml")


@pytest.fixture(scope="module")
def net(topology):
    with FabricNetwork(topology) as network:
        yield network


def test_hosts_are_configured_as_planned(net, topology):
    for server in topology.servers:
        plan = host_plan(topology, server.name)
        state = read_host_config(net.host(server.name).netns_path)
        assert set(state["links"]) == {"lo"} | {n.ifname for n in plan.nics}
        for nic in plan.nics:
            assert state["links"][nic.ifname] == {"mac": nic.mac, "mtu": nic.mtu, "up": True}
            assert state["addresses"][nic.ifname] == [f"{nic.ip}/{nic.prefix_len}"]
        assert set(state["neighbours"]) == {(n.ifname, n.ip, n.mac, True) for n in plan.neighbours}
        assert sorted(state["rules"]) == sorted((r.src, r.table, r.priority) for r in plan.rules)
        assert sorted(state["routes"]) == sorted((r.dst, r.gateway, r.ifname, r.table)
                                                 for r in plan.routes)


def test_ipv6_and_offloads_are_off(net, topology):
    def look(ifnames):
        with open("/proc/sys/net/ipv6/conf/all/disable_ipv6") as handle:
            ipv6_off = handle.read().strip() == "1"
        tool = Ethtool()
        try:
            on = [(i, name) for i in ifnames
                  for name, f in tool.get_features(i).features.items()
                  if f.available and f.enable and is_offload_feature(name)]
        finally:
            tool.close()
        return ipv6_off, on

    for server in topology.servers:
        host = net.host(server.name)
        assert in_netns(host.netns_path, lambda: look(host.intfNames()[:])) == (True, [])
        assert "inet6" not in host.cmd("ip addr")
    ports = [name for ports in net.switch_interfaces().values() for name in ports.values()]
    assert look(ports)[1] == []


def test_switches_run_and_serve_grpc(net, topology):
    assert set(net.switch_addresses()) == {s.name for s in topology.switches}
    for switch in topology.switches:
        pid = net.pids[switch.name]
        assert pid_alive(pid)
        argv = proc_cmdline(pid)
        assert "--no-p4" in argv and f"--device-id" in argv
        host, port = net.switch_addresses()[switch.name].rsplit(":", 1)
        assert host == "127.0.0.1" and port_open(host, int(port))
        configs = QueueControlClient(net.switch_addresses()[switch.name]).get_port_config()
        assert sorted(c["port"] for c in configs) == [p.number for p in switch.ports] + [255]
        for config in configs:
            if config["port"] != 255:
                assert config["config"]["rate_bps"] == 100e6
                assert config["config"]["delay_us"] == 5.0
                assert config["config"]["buffer_bytes"] == 96_000
    assert net.device_ids() == {s.name: s.index + 1 for s in topology.switches}


def test_switch_ports_are_up_in_the_root_namespace(net, topology):
    with IPRoute() as ipr:
        for switch in topology.switches:
            for port in switch.ports:
                name = net.switch_interfaces()[switch.name][port.number]
                link = ipr.get_links(ifname=name)[0]
                assert link.get_attr("IFLA_ADDRESS") == port.mac
                assert link.get_attr("IFLA_IFALIAS") == f"aifabric:{net.run_id}:{port.intf}"
                assert link["flags"] & 1 and link.get_attr("IFLA_MTU") == 1500
    counters = net.interface_counters()
    assert len(counters) == sum(len(s.ports) for s in topology.switches)
    assert set(net.interface_counters("srv0")) == {"srv0-eth0", "srv0-eth1"}


def test_every_resource_is_recorded(net, topology):
    record = json.loads(net.record_path.read_text())
    assert record["run_id"] == net.run_id and record["state"] == "up"
    assert record["owner"]["pid"] == os.getpid()
    roles = {(p["role"], p["node"]): p["pid"] for p in record["processes"]}
    for switch in topology.switches:
        assert roles[("switch", switch.name)] == net.pids[switch.name]
        assert ("switch-shell", switch.name) in roles
    for server in topology.servers:
        assert roles[("host-shell", server.name)] == net.pids[server.name]
    assert {n["name"] for n in record["netns"]} == \
        {f"afx-{net.run_id}-{s.name}" for s in topology.servers}
    assert set(record["interfaces"]) == {n for ports in net.switch_interfaces().values()
                                         for n in ports.values()}
    assert {"path": str(net.workdir), "keep": False} in record["files"]


def test_ip_netns_sees_the_hosts(net):
    name = net.netns_name("srv1")
    assert name == f"afx-{net.run_id}-srv1"
    out = subprocess.run(["ip", "netns", "exec", name, "ip", "-br", "addr"], capture_output=True,
                         text=True, check=True, timeout=10).stdout
    assert "10.0.0.2/24" in out and "10.1.0.2/24" in out
    assert net.gpu_host("srv1/gpu1") is net.host("srv1")


def test_teardown_leaves_nothing(topology):
    with FabricNetwork(topology) as network:
        sleeper = network.host("srv1").popen(["sleep", "60"])
        run_id, record, workdir = network.run_id, str(network.record_path), network.workdir
        pids = list(network.pids.values()) + [sleeper.pid]
        assert leftovers(run_id, pids, record) != []
    assert leftovers(run_id, pids, record) == []
    assert not workdir.exists()
    assert network.timings["teardown_s"] < 10
    network.stop()  # idempotent
