"""Bring-up and teardown of an emulated fabric: :class:`FabricNetwork`.

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
every gRPC port accepts connections.

Teardown removes everything the run made, whatever happened: on leaving
the ``with`` block (normally or by an exception), on SIGINT, SIGTERM and
SIGHUP (handlers are installed for the duration, see :mod:`.guard`), at
interpreter exit, and when a switch process dies (the main thread gets a
:class:`~.errors.SwitchDiedError` naming the switch, with its log tail).
Switch processes first (SIGTERM, SIGKILL after a grace period), then every
process in the hosts' namespaces, Mininet's shells, namespace bind mounts,
remaining interfaces and temporary files. The run record goes last, and
only if nothing is left; otherwise ``aifabric clean`` finds it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from mininet.net import Mininet
from pyroute2 import IPRoute

from emulator.network import netlink
from emulator.network.command import DEFAULT_CPU_PORT, SwitchLaunch, builtin_port_config_text
from emulator.network.errors import (
    FabricInterrupted, NetworkError, SwitchStartError, TeardownError,
)
from emulator.network.guard import SignalGuard, SwitchMonitor
from emulator.network.naming import netns_name, run_of_ifname
from emulator.network.nodes import FabricHost, FabricIntf, FabricLink
from emulator.network.plan import DEFAULT_MTU, HostPlan, PortPlan, host_plans, switch_port_plan
from emulator.network.process import (
    free_tcp_ports, kill_processes, netns_inode, pid_alive, pids_in_netns, proc_start_time,
    stop_popen,
)
from emulator.network.record import DEFAULT_RECORD_DIR, RunRecord
from emulator.network.switches import (
    DEFAULT_START_TIMEOUT_S, DEFAULT_STOP_GRACE_S, SWITCH_CLASSES, P4SwitchNode,
)
from emulator.targets.builtin.config import DEFAULT_BUFFER_BYTES
from emulator.topology import Topology

INTERFACE_GONE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class NetworkOptions:
    """Settings of a network that the topology does not give."""

    mtu: int = DEFAULT_MTU
    buffer_bytes: int = DEFAULT_BUFFER_BYTES  # per queue of every switch port
    priority_queues: int = 8
    cpu_port: int | None = DEFAULT_CPU_PORT
    log_level: str = "info"
    pcap: bool = False  # captures in <workdir>/pcap/<switch>/
    # Ports base + switch index, which must be free; None: ports the kernel
    # says are free (the default, so runs can share a machine).
    grpc_port_base: int | None = None
    thrift_port_base: int | None = None
    device_id_base: int = 1  # device id = base + switch index
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S
    stop_grace_s: float = DEFAULT_STOP_GRACE_S
    record_dir: str = DEFAULT_RECORD_DIR
    bind_netns: bool = True
    handle_signals: bool = True


class FabricNetwork:
    """An emulated fabric, from a topology; a context manager.

    ``target`` is ``"builtin"`` or ``"bmv2"``; ``workdir`` receives switch
    logs, outputs, port settings and captures (a temporary directory, removed
    at teardown, when None); ``device_config`` is the program every switch
    starts with (None: ``--no-p4``, to be pushed over P4Runtime later);
    ``p4info`` is kept for the controller.

    Attributes once started: ``run_id``, ``workdir``, ``net`` (the Mininet
    object; stop the network with :meth:`stop`, not ``net.stop()``),
    ``timings`` (seconds per bring-up phase, ``bringup_s``, ``teardown_s``),
    ``pids``, ``record_path``, ``failure``.
    """

    def __init__(self, topology: Topology, target: str = "builtin",
                 workdir: str | os.PathLike[str] | None = None,
                 device_config: bytes | None = None,
                 p4info: str | os.PathLike[str] | None = None,
                 options: NetworkOptions | None = None) -> None:
        if target not in SWITCH_CLASSES:
            raise NetworkError(f"unknown switch target {target!r}; known: "
                               f"{', '.join(sorted(SWITCH_CLASSES))}")
        self.topology = topology
        self.target = target
        self.options = options or NetworkOptions()
        self.device_config = device_config
        self.p4info = Path(p4info) if p4info is not None else None
        self.run_id: str | None = None
        self.workdir: Path | None = None
        self.net: Mininet | None = None
        self.timings: dict[str, float] = {}
        self._workdir_arg = workdir
        self._record: RunRecord | None = None
        self._root_ipr: IPRoute | None = None
        self._hosts: dict[str, FabricHost] = {}
        self._switches: dict[str, P4SwitchNode] = {}
        self._host_netns: dict[str, tuple[str | None, int | None]] = {}  # bind path, inode
        self._host_plans: dict[str, HostPlan] = {}
        self._port_plans: dict[str, tuple[PortPlan, ...]] = {}
        self._state = "new"
        self._lock = threading.Lock()
        self._failure: NetworkError | None = None
        self._failure_raised = False
        self._guard = SignalGuard(self._take_failure)
        self._owner_pid = os.getpid()
        self._monitor: SwitchMonitor | None = None

    # Life cycle.

    def __enter__(self) -> "FabricNetwork":
        return self.start()

    def __exit__(self, exc_type: Any, exc: BaseException | None, _tb: Any) -> bool:
        self.stop(error=exc)
        if exc is None:
            self.check()
        return False

    def start(self) -> "FabricNetwork":
        """Bring the network up (once); on any failure, tear down and raise."""
        with self._lock:
            if self._state != "new":
                raise NetworkError(f"this network was already started (state {self._state})")
            self._state = "starting"
        self._owner_pid = os.getpid()
        if os.geteuid() != 0:
            self._state = "down"
            raise NetworkError("bringing up a network needs root (namespaces, veth pairs)")
        atexit.register(self._at_exit)
        try:
            if self.options.handle_signals:
                self._guard.install()
            self._bring_up()
            self._state = "up"
            self._monitor = SwitchMonitor(
                {name: (node.proc, node.log_paths()) for name, node in self._switches.items()},
                self._on_switch_death)
            self._monitor.start()
        except BaseException as exc:
            self.stop(error=exc)
            raise
        return self

    def stop(self, error: BaseException | None = None) -> None:
        """Tear everything down (idempotent). Raises :class:`TeardownError` if
        something is left, unless ``error`` (the exception already on its way
        out) is given: then the leftovers are noted on it. Does nothing in a
        forked child of the process that started the network."""
        if os.getpid() != self._owner_pid:
            return
        self._guard.quiet = True  # first: no signal may cut teardown short from here on
        with self._lock:
            if self._state in ("down", "stopping"):
                return
            self._state = "stopping"
        try:
            started = time.monotonic()
            leftovers = self._teardown()
            self.timings["teardown_s"] = time.monotonic() - started
        finally:
            self._state = "down"
            self._guard.restore()
            atexit.unregister(self._at_exit)
        if leftovers:
            message = (f"teardown of run {self.run_id} left: {'; '.join(leftovers)} "
                       f"(run 'aifabric clean' to remove them)")
            if error is None:
                raise TeardownError(message)
            if hasattr(error, "add_note"):
                error.add_note(message)
        deferred = self._guard.deferred
        if deferred == signal.SIGTERM and self._failure is not None:
            deferred = None  # the monitor's own wake-up call; check() raises the failure
        if error is None and deferred is not None and threading.current_thread() is \
                threading.main_thread():
            raise FabricInterrupted(deferred)

    def check(self) -> None:
        """Raise the :class:`SwitchDiedError` of a switch that died, if any."""
        if self._failure is not None and not self._failure_raised:
            self._failure_raised = True
            raise self._failure

    @property
    def failure(self) -> NetworkError | None:
        return self._failure

    @property
    def is_up(self) -> bool:
        return self._state == "up"

    # What callers use while the network is up.

    def switch_addresses(self) -> dict[str, str]:
        """gRPC address (P4Runtime, QueueControl) of every switch."""
        return {name: node.grpc_addr for name, node in self._switches.items()}

    def device_ids(self) -> dict[str, int]:
        return {name: node.launch_spec.device_id for name, node in self._switches.items()}

    def switch(self, name: str) -> P4SwitchNode:
        """The Mininet node of a switch (its ``launch_spec``, ``proc``, ...)."""
        self.topology.switch(name)
        return self._switches[name]

    def host(self, server: str) -> FabricHost:
        """The Mininet host of a server (``srv0``)."""
        found = self._hosts.get(server)
        if found is None:
            known = ", ".join(s.name for s in self.topology.servers)
            raise NetworkError(f"no host {server!r} in this network (servers: {known})")
        return found

    def gpu_host(self, gpu: str) -> FabricHost:
        """The Mininet host whose NIC belongs to a GPU (``srv0/gpu1``)."""
        return self.host(self.topology.gpu(gpu).server)

    def host_plan(self, server: str) -> HostPlan:
        self.host(server)
        return self._host_plans[server]

    def netns_name(self, server: str) -> str | None:
        """The name for ``ip netns exec`` of a server's namespace."""
        path = self._host_netns.get(server, (None, None))[0]
        return os.path.basename(path) if path else None

    def switch_interfaces(self) -> dict[str, dict[int, str]]:
        """Root-namespace interface of every switch port."""
        return {name: {p.port: p.ifname for p in ports} for name, ports in self._port_plans.items()}

    def interface_counters(self, server: str | None = None) -> dict[str, dict[str, int]]:
        """Kernel counters of a server's NICs, or of all switch ports."""
        if server is not None:
            return self.host(server).counters()
        names = [p.ifname for ports in self._port_plans.values() for p in ports]
        with IPRoute() as ipr:
            return netlink.link_counters(ipr, names)

    @property
    def pids(self) -> dict[str, int]:
        """Switch process of every switch and shell of every host, by name."""
        out = {name: node.proc.pid for name, node in self._switches.items() if node.proc}
        out.update({name: host.pid for name, host in self._hosts.items() if host.pid})
        return out

    @property
    def record_path(self) -> Path | None:
        return self._record.path if self._record else None

    # Bring-up.

    def _bring_up(self) -> None:
        opts = self.options
        clock = _Clock(self.timings)
        record = RunRecord.create(opts.record_dir, topology=self.topology.name,
                                  target=self.target, workdir=None)
        self._record = record
        self.run_id = record.run_id
        self._port_plans = switch_port_plan(self.topology, self.run_id, opts.buffer_bytes)
        self._host_plans = host_plans(self.topology, opts.mtu)
        record.add_interfaces([p.ifname for ports in self._port_plans.values() for p in ports])
        launches = self._prepare_files(record)
        record.save()
        clock.lap("plan_s")

        self.net = Mininet(topo=None, switch=SWITCH_CLASSES[self.target], host=FabricHost,
                           controller=None, link=FabricLink, intf=FabricIntf, build=False,
                           inNamespace=False)
        self._root_ipr = IPRoute()
        self._add_hosts(record)
        for switch in self.topology.switches:
            node = self.net.addSwitch(switch.name, cls=SWITCH_CLASSES[self.target],
                                      launch=launches[switch.name])
            self._switches[switch.name] = node
            record.add_process(node.pid, "switch-shell", switch.name)
        record.save()
        clock.lap("nodes_s")
        self._add_links()
        netlink.set_up_switch_ports(
            self._root_ipr, [p for ports in self._port_plans.values() for p in ports], opts.mtu)
        clock.lap("links_s")

        for name, node in self._switches.items():
            node.launch()
            record.add_process(node.proc.pid, "switch", name)  # type: ignore[union-attr]
        record.save()
        for server, host in self._hosts.items():
            netlink.apply_host_plan(host.netns_path, self._host_plans[server])
        clock.lap("hosts_s")
        self._wait_ready()
        for node in self._switches.values():
            node.after_ready()
        clock.lap("switches_ready_s")
        record.set_state("up")
        record.save()
        self.timings["bringup_s"] = sum(self.timings.values())

    def _prepare_files(self, record: RunRecord) -> dict[str, SwitchLaunch]:
        opts = self.options
        if self._workdir_arg is None:
            workdir = Path(tempfile.mkdtemp(prefix=f"aifabric-{self.run_id}-"))
            record.add_file(workdir, keep=False)
        else:
            workdir = Path(self._workdir_arg).resolve()
            workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        record.data["workdir"] = str(workdir)
        switches_dir = workdir / "switches"
        switches_dir.mkdir(exist_ok=True)
        config_path: str | None = None
        if self.device_config is not None:
            path = workdir / ("fabric.json" if self.target == "bmv2" else "device_config.json")
            path.write_bytes(self.device_config)
            record.add_file(path, keep=False)
            config_path = str(path)
        count = len(self.topology.switches)
        grpc_ports = _ports(opts.grpc_port_base, count)
        thrift_ports = _ports(opts.thrift_port_base, count)
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
            log_file = switches_dir / f"{switch.name}.log"
            output_file = switches_dir / f"{switch.name}.out"
            for path in (log_file, output_file):
                path.unlink(missing_ok=True)  # a fresh log per run
                record.add_file(path, keep=True)
            launches[switch.name] = SwitchLaunch(
                name=switch.name, device_id=opts.device_id_base + switch.index, ports=ports,
                grpc_port=grpc_ports[switch.index], thrift_port=thrift_ports[switch.index],
                log_file=str(log_file), output_file=str(output_file),
                pcap_dir=str(pcap_dir) if pcap_dir else None, device_config=config_path,
                cpu_port=opts.cpu_port, priority_queues=opts.priority_queues,
                log_level=opts.log_level,
                port_config_file=str(port_config) if port_config else None)
        return launches

    def _add_hosts(self, record: RunRecord) -> None:
        assert self.net is not None and self.run_id is not None
        for server in self.topology.servers:
            host = self.net.addHost(server.name, cls=FabricHost, ip=None)
            self._hosts[server.name] = host
            record.add_process(host.pid, "host-shell", server.name)
            inode = netns_inode(host.pid)
            path = None
            if self.options.bind_netns:
                path = netlink.bind_netns(netns_name(self.run_id, server.name), host.pid)
                record.add_netns(os.path.basename(path), path, server.name, inode)
            self._host_netns[server.name] = (path, inode)
            record.save()

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

    def _wait_ready(self) -> None:
        timeout_s = self.options.start_timeout_s
        deadline = time.monotonic() + timeout_s
        pending = list(self._switches.values())
        while True:
            pending = [node for node in pending if not node.poll_ready()]
            if not pending:
                return
            if time.monotonic() > deadline:
                others = ", ".join(n.name for n in pending[1:])
                error = pending[0].not_ready_error(timeout_s)
                if others:
                    error = SwitchStartError(f"{error} (also not ready: {others})")
                raise error
            time.sleep(0.05)

    # A switch died.

    def _on_switch_death(self, error: NetworkError) -> None:
        with self._lock:
            if self._state != "up" or self._failure is not None:
                return
            self._failure = error
        # The main thread raises it (and its with-block tears down); without
        # handlers there is no way in, so tear down from here.
        if not self._guard.interrupt_main():
            try:
                self.stop(error=error)
            except NetworkError:
                pass

    def _take_failure(self) -> BaseException | None:
        if self._failure is not None and not self._failure_raised:
            self._failure_raised = True
            return self._failure
        return None

    def _at_exit(self) -> None:
        self.stop(error=self._failure)

    # Teardown.

    def _teardown(self) -> list[str]:
        """Remove everything; returns what could not be removed."""
        errors: list[str] = []

        def step(what: str, action: Callable[[], Any]) -> None:
            try:
                action()
            except Exception as exc:  # keep going: the rest must go too
                errors.append(f"{what}: {exc}")

        grace = self.options.stop_grace_s
        if self._monitor is not None:
            step("monitor", self._monitor.stop)
        record = self._record
        if record is not None:
            record.set_state("stopping")
            step("run record", record.save)
        step("switch processes", lambda: self._stop_switch_processes(grace))
        # Mininet's shells first (SIGHUP: an interactive bash ignores SIGTERM),
        # then whatever else still runs in the hosts' namespaces.
        for host in self._hosts.values():
            step(f"host {host.name}", host.terminate)
        inodes = [inode for _path, inode in self._host_netns.values() if inode]
        step("host processes", lambda: kill_processes(
            [(pid, proc_start_time(pid)) for pids in pids_in_netns(inodes).values()
             for pid in pids], grace))
        for switch in self._switches.values():
            step(f"switch node {switch.name}", switch.terminate)
        for path, _inode in self._host_netns.values():
            if path:
                step(f"netns {path}", lambda path=path: netlink.unbind_netns(path))
        step("interfaces", self._remove_interfaces)
        if self._root_ipr is not None:
            step("netlink", self._root_ipr.close)
            self._root_ipr = None
        if record is not None:
            step("files", lambda: _remove_files(record))
        leftovers = errors + self._leftovers()
        if record is not None:
            if leftovers:
                record.set_state("teardown-incomplete")
                step("run record", record.save)
            else:
                record.remove()
        return leftovers

    def _stop_switch_processes(self, grace_s: float) -> None:
        procs = [node.proc for node in self._switches.values() if node.proc is not None]
        stop_popen(procs, grace_s)
        for node in self._switches.values():
            node.close_output()

    def _remove_interfaces(self) -> None:
        """Delete this run's root-namespace interfaces (the veths of host
        links may already be going with their namespaces)."""
        assert self.run_id is not None
        with IPRoute() as ipr:
            netlink.delete_links(ipr, [n for n in netlink.link_names(ipr)
                                       if run_of_ifname(n) == self.run_id])
            deadline = time.monotonic() + INTERFACE_GONE_TIMEOUT_S
            while any(run_of_ifname(n) == self.run_id for n in netlink.link_names(ipr)):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)

    def _leftovers(self) -> list[str]:
        found = []
        record = self._record
        if record is None:
            return found
        for proc in record.data["processes"]:
            if pid_alive(proc["pid"], proc["start_time"]):
                found.append(f"{proc['role']} process {proc['pid']} ({proc['node']})")
        for ns in record.data["netns"]:
            if os.path.lexists(ns["path"]):
                found.append(f"namespace mount {ns['path']}")
        if self.run_id is not None:
            with IPRoute() as ipr:
                found += [f"interface {n}" for n in netlink.link_names(ipr)
                          if run_of_ifname(n) == self.run_id]
        return found


class _Clock:
    """Phase durations of a bring-up, into ``timings``."""

    def __init__(self, timings: dict[str, float]) -> None:
        self.timings = timings
        self.last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.timings[name] = now - self.last
        self.last = now


def _ports(base: int | None, count: int) -> list[int]:
    return list(range(base, base + count)) if base is not None else free_tcp_ports(count)


def _remove_files(record: RunRecord) -> None:
    for entry in record.data["files"]:
        if entry.get("keep"):
            continue
        path = entry["path"]
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)
