"""Bring-up of an emulated fabric from a topology: :class:`FabricNetwork`.

::

    with FabricNetwork(load_topology("topologies/quickstart.yaml")) as net:
        net.switch_addresses()        # {"leaf-r0-0": "127.0.0.1:40123", ...}
        net.gpu_host("srv0/gpu1").cmd("ip rule")

Bring-up, in order: reserve a run id and write the run record
(:mod:`.record`); plan ports and hosts (:mod:`.plan`); write the device
config and per-switch port settings into the work directory; start one
Mininet host per server (bind-mounting its namespace as
``/run/netns/afx-<run>-<server>``) and one switch node per switch; make
every link a veth pair; bring the switch ports up; launch *all* switch
processes at once and configure the hosts while they start; wait until
every gRPC port accepts connections. Teardown, signals and a dying switch
are :mod:`.lifecycle`'s (:class:`~.lifecycle.NetworkRun`).
"""

from __future__ import annotations

import os
from pathlib import Path

from emulator.network import netlink
from emulator.network.command import SwitchLaunch, builtin_port_config_text
from emulator.network.errors import NetworkError
from emulator.network.lifecycle import NetworkOptions, NetworkRun, PhaseClock, tcp_ports
from emulator.network.nodes import FabricHost, FabricIntf, FabricLink
from emulator.network.plan import HostPlan, host_plans, switch_port_plan
from emulator.network.record import RunRecord
from emulator.network.switches import P4SwitchNode
from emulator.topology import Topology

__all__ = ["FabricNetwork", "NetworkOptions"]


