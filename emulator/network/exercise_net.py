"""The network of a p4lang tutorials exercise: :class:`ExerciseNetwork`,
built from an :class:`ExerciseLayout` (what the tutorials'
``run_exercise.py`` builds from ``topology.json``), on built-in switches.

- Hosts: one Mininet host each, its NIC ``eth0`` with the topology's MAC
  and address (with the on-link route, as Mininet's ``ifconfig`` gives it),
  IPv6 and offloads off (as the tutorials' ``P4Host``); a bandwidth limit
  is a token bucket on ``eth0``.
- Switches: one ``aifabric-switch`` each, device id and gRPC port as the
  tutorials number them (0, 1, ... and 50051, 50052, ...), started with its
  program; a link's latency and bandwidth are the switch ports' delay and
  rate (the kernel here has no netem). Between switches each end realises
  what it sends; on a host link the switch port realises both directions
  (host-facing ports get ``rx_link``, :mod:`.command`), and the host's token
  bucket keeps its own queue, as TCLink shapes both ends.
- Names: ports live in the root namespace as ``afx<run>s<i>p<port>`` with
  the alias ``aifabric:<run>:sN-ethK``, so ``aifabric clean`` can find
  them (:mod:`.naming`); captures go to ``<pcap dir>/sN-ethK_in.pcap`` and
  ``_out.pcap`` as with BMv2 (links while the switch writes them, the files
  themselves after teardown).

The life cycle (run record, teardown always) is :class:`~.lifecycle.NetworkRun`'s.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from emulator.network import netlink
from emulator.network.command import LOOPBACK, SwitchLaunch, builtin_port_config_text
from emulator.network.errors import NetworkError
from emulator.network.lifecycle import NetworkOptions, NetworkRun, PhaseClock
from emulator.network.naming import switch_ifalias, switch_ifname
from emulator.network.nodes import FabricHost, FabricIntf, FabricLink
from emulator.network.plan import PortPlan
from emulator.network.process import tcp_port_held
from emulator.network.record import RunRecord

HOST_IFNAME = "eth0"
GRPC_PORT_BASE = 50051   # the tutorials' P4RuntimeSwitch.next_grpc_port
THRIFT_PORT_BASE = 9090


@dataclass(frozen=True)
class ExerciseHost:
    name: str
    mac: str
    ip: str
    prefix_len: int
    switch: str      # the switch port eth0 plugs into
    port: int
    rate_bps: int = 0


@dataclass(frozen=True)
class ExercisePort:
    port: int
    peer: str        # host name or switch name
    peer_port: int   # 0 for a host (its eth0)
    rate_bps: int = 0
    delay_us: float = 0.0


@dataclass(frozen=True)
class ExerciseSwitch:
    name: str
    index: int                      # device id; gRPC port base + index
    ports: tuple[ExercisePort, ...]
    device_config: str | None       # path; None: --no-p4
    cpu_port: int | None = None
    priority_queues: int | None = None


@dataclass(frozen=True)
class ExerciseLayout:
    name: str
    hosts: tuple[ExerciseHost, ...]
    switches: tuple[ExerciseSwitch, ...]


class ExerciseNetwork(NetworkRun):
    """An exercise's hosts and switches; a context manager. Switch logs go
    to ``log_dir/<switch>.log`` (and ``.out``), captures to ``pcap_dir``
    (None: no captures)."""

    def __init__(self, layout: ExerciseLayout, log_dir: str | os.PathLike[str],
                 pcap_dir: str | os.PathLike[str] | None = None,
                 options: NetworkOptions | None = None,
                 grpc_port_base: int = GRPC_PORT_BASE) -> None:
        super().__init__(layout.name, "builtin", None, options)
        self.layout = layout
        self.log_dir = Path(log_dir)
        self.pcap_dir = Path(pcap_dir) if pcap_dir is not None else None
        self.grpc_port_base = grpc_port_base

    def grpc_port(self, switch: ExerciseSwitch) -> int:
        return self.grpc_port_base + switch.index

    def host_nic(self, host: str) -> ExerciseHost:
        for nic in self.layout.hosts:
            if nic.name == host:
                return nic
        raise NetworkError(f"no host {host!r} in this exercise")

    # Bring-up.

    def _bring_up(self) -> None:
        clock = PhaseClock(self.timings)
        self._check_ports_free()
        record = self._new_record()
        self._port_plans = self._plan_ports(record.run_id)
        record.add_interfaces([p.ifname for ports in self._port_plans.values() for p in ports])
        launches = self._prepare_files(record)
        record.save()
        clock.lap("plan_s")
        self._new_mininet(FabricHost, FabricLink, FabricIntf)
        for host in self.layout.hosts:
            self._add_host(record, host.name, FabricHost)
        for switch in self.layout.switches:
            self._add_switch(record, launches[switch.name])
        record.save()
        self._add_links()
        netlink.set_up_switch_ports(
            self._root_ipr, [p for ports in self._port_plans.values() for p in ports],
            self.options.mtu)
        clock.lap("nodes_s")
        self._launch_switches(record)
        for nic in self.layout.hosts:
            host = self._hosts[nic.name]
            netlink.configure_plain_host(host.netns_path, HOST_IFNAME, nic.mac, nic.ip,
                                         nic.prefix_len, self.options.mtu, nic.rate_bps)
            intf = host.intf(HOST_IFNAME)  # what Mininet's pingall and "h1 ping h2" read
            intf.ip, intf.prefixLen, intf.mac = nic.ip, nic.prefix_len, nic.mac
        clock.lap("hosts_s")
        self._wait_ready()
        clock.lap("switches_ready_s")
        record.set_state("up")
        record.save()
        self.timings["bringup_s"] = sum(self.timings.values())

    def _check_ports_free(self) -> None:
        for switch in self.layout.switches:
            port = self.grpc_port(switch)
            if tcp_port_held(LOOPBACK, port):
                raise NetworkError(
                    f"switch {switch.name}: gRPC port {port} is in use (another exercise "
                    "still running? 'aifabric clean' removes crashed runs)")

    def _plan_ports(self, run_id: str) -> dict[str, tuple[PortPlan, ...]]:
        plans = {}
        for switch in self.layout.switches:
            plans[switch.name] = tuple(PortPlan(
                switch=switch.name, port=p.port, ifname=switch_ifname(run_id, switch.index, p.port),
                alias=switch_ifalias(run_id, f"{switch.name}-eth{p.port}"),
                mac=f"02:01:{switch.index >> 8:02x}:{switch.index & 0xFF:02x}:"
                    f"{p.port >> 8:02x}:{p.port & 0xFF:02x}",
                peer=p.peer, peer_port=p.peer_port, kind="host" if p.peer_port == 0 else "fabric",
                rate_bps=p.rate_bps, delay_us=p.delay_us, buffer_bytes=self.options.buffer_bytes)
                for p in sorted(switch.ports, key=lambda p: p.port))
        return plans

    def _prepare_files(self, record: RunRecord) -> dict[str, SwitchLaunch]:
        workdir = self._make_workdir(record)  # port settings only: a temporary directory
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self.pcap_dir is not None:
            self.pcap_dir.mkdir(parents=True, exist_ok=True)
        launches = {}
        for switch in self.layout.switches:
            ports = self._port_plans[switch.name]
            port_config = workdir / f"{switch.name}.ports.json"
            port_config.write_text(builtin_port_config_text(ports))
            log_file, output_file = self._log_files(record, self.log_dir, switch.name)
            if self.pcap_dir is not None:
                self._link_pcaps(ports)
            launches[switch.name] = SwitchLaunch(
                name=switch.name, device_id=switch.index, ports=ports,
                grpc_port=self.grpc_port(switch), thrift_port=THRIFT_PORT_BASE + switch.index,
                log_file=str(log_file), output_file=str(output_file),
                pcap_dir=str(self.pcap_dir) if self.pcap_dir is not None else None,
                device_config=switch.device_config, cpu_port=switch.cpu_port,
                priority_queues=switch.priority_queues or self.options.priority_queues,
                log_level=self.options.log_level, port_config_file=str(port_config))
        return launches

    def _link_pcaps(self, ports: tuple[PortPlan, ...]) -> None:
        assert self.pcap_dir is not None
        for plan, name, direction in self._pcap_names(ports):
            link = self.pcap_dir / f"{name}_{direction}.pcap"
            if link.is_symlink() or link.exists():
                link.unlink()  # the last run's capture
            link.symlink_to(f"{plan.ifname}_{direction}.pcap")

    def _pcap_names(self, ports: tuple[PortPlan, ...]):  # type: ignore[no-untyped-def]
        for plan in ports:
            for direction in ("in", "out"):
                yield plan, f"{plan.switch}-eth{plan.port}", direction

    def _add_links(self) -> None:
        assert self.net is not None
        plans = {(p.switch, p.port): p for ports in self._port_plans.values() for p in ports}
        for nic in self.layout.hosts:
            end = plans[(nic.switch, nic.port)]
            self.net.addLink(self._switches[nic.switch], self._hosts[nic.name], port1=nic.port,
                             port2=0, cls=FabricLink, intfName1=end.ifname,
                             intfName2=HOST_IFNAME, addr1=end.mac, addr2=nic.mac,
                             root_ipr=self._root_ipr)
        done: set[tuple[str, int]] = set()
        for switch in self.layout.switches:
            for port in switch.ports:
                if port.peer_port == 0 or (switch.name, port.port) in done:
                    continue
                a, b = plans[(switch.name, port.port)], plans[(port.peer, port.peer_port)]
                done |= {(switch.name, port.port), (port.peer, port.peer_port)}
                self.net.addLink(self._switches[switch.name], self._switches[port.peer],
                                 port1=port.port, port2=port.peer_port, cls=FabricLink,
                                 intfName1=a.ifname, intfName2=b.ifname, addr1=a.mac,
                                 addr2=b.mac, root_ipr=self._root_ipr)

    # Teardown: captures under the tutorials' names.

    def _teardown(self) -> list[str]:
        leftovers = super()._teardown()
        if self.pcap_dir is not None:
            for ports in self._port_plans.values():
                for plan, name, direction in self._pcap_names(ports):
                    real = self.pcap_dir / f"{plan.ifname}_{direction}.pcap"
                    link = self.pcap_dir / f"{name}_{direction}.pcap"
                    if real.exists():
                        os.replace(real, link)
                    elif link.is_symlink():
                        link.unlink()
        return leftovers
