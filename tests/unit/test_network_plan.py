"""Host configuration plan and switch port plan, as data (no root)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.network.errors import NetworkError
from emulator.network.plan import (
    DEFAULT_ROUTE, MAIN_TABLE, NeighbourPlan, NicPlan, RoutePlan, RulePlan, host_plan,
    host_plans, switch_port_plan,
)
from emulator.topology import load_topology

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


def topo(name: str):
    return load_topology(TOPOLOGIES / f"{name}.yaml")


def test_quickstart_host_plan_is_exactly_this():
    plan = host_plan(topo("quickstart"), "srv1", mtu=1500)
    assert plan.nics == (
        NicPlan("srv1-eth0", "srv1/gpu0", "02:00:0a:00:00:02", "10.0.0.2", 24, 1500),
        NicPlan("srv1-eth1", "srv1/gpu1", "02:00:0a:01:00:02", "10.1.0.2", 24, 1500),
    )
    assert plan.neighbours == (
        NeighbourPlan("srv1-eth0", "10.0.0.254", "02:01:00:00:00:02"),
        NeighbourPlan("srv1-eth1", "10.1.0.254", "02:01:00:01:00:02"),
    )
    assert plan.rules == (RulePlan("10.0.0.2", 100, 1000), RulePlan("10.1.0.2", 101, 1001))
    assert set(plan.routes) == {
        RoutePlan(DEFAULT_ROUTE, "10.0.0.254", "srv1-eth0", 100),
        RoutePlan(DEFAULT_ROUTE, "10.1.0.254", "srv1-eth1", 101),
        RoutePlan("10.0.0.0/24", "10.0.0.254", "srv1-eth0", MAIN_TABLE),
        RoutePlan("10.1.0.0/24", "10.1.0.254", "srv1-eth1", MAIN_TABLE),
        RoutePlan(DEFAULT_ROUTE, "10.0.0.254", "srv1-eth0", MAIN_TABLE),
    }
    assert len(plan.routes) == 5


@pytest.mark.parametrize("name", ["quickstart", "rail-4x4", "rail-8x8", "leaf-spine-4x4",
                                  "fat-tree-k4"])
def test_every_nic_has_its_own_table_rule_and_gateway(name):
    topology = topo(name)
    plans = host_plans(topology, mtu=9000)
    assert set(plans) == {s.name for s in topology.servers}
    for gpu in topology.gpus:
        plan = plans[gpu.server]
        nic = plan.nic(gpu.intf)
        assert (nic.ip, nic.mac, nic.prefix_len, nic.mtu) == (gpu.ip, gpu.mac, gpu.prefix_len, 9000)
        table = 100 + gpu.index
        assert RulePlan(gpu.ip, table, 1000 + gpu.index) in plan.rules
        assert RoutePlan(DEFAULT_ROUTE, gpu.gateway_ip, gpu.intf, table) in plan.routes
        assert NeighbourPlan(gpu.intf, gpu.gateway_ip, gpu.gateway_mac) in plan.neighbours
    for plan in plans.values():
        main = [(r.dst, r.table) for r in plan.routes if r.table == MAIN_TABLE]
        assert len(main) == len(set(main)), "no duplicate route in the main table"
        first = plan.nics[0]
        assert [r for r in plan.routes if r.table == MAIN_TABLE and r.dst == DEFAULT_ROUTE] == \
            [RoutePlan(DEFAULT_ROUTE, plan.neighbours[0].ip, first.ifname, MAIN_TABLE)]
        assert len({r.priority for r in plan.rules}) == len(plan.rules)


def test_nics_sharing_a_prefix_get_one_main_route():
    # leaf-spine: all four NICs of srv0 sit in tor0's 10.0.0.0/24.
    plan = host_plan(topo("leaf-spine-4x4"), "srv0")
    assert {n.ip for n in plan.nics} == {"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}
    main = [r for r in plan.routes if r.table == MAIN_TABLE]
    assert main == [RoutePlan("10.0.0.0/24", "10.0.0.254", "srv0-eth0", MAIN_TABLE),
                    RoutePlan(DEFAULT_ROUTE, "10.0.0.254", "srv0-eth0", MAIN_TABLE)]
    # ... but a neighbour entry on every NIC, each for the MAC of its own leaf port.
    assert len({(n.ifname, n.mac) for n in plan.neighbours}) == 4


def test_plan_is_plain_data():
    data = host_plan(topo("quickstart"), "srv0").to_dict()
    assert data["server"] == "srv0"
    assert data["rules"][0] == {"src": "10.0.0.1", "table": 100, "priority": 1000}


def test_unknown_server_is_one_line():
    with pytest.raises(NetworkError,
                       match=r"no server 'srv9' in topology quickstart \(servers: srv0, srv1\)"):
        host_plan(topo("quickstart"), "srv9")


def test_switch_port_plan_covers_every_port_with_its_link():
    topology = topo("rail-8x8")
    plans = switch_port_plan(topology, "k3f9", buffer_bytes=50_000)
    assert set(plans) == {s.name for s in topology.switches}
    names = [p.ifname for ports in plans.values() for p in ports]
    assert len(names) == len(set(names)) == sum(len(s.ports) for s in topology.switches)
    assert all(len(n) <= 15 and n.startswith("afxk3f9s") for n in names)
    leaf = topology.switch("leaf-r3-0")
    ports = plans["leaf-r3-0"]
    assert [p.port for p in ports] == [p.number for p in leaf.ports]
    first = ports[0]
    assert first.ifname == f"afxk3f9s{leaf.index}p1"
    assert first.alias == f"aifabric:k3f9:{leaf.ports[0].intf}"
    assert first.mac == leaf.ports[0].mac
    assert (first.rate_bps, first.delay_us, first.buffer_bytes) == (100_000_000, 5.0, 50_000)
    assert {p.kind for p in ports} == {"host", "fabric"}