class FabricNetwork(NetworkRun):
    """An emulated fabric, from a topology; a context manager.

    ``target`` is ``"builtin"`` or ``"bmv2"``; ``workdir`` receives switch
    logs, outputs, port settings and captures (a temporary directory, removed
    at teardown, when None); ``device_config`` is the program every switch
    starts with (None: ``--no-p4``, to be pushed over P4Runtime later);
    ``p4info`` is kept for the controller. See :class:`~.lifecycle.NetworkRun`
    for the attributes and the life cycle.
    """

    def __init__(self, topology: Topology, target: str = "builtin",
                 workdir: str | os.PathLike[str] | None = None,
                 device_config: bytes | None = None,
                 p4info: str | os.PathLike[str] | None = None,
                 options: NetworkOptions | None = None) -> None:
        super().__init__(topology.name, target, workdir, options)
        self.topology = topology
        self.device_config = device_config
        self.p4info = Path(p4info) if p4info is not None else None
        self._host_plans: dict[str, HostPlan] = {}

    # What callers use while the network is up.

    def switch(self, name: str) -> P4SwitchNode:
        """The Mininet node of a switch (its ``launch_spec``, ``proc``, ...)."""
        self.topology.switch(name)
        return self._switches[name]

    def host(self, server: str) -> FabricHost:
        """The Mininet host of a server (``srv0``)."""
        found = self._hosts.get(server)
        if found is None:
            known = ", ".join(s.name for s in self.topology.hosts)
            raise NetworkError(f"no host {server!r} in this network (servers: {known})")
        return found

    def gpu_host(self, gpu: str) -> FabricHost:
        """The Mininet host whose NIC belongs to a GPU (``srv0/gpu1``)."""
        return self.host(self.topology.gpu(gpu).server)

    def host_plan(self, server: str) -> HostPlan:
        self.host(server)
        return self._host_plans[server]

    # Bring-up.

    def _bring_up(self) -> None:
        opts = self.options
        clock = PhaseClock(self.timings)
        record = self._new_record()
        self._port_plans = switch_port_plan(self.topology, record.run_id, opts.buffer_bytes)
        self._host_plans = host_plans(self.topology, opts.mtu)
        record.add_interfaces([p.ifname for ports in self._port_plans.values() for p in ports])
        launches = self._prepare_files(record)
        record.save()
        clock.lap("plan_s")

        self._new_mininet(FabricHost, FabricLink, FabricIntf)
        for server in self.topology.hosts:
            self._add_host(record, server.name, FabricHost)
        for switch in self.topology.switches:
            self._add_switch(record, launches[switch.name])
        record.save()
        clock.lap("nodes_s")
        self._add_links()
        netlink.set_up_switch_ports(
            self._root_ipr, [p for ports in self._port_plans.values() for p in ports], opts.mtu)
        clock.lap("links_s")

        self._launch_switches(record)
        for server, host in self._hosts.items():
            netlink.apply_host_plan(host.netns_path, self._host_plans[server])
        clock.lap("hosts_s")
        self._wait_ready()
        clock.lap("switches_ready_s")
        record.set_state("up")
        record.save()
        self.timings["bringup_s"] = sum(self.timings.values())

    def _prepare_files(self, record: RunRecord) -> dict[str, SwitchLaunch]:
        opts = self.options
        workdir = self._make_workdir(record)
        switches_dir = workdir / "switches"
        switches_dir.mkdir(exist_ok=True)
        config_path: str | None = None
        if self.device_config is not None:
            path = workdir / ("fabric.json" if self.target == "bmv2" else "device_config.json")
            path.write_bytes(self.device_config)
            record.add_file(path, keep=False)
            config_path = str(path)
        count = len(self.topology.switches)
        grpc_ports = tcp_ports(opts.grpc_port_base, count)
        thrift_ports = tcp_ports(opts.thrift_port_base, count)
        launches = {}
        for switch in self.topology.switches:
            ports = self._port_plans[switch.name]
            port_config = None
            if self.target == "builtin":
                port_config = switches_dir / f"{switch.name}.ports.json"
                port_config.write_text(builtin_port_config_text(ports))
                record.add_file(port_config, keep=True)
            pcap_dir = None
            if opts.pcap:
                pcap_dir = workdir / "pcap" / switch.name
                pcap_dir.mkdir(parents=True, exist_ok=True)
                record.add_file(pcap_dir, keep=True)
            log_file, output_file = self._log_files(record, switches_dir, switch.name)
            launches[switch.name] = SwitchLaunch(
                name=switch.name, device_id=opts.device_id_base + switch.index, ports=ports,
                grpc_port=grpc_ports[switch.index], thrift_port=thrift_ports[switch.index],
                log_file=str(log_file), output_file=str(output_file),
                pcap_dir=str(pcap_dir) if pcap_dir else None, device_config=config_path,
                cpu_port=opts.cpu_port, priority_queues=opts.priority_queues,
                log_level=opts.log_level,
                port_config_file=str(port_config) if port_config else None,
                run_seed=opts.seed, queue_frame_bytes=opts.queue_frame_bytes)
        return launches

    def _add_links(self) -> None:
        assert self.net is not None
        plans = {(p.switch, p.port): p for ports in self._port_plans.values() for p in ports}
        for link in self.topology.links:
            if link.kind == "host":
                gpu = self.topology.gpu(link.gpu or "")
                end = plans[(link.node_b, link.port_b)]
                self.net.addLink(self._switches[link.node_b], self._hosts[gpu.server],
                                 port1=link.port_b, port2=gpu.index, cls=FabricLink,
                                 intfName1=end.ifname, intfName2=gpu.intf, addr1=end.mac,
                                 addr2=gpu.mac, root_ipr=self._root_ipr)
            else:
                a, b = plans[(link.node_a, link.port_a)], plans[(link.node_b, link.port_b)]
                self.net.addLink(self._switches[link.node_a], self._switches[link.node_b],
                                 port1=link.port_a, port2=link.port_b, cls=FabricLink,
                                 intfName1=a.ifname, intfName2=b.ifname, addr1=a.mac,
                                 addr2=b.mac, root_ipr=self._root_ipr)
